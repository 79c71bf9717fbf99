"""The ``ltr-bench`` command line: ``run``, ``rankers``, ``datasets``, ``ui``.

Exit codes: 0 ok; 1 a run failed (a ranker raised, data missing or malformed, MLflow
unreachable: the local results are kept); 2 bad invocation (unknown ranker / dataset /
option / parameter, bad config file); 130 interrupted with Ctrl-C (finished cells are
saved; re-running the same command resumes). Progress goes to stderr, the summary table to
stdout. Errors are one message on stderr, never a traceback (tracebacks of failing rankers
go to ``<results>/failures.log``).

The commands only parse options and print; the work is in :mod:`ltr_bench.harness` (plan,
cells, results) and :mod:`ltr_bench.tracking` (MLflow).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import click

from . import __version__
from .plan import DatasetChoice, Plan, PlanError, RankerChoice, load_plan, parse_assignment, \
    parse_folds

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class Abort(Exception):
    """Stop the command with a message on stderr and an exit code (no traceback)."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


def _err(message: str) -> None:
    click.echo(message, err=True)


def _fail(ctx: click.Context, message: str, code: int):
    _err(f"Error: {message}")
    ctx.exit(code)


@click.group(context_settings=CONTEXT)
@click.version_option(__version__, "-V", "--version", prog_name="ltr-bench")
def main() -> None:
    """Learning-to-rank benchmarks: identical folds, honest metrics, MLflow tracking.

    \b
    Examples:
      ltr-bench rankers
      ltr-bench datasets
      ltr-bench run --ranker lightgbm,xgboost-gbrt --dataset synthetic
      ltr-bench run --ranker all --dataset ohsumed --folds 1,3 --param lightgbm.num_leaves=31
      ltr-bench run --config plan.toml
      ltr-bench ui --port 5000
    """


# ------------------------------------------------------------------------------------ run

def _split_list(values: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for v in values:
        out.extend(p.strip() for p in v.split(",") if p.strip())
    return out


def _all_rankers() -> list[str]:
    from .registry import RankerLoadError, list_rankers

    names = []
    for entry in list_rankers():
        try:
            entry.load()
        except RankerLoadError as exc:
            _err(f"warning: skipping unavailable ranker: {exc}")
            continue
        names.append(entry.name)
    return names


def build_plan(*, config: str | None, rankers: tuple[str, ...], datasets: tuple[str, ...],
               folds: str | None, params: tuple[str, ...], dataset_options: tuple[str, ...],
               seed: int | None, threads: int | None, metrics: str | None,
               data_dir: str | None, cache_dir: str | None) -> Plan:
    """The plan from ``--config`` (if any) with the command-line options applied on top.

    ``--ranker``/``--dataset`` replace the file's lists (a name the file also lists keeps
    its parameters / options); ``--param``/``--dataset-option`` add to or override them;
    scalar options replace the file's values. Raises PlanError / UnknownRankerError.
    """
    from .registry import UnknownRankerError, get_entry, list_rankers

    plan = load_plan(config) if config else Plan(rankers=[], datasets=[])
    names = _split_list(rankers)
    if names:
        if "all" in names:
            if names != ["all"]:
                raise PlanError("--ranker: 'all' cannot be combined with other names")
            names = _all_rankers()
            if not names:
                raise PlanError("--ranker all: no ranker is installed and importable")
        if len(set(names)) != len(names):
            raise PlanError(f"--ranker: a ranker is listed twice: {','.join(names)}")
        old = {r.name: r.params for r in plan.rankers}
        plan.rankers = [RankerChoice(n, dict(old.get(n, {}))) for n in names]
    for name in [r.name for r in plan.rankers]:
        get_entry(name)  # unknown name -> UnknownRankerError with close matches
    by_name = {r.name: dict(r.params) for r in plan.rankers}
    for text in params:
        name, key, value = parse_assignment(text, option="--param")
        if name not in by_name:
            known = [e.name for e in list_rankers()]
            if name not in known:
                err = UnknownRankerError(name, known)
                raise PlanError(f"--param {text}: {err}")
            raise PlanError(f"--param {text}: ranker {name!r} is not part of this run "
                            f"(rankers: {', '.join(by_name) or 'none'}); add it to --ranker")
        by_name[name][key] = value
    plan.rankers = [RankerChoice(n, p) for n, p in by_name.items()]

    dnames = _split_list(datasets)
    if dnames:
        if len(set(dnames)) != len(dnames):
            raise PlanError(f"--dataset: a dataset is listed twice: {','.join(dnames)}")
        old_opts = {d.name: d.options for d in plan.datasets}
        plan.datasets = [DatasetChoice(n, dict(old_opts.get(n, {}))) for n in dnames]
    if dataset_options:
        _apply_dataset_options(plan, dataset_options)

    if folds is not None:
        plan.folds = parse_folds(folds)
    if seed is not None:
        plan.seed = seed
    if threads is not None:
        plan.threads = threads
    if metrics is not None:
        plan.metrics = tuple(m for m in (p.strip() for p in metrics.split(",")) if m)
    if data_dir is not None:
        plan.data_dir = data_dir
    if cache_dir is not None:
        plan.cache_dir = cache_dir
    if not plan.rankers:
        raise PlanError("no ranker given: use --ranker NAME[,NAME...|all] or --config FILE "
                        "(see `ltr-bench rankers`)")
    if not plan.datasets:
        raise PlanError("no dataset given: use --dataset NAME|PATH or --config FILE "
                        "(see `ltr-bench datasets`)")
    return plan


def _apply_dataset_options(plan: Plan, assignments: tuple[str, ...]) -> None:
    from .data import get_spec
    from .data import UnknownDatasetError
    from .harness import PATH_DATASET_OPTIONS

    def allowed(name: str) -> set[str]:
        try:
            return set(get_spec(name).options or {})
        except UnknownDatasetError:
            return set(PATH_DATASET_OPTIONS)  # a folder; unknown names fail later

    opts = {d.name: dict(d.options) for d in plan.datasets}
    for text in assignments:
        target, key, value = parse_assignment(text, option="--dataset-option", scoped=False)
        if target is not None:
            if target not in opts:
                raise PlanError(f"--dataset-option {text}: dataset {target!r} is not part of "
                                f"this run (datasets: {', '.join(opts) or 'none'})")
            targets = [target]
        else:
            targets = [n for n in opts if key in allowed(n)]
            if not targets:
                raise PlanError(f"--dataset-option {text}: no dataset of this run has an option "
                                f"{key!r}; options: " + "; ".join(
                                    f"{n}: {', '.join(sorted(allowed(n))) or 'none'}"
                                    for n in opts))
        for n in targets:
            opts[n][key] = value
    plan.datasets = [DatasetChoice(n, o) for n, o in opts.items()]


class _Console:
    """Progress on stderr: one updating line on a terminal, throttled lines otherwise."""

    def __init__(self, stream=None, *, min_interval: float | None = None):
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.min_interval = min_interval if min_interval is not None else (
            0.1 if self.tty else 2.0)
        self._last = 0.0
        self._open_line = False

    def line(self, text: str) -> None:
        self._clear()
        print(text, file=self.stream, flush=True)

    def status(self, text: str, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < self.min_interval:
            return
        self._last = now
        if self.tty:
            width = 119
            print("\r" + text[:width].ljust(width), end="", file=self.stream, flush=True)
            self._open_line = True
        else:
            print(text, file=self.stream, flush=True)

    def _clear(self) -> None:
        if self._open_line:
            print("\r" + " " * 119 + "\r", end="", file=self.stream, flush=True)
            self._open_line = False


def _fmt(v: float | None, digits: int = 4) -> str:
    if v is None or v != v:
        return "-"
    return f"{v:.{digits}f}"


class _RunListener:
    """Prints progress and logs each finished record to MLflow (when a tracker is given)."""

    def __init__(self, console: _Console, store, tracker, plan_dict, plan_toml, headline):
        self.console = console
        self.store = store
        self.tracker = tracker
        self.plan_dict = plan_dict
        self.plan_toml = plan_toml
        self.headline = headline
        self.tracking_error: str | None = None
        self.n_logged = 0

    # harness.Listener protocol
    def fold_loading(self, dataset: str, fold: int) -> None:
        self.console.status(f"loading {dataset} fold {fold} ...", force=True)

    def fold_progress(self, dataset: str, fold: int, done: int, total: int,
                      message: str) -> None:
        pct = f" {100.0 * done / total:5.1f}%" if total > 0 else ""
        self.console.status(f"loading {dataset} fold {fold}: {done}/{total}{pct} {message}")

    def cell_started(self, cell, index: int, total: int) -> None:
        self.console.status(f"[{index}/{total}] {cell.ranker} on {cell.dataset} fold "
                            f"{cell.fold}: fitting ...", force=True)

    def cell_progress(self, cell, done: int, total: int, message: str) -> None:
        pct = f" {100.0 * done / total:5.1f}%" if total > 0 else ""
        extra = f" {message}" if message else ""
        self.console.status(f"[{cell.ranker} {cell.dataset} fold {cell.fold}] {done}/{total}"
                            f"{pct}{extra}")

    def cell_finished(self, record, index: int, total: int, *, skipped: bool) -> None:
        head = f"[{index}/{total}] {record.ranker} on {record.dataset} fold {record.fold}"
        if skipped:
            self.console.line(f"{head}: finished earlier, skipped (use --force to re-run)")
        elif record.ok:
            m = record.metrics
            self.console.line(
                f"{head}: {self.headline} {_fmt(m.get(self.headline))}  fit "
                f"{record.fit_seconds:.2f} s  score {record.score_us_per_doc:.3g} us/doc  "
                f"peak {record.peak_rss_mb:.0f} MiB")
            for warning in record.warnings:
                self.console.line(f"{head}: warning: {warning}")
        else:
            self.console.line(f"{head}: FAILED in {record.error_stage}: {record.error} "
                              f"(traceback in {self.store.failure_log})")
            if self.tracker is not None:
                self.tracker.mark_failed(record.plan_key)
        if record.ok and self.tracker is not None:
            self._log(record)

    def _log(self, record) -> None:
        from .tracking import TrackingError

        try:
            already = self.tracker.is_logged(record)
            self.tracker.log_record(record, self.store, plan=self.plan_dict,
                                    plan_toml=self.plan_toml)
            self.n_logged += 0 if already else 1
        except TrackingError as exc:
            self.tracking_error = str(exc)
            self.tracker = None  # keep computing; everything stays in the local results
            self.console.line(f"warning: {exc}; from now on results are only saved locally")


def _summary_table(records, metrics: tuple[str, ...]) -> str:
    from .harness import aggregate

    wanted = [m for m in ("ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "map") if m in metrics]
    if not wanted:
        wanted = list(metrics[:5])
    groups: dict[tuple[str, str], list] = {}
    for r in records:
        groups.setdefault((r.dataset, r.ranker), []).append(r)
    header = ["dataset", "ranker", "folds"] + wanted + ["fit_s", "us/doc"]
    rows = [header]
    for (dataset, ranker), recs in groups.items():
        stats = aggregate(recs)

        def cell(key: str, digits: int) -> str:
            if key not in stats:
                return "-"
            mean, std, n = stats[key]
            return _fmt(mean, digits) + ("" if n < 2 else f" ± {_fmt(std, digits)}")

        rows.append([dataset, ranker, ",".join(str(r.fold) for r in recs)]
                    + [cell(m, 4) for m in wanted]
                    + [cell("fit_seconds", 2), cell("score_us_per_doc", 3)])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in
                       enumerate(zip(row, widths))).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _output_records(records, failed) -> list[dict[str, Any]]:
    out = []
    for r in list(records) + list(failed):
        out.append({
            "ranker": r.ranker, "dataset": r.dataset, "fold": r.fold, "seed": r.seed,
            "status": r.status, "params": r.params, "metrics": dict(r.metrics),
            "extra_metrics": dict(r.extra_metrics), "fit_seconds": r.fit_seconds,
            "score_us_per_doc": r.score_us_per_doc, "peak_rss_mb": r.peak_rss_mb,
            "fingerprints": dict(r.fingerprints), "key": r.key,
            "mlflow_run_id": (r.mlflow or {}).get("run_id"), "error": r.error,
        })
    return out


def _write_output(path: str, records, failed) -> None:
    from .harness import atomic_write_text

    text = json.dumps(_output_records(records, failed), indent=1, allow_nan=True,
                      default=repr) + "\n"
    atomic_write_text(Path(path), text)


@main.command("run", context_settings=CONTEXT)
@click.option("--ranker", "rankers", multiple=True, metavar="NAME[,NAME...]|all",
              help="Rankers to run (comma list, repeatable, or 'all'); see `ltr-bench rankers`.")
@click.option("--dataset", "datasets", multiple=True, metavar="NAME|PATH",
              help="Dataset name (see `ltr-bench datasets`) or a folder of LETOR files; "
                   "comma list or repeatable.")
@click.option("--folds", default=None, metavar="all|1,3",
              help="Folds to run (1-based). Default: all the dataset has.")
@click.option("--data-dir", default=None, type=click.Path(file_okay=False),
              help="Data home (else $LTR_BENCH_DATA, else ~/ltr_bench_data).")
@click.option("--cache-dir", default=None, type=click.Path(file_okay=False),
              help="Parsed-data cache (else $LTR_BENCH_CACHE, else ~/.cache/ltr_bench).")
@click.option("--param", "params", multiple=True, metavar="NAME.key=value",
              help="A ranker hyper-parameter, e.g. lightgbm.num_leaves=31 (value parsed as "
                   "number/bool/none/[list] when it is one, else text). Repeatable.")
@click.option("--dataset-option", "dataset_options", multiple=True,
              metavar="[DATASET.]key=value",
              help="Option of a generated dataset, e.g. n_queries=100. Repeatable.")
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="Seed for data generation/splits and every ranker's random_state "
                   "(default 0).")
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="Threads per ranker (its thread parameter, and BLAS/OpenMP pools).")
@click.option("--metrics", default=None, metavar="M1,M2,...",
              help="Metrics (default ndcg@1,3,5,10,20, map, mrr, err@10).")
@click.option("--tracking-uri", default=None, metavar="URI",
              help="MLflow store (else $MLFLOW_TRACKING_URI, else "
                   "sqlite:///<cwd>/mlflow_runs/mlflow.db).")
@click.option("--no-mlflow", is_flag=True, help="Only save results locally.")
@click.option("--results-dir", default=None, type=click.Path(file_okay=False),
              help="Local results (default <cwd>/mlflow_runs/results).")
@click.option("--output", default=None, type=click.Path(dir_okay=False),
              help="Also write the results as JSON: one record per (ranker, dataset, fold).")
@click.option("--force", is_flag=True, help="Re-run cells that finished before.")
@click.option("--config", default=None, type=click.Path(dir_okay=False),
              help="A TOML benchmark plan (rankers, parameters, datasets, folds, seed); "
                   "command-line options override it.")
@click.option("--score-repeats", type=click.IntRange(min=1), default=5, show_default=True,
              help="Timed predict calls (after one warm-up) for score_us_per_doc.")
@click.pass_context
def run_cmd(ctx: click.Context, rankers, datasets, folds, data_dir, cache_dir, params,
            dataset_options, seed, threads, metrics, tracking_uri, no_mlflow, results_dir,
            output, force, config, score_repeats) -> None:
    """Fit, score and evaluate every ranker on every fold; record and log the results.

    Each fold is loaded once and every ranker sees the same splits (fingerprints are
    recorded). Finished (ranker, parameters, dataset, fold, seed) cells are skipped when the
    same command runs again (--force re-runs them); Ctrl-C keeps every finished cell.

    Exit codes: 0 ok, 1 a run failed, 2 bad invocation, 130 interrupted.
    """
    try:
        _run_command(ctx, rankers, datasets, folds, data_dir, cache_dir, params,
                     dataset_options, seed, threads, metrics, tracking_uri, no_mlflow,
                     results_dir, output, force, config, score_repeats)
    except KeyboardInterrupt:  # outside a cell (checking, logging): nothing is lost
        _err("\ninterrupted; every finished cell is saved; re-run the same command to resume")
        ctx.exit(EXIT_INTERRUPTED)


def _run_command(ctx, rankers, datasets, folds, data_dir, cache_dir, params, dataset_options,
                 seed, threads, metrics, tracking_uri, no_mlflow, results_dir, output, force,
                 config, score_repeats) -> None:
    from .data import DataError, UnknownDatasetError
    from .harness import HarnessInterrupted, ResultStore, expand_plan, run_plan
    from .registry import BadParameterError, RankerLoadError, RegistryError

    if config is not None and not Path(config).is_file():
        _fail(ctx, f"--config: file {config} does not exist", EXIT_USAGE)
    try:
        plan = build_plan(config=config, rankers=rankers, datasets=datasets, folds=folds,
                          params=params, dataset_options=dataset_options, seed=seed,
                          threads=threads, metrics=metrics, data_dir=data_dir,
                          cache_dir=cache_dir)
        console = _Console()
        console.status("checking rankers and data ...", force=True)
        expanded = expand_plan(plan, score_repeats=score_repeats)
    except PlanError as exc:
        _fail(ctx, str(exc), EXIT_USAGE)
    except RankerLoadError as exc:
        _fail(ctx, str(exc), EXIT_FAILED)
    except BadParameterError as exc:
        # from a config file the message already names the file and table
        _fail(ctx, f"--param: {exc}" if params and config is None else str(exc), EXIT_USAGE)
    except RegistryError as exc:
        _fail(ctx, str(exc), EXIT_USAGE)
    except UnknownDatasetError as exc:
        _fail(ctx, str(exc), EXIT_USAGE)
    except DataError as exc:
        _fail(ctx, str(exc), EXIT_FAILED)

    store = ResultStore(Path(results_dir) if results_dir else
                        Path.cwd() / "mlflow_runs" / "results")
    plan_dict = plan.to_dict()
    plan_toml = Path(config).read_text(encoding="utf-8") if config else None
    tracker = None
    tracking_error = None
    if not no_mlflow:
        from .tracking import Tracker, TrackingError

        tracker = Tracker(tracking_uri)
        try:
            console.status(f"opening MLflow store {tracker.uri} ...", force=True)
            tracker.check()
        except TrackingError as exc:
            tracking_error = str(exc)
            console.line(f"warning: {exc}; results will only be saved locally")
            tracker = None
    headline = "ndcg@10" if "ndcg@10" in expanded.metrics else expanded.metrics[0]
    listener = _RunListener(console, store, tracker, plan_dict, plan_toml, headline)
    n_cells = len(expanded.cells)
    console.line(f"{n_cells} cell(s) ({len(plan.datasets)} dataset(s) x folds x "
                 f"{len(plan.rankers)} ranker(s)); results in {store.root}"
                 + (f"; MLflow {tracker.uri}" if tracker else ""))

    interrupted = False
    try:
        report = run_plan(expanded, store, force=force, listener=listener)
    except HarnessInterrupted as exc:
        report = exc.report
        interrupted = True
    tracking_error = listener.tracking_error or tracking_error
    if listener.tracker is not None:
        try:
            listener.tracker.finish(interrupted=interrupted)
        except Exception as exc:  # noqa: BLE001 - the results are safe locally
            tracking_error = str(exc)
    console._clear()

    if output:
        _write_output(output, report.records, report.failed)
    if report.records:
        click.echo(_summary_table(report.records, expanded.metrics))
    if interrupted:
        _err(f"interrupted; {report.n_saved} cell(s) finished and saved in {store.root}; "
             f"re-run the same command to resume")
        ctx.exit(EXIT_INTERRUPTED)
    code = EXIT_OK
    if report.failed:
        _err(f"{len(report.failed)} of {n_cells} cell(s) failed: "
             + "; ".join(f"{r.ranker} on {r.dataset} fold {r.fold} ({r.error_stage}: "
                         f"{r.error})" for r in report.failed[:5])
             + (" ..." if len(report.failed) > 5 else "")
             + f". Tracebacks: {store.failure_log}")
        code = EXIT_FAILED
    if tracking_error:
        _err(f"MLflow logging failed: {tracking_error}. The results are saved in "
             f"{store.root}; re-run the same command when the store is reachable to log them "
             f"(nothing is recomputed), or add --no-mlflow.")
        code = EXIT_FAILED
    ctx.exit(code)


# -------------------------------------------------------------------------------- rankers

@main.command("rankers", context_settings=CONTEXT)
@click.option("--no-check", is_flag=True,
              help="Do not import the rankers (faster; status shows 'not checked').")
def rankers_cmd(no_check: bool) -> None:
    """List registered rankers: name, distribution, version, status.

    Status imports each ranker's plugin (one at a time: a broken plugin shows as
    'unavailable' with its error and does not affect the others).
    """
    from .registry import RankerLoadError, list_rankers

    rows = [["name", "distribution", "version", "status"]]
    for e in list_rankers():
        if no_check:
            status = "not checked"
        else:
            try:
                e.load()
                status = "ok"
            except RankerLoadError as exc:
                status = f"unavailable: {exc}"
        rows.append([e.name, e.distribution, e.version, status])
    if len(rows) == 1:
        click.echo("no rankers installed (none registers the 'ltr_bench.rankers' entry point)")
        return
    click.echo(_table(rows))


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    out = []
    for j, r in enumerate(rows):
        out.append("  ".join([c.ljust(w) for c, w in zip(r[:-1], widths)] + [r[-1]]).rstrip())
        if j == 0:
            out.append("  ".join(["-" * w for w in widths] + ["-" * len(r[-1])]))
    return "\n".join(out)


# ------------------------------------------------------------------------------- datasets

@main.command("datasets", context_settings=CONTEXT)
@click.option("--data-dir", default=None, type=click.Path(file_okay=False),
              help="Data home to look in (else $LTR_BENCH_DATA, else ~/ltr_bench_data).")
def datasets_cmd(data_dir: str | None) -> None:
    """List known datasets: kind, folds, present or missing (where), and where to get them."""
    from .data import dataset_present, list_datasets, resolve_data_dir

    home = resolve_data_dir(data_dir)
    click.echo(f"data home: {home}")
    rows = [["name", "kind", "folds", "status", "source"]]
    for spec in list_datasets():
        present, where = dataset_present(spec, data_dir=data_dir)
        if spec.kind != "letor":
            status = "built-in (no download)"
        else:
            status = f"present at {where}" if present else f"missing: expected at {where}"
        rows.append([spec.name, spec.kind, str(spec.n_folds), status, spec.homepage])
    click.echo(_table(rows))


# ------------------------------------------------------------------------------------- ui

@main.command("ui", context_settings=CONTEXT)
@click.option("--tracking-uri", default=None, metavar="URI",
              help="Store to browse (else $MLFLOW_TRACKING_URI, else "
                   "sqlite:///<cwd>/mlflow_runs/mlflow.db).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (loopback by default; 0.0.0.0 exposes it).")
@click.option("--port", default=5000, show_default=True, type=click.IntRange(1, 65535))
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Server worker processes (MLflow's own default, 4, suits a shared server).")
@click.pass_context
def ui_cmd(ctx: click.Context, tracking_uri: str | None, host: str, port: int,
           workers: int) -> None:
    """Start the MLflow UI on the results store (foreground; Ctrl-C stops it).

    Runs `python -m mlflow ui` with the store's URI and artifact root. MLflow's background
    job runner (GenAI scorers, not used by ltr-bench) is off unless
    MLFLOW_SERVER_ENABLE_JOB_EXECUTION is set.
    """
    from .tracking import artifact_root_for, resolve_tracking_uri, sqlite_path

    uri = resolve_tracking_uri(tracking_uri)
    if uri.startswith(("http://", "https://")):
        _fail(ctx, f"{uri} is already an MLflow server: open it in a browser", EXIT_USAGE)
    db = sqlite_path(uri)
    if db is not None and not db.exists():
        _err(f"note: {db} does not exist yet (no runs logged here); starting on an empty store")
        db.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri,
           "--host", host, "--port", str(port), "--workers", str(workers)]
    os.environ.setdefault("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false")
    root = artifact_root_for(uri)
    if root is not None:
        cmd += ["--default-artifact-root", root]
    _err(f"MLflow UI for {uri} at http://{host}:{port} (Ctrl-C to stop)")
    sys.stderr.flush()
    sys.stdout.flush()
    if os.name == "posix" and not os.environ.get("LTR_BENCH_UI_NO_EXEC"):
        os.execv(sys.executable, cmd)  # become the server: signals reach it directly
    import subprocess

    proc = subprocess.Popen(cmd)
    try:
        ctx.exit(proc.wait())
    except KeyboardInterrupt:
        proc.terminate()
        ctx.exit(proc.wait())


from .cli_report import report_command  # noqa: E402 (after main exists)

main.add_command(report_command)


if __name__ == "__main__":  # pragma: no cover
    main()

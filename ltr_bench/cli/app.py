"""The ``ltr-bench`` command line: ``run``, ``rankers``, ``datasets``, ``ui``, ``report``.

Exit codes: 0 ok; 1 a run failed (a ranker raised, data missing or malformed, MLflow
unreachable: the local results are kept); 2 bad invocation (unknown ranker / dataset /
option / parameter, bad config file); 130 interrupted with Ctrl-C (finished cells are
saved; re-running the same command resumes). Progress goes to stderr, the summary table to
stdout. Errors are one message on stderr, never a traceback: every user-facing error is an
:class:`~ltr_bench.errors.LtrBenchError` carrying its exit code, handled in one place
(:class:`ltr_bench.cli.options.Command`); tracebacks of failing rankers go to
``<results>/failures.log``.

The commands only parse options and print: plans are built in :mod:`ltr_bench.run.plan`,
expanded in :mod:`ltr_bench.run.cells`, run by :mod:`ltr_bench.run.harness`, logged by
:mod:`ltr_bench.tracking` and summarised by :mod:`ltr_bench.report.text`.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import click

from ltr_bench import __version__
from ltr_bench.cli import options
from ltr_bench.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, LtrBenchError, UsageError
from ltr_bench.evaluation.metric_keys import METRICS_HELP

CONTEXT = options.CONTEXT


class _Group(click.Group):
    """Every command of the group turns :class:`LtrBenchError` into ``Error: <message>``
    and its exit code (:class:`ltr_bench.cli.options.Command`)."""

    command_class = options.Command


def _err(message: str) -> None:
    click.echo(message, err=True)


@click.group(cls=_Group, context_settings=CONTEXT)
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
      ltr-bench report --dataset synthetic
      ltr-bench ui --port 5000
    """


# ------------------------------------------------------------------------------------ run


@main.command("run", context_settings=CONTEXT)
@click.option(
    "--ranker",
    "rankers",
    multiple=True,
    metavar="NAME[,NAME...]|all",
    help="Rankers to run (comma list, repeatable, or 'all'); see `ltr-bench rankers`.",
)
@click.option(
    "--dataset",
    "datasets",
    multiple=True,
    metavar="NAME|PATH",
    help="Dataset name (see `ltr-bench datasets`) or a folder of LETOR files; "
    "comma list or repeatable.",
)
@click.option(
    "--folds",
    default=None,
    metavar="all|1,3",
    help="Folds to run (1-based). Default: all the dataset has.",
)
@options.data_dir
@options.cache_dir
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="NAME.key=value",
    help="A ranker hyper-parameter, e.g. lightgbm.num_leaves=31 (value parsed as "
    "number/bool/none/[list] when it is one, else text). Repeatable.",
)
@click.option(
    "--dataset-option",
    "dataset_options",
    multiple=True,
    metavar="[DATASET.]key=value",
    help="Option of a generated dataset, e.g. n_queries=100. Repeatable.",
)
@click.option(
    "--sweep",
    "sweeps",
    multiple=True,
    metavar="NAME.key=v1,v2,...",
    help="Run one configuration per value, each its own row NAME[key=value]; "
    "repeat for a grid, e.g. --sweep lightgbm.num_leaves=7,31,127.",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=None,
    help="Seed for data generation/splits and every ranker's seed parameter (default 0).",
)
@click.option(
    "--seeds",
    default=None,
    metavar="0,1,2|N",
    help="Repeat every cell with each of these seeds (or with seeds 0..N-1).",
)
@click.option(
    "--convention",
    "conventions",
    default=None,
    metavar="PROFILE[,PROFILE]",
    help="Also score every cell the way another tool does: letor4 (the LETOR 4.0 "
    "script, MQ2007/MQ2008), letor3 (LETOR 3.0, OHSUMED), trec (trec_eval), "
    "nonempty (queries without relevant documents left out). Keys get the "
    "profile as suffix, e.g. ndcg@10_letor4; the summary shows them.",
)
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=None,
    help="Threads per ranker (its thread parameter, and BLAS/OpenMP pools); "
    "default 1, so that timings compare like with like.",
)
@click.option(
    "--metrics",
    default=None,
    metavar="M1,M2,...",
    help="Metrics (default ndcg@1,3,5,10,20, map, mrr, err@10). " + METRICS_HELP,
)
@options.tracking_uri
@click.option("--no-mlflow", is_flag=True, help="Only save results locally.")
@options.results_dir
@click.option(
    "--output",
    default=None,
    type=click.Path(dir_okay=False),
    help="Also write the results as JSON: one record per (ranker, dataset, fold, "
    "seed), the same fields as the local result files.",
)
@click.option("--force", is_flag=True, help="Re-run cells that finished before.")
@click.option(
    "--save-scores",
    is_flag=True,
    help="Keep each cell's test scores as a TREC run file (qid Q0 docid rank score "
    "tag; docid = the row's position in the split) beside its result and in "
    "MLflow, for trec_eval, ranx or the LETOR scripts.",
)
@click.option(
    "--config",
    default=None,
    type=click.Path(dir_okay=False),
    help="A TOML benchmark plan (rankers, parameters, datasets, folds, seed); "
    "command-line options override it.",
)
@options.workers("cells")
@options.scheduler("the data home")
@click.option(
    "--score-repeats",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Timed predict calls (after one warm-up) for score_us_per_doc.",
)
@click.pass_context
def run_cmd(
    ctx: click.Context,
    tracking_uri,
    no_mlflow,
    results_dir,
    output,
    force,
    score_repeats,
    save_scores,
    workers,
    scheduler,
    **plan_options,
) -> None:
    """Fit, score and evaluate every ranker on every fold; record and log the results.

    Each fold is loaded once and every ranker sees the same splits (fingerprints are
    recorded). Finished (ranker, parameters, dataset, fold, seed) cells are skipped when the
    same command runs again (--force re-runs them); Ctrl-C keeps every finished cell.

    Exit codes: 0 ok, 1 a run failed, 2 bad invocation, 130 interrupted.
    """
    workers, scheduler = options.executor_choice(ctx, workers, scheduler)
    try:
        with options.sigterm_as_interrupt():
            _run(
                ctx,
                tracking_uri=tracking_uri,
                no_mlflow=no_mlflow,
                results_dir=results_dir,
                output=output,
                force=force,
                score_repeats=score_repeats,
                save_scores=save_scores,
                workers=workers,
                scheduler=scheduler,
                **plan_options,
            )
    except KeyboardInterrupt:  # outside a cell (checking, logging): nothing is lost
        _err("\ninterrupted; every finished cell is saved; re-run the same command to resume")
        ctx.exit(EXIT_INTERRUPTED)


def _run(
    ctx,
    *,
    tracking_uri,
    no_mlflow,
    results_dir,
    output,
    force,
    score_repeats,
    save_scores=False,
    workers=None,
    scheduler=None,
    **plan_options,
) -> None:
    from ltr_bench.cli.console import Console, ConsoleListener
    from ltr_bench.report.text import summary_table
    from ltr_bench.results import ResultStore, atomic_write_text, check_writable_dir, records_json
    from ltr_bench.run.executors import make_executor
    from ltr_bench.run.plan_options import CommandLine, build_plan

    console = Console()
    plan = build_plan(CommandLine(**plan_options), warn=lambda m: _err(f"warning: {m}"))
    plan.command = shlex.join(["ltr-bench", *sys.argv[1:]])
    executor = make_executor(workers=workers, scheduler=scheduler, threads=plan.threads)
    if not executor.in_process:  # the cluster comes up while the rankers are imported
        executor.start([r.name for r in plan.rankers])
    try:
        # the rankers' imports (scikit-learn, LightGBM, ...) come with these modules
        from ltr_bench.run.cells import expand_plan
        from ltr_bench.run.harness import HarnessInterrupted, HarnessWriteError, run_plan
        from ltr_bench.run.listener import Listeners

        console.status("checking rankers and data ...", force=True)
        expanded = expand_plan(plan, score_repeats=score_repeats, save_scores=save_scores)
        store = ResultStore(
            Path(results_dir) if results_dir else Path.cwd() / "mlflow_runs" / "results"
        )
        _check_outputs(store.root, output, plan.cache_dir, check_writable_dir)
    except BaseException:
        executor.close()  # a cluster started for nothing
        raise
    headline = "ndcg@10" if "ndcg@10" in expanded.metrics else expanded.metrics[0]
    listeners = [ConsoleListener(console, headline=headline, failure_log=store.failure_log)]
    mlflow_listener, tracking_error = None, None
    if not no_mlflow:
        from ltr_bench.tracking import MlflowListener, Tracker, TrackingError

        tracker = Tracker(tracking_uri)
        try:
            console.status(f"opening MLflow store {tracker.uri} ...", force=True)
            tracker.check()
            mlflow_listener = MlflowListener(
                tracker,
                store,
                plan=plan.to_dict(),
                plan_toml=Path(plan.source).read_text(encoding="utf-8") if plan.source else None,
                on_error=lambda m: console.line(
                    f"warning: {m}; from now on results are only saved locally"
                ),
                claim_found=True,  # a concurrent run may be logging a record found finished
            )
            listeners.append(mlflow_listener)
        except TrackingError as exc:
            tracking_error = str(exc)
            console.line(f"warning: {exc}; results will only be saved locally")
    console.line(
        f"{len(expanded.cells)} cell(s) ({len(plan.datasets)} dataset(s) x folds x "
        f"{len(plan.rankers)} ranker(s) x {len(plan.all_seeds())} seed(s)); results in "
        f"{store.root}" + (f"; MLflow {tracker.uri}" if mlflow_listener else "")
    )

    interrupted, write_error = False, None
    try:
        if not executor.in_process and (
            force or any(store.get(c.key) is None for c in expanded.cells)
        ):
            console.status(f"starting Dask: cells will run {executor.describe()} ...", force=True)
            executor.client()  # an unreachable scheduler fails here, before any cell
            console.line(f"cells run {executor.describe()}")
        report = run_plan(
            expanded,
            store,
            force=force,
            listener=Listeners(*listeners),
            warn=lambda m: console.line(f"warning: {m}"),
            executor=executor,
        )
    except HarnessInterrupted as exc:
        report, interrupted = exc.report, True
    except HarnessWriteError as exc:
        report, write_error = exc.report, str(exc)
    finally:
        executor.close()
    if mlflow_listener is not None:
        mlflow_listener.close(interrupted=interrupted or write_error is not None)
        if not interrupted and write_error is None:
            _attach_html_reports(store, report.records, mlflow_listener, console)
        tracking_error = mlflow_listener.error or tracking_error
    console.clear()

    output_error = None
    if output:
        try:
            atomic_write_text(Path(output), records_json([*report.records, *report.failed]))
        except OSError as exc:
            output_error = (
                f"--output {output}: cannot write it: {exc.strerror or exc}; the "
                f"results are saved in {store.root}"
            )
    if report.records:
        click.echo(
            summary_table(
                report.records,
                expanded.metrics,
                convention=plan.conventions[0] if plan.conventions else None,
            )
        )
    if output_error:
        _err(output_error)
    if write_error is not None:
        _err(
            f"stopped: {write_error}. {report.n_saved} cell(s) finished and saved in "
            f"{store.root}; free space (or fix the permissions) and re-run the same command "
            "to resume."
        )
        ctx.exit(EXIT_FAILED)
    if interrupted:
        _err(
            f"interrupted; {report.n_saved} cell(s) finished and saved in {store.root}; "
            f"re-run the same command to resume"
        )
        ctx.exit(EXIT_INTERRUPTED)
    code = EXIT_OK
    if report.failed:
        _err(
            f"{len(report.failed)} of {len(expanded.cells)} cell(s) failed: "
            + "; ".join(
                f"{r.summary_line()} ({r.error_stage}: {r.error})" for r in report.failed[:5]
            )
            + (" ..." if len(report.failed) > 5 else "")
            + f". Tracebacks: {store.failure_log}"
        )
        code = EXIT_FAILED
    if output_error:
        code = EXIT_FAILED
    if tracking_error:
        _err(
            f"MLflow logging failed: {tracking_error}. The results are saved in "
            f"{store.root}; re-run the same command when the store is reachable to log them "
            f"(nothing is recomputed), or add --no-mlflow."
        )
        code = EXIT_FAILED
    ctx.exit(code)


def _check_outputs(
    results_root: Path, output: str | None, cache_dir: str | None, check_writable_dir
) -> None:
    """Every place the run writes to, tried before the first fit (exit 2 naming the option):
    the results folder, the folder of --output and the parsed-data cache. An unusable
    default cache only warns: the data is then parsed in memory."""
    check_writable_dir(results_root, "--results-dir")
    if output:
        out = Path(output)
        if out.is_dir():
            raise UsageError(
                f"--output {output}: is a folder; give a file name, e.g. {out / 'results.json'}"
            )
        check_writable_dir(out.resolve().parent, f"--output {output}: its folder")
    from ltr_bench.data import resolve_cache_dir

    cache = resolve_cache_dir(cache_dir)
    try:
        check_writable_dir(cache, "--cache-dir" if cache_dir else "the parsed-data cache")
    except UsageError as exc:
        if cache_dir or os.environ.get("LTR_BENCH_CACHE"):
            raise
        _err(f"warning: {exc} Files are parsed in memory (again on every run).")


def _attach_html_reports(store, records, listener, console) -> None:
    """Each dataset's HTML report on its parent runs: every result in the store on the folds
    and seeds of this run (so, on the same data, what it can be compared with)."""
    import tempfile

    from ltr_bench.report.html import to_html
    from ltr_bench.report.plots import write_plots
    from ltr_bench.report.tables import build_report

    for dataset in sorted({r.dataset for r in records}):
        units = {(r.fold, r.seed) for r in records if r.dataset == dataset}
        recs = [
            r for r in store.records() if r.dataset == dataset and (r.fold, r.seed) in units
        ]  # what is comparable with this run
        for r in recs:
            store.per_query(r)
        try:
            with tempfile.TemporaryDirectory(prefix="ltr-bench-report-") as tmp:
                rep = build_report(recs, dataset=dataset)
                path = Path(tmp) / "report.html"
                path.write_text(to_html(rep, plots=write_plots(rep, tmp)), encoding="utf-8")
                listener.attach_report(dataset, path)
        except (LtrBenchError, ValueError, OSError) as exc:
            console.line(f"note: no HTML report attached for {dataset}: {exc}")


# -------------------------------------------------------------------------------- rankers


@main.command("rankers", context_settings=CONTEXT)
@click.option(
    "--no-check",
    is_flag=True,
    help="Do not import the rankers (faster; status shows 'not checked').",
)
def rankers_cmd(no_check: bool) -> None:
    """List registered rankers: name, distribution, version, status.

    Status imports each ranker's plugin (one at a time: a broken plugin shows as
    'unavailable' with its error and does not affect the others).
    """
    from ltr_bench.registry import RankerLoadError, list_rankers

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
@options.data_dir
def datasets_cmd(data_dir: str | None) -> None:
    """List known datasets: kind, folds, present or missing (where), and where to get them."""
    from ltr_bench.data import dataset_present, list_datasets, resolve_data_dir

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


# ------------------------------------------------------------------------------- download


@main.command("download", context_settings=CONTEXT)
@click.argument("name")
@options.data_dir
@click.option(
    "--url",
    default=None,
    metavar="URL",
    help="Download from here instead of the publisher's address (same checks).",
)
def download_cmd(name: str, data_dir: str | None, url: str | None) -> None:
    """Download a LETOR dataset into the data home, check it and unpack it where the loader
    expects it (mslr10k, mslr30k, mq2007, mq2008, ohsumed). Resumes an interrupted download.
    For datasets whose licence must be accepted by hand (yahoo-set1/2, istella-s) it prints
    the steps instead."""
    from ltr_bench.cli.console import Console
    from ltr_bench.data.download import download_dataset

    console = Console()

    def progress(done: int, total: int, what: str) -> None:
        pct = f" {100.0 * done / total:5.1f}%" if total else ""
        console.status(
            f"{what}: {done / 2**20:,.1f} MiB"
            + (f" of {total / 2**20:,.1f} MiB" if total else "")
            + pct
        )

    download_dataset(name, data_dir=data_dir, url=url, progress=progress, say=console.line)
    console.clear()


# ------------------------------------------------------------------------------------- ui


@main.command("ui", context_settings=CONTEXT)
@options.tracking_uri
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on (loopback by default; 0.0.0.0 exposes it).",
)
@click.option("--port", default=5000, show_default=True, type=click.IntRange(1, 65535))
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Server worker processes (MLflow's own default, 4, suits a shared server).",
)
@click.pass_context
def ui_cmd(
    ctx: click.Context, tracking_uri: str | None, host: str, port: int, workers: int
) -> None:
    """Start the MLflow UI on the results store (foreground; Ctrl-C stops it).

    Runs `python -m mlflow ui --app-name ltr-bench` (MLflow's server plus the page
    /ltr-bench/, which opens the runs tables with the metric columns shown, sorted by NDCG@10)
    with the store's URI and artifact root. MLflow's background
    job runner (GenAI scorers, not used by ltr-bench) is off unless
    MLFLOW_SERVER_ENABLE_JOB_EXECUTION is set.
    """
    from ltr_bench.tracking import artifact_root_for, resolve_tracking_uri, sqlite_path

    uri = resolve_tracking_uri(tracking_uri)
    if uri.startswith(("http://", "https://")):
        raise UsageError(f"{uri} is already an MLflow server: open it in a browser")
    db = sqlite_path(uri)
    if db is not None and not db.exists():
        _err(f"note: {db} does not exist yet (no runs logged here); starting on an empty store")
        db.parent.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "mlflow",
        "ui",
        "--backend-store-uri",
        uri,
        "--host",
        host,
        "--port",
        str(port),
        "--workers",
        str(workers),
    ]
    from importlib.metadata import entry_points

    served = any(ep.name == "ltr-bench" for ep in entry_points(group="mlflow.app"))
    if served:
        cmd += ["--app-name", "ltr-bench"]
    os.environ.setdefault("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false")
    root = artifact_root_for(uri)
    if root is not None:
        cmd += ["--default-artifact-root", root]
    # MLflow keeps a runs table's columns in the browser; /ltr-bench/ (tracking.ui_app) sets
    # them to the headline metrics, sorted by NDCG@10, parents only, then opens the
    # model-training view (MLflow 3 opens in its GenAI view otherwise).
    if served:
        _err(f"MLflow UI for {uri}: open http://{host}:{port}/ltr-bench/ (Ctrl-C to stop)")
    else:  # an install from before the app existed: MLflow's plain UI
        _err(
            f"MLflow UI for {uri}: open http://{host}:{port}/#/experiments?workflowType="
            "machine_learning (Ctrl-C to stop; reinstall ltr-bench, pip install -e ., for "
            "the page that opens the runs tables with their metric columns)"
        )
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


from ltr_bench.cli.report import report_command  # noqa: E402 (after main exists)

main.add_command(report_command)
from ltr_bench.cli.cache import cache_group  # noqa: E402

main.add_command(cache_group)
from ltr_bench.cli.tune import tune_command  # noqa: E402

main.add_command(tune_command)


if __name__ == "__main__":  # pragma: no cover
    main()

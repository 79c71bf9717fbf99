"""``ltr-bench run``: parse the plan's options, run its cells, print the summary.

The plan is built in :mod:`ltr_bench.run.plan_options`, expanded in :mod:`ltr_bench.run.cells`,
run by :mod:`ltr_bench.run.harness` (in process or on Dask, :mod:`ltr_bench.run.executors`),
logged by :mod:`ltr_bench.tracking` and summarised by :mod:`ltr_bench.report.text`.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, cast

import click

from ltr_bench.cli import options
from ltr_bench.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, UsageError
from ltr_bench.evaluation.metric_keys import METRICS_HELP

if TYPE_CHECKING:
    from ltr_bench.run.dask_executor import DaskExecutor

CONTEXT = options.CONTEXT


def _err(message: str) -> None:
    click.echo(message, err=True)


@click.command("run", cls=options.Command, context_settings=CONTEXT)
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
    "--label",
    default=None,
    metavar="NAME",
    help="Name the run's one ranker configuration NAME, as a plan's [rankers.NAME] table "
    "does: the summary, the records, MLflow and the report show it (followed by the data "
    "variant, e.g. 'NAME · clicks pbm eta=1 x10'). Not part of the result keys: the same "
    "configuration under another name resumes the earlier result.",
)
@click.option(
    "--sweep",
    "sweeps",
    multiple=True,
    metavar="NAME.key=v1,v2,...",
    help="Run one configuration per value, each its own row NAME[key=value]; "
    "repeat for a grid, e.g. --sweep lightgbm.num_leaves=7,31,127. NAME may be a dataset: "
    "one data variant per value of its option, e.g. --sweep ohsumed.sessions=10,100,1000.",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0, max=2**31 - 1),
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
@options.output
@click.option("--force", is_flag=True, help="Re-run cells that finished before.")
@click.option(
    "--attach-report",
    is_flag=True,
    help="Also attach each dataset's HTML report to its MLflow parent runs at the end "
    "(~1 s more; `ltr-bench report` attaches it on demand).",
)
@options.save_scores
@options.keep_models
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
    attach_report,
    score_repeats,
    save_scores,
    keep_models,
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
                attach_report=attach_report,
                score_repeats=score_repeats,
                save_scores=save_scores,
                keep_models=keep_models,
                workers=workers,
                scheduler=scheduler,
                **plan_options,
            )
    except KeyboardInterrupt:  # outside a cell (checking, logging): nothing is lost
        _err("\ninterrupted; every finished cell is saved; re-run the same command to resume")
        ctx.exit(EXIT_INTERRUPTED)


def _run(ctx, *, tracking_uri, no_mlflow, results_dir, **options) -> None:
    """Start the MLflow logging process (it imports MLflow while the plan is built) unless
    the run may have nothing to log (:mod:`ltr_bench.cli.mlflow_start`), then run;
    ``options`` are :func:`_run_logged`'s."""
    from ltr_bench.cli.console import Console

    console = Console()
    results_root = Path(results_dir) if results_dir else Path.cwd() / "mlflow_runs" / "results"
    mlflow_start = None
    if not no_mlflow:  # MLflow is imported meanwhile, on another core
        from ltr_bench.cli.mlflow_start import LoggingStart

        mlflow_start = LoggingStart(tracking_uri, results_root)
    try:
        _run_logged(ctx, console, mlflow_start, results_root, **options)
    except KeyboardInterrupt:  # after the cells, before MLflow's end: its parents end KILLED
        if mlflow_start is not None and mlflow_start.process is not None:
            mlflow_start.process.interrupt()
        raise
    finally:
        if mlflow_start is not None and mlflow_start.process is not None:
            mlflow_start.process.close_now()  # no-op after close(); else nothing more is logged


def _run_logged(
    ctx,
    console,
    mlflow_start,
    results_root,
    *,
    output,
    force,
    attach_report,
    score_repeats,
    save_scores,
    keep_models,
    workers,
    scheduler,
    **plan_options,
) -> None:
    from ltr_bench.environment import environment_soon

    environment_ready = environment_soon()  # the records' environment, while we import
    from ltr_bench.cli.console import ConsoleListener
    from ltr_bench.report.text import summary_table
    from ltr_bench.results import ResultStore
    from ltr_bench.run.executor_choice import make_executor
    from ltr_bench.run.plan_options import CommandLine, build_plan

    plan = build_plan(
        CommandLine(**plan_options),
        warn=lambda m: _err(f"warning: {m}"),
        local=scheduler is None,
    )
    plan.command = shlex.join(["ltr-bench", *sys.argv[1:]])
    executor = make_executor(workers=workers, scheduler=scheduler, threads=plan.threads)
    if not executor.in_process:  # the cluster comes up while the rankers are imported
        cast("DaskExecutor", executor).start([r.name for r in plan.rankers])
    try:
        # the rankers' imports (scikit-learn, LightGBM, ...) come with these modules
        from ltr_bench.run.cells import expand_plan
        from ltr_bench.run.harness import HarnessInterrupted, HarnessWriteError, run_plan
        from ltr_bench.run.listener import Listeners

        console.status("checking rankers and data ...", force=True)
        expanded = expand_plan(
            plan,
            score_repeats=score_repeats,
            save_scores=save_scores,
            keep_models=options.kept_models_root(keep_models, results_root),
        )
        store = ResultStore(results_root)
        uri = mlflow_start.uri if mlflow_start is not None else None
        inputs = options.run_inputs(expanded, store.root, uri)
        options.check_outputs(store.root, output, plan.cache_dir, inputs)
        mlflow_process = None
        if mlflow_start is not None:
            mlflow_process = mlflow_start.process or _start_logging(
                mlflow_start, expanded, store, force=force, attach_report=attach_report
            )
    except BaseException:
        executor.close()  # a cluster started for nothing
        raise
    for note in expanded.notes:
        console.line(f"note: {note}")
    headline = "ndcg@10" if "ndcg@10" in expanded.metrics else expanded.metrics[0]
    listeners = [
        ConsoleListener(
            console,
            headline=headline,
            failure_log=store.failure_log,
            keep_models=keep_models != "none",
        )
    ]
    mlflow_listener, tracking_error = None, None
    if mlflow_process is not None:
        from ltr_bench.tracking import TrackingError

        mlflow_process.on_error = lambda m: console.line(
            f"warning: {m}; from now on results are only saved locally"
        )
        mlflow_process.on_note = console.line
        # in process only: on Dask the client, scheduler and workers share the cores anyway,
        # and a starved logger would only make the run wait for it at the end
        mlflow_process.yield_to_fits((plan.threads or 1) if executor.in_process else 0)
        try:
            console.status(f"opening MLflow store {mlflow_process.uri} ...", force=True)
            mlflow_process.open(
                plan=plan.to_dict(),
                plan_toml=Path(plan.source).read_text(encoding="utf-8") if plan.source else None,
                report=attach_report,
            )
            mlflow_listener = mlflow_process
            listeners.append(mlflow_listener)
        except TrackingError as exc:
            if isinstance(exc, UsageError):  # not a store to use: refuse the command
                raise
            tracking_error = str(exc)
            console.line(f"warning: {exc}; results will only be saved locally")
    console.line(
        f"{len(expanded.cells)} cell(s) ({len(plan.datasets)} dataset(s) x folds x "
        f"{len(plan.rankers)} ranker(s) x {len(plan.all_seeds())} seed(s)); results in "
        f"{store.root}"
        + (f"; MLflow {mlflow_listener.uri}" if mlflow_listener else "")
        + (
            f"; MLflow {mlflow_start.uri} has every one (not opened)"
            if mlflow_start is not None and mlflow_process is None
            else ""
        )
    )

    interrupted, write_error = False, None
    environment_ready()  # before the first cell: nothing of it runs beside the stages
    try:
        if not executor.in_process and (
            force or any(store.get(c.key) is None for c in expanded.cells)
        ):
            console.status(f"starting Dask: cells will run {executor.describe()} ...", force=True)
            cast("DaskExecutor", executor).client()  # an unreachable scheduler fails here
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
    console.clear()
    _say_kept_labels(expanded.cells, report.records)
    for note in store.damage_notes():  # named, kept beside the recomputed record
        _err(f"warning: {note} (not used; a cell it held is computed again, beside it)")

    output_error = options.write_records_output(
        output, [*report.records, *report.failed], store.root
    )
    if report.records:
        click.echo(
            summary_table(
                report.records,
                expanded.metrics,
                convention=plan.conventions[0] if plan.conventions else None,
                width=options.width(False),
            )
        )
    logging_interrupted = False
    if mlflow_listener is not None:  # the results are shown; MLflow catches up
        units: dict[str, list] = {}
        # the HTML report of each dataset only if asked: drawing it kept every run waiting
        # ~1 s at its end (`ltr-bench report` attaches it on demand)
        if attach_report and not interrupted and write_error is None:
            for r in report.records:
                units.setdefault(r.dataset, []).append((r.fold, r.seed))
        try:
            console.status("logging to MLflow ...", force=True)
            mlflow_listener.close(
                interrupted=interrupted or write_error is not None, report_units=units
            )
        except KeyboardInterrupt:  # just before the wait (close() handles one during it)
            mlflow_listener.interrupt()
        console.clear()
        tracking_error = mlflow_listener.error or tracking_error
        logging_interrupted = mlflow_listener.interrupted
        if mlflow_listener.detached:
            _err(
                f"MLflow: the last runs are being logged in the background (pid "
                f"{mlflow_listener.pid}); `ltr-bench report` waits for them. Should that be "
                "stopped, re-running the same command logs the rest (nothing is recomputed)."
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
    if logging_interrupted:  # every cell done, MLflow stopped short: not a store failure
        _err(
            f"interrupted while logging to MLflow; every cell is saved in {store.root}; "
            "MLflow may lack some fold runs (the parent runs are ended KILLED): re-run the "
            "same command to log them (nothing is recomputed)"
            + (f". MLflow logging had failed before: {tracking_error}" if tracking_error else "")
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


def _start_logging(mlflow_start, expanded, store, *, force: bool, attach_report: bool):
    """The logging process, started now; None when every cell is finished, on data proven
    unchanged, and logged to this store already
    (:func:`~ltr_bench.cli.mlflow_start.nothing_to_log`)."""
    from ltr_bench.cli.mlflow_start import nothing_to_log

    if force or attach_report or not nothing_to_log(expanded.cells, store, mlflow_start.uri):
        return mlflow_start.start()
    return None


def _say_kept_labels(cells, records) -> None:
    """A label is not part of a result's key: a finished cell found under another label
    keeps its record's, which the tables show. Said once per pair of labels, never
    silently."""
    wanted = {c.key: c.label for c in cells}
    kept: dict[tuple[str, str], int] = {}
    for r in records:
        new = wanted.get(r.key)
        if new is not None and (r.label or r.ranker) != (new or r.ranker):
            pair = (r.label or r.ranker, new or r.ranker)
            kept[pair] = kept.get(pair, 0) + 1
    for (old, new), n in sorted(kept.items()):
        _err(
            f"note: {n} cell(s) finished earlier under the label {old!r} keep that name, not "
            f"{new!r} (a label is not part of a result's key); --force recomputes them "
            f"under {new!r}"
        )

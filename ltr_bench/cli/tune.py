"""``ltr-bench tune``: tune every ranker with the same budget on validation data, then refit
and evaluate the chosen configuration once on test (protocol: :mod:`ltr_bench.tune.study`).

The command parses options and prints; the plan is :func:`ltr_bench.run.plan_options.build_plan`,
each tuned cell :func:`ltr_bench.tune.cell.tune_cell` (the search :func:`ltr_bench.tune.study.tune`,
then the final fit and test evaluation :func:`ltr_bench.run.harness.run_cell`: an ordinary
record), run here or, with ``--workers`` / ``--scheduler``, as one Dask task per tuned cell
(:class:`ltr_bench.tune.cell.TuneJob` through :meth:`ltr_bench.run.executors.Executor.map_cells`).
Either way this process alone saves the records, tells the listeners and logs the trials'
MLflow runs (:func:`ltr_bench.tracking.trials.log_trials`).
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from ltr_bench.cli import options
from ltr_bench.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, UsageError

CONTEXT = options.CONTEXT


def _err(message: str) -> None:
    click.echo(message, err=True)


@click.command("tune", cls=options.Command, context_settings=CONTEXT)
@click.option(
    "--ranker",
    "rankers",
    multiple=True,
    metavar="NAME[,NAME...]|all",
    help="Rankers to tune (comma list, repeatable, or 'all').",
)
@click.option(
    "--dataset",
    "datasets",
    multiple=True,
    metavar="NAME|PATH",
    help="Dataset name or folder of LETOR files; comma list or repeatable.",
)
@click.option(
    "--trials",
    type=click.IntRange(min=1),
    default=None,
    help="Budget: finished trials per ranker, fold and seed (the same for all).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Budget: seconds of trial wall time per ranker, fold and seed.",
)
@click.option(
    "--objective",
    default="ndcg@10",
    show_default=True,
    metavar="METRIC",
    help="Validation metric to maximise (empty queries = 1).",
)
@click.option(
    "--folds",
    default=None,
    metavar="all|1,3",
    help="Folds to tune and test (1-based); each fold is tuned on its own.",
)
@options.data_dir
@options.cache_dir
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="NAME.key=value",
    help="Fix a hyper-parameter (it is then not searched). Repeatable.",
)
@click.option(
    "--dataset-option",
    "dataset_options",
    multiple=True,
    metavar="[DATASET.]key=value",
    help="Option of a generated dataset.",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0, max=2**31 - 1),
    default=None,
    help="Seed of the data, the rankers and the TPE sampler (default 0).",
)
@click.option("--seeds", default=None, metavar="0,1,2|N", help="Tune and test once per seed.")
@click.option(
    "--threads", type=click.IntRange(min=1), default=None, help="Threads per ranker (default 1)."
)
@click.option(
    "--metrics",
    default=None,
    metavar="M1,M2,...",
    help="Test metrics recorded (default: run's defaults).",
)
@click.option(
    "--config",
    default=None,
    type=click.Path(dir_okay=False),
    help="A TOML plan; its [tuning.LABEL] tables override search spaces.",
)
@options.tracking_uri
@click.option("--no-mlflow", is_flag=True, help="Only save results locally.")
@options.results_dir
@options.output
@options.save_scores
@options.keep_models
@click.option(
    "--optuna-storage",
    default=None,
    metavar="URL",
    help="Optuna storage of the studies: a file ending in .journal (Optuna's "
    "journal file) or a storage URL such as sqlite:///path.db (default "
    "<results-dir>/../optuna.journal, i.e. mlflow_runs/optuna.journal).",
)
@click.option(
    "--force",
    is_flag=True,
    help="Redo the final fit and test evaluation of finished tuned cells (the "
    "studies are kept; delete the Optuna database to re-tune).",
)
@options.workers("tuned cells (one whole study, then the final fit, per task)")
@options.scheduler("the data home and the Optuna storage (or use an RDB --optuna-storage)")
@click.option("--score-repeats", type=click.IntRange(min=1), default=5, show_default=True)
@click.pass_context
def tune_command(
    ctx,
    rankers,
    datasets,
    trials,
    timeout,
    objective,
    folds,
    data_dir,
    cache_dir,
    params,
    dataset_options,
    seed,
    seeds,
    threads,
    metrics,
    config,
    tracking_uri,
    no_mlflow,
    results_dir,
    output,
    save_scores,
    keep_models,
    optuna_storage,
    force,
    workers,
    scheduler,
    score_repeats,
) -> None:
    """Tune each ranker's hyper-parameters with Optuna (TPE, seeded) on the VALIDATION split
    of each fold (datasets without one: 20% of the training queries, held out by a seeded
    GroupShuffleSplit), every ranker with the same budget; refit the best on the training
    split and evaluate it once on test. Rows are labelled LABEL[tuned,trials=N].

    Re-running the same command resumes: finished trials and finished tuned cells are kept.
    Trials are logged as MLflow child runs of the tuned configuration's parent run.

    --workers N / --scheduler ADDRESS run each tuned cell as one Dask task (one worker per
    study). The workers write the studies to the Optuna storage, so every worker must reach
    the same one: the default journal file is fine on one machine; on a cluster put it on
    the shared filesystem (--optuna-storage /shared/optuna.journal) or use an RDB URL
    (postgresql://...). Records and trials come back here and are saved and logged here.

    Exit codes: 0 ok, 1 a cell failed, 2 bad invocation, 130 interrupted.
    """
    from ltr_bench.evaluation.metrics import MetricKey
    from ltr_bench.run.plan import PlanError
    from ltr_bench.run.plan_options import CommandLine, build_plan
    from ltr_bench.tune.study import Budget

    try:
        objective = MetricKey.parse(objective).text
    except ValueError as exc:
        raise PlanError(f"--objective: {exc}") from None
    budget = Budget(trials, timeout)
    from ltr_bench.tune.storage import resolve_storage

    # before the plan and the data: a bad storage fails in milliseconds, naming the option
    results_root = Path(results_dir) if results_dir else Path.cwd() / "mlflow_runs" / "results"
    optuna_storage = resolve_storage(optuna_storage, results_root.parent)
    workers, scheduler = options.executor_choice(ctx, workers, scheduler)
    plan = build_plan(
        CommandLine(
            config=config,
            rankers=rankers,
            datasets=datasets,
            folds=folds,
            params=params,
            dataset_options=dataset_options,
            seed=seed,
            seeds=seeds,
            threads=threads,
            metrics=metrics,
            data_dir=data_dir,
            cache_dir=cache_dir,
        ),
        warn=lambda m: _err(f"warning: {m}"),
        local=scheduler is None,
    )
    plan.command = shlex.join(["ltr-bench", *sys.argv[1:]])
    from ltr_bench.run.executor_choice import make_executor

    executor = make_executor(workers=workers, scheduler=scheduler, threads=plan.threads)
    try:
        with options.sigterm_as_interrupt(), executor:
            code = _tune(
                plan,
                budget=budget,
                objective=objective,
                tracking_uri=tracking_uri,
                no_mlflow=no_mlflow,
                results_dir=results_dir,
                optuna_storage=optuna_storage,
                force=force,
                score_repeats=score_repeats,
                executor=executor,
                output=output,
                save_scores=save_scores,
                keep_models=keep_models,
            )
    except KeyboardInterrupt:
        _err(
            "\ninterrupted; finished trials and cells are saved; re-run the same command to resume"
        )
        code = EXIT_INTERRUPTED
    ctx.exit(code)


def _tune(
    plan,
    *,
    budget,
    objective,
    tracking_uri,
    no_mlflow,
    results_dir,
    optuna_storage,
    force,
    score_repeats,
    executor=None,
    output=None,
    save_scores=False,
    keep_models="none",
) -> int:
    """Tune every cell of ``plan`` not yet tuned (all with ``force``) on ``executor`` (in
    process when None; a Dask executor given here is left open, one made by the command is
    closed by it). Returns the exit code; Ctrl-C returns 130 with every finished cell saved."""
    from ltr_bench.cli.console import Console, ConsoleListener
    from ltr_bench.report.text import summary_table, tuning_table
    from ltr_bench.results import ResultStore
    from ltr_bench.run.cells import build_ranker, expand_plan
    from ltr_bench.run.executors import InProcessExecutor
    from ltr_bench.run.harness import save_or_fail
    from ltr_bench.tune.cell import TuneJob, tuned_cell
    from ltr_bench.tune.runner import tune_here, tune_remote
    from ltr_bench.tune.search_space import resolve_space
    from ltr_bench.tune.storage import resolve_storage

    console = Console()
    console.status("checking rankers and data ...", force=True)
    store = ResultStore(
        Path(results_dir) if results_dir else Path.cwd() / "mlflow_runs" / "results"
    )
    keep = options.kept_models_root(keep_models, store.root)
    expanded = expand_plan(
        plan, score_repeats=score_repeats, save_scores=save_scores, keep_models=keep
    )
    from ltr_bench.tracking.store import resolve_tracking_uri

    uri = None if no_mlflow else resolve_tracking_uri(tracking_uri)
    inputs = options.run_inputs(expanded, store.root, uri, optuna_storage)
    options.check_outputs(store.root, output, plan.cache_dir, inputs)
    if optuna_storage is None or optuna_storage.endswith(".journal"):
        # absolute: every local worker process opens this same file
        optuna_storage = resolve_storage(optuna_storage, store.root.parent)

    where = f"{plan.source}: tuning" if plan.source else "tuning"
    unknown = sorted(set(plan.tuning) - {r.display for r in plan.rankers})
    if unknown:
        from ltr_bench.run.plan import PlanError

        raise PlanError(
            f"{where}.{unknown[0]}: not a ranker of this run (rankers: "
            f"{', '.join(r.display for r in plan.rankers)})"
        )
    spaces = {}
    for r in plan.rankers:
        ranker = build_ranker(r.name, r.params, seed=plan.seed, threads=plan.threads)
        spaces[r.row_label] = resolve_space(
            r.display, ranker, override=plan.tuning.get(r.display), fixed=r.params, where=where
        )

    headline = "ndcg@10" if "ndcg@10" in expanded.metrics else expanded.metrics[0]
    listeners: list = [ConsoleListener(console, headline=headline, failure_log=store.failure_log)]
    listeners[0].keep_models = keep is not None  # a skipped cell without its model says so
    tracker = None
    mlflow_listener = None
    tracking_error = None
    if not no_mlflow:
        from ltr_bench.tracking import MlflowListener, Tracker, TrackingError, check_store

        tracker = Tracker(tracking_uri)
        try:
            check_store(tracking_uri, writes=True)  # the check every command runs
            tracker.check()
            mlflow_listener = MlflowListener(
                tracker,
                store,
                plan=plan.to_dict(),
                on_error=lambda m: console.line(f"warning: {m}"),
                on_note=lambda m: console.line(f"note: {m}"),
            )
            listeners.append(mlflow_listener)
        except TrackingError as exc:
            if isinstance(exc, UsageError):  # not a store to use: refuse the command
                raise
            tracking_error = str(exc)
            console.line(f"warning: {exc}; results will only be saved locally")

    cells = expanded.cells
    total = len(cells)
    console.line(
        f"tuning {total} cell(s) with a budget of {budget.text} each "
        f"(objective: validation {objective}); results in {store.root}; "
        f"studies in {optuna_storage}"
    )
    tcells = [
        tuned_cell(c, space=spaces[c.label or c.ranker], budget=budget, objective=objective)
        for c in cells
    ]
    job = TuneJob(
        spaces={t.key: spaces[c.label or c.ranker] for t, c in zip(tcells, cells)},
        budget=budget,
        storage=optuna_storage,
        objective=objective,
    )
    records, failed = [], []

    busy: list[str] = []
    trial_errors: list[str] = []

    def log_study(rec, trials=None) -> None:
        """Log the trials of ``rec``'s study as MLflow runs (idempotent); without ``trials``
        they are read back from the Optuna storage, so a re-run logs what an earlier run
        could not (its logging failed, or it was killed between saving and logging)."""
        if mlflow_listener is None or mlflow_listener.tracker is None or not rec.ok:
            return
        from ltr_bench.errors import LtrBenchError
        from ltr_bench.tracking.trials import log_trials
        from ltr_bench.tune.storage import study_trials

        try:
            if trials is None:
                name = rec.config.get("tuning", {}).get("study")
                trials = study_trials(optuna_storage, name) if name else None
                if trials is None:
                    return  # the study is gone (a new storage): nothing to log
            log_trials(mlflow_listener.tracker, rec, trials, objective=objective)
        except (LtrBenchError, OSError, ValueError) as exc:
            trial_errors.append(f"{rec.summary_line()}: {exc}")
            console.line(f"warning: trials not logged to MLflow: {exc}")

    def finish(tc, index: int) -> None:
        """The client's part, whoever tuned the cell: save first, then tell and log."""
        rec, result = tc.record, tc.result
        if tc.busy is not None:
            busy.append(tc.busy)
            console.line(f"warning: {tc.busy}")
            return
        if tc.reused:  # another process finished it while this one waited
            records.append(rec)
            for x in listeners:
                x.cell_finished(rec, index, total, skipped=True)
            log_study(rec)
            return
        save_or_fail(store, rec)
        if rec.ok:
            records.append(rec)
        else:
            store.log_failure(rec)
            failed.append(rec)
        for x in listeners:
            x.cell_finished(rec, index, total, skipped=False)
        if rec.ok and result is not None:
            log_study(rec, result.trials)

    own = executor is None
    executor = executor or InProcessExecutor()
    interrupted = False
    try:
        pending = []
        for i, tcell in enumerate(tcells, 1):  # finished tuned cells: skipped, not shipped
            previous = None if force else store.get(tcell.key)
            if previous is not None and "tuning" in previous.config:
                records.append(previous)
                for x in listeners:
                    x.cell_finished(previous, i, total, skipped=True)
                log_study(previous)  # trials an earlier run did not log
            else:
                pending.append((i, tcell))

        def existing(tcell):  # from disk: saved by the process this one waited for
            previous = None if force else store.reload(tcell.key)
            return previous if previous is not None and "tuning" in previous.config else None

        if executor.in_process:
            tune_here(pending, job, listeners, console, finish, total, existing=existing)
        elif pending:
            console.status(
                f"starting Dask: tuned cells will run {executor.describe()} ...", force=True
            )
            executor.client()  # an unreachable scheduler fails here, before any study
            console.line(
                f"tuned cells run {executor.describe()}; studies in "
                f"{optuna_storage} (every worker must see it)"
            )
            tune_remote(executor, pending, job, listeners, finish, total, status=console.status)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if own:
            executor.close()
    if mlflow_listener is not None:
        mlflow_listener.close(interrupted=interrupted)
        tracking_error = mlflow_listener.error or tracking_error
    console.clear()
    for note in store.damage_notes():
        _err(f"warning: {note} (not used; a cell it held is computed again, beside it)")
    position = {t.key: k for k, t in enumerate(tcells)}
    records.sort(key=lambda r: position.get(r.key, len(position)))  # plan order, not arrival
    output_error = options.write_records_output(output, [*records, *failed], store.root)
    if records:
        click.echo(summary_table(records, expanded.metrics, width=options.width(False)))
        click.echo(tuning_table(records))
    if output_error:
        _err(output_error)
    if interrupted:
        _err(
            f"interrupted; {len(records)} tuned cell(s) and every finished trial are saved; "
            f"re-run the same command to resume"
        )
        return EXIT_INTERRUPTED
    code = EXIT_FAILED if output_error else EXIT_OK
    if failed:
        _err(
            f"{len(failed)} of {total} cell(s) failed: "
            + "; ".join(f"{r.summary_line()} ({r.error_stage}: {r.error})" for r in failed[:5])
            + f". Tracebacks: {store.failure_log}"
        )
        code = EXIT_FAILED
    if busy:
        _err(f"{len(busy)} tuned cell(s) skipped: " + "; ".join(busy[:3]))
        code = EXIT_FAILED
    if trial_errors and not tracking_error:
        tracking_error = (
            f"trials of {len(trial_errors)} tuned cell(s) not logged ({trial_errors[0]})"
        )
    if tracking_error:
        _err(
            f"MLflow logging failed: {tracking_error}; results are in {store.root}; re-run "
            "the same command to log them (nothing is recomputed: the trials are read back "
            f"from {optuna_storage})"
        )
        code = EXIT_FAILED
    return code

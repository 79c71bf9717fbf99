"""Option declarations shared by several commands (declared once, used everywhere)."""

from __future__ import annotations

import contextlib
import os

import click

from ltr_bench.errors import LtrBenchError, UsageError


class Command(click.Command):
    """A command whose :class:`~ltr_bench.errors.LtrBenchError` becomes ``Error: <message>``
    on stderr and the error's exit code (no traceback), whether it runs inside the
    ``ltr-bench`` group or on its own."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except LtrBenchError as exc:
            click.echo(f"Error: {exc}", err=True)
            ctx.exit(exc.exit_code)


CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

tracking_uri = click.option(
    "--tracking-uri",
    default=None,
    metavar="URI",
    help="MLflow store (else $MLFLOW_TRACKING_URI, else sqlite:///<cwd>/mlflow_runs/mlflow.db).",
)

results_dir = click.option(
    "--results-dir",
    default=None,
    type=click.Path(file_okay=False),
    help="Local results (default <cwd>/mlflow_runs/results).",
)

data_dir = click.option(
    "--data-dir",
    default=None,
    type=click.Path(file_okay=False),
    help="Data home (else $LTR_BENCH_DATA, else ~/ltr_bench_data).",
)


wide = click.option(
    "--wide",
    is_flag=True,
    help="Every column whole, however wide (a table otherwise fits $COLUMNS, else 120 "
    "columns, leaving out the columns it names on stderr).",
)


def width(wide: bool) -> int | None:
    """The width a table fits (:func:`ltr_bench.report.fit.table_width`); None with
    ``--wide``."""
    from ltr_bench.report.fit import table_width

    return None if wide else table_width()


def echo_table(fitted, how: str = "--wide") -> None:
    """A fitted table (:func:`ltr_bench.report.fit.fit_table`) to stdout and, when columns
    were left out to fit, the note naming them and ``how`` to see them to stderr."""
    from ltr_bench.report.fit import left_out_note, table_width

    click.echo(fitted.text)
    note = left_out_note(fitted, table_width(), how)
    if note:
        click.echo(note, err=True)


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Inside the block SIGTERM (``kill``, a batch scheduler ending a job) raises
    ``KeyboardInterrupt`` like Ctrl-C, so a command stops the same orderly way: finished
    cells and trials kept, exit 130. The previous handler is restored afterwards."""
    import signal

    def on_term(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def workers(what: str):
    """``--workers N``: a local Dask cluster of N worker processes (``run`` and ``tune``)."""
    return click.option(
        "--workers",
        type=click.IntRange(min=1),
        default=None,
        metavar="N",
        help=f"Run {what} in parallel on a local Dask cluster of N worker processes, each "
        "running one at a time with --threads threads. Results are identical to an "
        "in-process run.",
    )


def scheduler(shared: str):
    """``--scheduler ADDRESS`` (default ``$DASK_SCHEDULER_ADDRESS``): a running cluster."""
    return click.option(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        envvar="DASK_SCHEDULER_ADDRESS",
        help="Run on the running Dask cluster at ADDRESS (e.g. tcp://host:8786; default "
        f"$DASK_SCHEDULER_ADDRESS). Workers read {shared}, which must be on a filesystem "
        "they share.",
    )


def executor_choice(ctx, workers_value, scheduler_value):
    """(workers, scheduler) to use: ``--workers`` typed now wins over a scheduler address
    that came only from ``$DASK_SCHEDULER_ADDRESS``; both typed is refused later by
    :func:`ltr_bench.run.executor_choice.make_executor`."""
    if workers_value is not None and (
        ctx.get_parameter_source("scheduler") == click.core.ParameterSource.ENVIRONMENT
    ):
        return workers_value, None
    return workers_value, scheduler_value


cache_dir = click.option(
    "--cache-dir",
    default=None,
    type=click.Path(file_okay=False),
    help="Parsed-data cache (else $LTR_BENCH_CACHE, else ~/.cache/ltr_bench).",
)


output = click.option(
    "--output",
    default=None,
    type=click.Path(dir_okay=False),
    help="Also write the results as JSON: one record per (ranker, dataset, fold, "
    "seed), the same fields as the local result files.",
)

save_scores = click.option(
    "--save-scores",
    is_flag=True,
    help="Keep each cell's test scores as a TREC run file (qid Q0 docid rank score "
    "tag; docid = the data file's #docid = ... when its lines have one, else the row's "
    "position in the split) beside its result and in MLflow, for trec_eval, ranx or the "
    "LETOR scripts.",
)

keep_models = click.option(
    "--keep-models",
    type=click.Choice(["all", "none"]),
    default="all",
    show_default=True,
    help="Keep each finished cell's fitted model beside its result (and in MLflow as an "
    "MLflow Model), for `ltr-bench predict`; none: keep no model.",
)


def kept_models_root(choice: str, results_root) -> str | None:
    """Where cells keep their models (``expand_plan(keep_models=...)``): the results folder
    as an absolute path (Dask workers run elsewhere), or None for ``--keep-models none``."""
    from pathlib import Path

    return None if choice == "none" else str(Path(results_root).absolute())


def write_records_output(output: str | None, records, results_root) -> str | None:
    """``--output``: the records as JSON (:func:`ltr_bench.results.records_json`) through the
    one output writer. Returns the error message (the results stay in ``results_root``),
    None when written or not asked for."""
    if not output:
        return None
    from ltr_bench.results import OutputError, records_json, write_output

    try:
        write_output(output, records_json(records), what="--output")
    except OutputError as exc:
        return f"{exc}; the results are saved in {results_root}"
    return None


def run_inputs(
    expanded, results_root, tracking_uri: str | None = None, optuna_storage: str | None = None
) -> list:
    """``(path, description)`` of everything a run reads: the dataset folders, the files
    ranker parameters name, the plan file, the results store, the MLflow database and (for
    ``tune``) the Optuna journal file."""
    from pathlib import Path

    out: list = [(Path(results_root), "the results store (--results-dir)")]
    if optuna_storage and "://" not in optuna_storage:  # a journal file
        out.append((Path(optuna_storage), "the Optuna journal (--optuna-storage)"))
    if expanded.plan.source:
        out.append((Path(expanded.plan.source), "the plan file"))
    for cell in expanded.cells:
        folder = cell.dataset_identity.get("path")
        if folder:
            out.append((Path(folder), f"the data of {cell.dataset}"))
        for name in cell.param_files or {}:
            out.append((Path(str(cell.params[name])), f"the file of {cell.ranker}.{name}"))
    if tracking_uri is not None:
        from ltr_bench.tracking.store import sqlite_path

        db = sqlite_path(tracking_uri)
        if db is not None:
            out += [(db, "the MLflow store"), (db.parent / "artifacts", "the MLflow artifacts")]
    return list(dict.fromkeys(out))


def report_inputs(results_dir: str | None, tracking_uri: str | None) -> list:
    """``(path, description)`` of what ``report`` reads: the results folder, else the MLflow
    database and its artifacts."""
    from pathlib import Path

    if results_dir:
        return [(Path(results_dir), "the results store (--results-dir)")]
    from ltr_bench.tracking.store import resolve_tracking_uri, sqlite_path

    db = sqlite_path(resolve_tracking_uri(tracking_uri))
    if db is None:
        return []
    return [(db, "the MLflow store"), (db.parent / "artifacts", "the MLflow artifacts")]


def check_outputs(results_root, output: str | None, cache_dir: str | None, inputs=()) -> None:
    """Every place the run writes to, tried before the first fit (exit 2 naming the option):
    the results folder, --output (:func:`ltr_bench.cli.outputs.check_output_paths`: it must
    not replace one of ``inputs``, see :func:`run_inputs`) and the parsed-data cache. An
    unusable default cache only warns: the data is then parsed in memory."""
    from ltr_bench.cli.outputs import check_output_paths
    from ltr_bench.results import check_writable_dir

    check_writable_dir(results_root, "--results-dir")
    check_output_paths([(output, "--output")], inputs)
    from ltr_bench.data import resolve_cache_dir

    cache = resolve_cache_dir(cache_dir)
    try:
        check_writable_dir(cache, "--cache-dir" if cache_dir else "the parsed-data cache")
    except UsageError as exc:
        if cache_dir or os.environ.get("LTR_BENCH_CACHE"):
            raise
        click.echo(f"warning: {exc} Files are parsed in memory (again on every run).", err=True)


def one_dataset_options(what: str):
    """``--seed`` and ``--dataset-option`` of a command that reads one dataset split the way
    ``run`` made it (``predict --data``, ``export --check``): ``what`` names that data in the
    help. Parse the options with :func:`parse_one_dataset_options`."""

    def apply(command):
        command = click.option(
            "--dataset-option",
            "dataset_options",
            multiple=True,
            metavar="key=value",
            help=f"Option of the {what} dataset, as given to run. Repeatable.",
        )(command)
        return click.option(
            "--seed",
            type=click.IntRange(min=0, max=2**31 - 1),
            default=0,
            show_default=True,
            help=f"Seed of a generated {what} dataset (as the run that fitted the model).",
        )(command)

    return apply


def parse_one_dataset_options(assignments) -> dict:
    """``key=value`` as ``run`` parses ``--dataset-option`` (one dataset here: no scope)."""
    from ltr_bench.run.plan import PlanError, parse_assignment

    out = {}
    for text in assignments:
        try:
            name, key, value = parse_assignment(text, option="--dataset-option", scoped=False)
        except PlanError as exc:
            raise UsageError(str(exc)) from None
        if name is not None:
            raise UsageError(f"--dataset-option {text!r}: expected key=value (one dataset)")
        out[key] = value
    return out

"""Option declarations shared by several commands (declared once, used everywhere)."""

from __future__ import annotations

import contextlib

import click

from ltr_bench.errors import LtrBenchError


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
    :func:`ltr_bench.run.executors.make_executor`."""
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

"""Option declarations shared by several commands (declared once, used everywhere)."""

from __future__ import annotations

import click

from .errors import LtrBenchError


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
    "--tracking-uri", default=None, metavar="URI",
    help="MLflow store (else $MLFLOW_TRACKING_URI, else sqlite:///<cwd>/mlflow_runs/mlflow.db).")

results_dir = click.option(
    "--results-dir", default=None, type=click.Path(file_okay=False),
    help="Local results (default <cwd>/mlflow_runs/results).")

data_dir = click.option(
    "--data-dir", default=None, type=click.Path(file_okay=False),
    help="Data home (else $LTR_BENCH_DATA, else ~/ltr_bench_data).")

cache_dir = click.option(
    "--cache-dir", default=None, type=click.Path(file_okay=False),
    help="Parsed-data cache (else $LTR_BENCH_CACHE, else ~/.cache/ltr_bench).")

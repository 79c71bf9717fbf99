"""The ``ltr-bench`` command line: ``run``, ``rankers``, ``datasets``, ``ui``, ``report``,
``models``, ``predict``, ...

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

import click

from ltr_bench import __version__
from ltr_bench.cli import options

CONTEXT = options.CONTEXT


class _Group(click.Group):
    """Every command of the group turns :class:`LtrBenchError` into ``Error: <message>``
    and its exit code (:class:`ltr_bench.cli.options.Command`)."""

    command_class = options.Command


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
      ltr-bench models --best
      ltr-bench predict --model runs:/<run id>/model --data queries.txt
      ltr-bench export --model runs:/<run id>/model --format onnx --output model.onnx
      ltr-bench ui --port 5000
    """


def _register() -> None:
    """Add every command to the group (each lives in its own module of this package)."""
    from ltr_bench.cli.cache import cache_group
    from ltr_bench.cli.catalog import datasets_cmd, download_cmd, rankers_cmd
    from ltr_bench.cli.export import export_command
    from ltr_bench.cli.models import models_command
    from ltr_bench.cli.predict import predict_command
    from ltr_bench.cli.published import published_command
    from ltr_bench.cli.report import report_command
    from ltr_bench.cli.run import run_cmd
    from ltr_bench.cli.tune import tune_command
    from ltr_bench.cli.ui import ui_cmd

    for command in (
        run_cmd,
        rankers_cmd,
        datasets_cmd,
        download_cmd,
        ui_cmd,
        report_command,
        cache_group,
        tune_command,
        published_command,
        predict_command,
        models_command,
        export_command,
    ):
        main.add_command(command)


_register()


def console_main() -> None:
    """The ``ltr-bench`` console script (and ``python -m ltr_bench``): :data:`main`, then a
    quick exit.

    When a command has returned, everything it wrote is closed (results are written
    atomically; MLflow's logging process has ended or was left to finish in the background;
    a Dask cluster is closed by the command)
    and the exit handlers registered with :mod:`atexit` (multiprocessing's, logging's, the
    Dask rankers' clusters) are run here. What is skipped is Python's teardown of every
    imported module, which after scikit-learn, LightGBM and XGBoost takes ~0.3 s on this
    2-core machine and serves nothing. ``main`` itself (tests, embedding) exits normally.
    """
    import atexit
    import os
    import sys

    code: str | int | None
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (ltr-bench ... | head): nothing to keep
            pass
    atexit._run_exitfuncs()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    console_main()

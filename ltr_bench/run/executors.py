"""Where cells run: in this process (the default) or on a Dask cluster.

An :class:`Executor` turns cells into :class:`~ltr_bench.results.ResultRecord` objects by
calling :func:`ltr_bench.run.unit.run_cell` somewhere. It never writes anything: records come
back to the client, and :func:`ltr_bench.run.harness.run_plan` saves each one to the result
store and then tells the listeners (MLflow), exactly as for an in-process run. So the store
has one writer and resume works the same whatever the executor.

``map_cells(cells, fn=...)`` runs another picklable function of the cell instead (``ltr-bench
tune`` runs :class:`ltr_bench.tune.cell.TuneJob`: a whole study, then the final fit); what it
returns comes back unchanged, and ``on_failure(cell, exc, stage)`` makes the item of a cell
whose function never returned (its worker died, it raised). The caller still does all the
writing.

``progress(position, done, total, message)`` hears the cells' own progress reports
(:func:`ltr_bench.progress.report_progress`: a ranker's boosting rounds, a fold being parsed on
its worker, a study's finished trials), always from the thread that iterates ``map_cells``.

* :class:`InProcessExecutor` (here) - today's behaviour. ``run_plan`` runs its own fold loop
  for it (one loaded fold shared by all rankers of that fold);
  :meth:`InProcessExecutor.map_cells` exists for other callers.
* :class:`~ltr_bench.run.dask_executor.DaskExecutor` - a ``distributed.LocalCluster`` or an
  existing cluster (threads, progress events and faults are described in its module).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ltr_bench.errors import LtrBenchError
from ltr_bench.progress import progress_handler

if TYPE_CHECKING:  # scikit-learn comes with the cells' module: not needed to start
    from ltr_bench.run.cells import Cell

__all__ = [
    "Executor",
    "ExecutorError",
    "InProcessExecutor",
    "WorkerDied",
]


class ExecutorError(LtrBenchError):
    """The executor cannot run cells (scheduler unreachable, Dask missing); exit code 1."""


class WorkerDied(RuntimeError):
    """The reason in the failed record of a cell whose worker kept dying."""


class Executor:
    """Runs cells somewhere and hands their records back (never saves them).

    ``in_process`` tells :func:`~ltr_bench.run.harness.run_plan` whether to use its own fold loop
    (True) or to hand the pending cells to :meth:`map_cells`. Executors are context managers;
    :meth:`close` releases what they started (a local cluster).
    """

    in_process: bool = False

    def map_cells(
        self,
        cells: Sequence[Cell],
        *,
        started: Callable[[int], None] | None = None,
        fn: Callable[[Cell], Any] | None = None,
        on_failure: Callable[[Cell, BaseException, str], Any] | None = None,
        progress: Callable[[int, int, int, str], None] | None = None,
        cost: Callable[[Cell], float | None] | None = None,
    ) -> Iterator[tuple[int, Any]]:
        """Run ``fn(cell)`` for each of ``cells``; yield ``(position in cells, result)`` as
        each one finishes (any order). ``started(position)`` is called when a cell starts.
        Closing the iterator early (an exception in the caller, Ctrl-C) cancels the cells
        not yet yielded.

        ``fn``: a picklable function of one cell (default :func:`ltr_bench.run.unit.run_cell`,
        whose result must then be a ``ResultRecord``); with ``fn`` given its result is
        yielded unchanged. ``on_failure(cell, exc, stage)`` makes the item yielded for a
        cell whose ``fn`` did not return: stage ``"worker"`` with a :class:`WorkerDied`
        (its worker kept dying, or the cluster dropped it), stage ``"executor"`` with the
        exception ``fn`` raised. Default :func:`ltr_bench.run.unit.failed_record`. Ctrl-C is
        never turned into an item: it propagates.

        ``progress(position, done, total, message)``: the progress reports made while a
        cell's function runs (see the module), called from the caller's thread only, in the
        order a cell made them (throttled on Dask: not every report arrives, the last does),
        never after that cell was yielded. The default ``fn`` passes them on as
        ``run_cell(cell, progress=...)``; a given ``fn`` reaches them through
        :func:`ltr_bench.progress.report_progress`.

        ``cost(cell)``: its estimated seconds, or None when unknown
        (:class:`ltr_bench.run.cost.CellCosts`); an executor that runs several cells at once
        starts the longest first (unknown ones before them), asking again each time a slot
        frees, so estimates that improve during the run are used."""
        raise NotImplementedError

    def describe(self) -> str:
        """One line for the console: where cells run."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what this executor started."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class InProcessExecutor(Executor):
    """Cells one after another in this process (the default)."""

    in_process = True

    def map_cells(self, cells, *, started=None, fn=None, on_failure=None, progress=None, cost=None):
        given, (fn, on_failure) = fn, _defaults(fn, on_failure)  # cost: no use in order
        for i, cell in enumerate(cells):
            if started is not None:
                started(i)
            try:
                if progress is None:
                    result = fn(cell)
                else:
                    result = _call_reporting(given, cell, functools.partial(progress, i))
            except Exception as exc:  # noqa: BLE001 - as a worker's exception: one item
                result = on_failure(cell, exc, "executor")
            yield i, result

    def describe(self) -> str:
        return "in this process"


def _defaults(fn, on_failure):
    """``fn`` and ``on_failure`` of :meth:`Executor.map_cells`, defaults filled in."""
    from ltr_bench.run.unit import failed_record, run_cell

    return fn or run_cell, on_failure or failed_record


def _call_reporting(fn, cell: Cell, handler) -> Any:
    """``fn(cell)`` with ``handler(done, total, message)`` receiving its progress reports;
    ``fn`` None is :func:`~ltr_bench.run.unit.run_cell`, which installs the handler itself
    around the fit (and would otherwise install none there)."""
    from ltr_bench.run.unit import run_cell

    with progress_handler(handler):
        return run_cell(cell, progress=handler) if fn is None else fn(cell)

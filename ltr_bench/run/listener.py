"""The callbacks of a run: :class:`Listener` (what :func:`ltr_bench.run.harness.run_plan`
tells the outside, all no-ops by default) and :class:`Listeners` (several heard in order).

The CLI's console prints through one; :class:`ltr_bench.tracking.MlflowListener` logs
through another. A listener hears of an ok record only after it is saved locally.

Claims: a cell this process computed (or found finished while it held the cell's claim) is
announced with :meth:`Listener.hold_claim` just before :meth:`Listener.cell_finished`; the
claim, and with it every other process waiting for the cell, stays held until each listener
has called the ``release`` it was given (at once, or later from any thread). So a listener
that logs the record (MLflow) keeps a concurrent run from logging the same cell at the same
time, and the cell's claim covers its whole journey: computed, saved, logged.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ltr_bench.results import ResultRecord
from ltr_bench.run.cells import Cell

__all__ = ["Listener", "Listeners"]


class Listener:
    """Callbacks of :func:`run_plan` (all optional no-ops); the CLI prints and logs here."""

    def fold_loading(self, dataset: str, fold: int) -> None:
        """About to load (or generate) a fold."""

    def fold_progress(self, dataset: str, fold: int, done: int, total: int, message: str) -> None:
        """Progress of a long parse or generation (see :mod:`ltr_bench.progress`)."""

    def cell_started(self, cell: Cell, index: int, total: int) -> None:
        """``index`` is 1-based over all cells of the plan."""

    def cell_progress(self, cell: Cell, done: int, total: int, message: str) -> None:
        """The ranker reported progress (see :mod:`ltr_bench.progress`)."""

    def cell_finished(self, record: ResultRecord, index: int, total: int, *, skipped: bool) -> None:
        """A cell finished (ok: already saved locally; failed: logged) or was skipped."""

    def hold_claim(self, record: ResultRecord, release: Callable[[], None]) -> None:
        """Called before :meth:`cell_finished` for a record whose cell this process holds
        the claim of: call ``release()`` (once, from any thread) when done with the record.
        The default releases at once."""
        release()


class Listeners(Listener):
    """Several listeners heard in order (e.g. the console, then MLflow)."""

    def __init__(self, *listeners):
        self.listeners = [x for x in listeners if x is not None]

    def __getattribute__(self, name: str):
        if name in (
            "fold_loading",
            "fold_progress",
            "cell_started",
            "cell_progress",
            "cell_finished",
        ):
            targets = object.__getattribute__(self, "listeners")

            def fan_out(*args, **kwargs):
                for target in targets:
                    getattr(target, name)(*args, **kwargs)

            return fan_out
        return object.__getattribute__(self, name)

    def hold_claim(self, record: ResultRecord, release: Callable[[], None]) -> None:
        """Each listener gets a part of ``release``; the claim is released when every part
        was called (a listener without ``hold_claim`` releases its part at once)."""
        targets = self.listeners
        left = [len(targets)]
        lock = threading.Lock()

        def part() -> None:
            with lock:
                left[0] -= 1
                last = left[0] == 0
            if last:
                release()

        if not targets:
            release()
        for target in targets:
            hold = getattr(target, "hold_claim", None)
            if hold is None:
                part()
            else:
                hold(record, _once(part))


def _once(fn: Callable[[], None]) -> Callable[[], None]:
    """``fn`` callable at most once (a second call does nothing)."""
    called = [False]
    lock = threading.Lock()

    def call() -> None:
        with lock:
            if called[0]:
                return
            called[0] = True
        fn()

    return call

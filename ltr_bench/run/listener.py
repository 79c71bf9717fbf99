"""The callbacks of a run: :class:`Listener` (what :func:`ltr_bench.run.harness.run_plan`
tells the outside, all no-ops by default) and :class:`Listeners` (several heard in order).

The CLI's console prints through one; :class:`ltr_bench.tracking.MlflowListener` logs
through another. A listener hears of an ok record only after it is saved locally.
"""

from __future__ import annotations

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

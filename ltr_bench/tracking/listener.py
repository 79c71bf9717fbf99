"""The MLflow logging policy during a run: :class:`MlflowListener`, a harness listener
(:class:`ltr_bench.run.listener.Listener`'s callbacks) that logs through a
:class:`~ltr_bench.tracking.writer.Tracker`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ltr_bench.results import ResultRecord
from ltr_bench.tracking.store import TrackingError, message
from ltr_bench.tracking.writer import Tracker

__all__ = ["MlflowListener"]


class MlflowListener:
    """The MLflow logging policy during ``run_plan``: every finished record (computed now or
    found finished) is logged unless already there; a failed cell marks its parent FAILED; a
    store that stops answering turns logging off for the rest of the run (the results stay in
    the local store) and is reported by :attr:`error`.

    ``store`` (a :class:`~ltr_bench.results.ResultStore`) is only read: per-query values of
    records found finished, and every finished fold of a parent for its aggregates.
    ``on_error(message)`` hears of the first logging failure.
    """

    def __init__(
        self,
        tracker: Tracker,
        store,
        *,
        plan: dict[str, Any] | None = None,
        plan_toml: str | None = None,
        on_error: Callable[[str], None] | None = None,
    ):
        self.tracker: Tracker | None = tracker
        self.store = store
        self.plan = plan
        self.plan_toml = plan_toml
        self.on_error = on_error
        self.error: str | None = None

    def fold_loading(self, dataset: str, fold: int) -> None:
        pass

    def fold_progress(self, *args) -> None:
        pass

    def cell_started(self, *args) -> None:
        pass

    def cell_progress(self, *args) -> None:
        pass

    def cell_finished(self, record: ResultRecord, index: int, total: int, *, skipped: bool) -> None:
        if self.tracker is None:
            return
        if not record.ok:
            self.tracker.mark_failed(record.plan_key)
            return
        if record.per_query is None:
            self.store.per_query(record)
        try:
            self.tracker.log_record(record, plan=self.plan, plan_toml=self.plan_toml)
        except TrackingError as exc:
            self._failed(str(exc))

    def attach_report(self, dataset: str, path: Path) -> None:
        """Attach a report file (e.g. the HTML report) under ``report/`` to every parent run
        of ``dataset`` this invocation touched."""
        if self.tracker is None:
            return
        tracker = self.tracker
        try:
            for plan_key, run_id in tracker._parents.items():
                recs = tracker._parent_records.get(plan_key, {})
                if any(r.dataset == dataset for r in recs.values()):
                    tracker.client.log_artifact(run_id, str(path), artifact_path="report")
        except Exception as exc:  # noqa: BLE001 - the report is a convenience, not a result
            self._failed(message(tracker.uri, f"attach {path.name}", exc))

    def _failed(self, text: str) -> None:
        self.error = text
        self.tracker = None  # keep computing; everything stays in the local results
        if self.on_error is not None:
            self.on_error(text)

    def close(self, *, interrupted: bool = False) -> None:
        """End the parent runs touched by this invocation (see :meth:`Tracker.finish`)."""
        if self.tracker is None:
            return
        try:
            self.tracker.finish(
                interrupted=interrupted, all_records=lambda key: self.store.records(plan_key=key)
            )
        except TrackingError as exc:
            self._failed(str(exc))

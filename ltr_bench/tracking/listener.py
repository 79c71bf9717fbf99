"""The MLflow logging policy during a run: :class:`MlflowListener`, a harness listener
(:class:`ltr_bench.run.listener.Listener`'s callbacks) that logs through a
:class:`~ltr_bench.tracking.writer.Tracker`.

What it guarantees:

* Local results first: a record reaches this listener only after it is saved locally, so a
  killed run loses nothing: a re-run finds the record finished and logs it then.
* Where it went, noted locally: once a record is in MLflow its ids (experiment, parent and
  fold run, logged model) are noted beside the local record, under the cell's claim
  (:meth:`~ltr_bench.results.ResultStore.note_mlflow`; the record file is never rewritten).
* One log per cell: the cell's claim is held (:meth:`MlflowListener.hold_claim`) until its run
  is in MLflow; with ``claim_found`` a record found finished (whose claim the harness does not
  hold) is logged while holding its claim, taken here, so two runs never log one record at
  the same time.

Logging happens on the caller's thread. ``ltr-bench run`` calls it in a process of its own
(:mod:`ltr_bench.cli.mlflow_process`), which overlaps the fits on another core. A background
thread of the run's process was tried and
measured (``docs/performance.md``): MLflow's Python work holds the GIL that a ranker's
Python-driven training loop (LightGBM, XGBoost: one call into native code per boosting round)
needs between rounds, so the fit of a cell logged beside took 1.3-2.2 s instead of 0.7 s and
its recorded ``fit_seconds`` were inflated. Timings are what a benchmark reports, so logging
never shares the run's process (and its GIL) with the timed stages.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ltr_bench.results import ResultRecord
from ltr_bench.tracking.as_logged import artifact_binding
from ltr_bench.tracking.store import TrackingError, message
from ltr_bench.tracking.writer import Tracker

__all__ = ["MlflowListener"]

#: how long to wait for the claim of a record found finished before logging it all the same
#: (the tracker finds a run logged meanwhile by its key and finish time)
CLAIM_WAIT_SECONDS = 30.0


class MlflowListener:
    """The MLflow logging policy during ``run_plan``: every finished record (computed now or
    found finished) is logged unless already there; a failed cell marks its parent FAILED; a
    store that stops answering turns logging off for the rest of the run (the results stay in
    the local store) and is reported by :attr:`error`.

    ``store`` (a :class:`~ltr_bench.results.ResultStore`) is read for per-query values of
    records found finished and every finished fold of a parent for its aggregates.
    ``on_error(message)`` hears of the first logging failure. ``claim_found``: log a record
    this process did not claim under its claim (``ltr-bench run``; see the module).
    ``on_note(message)`` hears of what the tracker repaired: a fold run whose artifacts were
    missing, damaged or different from the local record (logged again), a parent run left
    RUNNING by a process that is gone (ended).

    A store that stops answering mid-run leaves this invocation's parent runs open; at
    :meth:`close` the listener tries once more (the store may be back) and ends them FAILED
    with the tag ``ltr_bench_end_reason``; if the store is still gone, the next invocation
    on it ends them (:mod:`ltr_bench.tracking.owners`).
    """

    def __init__(
        self,
        tracker: Tracker,
        store,
        *,
        plan: dict[str, Any] | None = None,
        plan_toml: str | None = None,
        on_error: Callable[[str], None] | None = None,
        claim_found: bool = False,
        on_note: Callable[[str], None] | None = None,
    ):
        self.tracker: Tracker | None = tracker
        self._stopped: Tracker | None = None  # the tracker, after logging stopped mid-run
        self.on_note = on_note
        self.store = store
        self.plan = plan
        self.plan_toml = plan_toml
        self.on_error = on_error
        self.claim_found = claim_found
        self.error: str | None = None
        self._held: dict[str, Callable[[], None]] = {}  # key -> release of its claim
        self._notes()

    def _notes(self) -> None:
        tracker = self.tracker or self._stopped
        if tracker is None or not tracker.notes:
            return
        notes, tracker.notes = tracker.notes, []
        if self.on_note is not None:
            for note in notes:
                self.on_note(note)

    def fold_loading(self, dataset: str, fold: int) -> None:
        pass

    def fold_progress(self, *args) -> None:
        pass

    def cell_started(self, *args) -> None:
        pass

    def cell_progress(self, *args) -> None:
        pass

    def hold_claim(self, record: ResultRecord, release: Callable[[], None]) -> None:
        """Keep the claim of ``record``'s cell until its run is in MLflow (or logging is
        off); :meth:`cell_finished` follows."""
        if self.tracker is None:
            release()
        else:
            self._held[record.key] = release

    def cell_finished(self, record: ResultRecord, index: int, total: int, *, skipped: bool) -> None:
        release = self._held.pop(record.key, None)
        claim = None
        try:
            if self.tracker is None:
                return
            if not record.ok:
                self.tracker.mark_failed(record.plan_key)
                return
            if release is None and self.claim_found:
                claim = self._claim(record)
            if record.per_query is None:
                self.store.per_query(record)
            try:
                self.tracker.log_record(record, plan=self.plan, plan_toml=self.plan_toml)
            except TrackingError as exc:
                self._failed(str(exc))
            else:
                self._note_ids(record)
            self._notes()
        finally:
            if claim is not None:
                claim.release()
            if release is not None:
                release()

    def _note_ids(self, record: ResultRecord) -> None:
        """Note beside the local record where it is in MLflow
        (:meth:`~ltr_bench.results.ResultStore.note_mlflow`: a file of its own, never the
        record's), under the cell's claim, with its fold run's artifacts as they are now
        (:func:`~ltr_bench.tracking.as_logged.artifact_binding`: a re-run proves them
        unchanged without opening MLflow); a note that cannot be written is said."""
        ids = self.tracker.logged.get(record.key) if self.tracker is not None else None
        if ids is None:
            return
        binding = None
        if self.tracker is not None:  # the artifacts just checked or logged, as they are
            binding = artifact_binding(self.tracker.uri, ids["run_id"])
        try:
            self.store.note_mlflow(record, ids, binding)
        except Exception as exc:  # noqa: BLE001 - the results and MLflow's copy stand
            if self.on_note is not None:
                self.on_note(f"the MLflow ids of {record.summary_line()} are not noted: {exc}")

    def _claim(self, record: ResultRecord):
        """The claim of a record found finished (another run may be logging it now)."""
        try:
            return self.store.wait_claim(
                record.key, record.summary_line(), timeout=CLAIM_WAIT_SECONDS
            )
        except Exception:  # noqa: BLE001 - log it all the same (see CLAIM_WAIT_SECONDS)
            return None

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
        if self.tracker is not None:
            self._stopped = self.tracker
        self.tracker = None  # keep computing; everything stays in the local results
        for release in self._held.values():
            release()
        self._held.clear()
        if self.on_error is not None:
            self.on_error(text)

    def close(self, *, interrupted: bool = False) -> None:
        """End the parent runs touched by this invocation (see :meth:`Tracker.finish`)."""
        for release in self._held.values():  # records never announced (an interruption)
            release()
        self._held.clear()
        records = lambda key: self.store.records(plan_key=key)  # noqa: E731
        if self.tracker is not None:
            try:
                self.tracker.finish(interrupted=interrupted, all_records=records)
                self._notes()
                return
            except TrackingError as exc:
                self._failed(str(exc))
        tracker, self._stopped = self._stopped, None
        if tracker is None:
            return
        # logging stopped during the run: one more try to end the parents (the store may be
        # back); if it is still gone, the next invocation on it ends them (owners.py)
        try:
            tracker.reconnect()
            tracker.finish(
                interrupted=interrupted,
                all_records=records,
                reason=f"MLflow logging stopped during the run ({self.error}); fold runs may "
                "be missing: re-run the same command to log them from the local results",
            )
        except TrackingError:
            pass
        else:
            self._stopped = tracker
            self._notes()
            self._stopped = None

"""The MLflow logging policy during a run: :class:`MlflowListener`, a harness listener
(:class:`ltr_bench.run.listener.Listener`'s callbacks) that logs through a
:class:`~ltr_bench.tracking.writer.Tracker`.

In the background (``background=True``, what ``ltr-bench run`` uses) one thread of this
process does all the MLflow work in order: opening the store (importing MLflow takes a
second or more), logging each record, ending the parent runs. The harness does not wait
for it: the next cell is fitted while the last one is logged. The thread starts working when
the first cell starts (or a record arrives): fits run in native code that releases Python's
GIL, so MLflow's start-up then runs beside the fit instead of slowing the imports and data
loading of the main thread, which need the GIL too. What stays true:

* Local results first: a record reaches this listener only after it is saved locally, so a
  killed run loses nothing: a re-run finds the record finished and logs it then.
* One log per cell: the cell's claim is held (:meth:`hold_claim`) until its run is in
  MLflow; a record this process found finished without holding its claim is logged while
  holding the claim, taken here (so two runs never log one record at the same time).
* Errors are heard on the caller's thread: ``on_error`` is called from
  :meth:`cell_finished` / :meth:`close`, and an unexpected exception on the thread is raised
  there again.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ltr_bench.results import ResultRecord
from ltr_bench.tracking.store import TrackingError, message
from ltr_bench.tracking.writer import Tracker

__all__ = ["MlflowListener"]

#: how long the background logger waits for the claim of a record it did not compute
#: before logging it all the same (the tracker finds a run logged meanwhile by its key)
CLAIM_WAIT_SECONDS = 30.0


class MlflowListener:
    """The MLflow logging policy during ``run_plan``: every finished record (computed now or
    found finished) is logged unless already there; a failed cell marks its parent FAILED; a
    store that stops answering turns logging off for the rest of the run (the results stay in
    the local store) and is reported by :attr:`error`.

    ``store`` (a :class:`~ltr_bench.results.ResultStore`) is read for per-query values of
    records found finished and every finished fold of a parent for its aggregates, and its
    claims are taken (see the module). ``on_error(message)`` hears of the first logging
    failure. ``check``: contact the store first (:meth:`Tracker.check`; in the background,
    as the thread's first job). ``background``: log on a thread of its own (see the module);
    ``prepare``: callables the thread runs once the store is open (e.g. imports the end of the
    run will need), errors ignored.
    """

    def __init__(
        self,
        tracker: Tracker,
        store,
        *,
        plan: dict[str, Any] | None = None,
        plan_toml: str | None = None,
        on_error: Callable[[str], None] | None = None,
        check: bool = False,
        background: bool = False,
        prepare: tuple[Callable[[], Any], ...] = (),
    ):
        self.tracker: Tracker | None = tracker
        self.store = store
        self.plan = plan
        self.plan_toml = plan_toml
        self.on_error = on_error
        self.error: str | None = None
        self._held: dict[str, Callable[[], None]] = {}  # key -> release (caller's thread)
        self._said: list[str] = []  # errors the caller's thread has still to hear
        self._crash: BaseException | None = None
        self._queue: queue.Queue | None = None
        self._thread: threading.Thread | None = None
        self._go = threading.Event()  # set when the work may start (see the module)
        if background:
            self._queue = queue.Queue()
            self._thread = threading.Thread(target=self._work, name="ltr-bench-mlflow", daemon=True)
            self._thread.start()
        if check:
            self._submit(self._check)
        for job in prepare:
            self._submit(_quietly(job))

    # -- the thread ----------------------------------------------------------------------

    def _submit(self, job: Callable[[], None]) -> None:
        if self._queue is None:
            job()
            self._poll()
        else:
            self._queue.put(job)

    def _work(self) -> None:
        assert self._queue is not None
        self._go.wait()
        while True:
            job = self._queue.get()
            if job is None:
                return
            try:
                job()
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                if self._crash is None:
                    self._crash = exc
                self.tracker = None

    def _poll(self) -> None:
        """On the caller's thread: tell ``on_error`` what went wrong meanwhile; raise an
        unexpected exception of the thread here."""
        while self._said:
            text = self._said.pop(0)
            if self.on_error is not None:
                self.on_error(text)
        crash, self._crash = self._crash, None
        if crash is not None:
            raise crash

    def _check(self) -> None:
        if self.tracker is None:
            return
        try:
            self.tracker.check()
        except TrackingError as exc:
            self._failed(str(exc))

    # -- listener callbacks --------------------------------------------------------------

    def fold_loading(self, dataset: str, fold: int) -> None:
        self._poll()

    def fold_progress(self, *args) -> None:
        pass

    def cell_started(self, *args) -> None:
        self._go.set()
        self._poll()

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
        self._go.set()
        self._poll()
        release = self._held.pop(record.key, None)
        if self.tracker is None:
            if release is not None:
                release()
            return
        self._submit(lambda: self._log(record, release))

    def _log(self, record: ResultRecord, release: Callable[[], None] | None) -> None:
        claim = None
        try:
            if self.tracker is None:
                return
            if not record.ok:
                self.tracker.mark_failed(record.plan_key)
                return
            if release is None and self._queue is not None:
                claim = self._claim(record)
            if record.per_query is None:
                self.store.per_query(record)
            try:
                self.tracker.log_record(record, plan=self.plan, plan_toml=self.plan_toml)
            except TrackingError as exc:
                self._failed(str(exc))
        finally:
            if claim is not None:
                claim.release()
            if release is not None:
                release()

    def _claim(self, record: ResultRecord):
        """The claim of a record found finished (another run may be logging it now)."""
        from ltr_bench.results import ClaimWaitError

        claim_fn = getattr(self.store, "wait_claim", None)
        if claim_fn is None:
            return None
        try:
            return claim_fn(record.key, record.summary_line(), timeout=CLAIM_WAIT_SECONDS)
        except (ClaimWaitError, Exception):  # noqa: BLE001 - log it all the same
            return None

    def attach_report(self, dataset: str, path: Path) -> None:
        """Attach a report file (e.g. the HTML report) under ``report/`` to every parent run
        of ``dataset`` this invocation touched (now, on the caller's thread: call it after
        :meth:`close`, or without a background thread)."""
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
        self._poll()

    def _failed(self, text: str) -> None:
        if self.error is None:
            self.error = text
        self.tracker = None  # keep computing; everything stays in the local results
        self._said.append(text)
        if self._queue is None:
            self._poll()

    def close(self, *, interrupted: bool = False) -> None:
        """Log what is still queued, end the parent runs touched by this invocation (see
        :meth:`Tracker.finish`) and stop the thread. Ctrl-C while waiting leaves the rest
        unlogged (the local results have it; a re-run logs it)."""
        self._submit(lambda: self._finish(interrupted))
        self._go.set()
        if self._thread is not None:
            assert self._queue is not None
            self._queue.put(None)
            self._thread.join()
            self._thread = self._queue = None
        for release in self._held.values():
            release()
        self._held.clear()
        self._poll()

    def _finish(self, interrupted: bool) -> None:
        if self.tracker is None:
            return
        try:
            self.tracker.finish(
                interrupted=interrupted, all_records=lambda key: self.store.records(plan_key=key)
            )
        except TrackingError as exc:
            self._failed(str(exc))


def _quietly(job: Callable[[], Any]) -> Callable[[], None]:
    def run() -> None:
        try:
            job()
        except Exception:  # noqa: BLE001 - a preparation only: the real use reports errors
            pass

    return run

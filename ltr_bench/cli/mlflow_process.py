"""MLflow logging of ``ltr-bench run`` in a separate process: :class:`MlflowProcess`.

Why a process. MLflow costs every invocation about 3 s of CPU (``import mlflow``, opening
the SQLite store, a few transactions per fold run, the HTML report if asked), more than
the rankers of a small plan take to fit. On a thread it would share the GIL with the fits
and falsify their timings (``docs/performance.md``); in a process of its own it overlaps
them on another core without touching them: the run computes with one thread by default,
which leaves the logging process a core of its own on any machine with two; when in-process
fits use every core (``--threads`` at the CPU count), the logging process is lowered in
priority (``nice`` +10, :meth:`MlflowProcess.yield_to_fits`) so that the fits come first. (It
is not lowered otherwise, nor on Dask: a low-priority logger on a busy machine is starved,
and the run then waits for it at the end.)

What runs there. The very code that logged in process before: a
:class:`~ltr_bench.tracking.Tracker` and an :class:`~ltr_bench.tracking.MlflowListener`
over the same results folder, then the HTML reports if asked (:mod:`.mlflow_report`). This
module only carries the listener's calls across a pipe (:mod:`multiprocessing`, ``spawn``: no
state of the run is inherited).

Guarantees kept:

* Local results first: a record is sent only after the harness saved it, so a run killed
  at any moment loses nothing; a re-run logs what MLflow lacks.
* One log per cell: the cell's claim stays held in the run's process until the logging
  process says the record is in MLflow (it sends ``released``; the run's process then
  releases the claim from its reader thread), so a concurrent run never logs the same cell.
* An unusable store refuses the command before any work: what can be checked without
  MLflow (:func:`ltr_bench.tracking.store.preflight`: a writable folder, an SQLite file
  that is an MLflow store or new, a server that answers, a database driver that is
  installed) is checked in the run's process before the logging process may touch the
  store (it only imports MLflow until then, and a bad invocation ends it at once). The run
  does not wait for MLflow to open the store:
  should it fail to (rare after the preflight), that is said as a logging failure, the
  results stay local, and the command exits 1 as for a store that stops answering.
* The pipe never blocks the run: the logging process drains it on a thread of its own
  while it imports MLflow or logs.
* Ctrl-C reaches the whole foreground process group: the logging process ignores it and
  ends the parent runs KILLED when the run tells it to. If the run's process dies, the pipe
  closes and the logging process stops at once (a re-run repairs what is left).

Messages (tuples, pickled): to the logging process ``("open", plan, plan_toml, report)``,
``("cell", record, index, total, skipped, held)``, ``("close", interrupted, report_units)``,
``("quit",)``, and before ``close`` ``("lock", path)`` followed by the descriptor of the
logging lock (:func:`multiprocessing.reduction.send_handle`; it holds the lock from the run's
end to the logging's, :mod:`ltr_bench.tracking.background`); back ``("released", key)``,
``("warning", text)`` (logging failed: from now on local only), ``("note", text)``,
``("done", error)``.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import queue
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the module is imported before anything heavy: the process starts first
    from ltr_bench.results import ResultRecord

__all__ = ["MlflowProcess"]

#: niceness of the logging process when the fits use every core (they get them first)
NICE = 10


class MlflowProcess:
    """A harness listener whose MLflow work is done by a child process (see the module).

    ``MlflowProcess(uri, results_root)`` starts the process, which imports MLflow meanwhile
    and touches nothing until :meth:`open` (called once the invocation is known to be
    valid) checks the store (:func:`preflight`) and lets it open the store and log.
    ``on_error(message)`` hears of the first logging failure, ``on_note(message)`` of notes,
    as soon as the logging process says them (from a thread of the run's process).
    """

    def __init__(self, tracking_uri: str | None, results_root: str | Path):
        from ltr_bench.tracking.store import resolve_tracking_uri

        self.uri = resolve_tracking_uri(tracking_uri)
        self.error: str | None = None
        #: :meth:`close` returned before the logging ended: it finishes in the background
        self.detached = False
        self.on_error: Callable[[str], None] | None = None
        self.on_note: Callable[[str], None] | None = None
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(
            target=_serve,
            args=(child, self.uri, str(results_root), os.getpid()),
            name="ltr-bench-mlflow",
            daemon=True,  # never outlives the run's process
        )
        self._proc.start()
        child.close()
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._held: dict[str, Callable[[], None]] = {}
        self._pending: list[tuple[str, str]] = []  # ("warning" | "note", text) for the caller
        self._done = threading.Event()
        self._dead = False
        self._opened = False
        self._stopping = False
        self._reader = threading.Thread(target=self._read, name="ltr-bench-mlflow-reader")
        self._reader.daemon = True
        self._reader.start()

    # -- the run's side ------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self._proc.pid

    def open(
        self, *, plan: dict[str, Any] | None, plan_toml: str | None, report: bool = False
    ) -> None:
        """Check the store without MLflow (:func:`~ltr_bench.tracking.store.preflight`:
        raises :class:`~ltr_bench.tracking.TrackingError`, a
        :class:`~ltr_bench.errors.UsageError` for a store not to use), then let the logging
        process open it; ``plan`` (and ``plan_toml``) are logged on the parent runs.
        ``report``: the HTML report will be attached at :meth:`close` (``run
        --attach-report``), so the logging process readies it while the run computes."""
        from ltr_bench.tracking.store import preflight

        preflight(self.uri)
        self._opened = True
        self._send(("open", plan, plan_toml, report))

    def yield_to_fits(self, threads: int) -> None:
        """Lower the logging process's priority when fits of ``threads`` threads leave no
        core free for it (see the module)."""
        if threads + 1 > (os.cpu_count() or 1) and self._proc.pid is not None:
            try:
                os.setpriority(os.PRIO_PROCESS, self._proc.pid, NICE)
            except OSError:
                pass

    def fold_loading(self, *args) -> None:
        self._flush()

    def fold_progress(self, *args) -> None:
        pass

    def cell_started(self, *args) -> None:
        self._flush()

    def cell_progress(self, *args) -> None:
        pass

    def hold_claim(self, record: ResultRecord, release: Callable[[], None]) -> None:
        """Keep ``record``'s claim until the logging process has its run in MLflow."""
        with self._lock:
            if self._dead or self.error is not None:
                hold = False
            else:
                self._held[record.key] = release
                hold = True
        if not hold:
            release()

    def cell_finished(self, record: ResultRecord, index: int, total: int, *, skipped: bool) -> None:
        with self._lock:
            held = record.key in self._held
        if not self._send(("cell", record, index, total, skipped, held)):
            self._release_all()
        self._flush()

    def close(
        self, *, interrupted: bool = False, report_units: dict[str, list] | None = None
    ) -> None:
        """End the parent runs (KILLED if ``interrupted``), attach the HTML report of each
        dataset in ``report_units`` (only with ``run --attach-report``: it costs ~1 s at the
        end) (dataset -> its (fold, seed) pairs of this run), wait
        for the logging process and stop it. Errors end up in :attr:`error`."""
        from ltr_bench.tracking.background import wait_seconds

        self._hand_over_lock()
        if self._send(("close", interrupted, report_units)):
            try:
                if not self._done.wait(wait_seconds()):  # background.py
                    self._detach()
                    return
            except KeyboardInterrupt:  # a second Ctrl-C: stop waiting for MLflow
                self._proc.terminate()
                self._fail("interrupted while logging to MLflow")
        self._stop()
        self._release_all()
        self._flush()

    def _hand_over_lock(self) -> None:
        """Take the logging lock that readers of the store wait for
        (:mod:`ltr_bench.tracking.background`) and send it to the logging process, which
        holds it until it has logged everything, whether or not this process is still
        there."""
        from multiprocessing import reduction

        from ltr_bench.tracking.background import take_lock

        taken = take_lock(self.uri, pid=self._proc.pid)
        if taken is None:
            return
        fd, path = taken
        with self._send_lock:
            try:
                if not self._dead:
                    self._conn.send(("lock", str(path)))
                    reduction.send_handle(self._conn, fd, self._proc.pid)
            except (OSError, ValueError):
                self._dead = True
        os.close(fd)  # the copy in flight, then the logging process's, keep the lock

    def _detach(self) -> None:
        """Leave the logging process to finish on its own after the run exits
        (:func:`~ltr_bench.tracking.background.wait_seconds`): multiprocessing forgets it
        (its exit handler would end it), the pipe closes at exit (which tells it), the
        claims are released (it takes each again)."""
        from multiprocessing import process

        self.detached = True
        self._stopping = True  # its end is no failure to report
        # not ended nor waited for at exit; _children is multiprocessing's private (untyped)
        # set of the children its exit handler joins: no public call forgets one
        process._children.discard(self._proc)  # type: ignore[attr-defined]
        with self._send_lock:
            self._dead = True  # the pipe closes when this process exits (a close here
            # would not wake the reader thread blocked on it)
        self._release_all()
        self._flush()

    def close_now(self) -> None:
        """Stop the logging process without logging anything more. Before :meth:`open` it
        has touched nothing and is ended at once (a bad invocation does not wait for it to
        finish importing MLflow). After :meth:`close` left it to finish in the background,
        nothing."""
        if self.detached:
            return
        if not self._opened and self._proc.is_alive():
            self._stopping = True  # its end is no failure to report
            self._proc.terminate()
        else:
            self._send(("quit",))
        self._stop()
        self._release_all()

    # -- internals -----------------------------------------------------------------------

    def _send(self, message: tuple) -> bool:
        with self._send_lock:
            if self._dead:
                return False
            try:
                self._conn.send(message)
                return True
            except (OSError, ValueError):  # the process is gone
                self._dead = True
                return False

    def _read(self) -> None:
        while True:
            try:
                message = self._conn.recv()
            except (EOFError, OSError):
                break
            kind = message[0]
            if kind == "released":
                with self._lock:
                    release = self._held.pop(message[1], None)
                if release is not None:
                    release()
            elif kind in ("warning", "note"):
                if kind == "warning" and self.error is None:
                    self.error = message[1]
                    self._release_all()
                self._say(kind, message[1])
            elif kind == "done":
                if message[1] and self.error is None:
                    self.error = message[1]
                self._done.set()
        if not self._done.is_set():
            self._dead = True
            if self.error is None and not self._stopping:
                self._proc.join(timeout=1)
                code = self._proc.exitcode
                self._fail(
                    "the MLflow logging process ended unexpectedly"
                    + (f" (exit code {code})" if code is not None else "")
                )
        self._done.set()
        self._release_all()

    def _fail(self, text: str) -> None:
        if self.error is None:
            self.error = text
            self._say("warning", text)
        self._release_all()

    def _say(self, kind: str, text: str) -> None:
        """A warning or note, said at once (from the reader thread: the console is
        thread-safe), or kept for :meth:`_flush` until a target is set."""
        target = self.on_error if kind == "warning" else self.on_note
        if target is None:
            with self._lock:
                self._pending.append((kind, text))
        else:
            target(text)

    def _release_all(self) -> None:
        with self._lock:
            releases = list(self._held.values())
            self._held.clear()
        for release in releases:
            release()

    def _flush(self) -> None:
        """Say the warnings and notes kept while no target was set."""
        with self._lock:
            pending, self._pending = self._pending, []
        for kind, text in pending:
            target = self.on_error if kind == "warning" else self.on_note
            if target is not None:
                target(text)

    def _stop(self) -> None:
        self._proc.join(timeout=30)
        if self._proc.is_alive():
            self._proc.terminate()
            self._proc.join(timeout=5)
        self._dead = True
        try:
            self._conn.close()
        except OSError:
            pass
        self._reader.join(timeout=5)


# -- the logging process ---------------------------------------------------------------------


def _serve(conn, uri: str, results_root: str, run_pid: int) -> None:
    """The logging process: open the store, then log what the run ``run_pid`` sends until
    ``close``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's to handle
    # it may outlive the run (and its terminal); a hang-up mid-run ends the run, and the
    # closed pipe then stops this process
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    inbox: queue.SimpleQueue = queue.SimpleQueue()
    run_gone = threading.Event()
    closing = threading.Event()  # the run sent "close": everything to log is in the inbox
    detached = threading.Event()  # ... and then exited: finish in the background
    unlock: list = []  # the logging lock (descriptor, path) the run handed over
    from multiprocessing import reduction

    from ltr_bench.tracking.background import adopt_parents, release_lock

    def drain() -> None:  # the run never waits on a full pipe
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                if closing.is_set():  # the run did not wait for the end: log it all
                    _let_go_of_the_terminal()
                    detached.set()
                    return
                run_gone.set()  # the run's process is gone mid-run: stop, log no more
                inbox.put(None)
                return
            if message[0] == "lock":  # held from the run's end to this process's
                try:
                    unlock.append((reduction.recv_handle(conn), Path(message[1])))
                except (OSError, EOFError):
                    pass
                continue
            if message[0] == "close":
                closing.set()
            inbox.put(message)

    sending = threading.Lock()

    def send(message: tuple) -> None:
        with sending:
            try:
                conn.send(message)
            except (OSError, ValueError):  # the run is gone: nobody to tell
                if not closing.is_set():
                    run_gone.set()

    threading.Thread(target=drain, name="ltr-bench-mlflow-inbox", daemon=True).start()

    import mlflow.tracking  # noqa: F401 - the slow part, done while the run plans

    if not uri.startswith(("http://", "https://")):  # a database store: SQLAlchemy's ~1 s
        try:
            import mlflow.store.tracking.sqlalchemy_store  # noqa: F401
        except Exception:  # noqa: BLE001, S110 - opening the store says what is wrong
            pass

    from ltr_bench.cli.mlflow_report import attach_html_reports, warm_up_report
    from ltr_bench.results import ResultStore
    from ltr_bench.tracking import MlflowListener, Tracker
    from ltr_bench.tracking.store import TrackingError

    message = inbox.get()  # nothing is touched before the invocation is known to be valid
    if message is None or message[0] != "open":
        return
    tracker = Tracker(uri, owner_pid=run_pid)  # the parent runs belong to the run
    try:
        tracker.check()
    except Exception as exc:  # noqa: BLE001 - said to the run, never a traceback
        text = str(exc) if isinstance(exc, TrackingError) else f"{type(exc).__name__}: {exc}"
        send(("warning", text if text.startswith("MLflow") else f"MLflow at {uri}: {text}"))
        _answer_close(inbox, send, text)
        return
    if message[3] and inbox.empty():  # idle while the run computes: ready the report now
        warm_up_report()
    store = ResultStore(Path(results_root))
    listener = MlflowListener(
        tracker,
        store,
        plan=message[1],
        plan_toml=message[2],
        on_error=lambda text: send(("warning", text)),
        on_note=lambda text: send(("note", f"note: {text}")),
        claim_found=True,  # a concurrent run may be logging a record found finished
    )
    adopted = False
    while True:
        message = inbox.get()
        if message is None or run_gone.is_set():  # the run is gone: a re-run logs the rest
            return
        if detached.is_set() and not adopted:
            adopted = True
            adopt_parents(tracker)  # the run exited: own its parent runs
        kind = message[0]
        try:
            if kind == "cell":
                _, record, index, total, skipped, held = message
                if held and not detached.is_set():  # else the listener claims it itself
                    listener.hold_claim(record, functools.partial(send, ("released", record.key)))
                listener.cell_finished(record, index, total, skipped=skipped)
            elif kind == "close":
                _, interrupted, report_units = message
                listener.close(interrupted=interrupted)
                if report_units and listener.tracker is not None:
                    attach_html_reports(store, report_units, listener, lambda t: send(("note", t)))
                send(("done", listener.error))
                for fd, path in unlock:
                    release_lock(fd, path)
                _exit_now()
            elif kind == "quit":
                _exit_now()
        except Exception as exc:  # noqa: BLE001 - a bug here must not lose the run's results
            text = f"MLflow logging failed: {type(exc).__name__}: {exc}"
            send(("warning", text))
            if kind == "cell" and message[5]:
                send(("released", message[1].key))
            if kind == "close":
                send(("done", text))
                return


def _let_go_of_the_terminal() -> None:
    """The run exited before the end of the logging (``LTR_BENCH_MLFLOW_WAIT``): print
    nothing more and close the run's stdout and stderr here at once (done from the inbox
    thread the moment the run is gone), so that the terminal is the user's next command's
    and a pipe (``ltr-bench run ... | tee``, a script capturing the output) ends with the
    run, not with this process."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)


def _exit_now() -> None:
    """End the logging process now that the run has its answer: every MLflow call returned
    (SQLite committed, artifacts written), and tearing down MLflow, SQLAlchemy and their
    modules at interpreter exit would only keep the run waiting (~1 s)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _answer_close(inbox, send, error: str) -> None:
    """After a failure to open the store: answer the run's ``close`` (nothing is logged)."""
    while True:
        message = inbox.get()
        if message is None or message[0] == "quit":
            return
        if message[0] == "cell" and message[5]:
            send(("released", message[1].key))
        if message[0] == "close":
            send(("done", error))
            return

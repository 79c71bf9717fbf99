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
  MLflow (:func:`~ltr_bench.tracking.store_check.check_store`: a writable folder, an SQLite
  file that is an MLflow store or new, a server that answers, a database driver that is
  installed) is checked in the run's process before the logging process may touch the
  store (it only imports MLflow until then, and a bad invocation ends it at once). The run
  does not wait for MLflow to open the store: should it fail to (rare after that check),
  that is said as a logging failure, the results stay local, and the command exits 1 as
  for a store that stops answering.
* The command's work is done when it exits: :meth:`MlflowProcess.close` waits until MLflow
  has every run, unless ``LTR_BENCH_MLFLOW_WAIT`` caps the wait (then the logging process
  finishes in the background: :mod:`ltr_bench.tracking.background`).
* The pipe never blocks the run: the logging process drains it on a thread of its own
  while it imports MLflow or logs.
* Ctrl-C reaches the whole foreground process group, ``kill -INT`` only the run's process:
  either way the logging process ignores it and the run tells it what to do. Interrupted
  while it computes, the run sends ``close`` (interrupted): what is sent is logged, the
  parent runs end KILLED; the run waits for that at most :data:`HURRY_SECONDS`, then exits
  130 and leaves the logging process to finish in the background (as after
  ``LTR_BENCH_MLFLOW_WAIT``). Interrupted while it waits for MLflow at its end (after the
  summary), it sends ``("interrupt",)``, which the logging process reads at once: it logs no
  more fold runs and ends the parent runs KILLED (none made yet: it leaves the store
  untouched); the run exits 130 and a re-run logs the rest (:meth:`MlflowProcess._hurry`).
  The same holds for an interrupt that lands as the wait begins: the lock and ``close`` are
  sent with the signals held (:func:`_signals_held`), so an interrupt comes before them
  (``interrupt`` then ``close``) or after (``close`` then ``interrupt``), never between.
  If the run's process dies, the pipe closes and the logging process stops at once (a
  re-run repairs what is left).

Messages (tuples, pickled): to the logging process ``("open", plan, plan_toml, report)``,
``("cell", record, index, total, skipped, held)``, ``("close", interrupted, report_units)``,
``("quit",)``, ``("interrupt",)`` (read on arrival, ahead of the queue), and before
``close`` ``("lock", path)`` followed by the descriptor of the logging lock
(:func:`multiprocessing.reduction.send_handle`; it holds the lock from the run's end to the
logging's, :mod:`ltr_bench.tracking.background`); back ``("released", key)``,
``("warning", text)`` (logging failed: from now on local only), ``("note", text)``,
``("done", error)``.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ltr_bench.cli.child_output import relayed_output
from ltr_bench.cli.mlflow_logger import serve

if TYPE_CHECKING:  # the module is imported before anything heavy: the process starts first
    from ltr_bench.results import ResultRecord

__all__ = ["MlflowProcess"]

#: the signals that end a command as Ctrl-C does (``options.sigterm_as_interrupt``)
_INTERRUPTS = (signal.SIGINT, signal.SIGTERM)

#: niceness of the logging process when the fits use every core (they get them first)
NICE = 10
#: how long an interrupted run waits for the logging process to end its parent runs
HURRY_SECONDS = 30.0
#: log on a thread of the run's own process instead of a logging process. For a caller that
#: runs the command inside a process of its own that has MLflow imported already (the test
#: suite's in-process runs: each logging process would import MLflow and ready its SQL store
#: again, seconds of CPU). The logging is the same code, but it shares the GIL
#: with the fits (their timings suffer), the run always waits for it to end
#: (``LTR_BENCH_MLFLOW_WAIT`` is not read), and a run killed mid-way loses its logging with
#: it (a re-run logs what MLflow lacks, as after any kill).
ON_A_THREAD = False


class MlflowProcess:
    """A harness listener whose MLflow work is done by a child process (see the module).

    ``MlflowProcess(uri, results_root)`` starts the process, which imports MLflow meanwhile
    and touches nothing until :meth:`open` (called once the invocation is known to be
    valid) checks the store (:func:`~ltr_bench.tracking.store_check.check_store`) and lets
    it open the store and log.
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
        self.on_a_thread = ON_A_THREAD
        if self.on_a_thread:
            self._proc: Any = _LoggingThread(child, self.uri, str(results_root), self._conn)
            self._proc.start()
        else:
            self._proc = ctx.Process(
                target=serve,
                args=(child, self.uri, str(results_root), os.getpid()),
                name="ltr-bench-mlflow",
                daemon=True,  # never outlives the run's process
            )
            with relayed_output():  # its stdout/stderr: a pipe of ours (child_output.py)
                self._proc.start()
            child.close()
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._held: dict[str, Callable[[], None]] = {}
        self._pending: list[tuple[str, str]] = []  # ("warning" | "note", text) for the caller
        self._done = threading.Event()
        self._dead = False
        self._opened = False
        self._closed = False
        self._stopping = False
        #: the run was interrupted while it waited for MLflow (:meth:`_hurry`)
        self.interrupted = False
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
        """Check the store without MLflow (:func:`~ltr_bench.tracking.store_check.check_store`:
        raises :class:`~ltr_bench.tracking.TrackingError`, a
        :class:`~ltr_bench.errors.UsageError` for a store not to use), then let the logging
        process open it; ``plan`` (and ``plan_toml``) are logged on the parent runs.
        ``report``: the HTML report will be attached at :meth:`close` (``run
        --attach-report``), so the logging process readies it while the run computes."""
        from ltr_bench.tracking.store_check import check_store

        check_store(self.uri, writes=True)
        self._opened = True
        self._send(("open", plan, plan_toml, report))

    def yield_to_fits(self, threads: int) -> None:
        """Lower the logging process's priority when fits of ``threads`` threads leave no
        core free for it (see the module)."""
        if self.on_a_thread:  # its priority is the run's own
            return
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
        end) (dataset -> its (fold, seed) pairs of this run), wait for the logging process
        (until it ends, or ``LTR_BENCH_MLFLOW_WAIT`` seconds, at most :data:`HURRY_SECONDS`
        if ``interrupted``: then :attr:`detached`) and stop it. Errors end up in :attr:`error`."""
        from ltr_bench.tracking.background import wait_seconds

        close_sent = False
        try:
            self._closed = True  # (an interrupt before this line: interrupt() closes)
            with _signals_held():  # the lock and "close" go out whole
                self._hand_over_lock()
                close_sent = self._send(("close", interrupted, report_units))
            wait = None if self.on_a_thread else wait_seconds()  # background.py
            if interrupted and not self.on_a_thread:
                # a stopped run does not wait long on its logging: one still importing MLflow
                # on a loaded machine kept a SIGTERMed run waiting for over a minute
                wait = HURRY_SECONDS if wait is None else min(wait, HURRY_SECONDS)
            if close_sent and not self._done.wait(wait):
                self._detach()
                return
        except KeyboardInterrupt:  # Ctrl-C, SIGINT or SIGTERM while MLflow catches up
            if close_sent or not self._dead:  # (or just before "close" went out)
                self._hurry(send_close=not close_sent)
        try:
            self._stop()
        except KeyboardInterrupt:  # MLflow has its answer already: only the process is left
            self._stopping = True
            self._proc.terminate()
        self._release_all()
        self._flush()

    def interrupt(self) -> None:
        """The run was interrupted outside :meth:`close` (after its cells, before the
        logging's end): end the parent runs KILLED at once, logging nothing more (a re-run
        logs what MLflow lacks). A no-op before :meth:`open` and after :meth:`close`."""
        if self._opened and not self._closed and not self.detached:
            self.interrupted = True
            self._send(("interrupt",))  # read at once: what waits in its inbox is dropped
            self.close(interrupted=True)

    def _hurry(self, *, send_close: bool = False) -> None:
        """An interrupt while the run waits for MLflow: the logging process (which ignores
        SIGINT) is told to log no more fold runs and end the parent runs KILLED, which takes
        the one MLflow call under way and one transaction; :attr:`interrupted` says so (the
        run exits 130, not as for a failed store). ``send_close``: the interrupt came before
        ``close`` went out, which is sent now (interrupted). A second interrupt, or no
        answer within :data:`HURRY_SECONDS`, stops it where it is: a parent left RUNNING is
        ended by the next invocation on the store, the re-run logs the rest."""
        self.interrupted = True
        try:
            with _signals_held():
                self._send(("interrupt",))
                if send_close:
                    self._send(("close", True, None))
            if self._done.wait(HURRY_SECONDS):
                return
        except KeyboardInterrupt:
            pass
        self._stopping = True  # its end is no failure to report
        self._proc.terminate()

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
        elif self.on_a_thread:
            # a process's exit closes its end of the pipe and wakes the reader below; a
            # thread's end stays open while its inbox reader is blocked on it, and closing
            # a descriptor wakes no reader: only shutting the pipe down does (5 s a run,
            # waited on the join below, before)
            self._proc.terminate()
        self._dead = True
        try:
            self._conn.close()
        except OSError:
            pass
        self._reader.join(timeout=5)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Inside the block SIGINT and SIGTERM are noted, not acted on: what is sent to the
    logging process goes out whole (a lock's descriptor after its message, then ``close``),
    never cut by a ``KeyboardInterrupt`` between two sends. On leaving, a signal noted is
    raised again, to the handler it would have met (``KeyboardInterrupt`` for a command).
    Outside the main thread, where no handler can be set, a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    previous = {}
    for signum in _INTERRUPTS:
        if signal.getsignal(signum) is not None:  # None: set outside Python, left alone
            previous[signum] = signal.signal(signum, lambda n, frame: noted.append(n))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if noted:
        signal.raise_signal(noted[0])


class _LoggingThread(threading.Thread):
    """:func:`~ltr_bench.cli.mlflow_logger.serve` on a thread (:data:`ON_A_THREAD`), with
    the few calls of :class:`multiprocessing.Process` that :class:`MlflowProcess` makes."""

    def __init__(self, conn, uri: str, results_root: str, peer):
        super().__init__(name="ltr-bench-mlflow", daemon=True)
        self._conn = conn
        self._peer = peer  # the run's end of the pipe
        self._args = (uri, results_root)

    def run(self) -> None:
        try:
            serve(self._conn, *self._args, os.getpid(), on_a_thread=True)
        finally:
            self._conn.close()

    @property
    def pid(self) -> int:
        return os.getpid()

    @property
    def exitcode(self) -> int | None:
        return None if self.is_alive() else 0

    def terminate(self) -> None:
        """Shut the pipe down from the run's end: the thread's inbox reader sees the run
        gone, and the thread stops after the MLflow call under way (a thread cannot be
        killed)."""
        try:
            end = socket.socket(fileno=os.dup(self._peer.fileno()))
        except OSError:  # closed already
            return
        try:
            end.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        finally:
            end.close()

"""The MLflow logging process of ``ltr-bench run``: :func:`serve`, started (``spawn``) by
:class:`~ltr_bench.cli.mlflow_process.MlflowProcess`, whose module docstring says what it
guarantees and which messages cross the pipe. It imports MLflow while the run plans, opens
the store once the run says the invocation is valid, logs each record it is sent through a
:class:`~ltr_bench.tracking.MlflowListener` over the run's results folder, and ends the
parent runs (and attaches the HTML reports, if asked) at ``close``.

For tests only: ``LTR_BENCH_TEST_HOLD_LOGGING=WHERE:PATH`` holds this process at ``WHERE``
(``before-open``: the store untouched; ``after-first-cell``: one fold run logged, so the parent
runs exist) until the run interrupts it (at most :data:`TEST_HOLD_SECONDS`), having written
``PATH`` to say that it holds: a test then knows that MLflow has not caught up when it
interrupts the run (``tests/cli/test_run_sigint.py``). Read nowhere else; unset, it costs
nothing.
"""

from __future__ import annotations

import functools
import os
import queue
import signal
import sys
import threading
from pathlib import Path

__all__ = ["serve"]

#: the variable of the test-only hold (see the module)
TEST_HOLD_ENV = "LTR_BENCH_TEST_HOLD_LOGGING"
#: the longest a test-only hold lasts without an interrupt
TEST_HOLD_SECONDS = 60.0


def serve(conn, uri: str, results_root: str, run_pid: int, on_a_thread: bool = False) -> None:
    """The logging process: open the store, then log what the run ``run_pid`` sends until
    ``close``. ``on_a_thread``: the same work on a thread of the run's own process
    (:data:`ltr_bench.cli.mlflow_process.ON_A_THREAD`): signals, the terminal and the exit
    are the run's, not touched here."""
    if not on_a_thread:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's to handle
        # it may outlive the run (and its terminal); a hang-up mid-run ends the run, and the
        # closed pipe then stops this process
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    inbox: queue.SimpleQueue = queue.SimpleQueue()
    run_gone = threading.Event()
    hurry = threading.Event()  # the run was interrupted: log no more, end the parents
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
                    if not on_a_thread:
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
            if message[0] == "interrupt":  # ahead of what waits in the inbox
                hurry.set()
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
    if message is None or message[0] != "open" or run_gone.is_set():
        return  # (a run killed meanwhile: its re-run opens the store)
    _hold_for_test("before-open", hurry)
    if hurry.is_set():  # interrupted before any logging: the store stays untouched
        _answer_close(inbox, send, None)
        return
    tracker = Tracker(uri, owner_pid=run_pid)  # the parent runs belong to the run
    try:
        tracker.check()
    except Exception as exc:  # noqa: BLE001 - said to the run, never a traceback
        text = str(exc) if isinstance(exc, TrackingError) else f"{type(exc).__name__}: {exc}"
        send(("warning", text if text.startswith("MLflow") else f"MLflow at {uri}: {text}"))
        _answer_close(inbox, send, text)
        return
    if message[3] and inbox.empty():  # idle while the run computes: ready the report
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
    mark = store.logging_mark()  # removed once the parent runs are ended cleanly
    adopted = first_logged = False
    while True:
        message = inbox.get()
        if message is None or run_gone.is_set():  # the run is gone: a re-run logs the rest
            return
        if detached.is_set() and not adopted:
            adopted = True
            adopt_parents(tracker)  # the run exited: own its parent runs
        kind = message[0]
        try:
            if kind == "cell" and hurry.is_set():  # not logged: a re-run logs it
                if message[5]:
                    send(("released", message[1].key))
            elif kind == "cell":
                _, record, index, total, skipped, held = message
                if held and not detached.is_set():  # else the listener claims it itself
                    listener.hold_claim(record, functools.partial(send, ("released", record.key)))
                listener.cell_finished(record, index, total, skipped=skipped)
                if not first_logged:
                    first_logged = True
                    _hold_for_test("after-first-cell", hurry)
            elif kind == "close":
                _, interrupted, report_units = message
                listener.close(interrupted=interrupted or hurry.is_set())
                if not (interrupted or hurry.is_set()) and listener.error is None:
                    store.logging_done(mark)
                if report_units and listener.tracker is not None and not hurry.is_set():
                    attach_html_reports(store, report_units, listener, lambda t: send(("note", t)))
                send(("done", listener.error))
                for fd, path in unlock:
                    release_lock(fd, path)
                if not on_a_thread:
                    _exit_now()
                return
            elif kind == "quit":
                if not on_a_thread:
                    _exit_now()
                return
        except Exception as exc:  # noqa: BLE001 - a bug here must not lose the run's results
            text = f"MLflow logging failed: {type(exc).__name__}: {exc}"
            send(("warning", text))
            if kind == "cell" and message[5]:
                send(("released", message[1].key))
            if kind == "close":
                send(("done", text))
                return


def _hold_for_test(where: str, hurry: threading.Event) -> None:
    """The test-only hold at ``where`` (see the module): write its file, then wait for the
    run's interrupt."""
    spec = os.environ.get(TEST_HOLD_ENV, "")
    at, _, path = spec.partition(":")
    if at != where or not path:
        return
    Path(path).write_text(str(os.getpid()), encoding="utf-8")
    hurry.wait(TEST_HOLD_SECONDS)


def _let_go_of_the_terminal() -> None:
    """The run exited before the end of the logging (``LTR_BENCH_MLFLOW_WAIT``): print
    nothing more (from the inbox thread the moment the run is gone). Our stdout and stderr
    are a pipe of the run (:mod:`.child_output`: the run's own output ends with the run);
    its reader is gone with the run, so what would be written there goes to /dev/null,
    quietly."""
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


def _answer_close(inbox, send, error: str | None) -> None:
    """After a failure to open the store, or an interrupt before it was opened: answer the
    run's ``close`` (nothing is logged)."""
    while True:
        message = inbox.get()
        if message is None or message[0] == "quit":
            return
        if message[0] == "cell" and message[5]:
            send(("released", message[1].key))
        if message[0] == "close":
            send(("done", error))
            return

"""An interrupt that lands as ``run`` begins its wait for MLflow, before its ``close`` went out
or while the lock and ``close`` go out, ends the logging as one during the wait does: the
logging process hears ``interrupt`` and ``close`` (interrupted), whole and in either order,
the run says it was interrupted while logging and exits 130 (:mod:`ltr_bench.cli.mlflow_process`).

The logging process here is :func:`fake_serve` (spawned as the real one is, which imports
MLflow: seconds): it records the messages it reads and answers ``close`` only once the run
has interrupted it, as a logging process that has not caught up yet. The windows are hit by
raising the interrupt there (``signal.raise_signal``), not by racing a signal from outside;
the real process and a real ``kill -INT`` are in ``test_run_sigint.py``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

#: the messages the fake logging process read, one per line, in its results folder
SEEN = "fake-logger-seen.txt"

# the logging process itself is the subject: spawned, not a thread of this process
pytestmark = pytest.mark.mlflow_process


def _messages(conn, results_root: str, timeout: float) -> Iterator[tuple[tuple, list[str]]]:
    """Each message a fake logging process reads, with all read so far (``close:<interrupted>``
    for a close; a lock's descriptor is taken and closed), until the pipe ends or ``timeout``
    seconds pass without one; what was read is written to :data:`SEEN` at the end."""
    import os
    from multiprocessing import reduction

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    seen: list[str] = []
    try:
        while conn.poll(timeout):
            try:
                message = conn.recv()
            except (EOFError, OSError):
                return
            seen.append(f"close:{message[1]}" if message[0] == "close" else message[0])
            if message[0] == "lock":  # its descriptor follows at once
                os.close(reduction.recv_handle(conn))
            yield message, seen
    finally:
        (Path(results_root) / SEEN).write_text("\n".join(seen), encoding="utf-8")


def fake_serve(conn, uri: str, results_root: str, run_pid: int) -> None:
    """A logging process that logs nothing: it answers held cells (``released``) and
    ``close`` (``done``) once it has both ``close`` and ``interrupt``; it writes what it read
    to :data:`SEEN` when it ends."""
    with contextlib.closing(_messages(conn, results_root, 60)) as messages:
        for message, seen in messages:
            if message[0] == "cell" and message[5]:
                conn.send(("released", message[1].key))
            elif message[0] == "quit":
                break
            if "interrupt" in seen and any(s.startswith("close") for s in seen):
                conn.send(("done", None))
                break


@pytest.fixture
def fake_logger(monkeypatch, tmp_path):
    """The fake logging process in place of the real one, a bounded wait for it, and SIGINT
    raising KeyboardInterrupt."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals are handled on the main thread only")
    from ltr_bench.cli import mlflow_process

    monkeypatch.setattr(mlflow_process, "serve", fake_serve)
    monkeypatch.setenv("LTR_BENCH_MLFLOW_WAIT", "30")  # a regression detaches, never hangs
    # Ctrl-C's KeyboardInterrupt, even where the tests run with SIGINT ignored (`&`, nohup)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield mlflow_process
    signal.signal(signal.SIGINT, previous)


def _seen(results: Path) -> list[str]:
    return (results / SEEN).read_text(encoding="utf-8").split("\n")


def _opened(mlflow_process, tmp_path):
    process = mlflow_process.MlflowProcess(f"sqlite:///{tmp_path / 'mlflow.db'}", tmp_path)
    process.open(plan=None, plan_toml=None)
    return process


def _close(process) -> None:
    """``process.close()``, which takes the interrupt as the logging's to end: one that
    escapes fails the test (and does not stop the session)."""
    try:
        process.close()
    except KeyboardInterrupt:
        process.close_now()
        pytest.fail("the interrupt escaped MlflowProcess.close()")


def test_an_interrupt_just_before_close_went_out_sends_interrupt_then_close(
    fake_logger, monkeypatch, tmp_path
):
    process = _opened(fake_logger, tmp_path)

    def interrupted_here(self):  # as a signal landing just before they go out
        raise KeyboardInterrupt

    monkeypatch.setattr(fake_logger.MlflowProcess, "_hand_over_lock", interrupted_here)
    _close(process)
    assert process.interrupted and process.error is None and not process.detached
    assert _seen(tmp_path) == ["open", "interrupt", "close:True"]


def test_an_interrupt_between_the_lock_and_its_descriptor_waits_until_close_is_out(
    fake_logger, monkeypatch, tmp_path
):
    from multiprocessing import reduction

    process = _opened(fake_logger, tmp_path)
    send_handle = reduction.send_handle

    def interrupted_first(*args):  # the signal lands after ("lock", path), before the fd
        signal.raise_signal(signal.SIGINT)
        send_handle(*args)

    monkeypatch.setattr(reduction, "send_handle", interrupted_first)
    _close(process)
    assert process.interrupted and process.error is None
    # the pair went out whole, then close, then the interrupt the signal meant
    assert _seen(tmp_path) == ["open", "lock", "close:False", "interrupt"]


def test_run_interrupted_as_it_starts_waiting_says_so_and_exits_130(fake_logger, tmp_path):
    from click.testing import CliRunner

    from ltr_bench.cli import main
    from ltr_bench.cli.console import Console

    status = Console.status

    def interrupted_at_the_wait(self, text, *, force=False):
        status(self, text, force=force)
        if text.startswith("logging to MLflow"):  # the summary is out, the wait not begun
            signal.raise_signal(signal.SIGINT)

    results = tmp_path / "res"
    args = ["run", "--ranker", "ltrb_fake_rankers:LinearRanker", "--dataset", "synthetic"]
    args += ["--folds", "1", "--metrics", "ndcg@10", "--results-dir", str(results)]
    for option in ("n_queries=12", "docs_per_query=4", "n_features=3", "n_informative=2"):
        args += ["--dataset-option", option]
    args += ["--tracking-uri", f"sqlite:///{tmp_path / 'ml' / 'mlflow.db'}"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Console, "status", interrupted_at_the_wait)
        mp.setenv("LTR_BENCH_CACHE", str(tmp_path / "cache"))
        result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 130, result.output
    assert "interrupted while logging to MLflow" in result.output, result.output
    assert "reachable" not in result.output, result.output
    seen = _seen(results)  # (the lock goes out with close, after the interrupt)
    assert seen[0] == "open" and seen[-1] == "close:True" and "interrupt" in seen, seen
    assert seen.index("interrupt") > seen.index("cell"), seen


def silent_serve(conn, uri: str, results_root: str, run_pid: int) -> None:
    """A logging process still catching up: it reads (and records, in :data:`SEEN`) what it
    is sent but never answers ``close``; it ends when the run's end of the pipe closes, or
    after 20 s without a message."""
    with contextlib.closing(_messages(conn, results_root, 20)) as messages:
        for _ in messages:
            pass


def test_a_run_interrupted_while_it_computed_leaves_a_slow_logging_to_the_background(
    fake_logger, monkeypatch, tmp_path
):
    """No cap set (``LTR_BENCH_MLFLOW_WAIT`` unset: the run waits for MLflow's end), yet an
    interrupted run waits at most ``HURRY_SECONDS`` for a logging process that has not
    answered, then leaves it to finish in the background (it had waited for it to the end:
    a SIGTERMed run on a loaded machine stayed over a minute)."""
    monkeypatch.setattr(fake_logger, "serve", silent_serve)
    monkeypatch.delenv("LTR_BENCH_MLFLOW_WAIT")
    monkeypatch.setattr(fake_logger, "HURRY_SECONDS", 0.2)
    process = _opened(fake_logger, tmp_path)
    try:
        process.close(interrupted=True)
        assert process.detached and not process.interrupted
    finally:
        # as the run's exit would: the logging process sees the pipe's end and ends (closing
        # the descriptor would not do while the reader thread is blocked on it)
        import socket

        with socket.socket(fileno=os.dup(process._conn.fileno())) as end:
            end.shutdown(socket.SHUT_RDWR)
        process._proc.join(timeout=30)
    assert _seen(tmp_path) == ["open", "lock", "close:True"]

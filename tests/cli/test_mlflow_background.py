"""A run that does not wait for the end of its MLflow logging (``LTR_BENCH_MLFLOW_WAIT``,
:mod:`ltr_bench.tracking.background`): the logging finishes after the run exits, a reader of
the store waits for it, and a background logger that is killed costs nothing (the next run
of the same command logs the rest). Real processes and signals; the two tests that watch a
run whose logger is held still share that run (a module fixture)."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from ltrb_processes import run_here
from test_reliability import _folds, _slow_cmd, _subprocess_env

from ltr_bench.tracking.background import lock_dir, wait_for_background_logging

# a logging process left to finish after its run: in those processes only (the module's
# shared run included)
pytestmark = pytest.mark.subprocess_coverage


def _status(db: Path, role: str) -> list[str]:
    con = sqlite3.connect(db)
    try:
        rows = con.execute(
            "select r.status from runs r join tags t on t.run_uuid = r.run_uuid where "
            "t.key = 'ltr_bench_role' and t.value = ? and r.lifecycle_stage = 'active'",
            (role,),
        ).fetchall()
    finally:
        con.close()
    return sorted(r[0] for r in rows)


def _holds_output(pid: int) -> bool:
    """Process ``pid`` has a stdout or stderr other than /dev/null (False once it is gone)."""
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") != os.devnull for fd in (1, 2))
    except FileNotFoundError:
        return False


def _background_pid(stderr: str) -> int:
    found = re.search(r"logged in the background \(pid (\d+)\)", stderr)
    assert found, stderr
    return int(found.group(1))


#: a fast fake ranker: the run names its background logger at its end, and the faster its
#: fits, the more logging is left then for the logger to do (the slow fake's 0.7 s fits let
#: the logger catch up, which only shortens what the stop and the kill interrupt)
FAST = "ltrb_fake_rankers:LinearRanker"


def _cmd(data, tmp_path) -> list[str]:
    return _slow_cmd(data, tmp_path, ranker=FAST)


def _run_naming_its_logger(tmp_path, folds=2, stop=True):
    """A run (of ``_folds(..., folds)``) that does not wait for MLflow, once it has named its
    background logger (held still by SIGSTOP with ``stop``): ``(data, env, uri, proc, pid)``."""
    data = _folds(tmp_path / "data", folds)
    env = _subprocess_env(tmp_path) | {"LTR_BENCH_MLFLOW_WAIT": "0"}
    uri = f"sqlite:///{tmp_path / 'ml' / 'mlflow.db'}"
    proc = subprocess.Popen(
        _cmd(data, tmp_path),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in proc.stderr:
        if "in the background" in line:
            pid = _background_pid(line)
            if stop:
                os.kill(pid, signal.SIGSTOP)
            return data, env, uri, proc, pid
    raise AssertionError(proc.communicate())


@dataclass
class StoppedLogger:
    """What one run that does not wait for MLflow showed while its background logger was
    held still by SIGSTOP, and what the store held once the logger was let go again."""

    output_ended: bool  # the run's stdout and stderr reached their end within 60 s
    exit_code: int
    ours: set[str]  # the run's stdout and stderr pipes, as /proc names them
    held: set[str]  # what the stopped logger's stdout and stderr were
    read_while_stopped: bool  # wait_for_background_logging(uri, timeout=0.5) then
    folds_read: list[int]  # fetch_fold_results after SIGCONT (it waits for the logger)
    fold_status: list[str]
    parent_status: list[str]
    locks_left: list[Path]


@pytest.fixture(scope="module")
def stopped_logger(tmp_path_factory) -> StoppedLogger:
    """One run (two folds) with its background logger stopped, for the two tests below
    that watch it: its output and exit, then the next reader of its store."""
    import threading

    from ltr_bench.tracking import fetch_fold_results

    tmp_path = tmp_path_factory.mktemp("stopped-logger")
    data, env, uri, proc, pid = _run_naming_its_logger(tmp_path)
    try:
        rest: list[str] = []
        reader = threading.Thread(
            target=lambda: rest.extend([proc.stdout.read(), proc.stderr.read()]), daemon=True
        )
        reader.start()
        reader.join(timeout=60)
        output_ended = not reader.is_alive()
        exit_code = proc.wait(timeout=60)
        ours = {f"pipe:[{os.fstat(f.fileno()).st_ino}]" for f in (proc.stdout, proc.stderr)}
        proc_fd = Path("/proc/self/fd").exists()  # Linux: the test that reads it skips else
        held = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in (1, 2)} if proc_fd else set()
        read_while_stopped = wait_for_background_logging(uri, timeout=0.5)
    finally:
        os.kill(pid, signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    records = fetch_fold_results("data", uri)  # waits for the background logger
    db = tmp_path / "ml" / "mlflow.db"
    return StoppedLogger(
        output_ended=output_ended,
        exit_code=exit_code,
        ours=ours,
        held=held,
        read_while_stopped=read_while_stopped,
        folds_read=sorted(r.fold for r in records),
        fold_status=_status(db, "fold"),
        parent_status=_status(db, "parent"),
        locks_left=list(lock_dir(uri).glob("*.lock")),
    )


@pytest.mark.slow
def test_a_run_that_does_not_wait_for_mlflow_is_read_complete_by_the_next_command(
    stopped_logger,
):
    assert stopped_logger.exit_code == 0  # the run exited before the logging ended
    assert not stopped_logger.read_while_stopped  # a reader waits for it
    assert stopped_logger.folds_read == [1, 2]  # ... and then reads every fold
    assert stopped_logger.fold_status == ["FINISHED"] * 2
    assert stopped_logger.parent_status == ["FINISHED"]
    assert stopped_logger.locks_left == []  # released at its end


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs Linux /proc")
def test_a_killed_background_logger_loses_nothing_and_the_rerun_logs_the_rest(
    tmp_path, monkeypatch
):
    data, env, _, run, pid = _run_naming_its_logger(tmp_path, folds=3, stop=False)
    assert run.wait(timeout=60) == 0
    # the background logger lets go of the run's stdout and stderr once the run is gone, so
    # whoever reads them (a pipe, a script) is done with the run, not with the logging
    deadline = time.monotonic() + 10
    while _holds_output(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _holds_output(pid)
    run.communicate(timeout=10)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:  # already done: the re-run must find everything all the same
        pass
    assert len(list((tmp_path / "res").glob("*.json"))) == 3
    # the re-run in this process: the killed background logger is the subject, not its start-up
    cmd = _cmd(data, tmp_path)
    code, again = run_here(cmd, tmp_path, monkeypatch, LTR_BENCH_MLFLOW_WAIT="inf")
    assert code == 0, again
    assert again.count("finished earlier, skipped") == 3  # nothing recomputed
    db = tmp_path / "ml" / "mlflow.db"
    assert _status(db, "fold") == ["FINISHED"] * 3  # each fold once
    assert _status(db, "parent") == ["FINISHED"]


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs Linux /proc")
def test_the_runs_output_ends_with_the_run_even_while_its_logger_is_stopped(stopped_logger):
    # a reader of the output (`ltr-bench run ... | tee log`) sees its end when the run exits,
    # although the background logger (and multiprocessing's resource tracker) live on: they
    # write into a pipe of the run, never into the run's stdout or stderr
    assert stopped_logger.output_ended, "the output did not end with the run"
    assert stopped_logger.exit_code == 0
    # and not by luck: the stopped logger's stdout and stderr were never the run's (it
    # may have let go, to /dev/null, before the stop reached it on a busy machine)
    assert not stopped_logger.held & stopped_logger.ours, stopped_logger
    assert stopped_logger.folds_read == [1, 2]  # once let go, it logged every fold

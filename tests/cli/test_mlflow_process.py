"""MLflow logging of ``ltr-bench run`` in its own process (:mod:`ltr_bench.cli.mlflow_process`):
a killed run leaves no logging process behind, and a logging process that dies costs no
result (real processes and signals throughout). That the run's own process never imports
MLflow is shown by the real run of ``tests/cli/test_mlflow_wait.py``."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ltrb_processes import run_here
from test_reliability import _folds, _slow_cmd, _subprocess_env, _wait_for_results


def _until(predicate, what: str, timeout: float = 30.0) -> None:
    t0 = time.monotonic()
    while not predicate():
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        out += [int(x) for x in text]
    return out


def _alive(pid: int) -> bool:
    """Running (a zombie left for init to reap counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except FileNotFoundError:
        return ""


def _logging_process(pid: int) -> int:
    """The spawned child of ``pid`` that logs to MLflow (not multiprocessing's tracker)."""
    found = [c for c in _children(pid) if "spawn_main" in _cmdline(c)]
    assert len(found) == 1, [(c, _cmdline(c)) for c in _children(pid)]
    return found[0]


def _fold_runs(db: Path) -> list[tuple[str, str]]:
    con = sqlite3.connect(db)
    try:
        return con.execute(
            "select r.status, r.lifecycle_stage from runs r join tags t on t.run_uuid = "
            "r.run_uuid where t.key = 'ltr_bench_role' and t.value = 'fold'"
        ).fetchall()
    finally:
        con.close()


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_a_killed_run_leaves_no_logging_process_behind(tmp_path):
    data = _folds(tmp_path / "data", 4)
    proc = subprocess.Popen(
        _slow_cmd(data, tmp_path),
        env=_subprocess_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_for_results(tmp_path / "res", 1, proc)
        child = _logging_process(proc.pid)
        proc.kill()
        proc.communicate()
        _until(lambda: not _alive(child), "the logging process to stop")
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_a_logging_process_that_dies_costs_no_result_and_a_rerun_logs_every_fold(
    tmp_path, monkeypatch
):
    data = _folds(tmp_path / "data", 4)
    env = _subprocess_env(tmp_path)
    proc = subprocess.Popen(
        _slow_cmd(data, tmp_path),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for_results(tmp_path / "res", 1, proc)
    os.kill(_logging_process(proc.pid), signal.SIGKILL)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert "MLflow logging failed: the MLflow logging process ended unexpectedly" in err
    assert "most recent call" not in out + err
    assert len(list((tmp_path / "res").glob("*.json"))) == 4  # every cell computed and saved
    # the re-run in this process: the killed logging process is the subject, not its start-up
    code, again = run_here(_slow_cmd(data, tmp_path), tmp_path, monkeypatch)
    assert code == 0, again
    assert again.count("finished earlier, skipped") == 4  # logged, not recomputed
    runs = [r for r in _fold_runs(tmp_path / "ml" / "mlflow.db") if r[1] == "active"]
    assert runs == [("FINISHED", "active")] * 4


def test_a_bad_invocation_exits_2_and_the_logging_process_creates_no_store(tmp_path):
    env = _subprocess_env(tmp_path)
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "ltr_bench.cli",
            "run",
            "--ranker",
            "nope",
            "--dataset",
            "synthetic",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2, bad.stderr
    assert "unknown ranker 'nope'" in bad.stderr
    assert not (tmp_path / "mlflow_runs" / "mlflow.db").exists()

"""MLflow logging of ``ltr-bench run`` in its own process (:mod:`ltr_bench.cli.mlflow_process`):
a logging process that dies costs no result (real processes and signals throughout). That
the run's own process never imports MLflow is shown by the real run of
``tests/cli/test_mlflow_wait.py``, that a killed run leaves no logging process behind by the
SIGKILLed run of ``tests/test_orphaned_parents.py``."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from ltrb_processes import run_here
from test_orphaned_parents import _logging_process
from test_reliability import _folds, _slow_cmd, _subprocess_env, _wait_for_results

# the logging process and the run's side of its end run in those processes only
pytestmark = pytest.mark.subprocess_coverage


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
def test_a_logging_process_that_dies_costs_no_result_and_a_rerun_logs_every_fold(
    tmp_path, monkeypatch
):
    # three folds of the slow fake (0.7 s fits): killed once the first is saved, the run
    # has two folds, 1.4 s, left to compute and save without its logging process
    data = _folds(tmp_path / "data", 3)
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
    assert len(list((tmp_path / "res").glob("*.json"))) == 3  # every cell computed and saved
    # the re-run in this process: the killed logging process is the subject, not its start-up
    code, again = run_here(_slow_cmd(data, tmp_path), tmp_path, monkeypatch)
    assert code == 0, again
    assert again.count("finished earlier, skipped") == 3  # logged, not recomputed
    runs = [r for r in _fold_runs(tmp_path / "ml" / "mlflow.db") if r[1] == "active"]
    assert runs == [("FINISHED", "active")] * 3


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

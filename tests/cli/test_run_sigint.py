"""SIGINT to the run's process alone (``kill -INT``, a supervisor) while it waits for MLflow
after its summary: exit 130 as for Ctrl-C, no word of an unreachable store, and no parent run
left RUNNING (the logging process logs no more and ends them KILLED; a re-run logs the rest)."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from ltrb_processes import subprocess_env


def _roles(db) -> list[tuple[str, str]]:
    """(role, status) of every ltr-bench run in the store; [] while it is not readable."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return con.execute(
                "select t.value, r.status from runs r join tags t on t.run_uuid = r.run_uuid"
                " where t.key = 'ltr_bench_role'"
            ).fetchall()
        finally:
            con.close()
    except sqlite3.Error:
        return []


@pytest.mark.slow
@pytest.mark.xfail(
    strict=False,
    reason="racy: a SIGINT landing just as the run starts its wait for MLflow exits 130 with "
    "the plain interruption message and may find no parent run yet (seen in CI runs)",
)
def test_sigint_while_mlflow_catches_up_exits_130_and_ends_the_parents(tmp_path):
    db = tmp_path / "ml" / "mlflow.db"
    tiny = ["n_queries=12", "docs_per_query=4", "n_features=3", "n_informative=2"]
    cmd = [sys.executable, "-m", "ltr_bench.cli", "run", "--ranker"]
    cmd += ["ltrb_fake_rankers:LinearRanker", "--dataset", "synthetic", "--seeds", "16"]
    cmd += [x for o in tiny for x in ("--dataset-option", o)]
    cmd += ["--metrics", "ndcg@10", "--results-dir", str(tmp_path / "res")]
    # 80 cells: MLflow lags behind the fits long enough to be interrupted, even now that a
    # new store is opened in well under a second
    cmd += ["--tracking-uri", f"sqlite:///{db}"]
    log = tmp_path / "stderr.txt"  # a file: the progress lines never fill a pipe
    with log.open("w") as stderr:
        proc = subprocess.Popen(
            cmd, env=subprocess_env(tmp_path, {}), stdout=subprocess.PIPE, stderr=stderr, text=True
        )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # the summary table: every cell is done
            if "ndcg@10" in line:
                break
        # once it says it waits: the logger, busy writing 80 fold runs, holds the store's
        # write lock so often that polling the store for a fold run saw one only at the end
        deadline = time.monotonic() + 240
        while "logging to MLflow ..." not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)  # to this process only, not its logging process
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = log.read_text()
    assert proc.returncode == 130, err
    assert "interrupted while logging to MLflow" in err and "re-run the same command" in err
    assert "reachable" not in err and "Traceback" not in out + err, err
    parents = [status for role, status in _roles(db) if role == "parent"]
    assert parents and "RUNNING" not in parents, parents

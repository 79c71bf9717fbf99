"""SIGINT to the run's process alone (``kill -INT``, a supervisor) while it waits for MLflow
after its summary: exit 130 as for Ctrl-C, no word of an unreachable store, and no parent run
left RUNNING (the logging process logs no more and ends them KILLED; a re-run logs the rest).

The window is made certain, not raced: the logging process is held by its test-only hook
(``LTR_BENCH_TEST_HOLD_LOGGING``, :mod:`ltr_bench.cli.mlflow_logger`) until the run's
interrupt reaches it, after its first fold run (the parent runs exist) or before it opens the
store (nothing made yet). The interrupt that lands just before the wait begins (before
``close`` went out) is driven in process: ``tests/cli/test_mlflow_process_interrupts.py``.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from ltrb_processes import subprocess_env

# the run's SIGINT handling and its logging process run in those processes only
pytestmark = [pytest.mark.slow, pytest.mark.subprocess_coverage]

#: two cells (folds 1 and 2) of a tiny generated dataset and a linear fake ranker
TINY = ["n_queries=12", "docs_per_query=4", "n_features=3", "n_informative=2"]


def _command(tmp_path) -> list[str]:
    db = tmp_path / "ml" / "mlflow.db"
    cmd = [sys.executable, "-m", "ltr_bench.cli", "run", "--ranker"]
    cmd += ["ltrb_fake_rankers:LinearRanker", "--dataset", "synthetic", "--folds", "1,2"]
    cmd += [x for o in TINY for x in ("--dataset-option", o)]
    cmd += ["--metrics", "ndcg@10", "--results-dir", str(tmp_path / "res")]
    return cmd + ["--tracking-uri", f"sqlite:///{db}"]


def _roles(db) -> list[tuple[str, str]]:
    """(role, status) of every ltr-bench run in the store; [] where there is none."""
    if not db.exists():
        return []
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return con.execute(
            "select t.value, r.status from runs r join tags t on t.run_uuid = r.run_uuid"
            " where t.key = 'ltr_bench_role'"
        ).fetchall()
    finally:
        con.close()


def _interrupted_while_held(tmp_path, where: str) -> tuple[int, str]:
    """Run the command with its logging process held at ``where``; once the summary is out
    and the logging process holds, SIGINT to the run's process alone. (exit code, stderr)."""
    held = tmp_path / "held"
    env = subprocess_env(tmp_path, {}, LTR_BENCH_TEST_HOLD_LOGGING=f"{where}:{held}")
    log = tmp_path / "stderr.txt"  # a file: the progress lines never fill a pipe
    with log.open("w") as stderr:
        proc = subprocess.Popen(
            _command(tmp_path),
            env=env,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            # SIGINT as a terminal's foreground job has it, even where this test runs with
            # it ignored (a job started with `&` or nohup passes SIG_IGN on)
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # the summary table: every cell is done
            if "ndcg@10" in line:
                break
        deadline = time.monotonic() + 120
        while not held.exists():  # the logging process is held: MLflow cannot catch up
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)  # to this process only, not its logging process
        out, _ = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = log.read_text()
    assert "Traceback" not in out + err, out + err
    return proc.returncode, err


def _said_interrupted_while_logging(code: int, err: str) -> None:
    assert code == 130, err
    assert "interrupted while logging to MLflow" in err and "re-run the same command" in err
    assert "reachable" not in err, err


def test_sigint_while_mlflow_catches_up_exits_130_ends_the_parents_and_a_rerun_logs_the_rest(
    tmp_path, monkeypatch
):
    from click.testing import CliRunner

    from ltr_bench.cli import main

    db = tmp_path / "ml" / "mlflow.db"
    code, err = _interrupted_while_held(tmp_path, "after-first-cell")
    _said_interrupted_while_logging(code, err)
    roles = _roles(db)
    parents = [status for role, status in roles if role == "parent"]
    assert parents and set(parents) == {"KILLED"}, roles
    # the logging process logged no fold run after the interrupt
    assert [role for role, _ in roles].count("fold") == 1, roles
    # a plain re-run (in this process: the signal is not its subject) logs the fold run
    # MLflow lacks, computing nothing again
    monkeypatch.setenv("LTR_BENCH_CACHE", str(tmp_path / "cache"))
    rerun = CliRunner().invoke(main, _command(tmp_path)[3:], catch_exceptions=False)
    assert rerun.exit_code == 0, rerun.output
    assert rerun.output.count("finished earlier, skipped") == 2, rerun.output
    roles = _roles(db)
    assert [role for role, _ in roles].count("fold") == 2, roles
    assert "RUNNING" not in {status for _, status in roles}, roles


def test_sigint_before_the_logging_opened_the_store_leaves_it_untouched(tmp_path):
    code, err = _interrupted_while_held(tmp_path, "before-open")
    _said_interrupted_while_logging(code, err)
    assert not (tmp_path / "ml" / "mlflow.db").exists()

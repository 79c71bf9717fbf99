"""MLflow logging of ``ltr-bench run`` in its own process (:mod:`ltr_bench.cli.mlflow_process`):
the run's process never imports MLflow, a killed run leaves no logging process behind, and a
logging process that dies costs no result (real processes and signals throughout)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

TESTS = Path(__file__).resolve().parents[1]

SLOW_RANKER = """
import time
from ltrb_fake_rankers import LinearRanker

class SlowRanker(LinearRanker):
    def fit(self, X, y, *, qid, eval_set=None):
        time.sleep(0.7)
        return super().fit(X, y, qid=qid, eval_set=eval_set)
"""


def _folds(root: Path, n: int) -> Path:
    """``n`` LETOR folds of a few queries (labels 0-2, 3 features)."""
    rng = np.random.default_rng(0)
    for k in range(1, n + 1):
        for split, q0 in (("train", 1), ("vali", 100), ("test", 200)):
            lines = [
                f"{d % 3} qid:{q} " + " ".join(f"{j + 1}:{rng.random():.4f}" for j in range(3))
                for q in range(q0, q0 + 5)
                for d in range(5)
            ]
            path = root / f"Fold{k}" / f"{split}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(lines) + "\n")
    return root


def _env(tmp_path: Path) -> dict:
    mods = tmp_path / "mods"
    mods.mkdir(exist_ok=True)
    (mods / "ltrb_slow.py").write_text(SLOW_RANKER)
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(mods), str(TESTS)]),
        LTR_BENCH_CACHE=str(tmp_path / "cache"),
        OMP_NUM_THREADS="1",
    )
    env.pop("MLFLOW_TRACKING_URI", None)
    return env


def _run_args(data: Path, tmp_path: Path) -> list[str]:
    return [
        "run",
        "--ranker",
        "ltrb_slow:SlowRanker",
        "--dataset",
        str(data),
        "--results-dir",
        str(tmp_path / "res"),
        "--tracking-uri",
        f"sqlite:///{tmp_path / 'ml' / 'mlflow.db'}",
        "--metrics",
        "ndcg@10",
    ]


def _cmd(data: Path, tmp_path: Path) -> list[str]:
    return [sys.executable, "-m", "ltr_bench.cli", *_run_args(data, tmp_path)]


def _wait_for(predicate, proc, what: str, timeout: float = 90.0) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if predicate():
            return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"ended before {what}: {proc.communicate()}")
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


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


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_the_run_process_never_imports_mlflow_and_every_fold_is_logged(tmp_path):
    data = _folds(tmp_path / "data", 2)
    code = (
        "import sys\n"
        "from ltr_bench.cli import main\n"
        "try:\n"
        f"    main({_run_args(data, tmp_path)!r})\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "print('EXIT', code, 'mlflow' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=_env(tmp_path), capture_output=True, text=True
    )
    assert out.stdout.splitlines()[-1] == "EXIT 0 False", out.stderr
    assert _fold_runs(tmp_path / "ml" / "mlflow.db") == [("FINISHED", "active")] * 2


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_a_killed_run_leaves_no_logging_process_behind(tmp_path):
    data = _folds(tmp_path / "data", 4)
    proc = subprocess.Popen(
        _cmd(data, tmp_path), env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        _wait_for(lambda: any((tmp_path / "res").glob("*.json")), proc, "a first result")
        child = _logging_process(proc.pid)
        proc.kill()
        proc.communicate()
        _wait_for(lambda: not _alive(child), None, "the logging process to stop", timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_a_logging_process_that_dies_costs_no_result_and_a_rerun_logs_every_fold(tmp_path):
    data = _folds(tmp_path / "data", 4)
    env = _env(tmp_path)
    proc = subprocess.Popen(
        _cmd(data, tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    _wait_for(lambda: any((tmp_path / "res").glob("*.json")), proc, "a first result")
    os.kill(_logging_process(proc.pid), signal.SIGKILL)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert "MLflow logging failed: the MLflow logging process ended unexpectedly" in err
    assert "most recent call" not in out + err
    assert len(list((tmp_path / "res").glob("*.json"))) == 4  # every cell computed and saved
    again = subprocess.run(_cmd(data, tmp_path), env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert again.stderr.count("finished earlier, skipped") == 4  # logged, not recomputed
    runs = [r for r in _fold_runs(tmp_path / "ml" / "mlflow.db") if r[1] == "active"]
    assert runs == [("FINISHED", "active")] * 4

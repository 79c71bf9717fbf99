"""``ltr-bench run``'s work is done when it exits: by default it waits until MLflow has every
run (:func:`ltr_bench.tracking.background.wait_seconds`), so whatever reads MLflow right after
the command (its client, the UI, a shared server, a container that ends with the job) finds
every fold run and parent FINISHED. The background exit stays an explicit choice
(``LTR_BENCH_MLFLOW_WAIT=0``, ``tests/cli/test_mlflow_background.py``). A real process,
which also shows that the run's own process never imports MLflow."""

from __future__ import annotations

import subprocess
import sys

import pytest
from test_reliability import _folds, _slow_cmd, _subprocess_env

from ltr_bench.tracking.background import wait_seconds

FAST = "ltrb_fake_rankers:LinearRanker"


def test_the_default_is_to_wait_for_the_end_and_zero_is_the_background_exit(monkeypatch):
    monkeypatch.delenv("LTR_BENCH_MLFLOW_WAIT", raising=False)
    assert wait_seconds() is None  # Event.wait(None): until the logging ends
    monkeypatch.setenv("LTR_BENCH_MLFLOW_WAIT", "0")
    assert wait_seconds() == 0.0
    monkeypatch.setenv("LTR_BENCH_MLFLOW_WAIT", "inf")
    assert wait_seconds() is None


#: the command, then one line when the process ends: whether its own process imported MLflow
#: (after the exit handlers console_main runs, ours registered first so run last)
_CONSOLE_MAIN_SAYING_IF_MLFLOW_WAS_IMPORTED = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('MLFLOW IMPORTED', 'mlflow' in sys.modules, flush=True))\n"
    "from ltr_bench.cli.app import console_main\n"
    "console_main()\n"
)


@pytest.mark.slow
def test_right_after_run_exits_mlflow_has_every_fold_run_finished(tmp_path):
    """Also: the run's own process never imports MLflow (its logging process does:
    ``ltr_bench/cli/mlflow_process.py``); the same real process answers both."""
    from mlflow import MlflowClient

    data = _folds(tmp_path / "data", 3)
    env = _subprocess_env(tmp_path)
    env.pop("LTR_BENCH_MLFLOW_WAIT", None)  # the default, as a user has it
    # a fast ranker: the fits leave MLflow no time to catch up before the run's end, which
    # is what the wait must cover. `python -m ltr_bench.cli`'s console_main, and one more
    # exit handler that says whether MLflow was imported in this process
    args = _slow_cmd(data, tmp_path, ranker=FAST)[3:]
    code = _CONSOLE_MAIN_SAYING_IF_MLFLOW_WAS_IMPORTED
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "in the background" not in done.stderr, done.stderr
    assert done.stdout.splitlines()[-1] == "MLFLOW IMPORTED False", done.stdout + done.stderr
    # read at once, through MLflow's own client, as a script or CI job would
    client = MlflowClient(f"sqlite:///{tmp_path / 'ml' / 'mlflow.db'}")
    (exp,) = [e for e in client.search_experiments() if e.name.startswith("ltr-bench/")]
    runs = client.search_runs([exp.experiment_id], max_results=100)
    roles = sorted((r.data.tags.get("ltr_bench_role"), r.info.status) for r in runs)
    assert roles == [("fold", "FINISHED")] * 3 + [("parent", "FINISHED")], roles
    assert {r.info.lifecycle_stage for r in runs} == {"active"}

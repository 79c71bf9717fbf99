"""Concurrent runs of the same cells, with real processes and signals: each cell computed
once and logged once; a run waiting on a stopped process says so and gives up in bounded
time (:mod:`ltr_bench.results.claims`, :mod:`ltr_bench.run.harness`)."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ltrb_processes import subprocess_env

RANKERS = """
import os, time
from ltrb_fake_rankers import LinearRanker

class CountingRanker(LinearRanker):
    '''Appends "<pid> <n_train_docs>" to $LTRB_FITS for every fit, then sleeps $LTRB_PAUSE s.'''

    def fit(self, X, y, *, qid, eval_set=None):
        with open(os.environ["LTRB_FITS"], "a") as fh:
            fh.write(f"{os.getpid()} {len(y)}\\n")
        time.sleep(float(os.environ.get("LTRB_PAUSE", "0")))
        return super().fit(X, y, qid=qid, eval_set=eval_set)
"""

TINY = ["n_queries=40", "docs_per_query=6", "n_features=5", "n_informative=3"]


def _env(tmp_path: Path, **extra) -> dict:
    return subprocess_env(
        tmp_path, {"ltrb_counting": RANKERS}, LTRB_FITS=str(tmp_path / "fits.txt"), **extra
    )


def _cmd(tmp_path: Path, *args: str) -> list[str]:
    options = [x for kv in TINY for x in ("--dataset-option", kv)]
    return [
        sys.executable,
        "-m",
        "ltr_bench.cli",
        "run",
        "--ranker",
        "ltrb_counting:CountingRanker",
        "--dataset",
        "synthetic",
        *options,
        "--results-dir",
        str(tmp_path / "res"),
        "--tracking-uri",
        f"sqlite:///{tmp_path / 'ml' / 'mlflow.db'}",
        "--metrics",
        "ndcg@10",
        *args,
    ]


def _fits(tmp_path: Path) -> list[str]:
    path = tmp_path / "fits.txt"
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.slow
def test_a_run_waiting_on_a_stopped_process_names_it_and_gives_up_in_bounded_time(
    tmp_path, monkeypatch
):
    from click.testing import CliRunner

    from ltr_bench.cli import main

    # half a second of stopped holder (two of the waiter's polls) shows the bounded wait as
    # well as the product's 60 s would
    env = _env(tmp_path, LTR_BENCH_STOPPED_WAIT="0.5", LTRB_PAUSE="60")
    cmd = _cmd(tmp_path, "--folds", "1", "--no-mlflow")
    holder = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        t0 = time.monotonic()
        while not _fits(tmp_path):  # it holds the cell's claim while it fits
            assert holder.poll() is None, holder.communicate()
            assert time.monotonic() - t0 < 120, "the first run never started fitting"
            time.sleep(0.1)
        holder.send_signal(signal.SIGSTOP)  # what Ctrl-Z does
        # the waiting run in this process (the holder is the real process it waits on)
        monkeypatch.syspath_prepend(str(tmp_path / "mods"))
        t0 = time.monotonic()
        waiter = CliRunner().invoke(
            main,
            cmd[3:],
            env={k: env[k] for k in ("LTR_BENCH_STOPPED_WAIT", "LTRB_PAUSE", "LTRB_FITS")},
        )
        waited = time.monotonic() - t0
    finally:
        holder.send_signal(signal.SIGCONT)
        holder.kill()
        holder.communicate()
    err = waiter.stderr
    assert waiter.exit_code == 1, err
    assert isinstance(waiter.exception, (SystemExit, type(None))), waiter.exception
    assert f"another process is computing this cell (process {holder.pid})" in err
    assert f"process {holder.pid} is stopped (Ctrl-Z or SIGSTOP)" in err
    assert f"kill -CONT {holder.pid}" in err and "most recent call" not in err + waiter.stdout
    assert len(_fits(tmp_path)) == 1  # the waiting run computed nothing
    assert waited < 120  # it gave up instead of waiting for ever (0.5 s of stopped holder)


@pytest.mark.slow
def test_two_concurrent_dask_runs_compute_and_log_each_cell_once(tmp_path):
    env = _env(tmp_path, LTRB_PAUSE="1")
    # one worker each: the two runs (separate processes, each with a cluster of its own)
    # are what compete for the cells, not the workers within one run (a run's client claims
    # every cell before it ships any to its workers, whatever their number)
    cmd = _cmd(tmp_path, "--folds", "1,2,3,4", "--workers", "1")
    runs = [
        subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [run.communicate(timeout=600) for run in runs]
    for run, (out, err) in zip(runs, outs):
        assert run.returncode == 0, err
        assert "most recent call" not in out + err
    fits = _fits(tmp_path)
    assert len(fits) == 4, fits  # 4 cells, each fitted once over both runs
    assert len(list((tmp_path / "res").glob("*.json"))) == 4
    con = sqlite3.connect(tmp_path / "ml" / "mlflow.db")
    logged = con.execute(
        "select t.value from runs r join tags t on t.run_uuid = r.run_uuid"
        " join tags role on role.run_uuid = r.run_uuid"
        " where t.key = 'ltr_bench_key' and role.key = 'ltr_bench_role'"
        " and role.value = 'fold' and r.lifecycle_stage = 'active'"
    ).fetchall()
    parents = con.execute(
        "select r.status from runs r join tags t on t.run_uuid = r.run_uuid"
        " where t.key = 'ltr_bench_role' and t.value = 'parent'"
    ).fetchall()
    con.close()
    assert len(logged) == 4 and len(set(logged)) == 4  # one fold run per cell
    assert parents == [("FINISHED",)]

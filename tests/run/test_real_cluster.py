"""``--scheduler`` against a real cluster of separate processes: ``dask scheduler`` and two
``dask worker`` processes started with the ``dask`` command line on 127.0.0.1 (the recipe of
``docs/dask.md``). ``run`` and ``tune`` on it give the in-process numbers; a worker killed
mid-cell costs only that attempt (each cell is finished once, nothing is computed twice); a
worker that does not see the data home fails the cell with a message that says so.

The processes are bounded: each starts in a session of its own, the workers end by
themselves when the scheduler is gone (``--death-timeout``), and the fixture ends every
session (SIGTERM, then SIGKILL) whatever the test did.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from ltrb_processes import subprocess_env
from test_reliability import _rows, _write

pytest.importorskip("distributed")
DASK = Path(sys.executable).with_name("dask")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not DASK.exists(), reason="no `dask` command beside this Python"),
]

#: a ranker whose fit takes a while and is logged (``start``/``end`` with the process id and
#: the training data's checksum, which names the fold): a worker can be killed mid-fit
SLEEPY = """
import os, time
import numpy as np
from ltr_bench.ranker import BaseRanker, RankerTags, check_ranking_input


class SleepyRanker(BaseRanker):
    def __init__(self, random_state=0, seconds=None):
        self.random_state = random_state
        self.seconds = seconds

    def ranker_tags(self):
        return RankerTags(seed_param="random_state")

    def fit(self, X, y, *, qid, eval_set=None):
        X, y, qid = check_ranking_input(X, y, qid)
        fold = f"{float(np.asarray(X).sum()):.6f}"
        with open(os.environ["LTRB_SLEEPY_LOG"], "a") as fh:
            fh.write(f"start {os.getpid()} {fold}\\n")
        seconds = self.seconds
        if seconds is None:
            seconds = float(os.environ.get("LTRB_SLEEPY_SECONDS", "2"))
        time.sleep(seconds)
        self.w_ = np.linalg.lstsq(X, np.asarray(y, float), rcond=None)[0]
        with open(os.environ["LTRB_SLEEPY_LOG"], "a") as fh:
            fh.write(f"end {os.getpid()} {fold}\\n")
        return self

    def predict(self, X, *, qid=None):
        return np.asarray(X, dtype=np.float64) @ self.w_
"""

RANKERS = "ltrb_sleepy:SleepyRanker,ridge"
START_TIMEOUT = 180.0  # seconds for the cluster to come up on a loaded 2-core machine


def _home(root: Path, names: tuple[str, ...]) -> Path:
    """A data home with tiny MQ2007/MQ2008-shaped datasets (folds 1-5, 3 features)."""
    for name in names:
        for k in range(1, 6):  # each fold's own queries (its checksum names it in the log)
            folder = root / name / f"Fold{k}"
            _write(folder / "train.txt", _rows(8, qid0=1000 * k))
            _write(folder / "vali.txt", _rows(4, qid0=1000 * k + 100))
            _write(folder / "test.txt", _rows(4, qid0=1000 * k + 200))
    return root


class Cluster:
    """``dask scheduler`` + two ``dask worker`` processes on 127.0.0.1 (see the module)."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.file = tmp / "scheduler.json"
        # the workers' data home has MQ2008 only; the client's has MQ2007 too
        self.worker_home = _home(tmp / "worker-home", ("MQ2008",))
        self.client_home = _home(tmp / "client-home", ("MQ2008", "MQ2007"))
        self.log = tmp / "fits.log"
        self.env = subprocess_env(
            tmp,
            {"ltrb_sleepy": SLEEPY},
            LTR_BENCH_DATA=str(self.worker_home),
            LTRB_SLEEPY_LOG=str(self.log),
        )
        self.env.pop("DASK_SCHEDULER_ADDRESS", None)
        self.procs: list[subprocess.Popen] = []

    def _start(self, *args: str, name: str, env: dict) -> None:
        out = open(self.tmp / f"{name}.log", "w")  # noqa: SIM115 - closed with the process
        self.procs.append(
            subprocess.Popen(
                [str(DASK), *args],
                env=env,
                cwd=self.tmp,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: ended as a whole
            )
        )

    def start(self) -> None:
        sched = ("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard")
        self._start(*sched, "--scheduler-file", str(self.file), name="scheduler", env=self.env)
        self._until(lambda: self.file.exists(), "the scheduler file")
        for k in (1, 2):
            self._start(
                "worker",
                "--scheduler-file",
                str(self.file),
                "--nthreads",
                "1",
                "--nworkers",
                "1",
                "--no-dashboard",
                "--death-timeout",
                "60",
                "--name",
                f"w{k}",
                name=f"worker{k}",
                env={**self.env, "LTR_BENCH_CACHE": str(self.tmp / f"cache-w{k}")},
            )
        self.until_two_workers("two workers")

    @property
    def address(self) -> str:
        return json.loads(self.file.read_text())["address"]

    def until_two_workers(self, what: str) -> None:
        """Wait until both workers are connected, on one client (told by the scheduler, not
        asked again and again with a new client each time)."""
        from distributed import Client

        with Client(self.address, timeout="20s") as c:

            def two() -> bool:
                with contextlib.suppress(TimeoutError):
                    c.wait_for_workers(2, timeout=5)
                return len(c.scheduler_info(n_workers=-1)["workers"]) == 2

            self._until(two, what)

    def _until(self, ok, what: str) -> None:
        end = time.monotonic() + START_TIMEOUT
        while time.monotonic() < end:
            for p in self.procs:
                if p.poll() is not None:
                    raise AssertionError(f"a cluster process ended early ({p.args}): {what}")
            try:
                if ok():
                    return
            except (OSError, ValueError, json.JSONDecodeError, TimeoutError):
                pass
            time.sleep(0.5)
        raise AssertionError(f"timed out waiting for {what}")

    def stop(self) -> None:
        for p in reversed(self.procs):  # workers first, then the scheduler
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)

    def in_process(self, monkeypatch, cwd: Path, *args: str, home: Path | None = None, **env):
        """``ltr-bench *args`` in this process (click's CliRunner) from ``cwd``, as
        :meth:`ltr_bench` would run it: where the cluster's workers or the client's own
        results are what is tested, not a process of the client (a re-run, the in-process
        reference). Returns (exit code, stderr)."""
        from click.testing import CliRunner

        from ltr_bench.cli import main

        monkeypatch.syspath_prepend(str(self.tmp / "mods"))  # ltrb_sleepy, as the workers
        monkeypatch.chdir(_mkdir(cwd))
        variables = {
            "LTR_BENCH_DATA": str(home or self.worker_home),
            "LTRB_SLEEPY_LOG": str(self.log),
            **env,
        }
        result = CliRunner().invoke(main, list(args), env=variables)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result.exit_code, result.stderr

    def ltr_bench(self, cwd: Path, *args: str, home: Path | None = None, **kw):
        cwd.mkdir(parents=True, exist_ok=True)
        env = {**self.env, "LTR_BENCH_DATA": str(home or self.worker_home)}
        return subprocess.Popen(
            [sys.executable, "-m", "ltr_bench.cli", *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            **kw,
        )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        c.start()
        yield c
    finally:
        c.stop()


def _metrics(folder: Path) -> dict[str, dict]:
    return {
        r["key"]: r["metrics"]
        for r in (json.loads(p.read_text()) for p in folder.glob("*.json"))
        if r["status"] == "ok"
    }


def _fits(log: Path) -> list[tuple[str, int, str]]:
    lines = log.read_text().split() if log.exists() else []
    return [(lines[i], int(lines[i + 1]), lines[i + 2]) for i in range(0, len(lines), 3)]


def _kill_the_first_fit(log: Path, after: int, done: threading.Event, killed: list) -> None:
    """SIGKILL the process of the first fit logged in ``log`` after its first ``after``
    entries (appended to ``killed``), or give up when ``done`` is set (the run ended) or
    after ``START_TIMEOUT``."""
    end = time.monotonic() + START_TIMEOUT
    while time.monotonic() < end and not done.is_set():
        starts = [pid for what, pid, _ in _fits(log)[after:] if what == "start"]
        if starts:
            os.kill(starts[0], signal.SIGKILL)  # mid-fit (the fit sleeps 2 s after its start)
            killed.append(starts[0])
            return
        time.sleep(0.05)


def test_run_on_a_cluster_survives_a_killed_worker_fits_each_cell_once_equals_in_process(
    cluster, monkeypatch
):
    args = ("run", "--ranker", RANKERS, "--dataset", "mq2008", "--folds", "1,2", "--no-mlflow")
    work = cluster.tmp / "run"
    # the client in this process; a thread kills the worker of the first fit meanwhile
    # (the module's other tests' fits may come before in the log: any order)
    before, done, killed = len(_fits(cluster.log)), threading.Event(), []
    killer = threading.Thread(target=_kill_the_first_fit, args=(cluster.log, before, done, killed))
    killer.start()
    try:
        code, err = cluster.in_process(monkeypatch, work, *args, "--scheduler", cluster.address)
    finally:
        done.set()
        killer.join()
    assert killed, f"no fit started on the cluster: {err}"
    [victim] = killed
    assert victim != os.getpid()  # a worker's process computes the cell, not the client
    assert code == 0, err
    got = _metrics(work / "mlflow_runs" / "results")
    assert len(got) == 4  # 2 rankers x 2 folds, each saved once
    fits = _fits(cluster.log)[before:]
    ends = [(pid, fold) for what, pid, fold in fits if what == "end"]
    assert len(ends) == 2 and len({fold for _, fold in ends}) == 2  # each fold's fit once
    assert victim not in {pid for pid, _ in ends}  # the killed attempt never finished
    assert len(fits) == 5  # 2 finished fits, their 2 starts, and the killed attempt's start

    # the same command again: every cell finished earlier, nothing reaches the workers (a
    # client in this process: the workers' fit log is what is read)
    code, err2 = cluster.in_process(monkeypatch, work, *args, "--scheduler", cluster.address)
    assert code == 0, err2
    assert err2.count("finished earlier, skipped") == 4
    assert _fits(cluster.log)[before:] == fits

    # in process (a fit log of its own, no sleep): the same numbers, to the last digit
    local = cluster.tmp / "local"
    code, err3 = cluster.in_process(
        monkeypatch,
        local,
        *args,
        LTRB_SLEEPY_LOG=str(cluster.tmp / "fits-local.log"),
        LTRB_SLEEPY_SECONDS="0",
    )
    assert code == 0, err3
    assert _metrics(local / "mlflow_runs" / "results") == got


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_tune_on_a_real_cluster_equals_in_process(cluster, monkeypatch):
    # both clients in this process: the tuning on the cluster's workers is what is tested
    args = ("tune", "--ranker", "ridge", "--dataset", "mq2008", "--folds", "1,2")
    args += ("--trials", "3", "--no-mlflow")
    on_cluster = cluster.tmp / "tune"
    code, err = cluster.in_process(monkeypatch, on_cluster, *args, "--scheduler", cluster.address)
    assert code == 0, err
    here = cluster.tmp / "tune-local"
    code, err = cluster.in_process(monkeypatch, here, *args)
    assert code == 0, err
    got = _metrics(on_cluster / "mlflow_runs" / "results")
    assert len(got) == 2
    assert got == _metrics(here / "mlflow_runs" / "results")


def test_a_worker_that_does_not_see_the_data_home_fails_the_cell_saying_so(cluster, monkeypatch):
    # MQ2007 is in the client's data home only: the client's check passes, the workers'
    # load fails, and the message names the worker and the data home it saw (the client in
    # this process: the message comes from the worker)
    code, err = cluster.in_process(
        monkeypatch,
        cluster.tmp / "nodata",
        *("run", "--ranker", "ridge", "--dataset", "mq2007", "--folds", "1", "--no-mlflow"),
        "--scheduler",
        cluster.address,
        home=cluster.client_home,
    )
    assert code == 1, err
    assert "1 of 1 cell(s) failed" in err and "on the Dask worker tcp://127.0.0.1:" in err
    assert f"The data home is {cluster.worker_home}" in err  # the worker's, not the client's
    assert "most recent call" not in err


def test_ctrl_c_on_a_cluster_frees_its_workers_and_the_next_run_finishes(cluster, monkeypatch):
    # each worker fits a cell that would sleep an hour; Dask cannot stop a task in a
    # worker's thread, so without freeing them the next run would wait for both fits
    sleepy = "ltrb_sleepy:SleepyRanker"
    args = ("run", "--ranker", sleepy, "--param", f"{sleepy}.seconds=3600", "--dataset")
    args += ("mq2008", "--folds", "1,2", "--no-mlflow", "--scheduler", cluster.address)
    before = len(_fits(cluster.log))
    # as from a terminal: Ctrl-C's SIGINT at its default even when pytest was started in the
    # background of a shell, which ignores SIGINT in what it starts (and Python keeps that)
    first = cluster.ltr_bench(
        cluster.tmp / "interrupted",
        *args,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    end = time.monotonic() + START_TIMEOUT
    while len(_fits(cluster.log)) < before + 2:  # both workers are fitting
        assert time.monotonic() < end and first.poll() is None, first.communicate()
        time.sleep(0.1)
    fitting = {pid for _, pid, _ in _fits(cluster.log)[before:]}
    first.send_signal(signal.SIGINT)
    _, err = first.communicate(timeout=300)
    assert first.returncode == 130, err
    assert "restarting 2 Dask worker(s) to stop the cancelled cell(s)" in err, err
    for pid in fitting:  # the abandoned fits' processes are gone, not sleeping on
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    # the next run, a client in this process: what is tested is that the workers are free
    code, err = cluster.in_process(
        monkeypatch,
        cluster.tmp / "after",
        *("run", "--ranker", "ridge", "--dataset", "mq2008", "--folds", "1", "--no-mlflow"),
        "--scheduler",
        cluster.address,
    )  # well before an hour
    assert code == 0, err
    assert len(_metrics(cluster.tmp / "after" / "mlflow_runs" / "results")) == 1
    assert not [f for f in _fits(cluster.log)[before:] if f[0] == "end"]
    cluster.until_two_workers("both workers back after the restart")

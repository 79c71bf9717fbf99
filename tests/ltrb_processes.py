"""Running ``ltr-bench`` in real subprocesses for tests with signals, kills and concurrent
runs: one environment builder for every such test."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

TESTS = Path(__file__).resolve().parent

#: a fake ranker whose fit takes 0.7 s: time to stop a run half-way
SLOW_RANKER = """
import time
from ltrb_fake_rankers import LinearRanker

class SlowRanker(LinearRanker):
    def fit(self, X, y, *, qid, eval_set=None):
        time.sleep(0.7)
        return super().fit(X, y, qid=qid, eval_set=eval_set)
"""


def subprocess_env(tmp_path: Path, modules: dict[str, str], **extra: str) -> dict[str, str]:
    """The environment of a ``python -m ltr_bench.cli`` subprocess: each ``modules`` entry
    (module name -> source) written to ``tmp_path/mods`` and importable beside the tests'
    helpers (``ltrb_fake_rankers``) and the caller's ``PYTHONPATH``, a data cache of its
    own, one BLAS thread, no ``MLFLOW_TRACKING_URI`` from the caller, and ``extra``
    variables."""
    mods = tmp_path / "mods"
    mods.mkdir(exist_ok=True)
    for name, source in modules.items():
        (mods / f"{name}.py").write_text(source)
    # the caller's PYTHONPATH stays after ours: a checkout put first on the path (not the
    # installed one) is the code the subprocess runs too
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(mods), str(TESTS), *inherited]),
        LTR_BENCH_CACHE=str(tmp_path / "cache"),
        OMP_NUM_THREADS="1",
        **extra,
    )
    env.pop("MLFLOW_TRACKING_URI", None)
    return env


def untraced_env(**extra: str) -> dict[str, str]:
    """This process's environment without coverage's start-up variables: for a helper
    process that runs none of our code (mkdocs, pip building a wheel, an SQLite writer),
    which coverage would otherwise trace for nothing (half as long again). Only needed in a
    test marked ``subprocess_coverage``: elsewhere the root ``conftest.py`` has taken them
    out of the environment already."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_PROCESS_")}
    env.update(extra)
    return env


#: a process that writes to an SQLite file inside a transaction large enough to spill to its
#: rollback journal, says so, and waits to be killed
_JOURNAL_WRITER = """
import sqlite3, sys, time
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("pragma cache_size=1")
con.execute("begin")
con.execute("create table ltrb_unfinished (x)")
con.executemany("insert into ltrb_unfinished values (?)", [("x" * 200,)] * 5000)
print("in the transaction", flush=True)
time.sleep(120)
"""


def leave_hot_journal(db: Path) -> Path:
    """SIGKILL a writer of ``db`` in the middle of a transaction: ``<db>-journal`` is left
    hot (SQLite rolls it back on the next read-write open; a read-only connection refuses
    the file). Returns the journal's path."""
    import signal
    import subprocess
    import sys

    writer = subprocess.Popen(
        [sys.executable, "-c", _JOURNAL_WRITER, str(db)],
        stdout=subprocess.PIPE,
        text=True,
        env=untraced_env(),
    )
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "in the transaction"
        writer.send_signal(signal.SIGKILL)
    finally:
        writer.wait(timeout=30)
    journal = Path(f"{db}-journal")
    assert journal.exists() and journal.stat().st_size > 0
    return journal


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_ui(work: Path, timeout: float = 90.0):
    """``ltr-bench ui`` on the default store of ``work``, in its own process group, on
    127.0.0.1; yields its base URL once the REST API answers, and stops it (the UI and its
    workers) at the end."""
    import subprocess
    import sys
    import time
    import urllib.request

    import pytest

    port = free_port()
    exe = Path(sys.executable).with_name("ltr-bench")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "ltr_bench.cli"]
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    proc = subprocess.Popen(
        cmd + ["ui", "--port", str(port)],
        cwd=work,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    f"ltr-bench ui exited ({proc.returncode}): "
                    f"{proc.stderr.read().decode()[-2000:]}"
                )
            try:
                with urllib.request.urlopen(
                    base + "/api/2.0/mlflow/experiments/search?max_results=100", timeout=5
                ):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"ltr-bench ui did not answer within {timeout:.0f} s")
                time.sleep(0.5)
        yield base
    finally:
        os.killpg(proc.pid, 15)  # the process group started above (the UI and its workers)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()


#: Chromium's arguments for the tests (no sandbox in a container, nothing fetched)
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def run_here(cmd: list[str], tmp_path: Path, monkeypatch, **extra: str) -> tuple[int, str]:
    """The ``python -m ltr_bench.cli`` command ``cmd`` of a test's real subprocess, run in
    this process with click's CliRunner instead: for the re-run or check after the real
    process was killed or stopped (that process is the subject; a second start-up, MLflow
    imported again and traced by coverage, is not). As :func:`subprocess_env` has it: the
    modules under ``tmp_path/mods`` importable, the data cache ``tmp_path/cache``, no
    ``MLFLOW_TRACKING_URI``, and ``extra`` variables; MLflow logs on a thread of this
    process (root ``conftest.py``). Returns the exit code and the output (stdout and
    stderr, as click 8.2+ gives them together); an uncaught exception is raised."""
    import sys

    from click.testing import CliRunner

    from ltr_bench.cli import main

    assert cmd[:3] == [sys.executable, "-m", "ltr_bench.cli"], cmd[:3]
    monkeypatch.setenv("LTR_BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    for name, value in extra.items():
        monkeypatch.setenv(name, value)
    if (tmp_path / "mods").is_dir():
        monkeypatch.syspath_prepend(str(tmp_path / "mods"))
    result = CliRunner().invoke(main, cmd[3:])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def close_dask_rankers_clusters() -> None:
    """Close the local Dask clusters the ``lightgbm-dask`` and ``xgboost-dask`` rankers keep
    in this process for later fits (their worker processes), if any was started."""
    import sys

    module = sys.modules.get("ltr_bench_baselines.dask_gbdt")
    if module is not None and module._LOCAL:
        module._close_local_clusters()

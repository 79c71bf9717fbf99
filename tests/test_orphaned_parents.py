"""Issue 27: parent runs are never left RUNNING for ever. Real ``ltr-bench run`` processes on
a real SQLite store: one killed with SIGKILL between logging a fold and ending its parent,
one whose store is locked by another process mid-run, one alive and waiting; what each
parent's status and tags are afterwards (:mod:`ltr_bench.tracking.owners`)."""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from ltrb_processes import subprocess_env
from test_reliability import make_folder

HOOK_RANKER = """
import os, signal, time
from pathlib import Path
from ltrb_fake_rankers import LinearRanker

_FITS = [0]

class HookRanker(LinearRanker):
    '''Fit number n of this process (1-based): appends its pid to $LTRB_DIR/fits, touches
    $LTRB_DIR/fit<n>; kills its own process with SIGKILL when n is in $LTRB_KILL_AT; waits
    for the file $LTRB_DIR/go<n> when n is in $LTRB_WAIT_AT.'''

    def fit(self, X, y, *, qid, eval_set=None):
        _FITS[0] += 1
        n, d = _FITS[0], Path(os.environ["LTRB_DIR"])
        with open(d / "fits", "a") as fh:
            fh.write(f"{os.getpid()}\\n")
        (d / f"fit{n}").touch()
        if str(n) in os.environ.get("LTRB_KILL_AT", "").split(","):
            os.kill(os.getpid(), signal.SIGKILL)
        if str(n) in os.environ.get("LTRB_WAIT_AT", "").split(","):
            while not (d / f"go{n}").exists():
                time.sleep(0.05)
        return super().fit(X, y, qid=qid, eval_set=eval_set)
"""


#: MLflow sets ``PRAGMA busy_timeout = 20000`` on each SQLite session (hard-coded in
#: ``mlflow.store.db.utils``): logging that meets a locked store fails only after 20 s. This
#: ``sitecustomize`` (imported at start-up by the processes of the test that uses it: the run
#: and its logging process) rewrites that statement to a 2 s timeout, so the lock is met in
#: 2 s: the same failure, the same path, 18 s sooner (the brief waits on the test's own
#: readers still fit in 2 s). It leaves ``short_busy_timeout`` in ``LTRB_DIR`` when it acts.
SHORT_BUSY_TIMEOUT = """
import os, re
from pathlib import Path
from sqlalchemy import event
from sqlalchemy.engine import Engine

_BUSY = re.compile(r"\\s*PRAGMA\\s+busy_timeout\\s*=\\s*\\d+\\s*;?\\s*$", re.IGNORECASE)

@event.listens_for(Engine, "before_cursor_execute", retval=True)
def _short_busy_timeout(conn, cursor, statement, parameters, context, executemany):
    if _BUSY.match(statement):
        statement = "PRAGMA busy_timeout = 2000;"
        (Path(os.environ["LTRB_DIR"]) / "short_busy_timeout").touch()  # the test checks it
    return statement, parameters
"""


def _env(tmp_path: Path, *, short_busy_timeout: bool = False, **extra) -> dict:
    modules = {"ltrb_hook": HOOK_RANKER}
    if short_busy_timeout:
        modules["sitecustomize"] = SHORT_BUSY_TIMEOUT
    return subprocess_env(tmp_path, modules, LTRB_DIR=str(tmp_path), **extra)


def _cmd(tmp_path: Path, *extra: str) -> list[str]:
    data = tmp_path / "data"
    if not data.exists():
        for k in (1, 2, 3):
            make_folder(data / f"Fold{k}")
    return [
        sys.executable, "-m", "ltr_bench.cli", "run",
        "--ranker", "ltrb_hook:HookRanker", "--dataset", str(data),
        "--results-dir", str(tmp_path / "res"),
        "--tracking-uri", f"sqlite:///{tmp_path / 'ml' / 'mlflow.db'}",
        "--metrics", "ndcg@10", *extra,
    ]  # fmt: skip


def _run_here(tmp_path: Path, monkeypatch, *extra: str) -> tuple[int, str]:
    """The same command in this process (click's CliRunner): the run a test kills or keeps
    waiting is a real process; the later runs, which only end or resume its parent, need
    not be. Returns the exit code and the output (stdout and stderr)."""
    from click.testing import CliRunner

    from ltr_bench.cli import main

    monkeypatch.setenv("LTRB_DIR", str(tmp_path))
    for name in ("LTRB_KILL_AT", "LTRB_WAIT_AT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.syspath_prepend(str(tmp_path / "mods"))
    result = CliRunner().invoke(main, _cmd(tmp_path, *extra)[3:])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def _wait_for(path: Path, proc: subprocess.Popen) -> None:
    t0 = time.monotonic()
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - t0 < 180, f"{path.name} never appeared"
        time.sleep(0.05)


def _until(predicate, proc: subprocess.Popen, what: str) -> None:
    t0 = time.monotonic()
    while not predicate():
        assert proc.poll() is None, f"the run ended before {what}"
        assert time.monotonic() - t0 < 180, f"timed out waiting for {what}"
        time.sleep(0.05)


def _finished_fold_runs(db: Path) -> int:
    """FINISHED fold runs in the store (0 while it cannot be read)."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return con.execute(
                "select count(*) from runs r join tags t on t.run_uuid = r.run_uuid where "
                "t.key = 'ltr_bench_role' and t.value = 'fold' and r.status = 'FINISHED'"
            ).fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def _parents(tmp_path: Path) -> dict[str, dict]:
    """seed -> {"status", "tags"} of every parent run in the store."""
    con = sqlite3.connect(tmp_path / "ml" / "mlflow.db")
    try:
        rows = con.execute(
            "select r.run_uuid, r.status from runs r join tags t on t.run_uuid = r.run_uuid"
            " where t.key = 'ltr_bench_role' and t.value = 'parent'"
        ).fetchall()
        out = {}
        for run_id, status in rows:
            tags = dict(con.execute("select key, value from tags where run_uuid = ?", (run_id,)))
            out[tags["seed"]] = {"status": status, "tags": tags, "id": run_id}
        return out
    finally:
        con.close()


def _fold_runs(tmp_path: Path, parent: str) -> list[str]:
    con = sqlite3.connect(tmp_path / "ml" / "mlflow.db")
    try:
        return [
            s
            for (s,) in con.execute(
                "select r.status from runs r join tags t on t.run_uuid = r.run_uuid"
                " where t.key = 'mlflow.parentRunId' and t.value = ?"
                " and r.lifecycle_stage = 'active'",
                (parent,),
            )
        ]
    finally:
        con.close()


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


def _fits(tmp_path: Path) -> int:
    path = tmp_path / "fits"
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.mark.slow
def test_a_parent_left_running_by_sigkill_is_ended_killed_by_the_next_run_and_resumed_by_its_own(
    tmp_path, monkeypatch
):
    killed = subprocess.Popen(
        _cmd(tmp_path),
        env=_env(tmp_path, LTRB_WAIT_AT="2"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _wait_for(tmp_path / "fit2", killed)
    _until(lambda: _finished_fold_runs(tmp_path / "ml" / "mlflow.db") == 1, killed, "fold 1")
    on_linux = Path("/proc/self/task").exists()  # where a process's children can be read
    logger = _logging_process(killed.pid) if on_linux else None
    killed.kill()  # fold 1 logged, killed fitting fold 2
    assert killed.wait(timeout=60) == -9
    t0 = time.monotonic()  # a killed run leaves no logging process behind
    while logger is not None and _alive(logger):
        assert time.monotonic() - t0 < 30, "the logging process did not stop"
        time.sleep(0.05)
    (orphan,) = _parents(tmp_path).values()
    assert orphan["status"] == "RUNNING"
    assert orphan["tags"]["ltr_bench_owner_pid"] == _pid_of_fit(tmp_path)
    assert orphan["tags"]["ltr_bench_owner_host"] == socket.gethostname()

    # any invocation on the store (here another seed, one fold: another parent) ends it
    code, out = _run_here(tmp_path, monkeypatch, "--seed", "1", "--folds", "1")
    assert code == 0, out
    assert f"MLflow parent run {orphan['id']}" in out
    parents = _parents(tmp_path)
    assert parents["0"]["status"] == "KILLED"
    assert "ended without ending it" in parents["0"]["tags"]["ltr_bench_end_reason"]
    assert parents["1"]["status"] == "FINISHED"

    # the killed command again: its parent resumed, completed, FINISHED; fold 1 not refitted
    fits = _fits(tmp_path)
    code, out = _run_here(tmp_path, monkeypatch)
    assert code == 0, out
    assert _fits(tmp_path) == fits + 2  # folds 2 and 3 only
    resumed = _parents(tmp_path)["0"]
    assert resumed["id"] == orphan["id"] and resumed["status"] == "FINISHED"
    assert "ltr_bench_end_reason" not in resumed["tags"]
    assert "resumed by pid" in resumed["tags"]["ltr_bench_resumed"]
    assert _fold_runs(tmp_path, orphan["id"]) == ["FINISHED"] * 3


def _pid_of_fit(tmp_path: Path) -> str:
    """The pid that made the first fit (the killed process)."""
    return (tmp_path / "fits").read_text().splitlines()[0]


@pytest.mark.slow
def test_a_live_owners_parent_is_left_alone_and_if_the_store_locks_mid_run_it_ends_failed_and_a_rerun_completes_it(  # noqa: E501
    tmp_path, monkeypatch
):
    """Fold 1 is logged; while the run waits to fit fold 2, another run on the store (here
    another seed: another parent) leaves the live owner's parent alone. Another process
    then locks the SQLite store while fold 2 is logged (logging stops, the run goes on
    locally); the lock is gone before the run ends, so the run's last try ends its parent
    FAILED with the reason. The same command again logs the two missing folds without
    fitting and ends the parent FINISHED. (Logging runs in a process of its own, beside the
    fits: the test watches the store and the run's warning.)"""
    db = tmp_path / "ml" / "mlflow.db"
    run = subprocess.Popen(
        _cmd(tmp_path),
        env=_env(tmp_path, short_busy_timeout=True, LTRB_WAIT_AT="2,3"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    said: list[str] = []
    reader = threading.Thread(target=lambda: said.extend(run.stderr), daemon=True)
    reader.start()
    locker = None
    try:
        _wait_for(tmp_path / "fit2", run)
        _until(lambda: _finished_fold_runs(db) == 1, run, "fold 1 in MLflow")
        # its parent RUNNING, its owner alive: another invocation on the store leaves it be
        code, out = _run_here(tmp_path, monkeypatch, "--seed", "1", "--folds", "1")
        assert code == 0, out
        live = _parents(tmp_path)["0"]
        assert live["status"] == "RUNNING" and "ltr_bench_end_reason" not in live["tags"]
        assert live["tags"]["ltr_bench_owner_pid"] == str(run.pid)
        locker = sqlite3.connect(db, isolation_level=None)
        locker.execute("begin exclusive")
        (tmp_path / "go2").touch()  # fold 2 finishes, its logging meets the lock and fails
        _until(lambda: any("only saved locally" in x for x in said), run, "the warning")
        locker.execute("rollback")
        locker.close()
        locker = None
        (tmp_path / "go3").touch()
        out = run.stdout.read()
        run.wait(timeout=300)
        reader.join(timeout=30)
        err = "".join(said)
    finally:
        if locker is not None:
            locker.close()
        for n in (2, 3):
            (tmp_path / f"go{n}").touch()
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert (tmp_path / "short_busy_timeout").exists()  # the lock was met in 2 s, not 20
    assert run.returncode == 1, err  # MLflow logging failed: said, results kept locally
    assert "MLflow logging failed" in err and "Traceback" not in out + err
    assert len(list((tmp_path / "res").glob("*.json"))) == 3 + 1  # and seed 1's fold
    fits = _fits(tmp_path)
    assert fits == 3 + 1  # the run's three folds and the other run's one
    parent = _parents(tmp_path)["0"]  # ended by its owner, the live run: never by the other
    assert parent["status"] == "FAILED"
    assert "MLflow logging stopped during the run" in parent["tags"]["ltr_bench_end_reason"]
    assert _fold_runs(tmp_path, parent["id"]) == ["FINISHED"]

    code, out = _run_here(tmp_path, monkeypatch)
    assert code == 0, out
    assert _fits(tmp_path) == fits  # nothing computed again
    parent = _parents(tmp_path)["0"]
    assert parent["status"] == "FINISHED" and "ltr_bench_end_reason" not in parent["tags"]
    assert _fold_runs(tmp_path, parent["id"]) == ["FINISHED"] * 3


def test_an_owner_is_gone_when_killed_even_unreaped_and_a_reused_pid_is_not_the_owner():
    from ltr_bench.tracking.owners import TAG_OWNER_STARTED, owner_gone, owner_tags

    sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
    proc = subprocess.Popen(sleeper)
    try:
        tags = owner_tags(proc.pid)
        assert owner_gone(tags) is None  # alive: never touched
        assert owner_gone({**tags, "ltr_bench_owner_host": "another-host"}) is None
        reused = {**tags, TAG_OWNER_STARTED: str(float(tags[TAG_OWNER_STARTED]) - 3600)}
        assert f"pid {proc.pid}" in owner_gone(reused)  # same pid, a later process
        proc.kill()
        t0 = time.monotonic()
        while owner_gone(tags) is None:  # a zombie until reaped: already gone
            assert time.monotonic() - t0 < 60
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()
    assert "ended without ending it" in owner_gone(tags)
    assert owner_gone({}) is None  # a parent of an older version: unknown, left alone

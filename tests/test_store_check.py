"""Every command that opens a tracking URI checks the store first
(:func:`ltr_bench.tracking.store_check.check_store`): an SQLite file that is someone else's
database is refused (exit 2) and left byte for byte as it was; a command that only reads
never creates a store that does not exist (exit 1), nor its folder."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from ltr_bench.cli import main

TINY = ["--dataset-option", "n_queries=10", "--dataset-option", "n_features=3"]
TINY += ["--dataset-option", "n_informative=2"]

#: (command, its arguments before --tracking-uri): every command that opens a store
WRITERS = {
    "run": ["run", "--ranker", "ridge", "--dataset", "synthetic", *TINY],
    "tune": ["tune", "--ranker", "ridge", "--dataset", "synthetic", *TINY, "--trials", "1"],
}
READERS = {
    "report": ["report", "--dataset", "synthetic"],
    "predict": ["predict", "--model", "models:/best/1", "--data", "synthetic", *TINY],
    "ui": ["ui"],
}


def _never(*args):
    raise AssertionError("the MLflow UI server was started on a store it must refuse")


@pytest.fixture(autouse=True)
def _no_server(monkeypatch):
    """``ui`` must refuse before it becomes the MLflow server (else it would replace the test
    process)."""
    import ltr_bench.cli.ui as ui

    monkeypatch.setattr(ui.os, "execv", _never)
    monkeypatch.delenv("LTR_BENCH_UI_NO_EXEC", raising=False)


def _cli(cwd: Path, *args) -> tuple[int, str]:
    import os

    before = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(main, [str(a) for a in args])
    finally:
        os.chdir(before)
    assert not (result.exception and not isinstance(result.exception, SystemExit)), result.output
    return result.exit_code, result.output


def _users_database(path: Path) -> str:
    """A user's own SQLite database (one table of 100 rows); returns its sha256."""
    con = sqlite3.connect(path)
    con.execute("create table samples (id integer primary key, note text)")
    con.executemany("insert into samples values (?, ?)", [(i, f"s{i}") for i in range(100)])
    con.commit()
    con.close()
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("command", [*WRITERS, *READERS])
def test_a_users_own_sqlite_database_is_refused_and_left_byte_for_byte(
    command, tmp_path, monkeypatch
):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    db = tmp_path / "lab.db"
    digest = _users_database(db)
    args = {**WRITERS, **READERS}[command]
    code, out = _cli(tmp_path, *args, "--tracking-uri", f"sqlite:///{db}")
    assert code == 2, out
    assert "not an MLflow store" in out and "Traceback" not in out, out
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest
    beside = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("lab.db"))
    assert beside == ["lab.db"]  # no journal, no lock, no creation marker


@pytest.mark.parametrize("command", list(READERS))
def test_a_command_that_only_reads_creates_no_store(command, tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    db = tmp_path / "typo" / "mlflow.db"
    code, out = _cli(tmp_path, *READERS[command], "--tracking-uri", f"sqlite:///{db}")
    assert code == 1, out
    assert f"no MLflow store at {db}" in out and "Traceback" not in out, out
    assert list(tmp_path.iterdir()) == []  # neither the file nor its folder


@pytest.mark.parametrize("command", list(READERS))
def test_the_default_store_is_not_created_by_a_command_that_only_reads(
    command, tmp_path, monkeypatch
):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    code, out = _cli(tmp_path, *READERS[command])
    assert code == 1, out
    assert "no MLflow store at" in out, out
    assert list(tmp_path.iterdir()) == []  # no mlflow_runs/, and no ./mlflow.db of MLflow's


@pytest.mark.parametrize("command", list(READERS))
def test_a_half_made_store_is_left_as_it_is_and_the_rerun_is_named(command, tmp_path, monkeypatch):
    import subprocess
    import sys

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    db = tmp_path / "mlflow.db"
    con = sqlite3.connect(db)  # what an interrupted creation leaves: part of the schema
    con.execute("create table alembic_version (version_num varchar(32) primary key)")
    con.execute("insert into alembic_version values ('451aebb31d03')")
    con.execute("create table experiments (experiment_id integer primary key, name text)")
    con.commit()
    con.close()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (tmp_path / "mlflow.db.creating").write_text(f"{gone.pid}\n")
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    code, out = _cli(tmp_path, *READERS[command], "--tracking-uri", f"sqlite:///{db}")
    assert code == 1, out
    assert "creation was interrupted" in out and "rebuilds it" in out, out
    assert "Traceback" not in out and "already exists" not in out, out
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before

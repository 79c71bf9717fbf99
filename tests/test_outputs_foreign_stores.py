"""An output never replaces a store it can recognise on disk, whoever owns it: another
project's MLflow store (an SQLite file with MLflow's tables) or a file of another results
folder (a finished record ``<key>.json``, anything else written into that folder). ``export
--output`` and ``predict --output`` (every command's outputs follow one rule,
``ltr_bench.cli.outputs.check_output_paths``) refuse them with exit 2 before any work, and
the store is left byte for byte."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest
from test_hostile_cases import make_env

from ltr_bench.cli.outputs import check_output_paths, store_on_disk
from ltr_bench.errors import UsageError
from ltr_bench.models import save_model
from ltr_bench.registry import make_ranker
from ltr_bench.testing.data import make_check_data


@pytest.fixture(scope="module")
def mlflow_store(tmp_path_factory) -> Path:
    """A real MLflow store (MLflow's own schema) in another project's folder."""
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    db = tmp_path_factory.mktemp("other_project") / "mlflow.db"
    client = MlflowClient(tracking_uri=f"sqlite:///{db}")
    run = client.create_run(client.create_experiment("theirs"))
    client.log_metric(run.info.run_id, "ndcg", 0.5)
    return db


@pytest.fixture
def env(tmp_path, monkeypatch, fake_rankers):
    return make_env(tmp_path, monkeypatch, fake_rankers)


def _model_and_data(root: Path) -> tuple[Path, Path]:
    X, y, qid = make_check_data(0, n_queries=8, n_features=5)
    folder = save_model(
        make_ranker("ridge").fit(X, y, qid=qid), root / "model", ranker_name="ridge"
    )
    data = root / "rows.txt"
    data.write_text(
        "".join(
            f"{int(t)} qid:{int(q)} " + " ".join(f"{j}:{v!r}" for j, v in enumerate(r, 1)) + "\n"
            for r, t, q in zip(X.tolist(), y, qid)
        )
    )
    return folder, data


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_export_and_predict_refuse_another_projects_mlflow_store(env, mlflow_store):
    folder, data = _model_and_data(env.root)
    before = _digest(mlflow_store)
    for args in (
        ("export", "--model", folder, "--output", mlflow_store),
        ("predict", "--model", folder, "--data", data, "--output", mlflow_store),
        ("predict", "--model", folder, "--data", data, "--scores", mlflow_store),
    ):
        code, out = env.run(*args)
        assert code == 2, out
        assert "is an MLflow store" in out and str(mlflow_store) in out, out
        assert "Traceback" not in out
    assert _digest(mlflow_store) == before
    # a journal file beside the store is the store's too
    journal = mlflow_store.with_name("mlflow.db-journal")
    with pytest.raises(UsageError, match="beside the MLflow store"):
        check_output_paths([(journal, "--output")])
    assert not journal.exists()


def test_an_sqlite_file_without_mlflows_tables_is_not_a_store(tmp_path):
    db = tmp_path / "mine.db"
    con = sqlite3.connect(db)
    con.execute("create table runs (x)")  # one of MLflow's names is not MLflow's schema
    con.commit()
    con.close()
    assert store_on_disk(db) is None
    check_output_paths([(db, "--output")])


def test_export_and_predict_refuse_another_results_folders_record(env):
    code, out = env.fake_run("--no-mlflow")  # a real record, written by `run`
    assert code == 0, out
    (record,) = sorted((env.cwd / "res").glob("*.json"))
    before = record.read_bytes()
    folder, data = _model_and_data(env.root)
    elsewhere = env.root / "elsewhere"
    elsewhere.mkdir()
    # `res` is not these commands' own results store (that is mlflow_runs/results)
    for args in (
        ("export", "--model", folder, "--output", record),
        ("predict", "--model", folder, "--data", data, "--output", record),
    ):
        code, out = env.run(*args)
        assert code == 2, out
        assert "is a finished record of the results folder" in out, out
    assert record.read_bytes() == before
    # a new file in that folder, its per-query CSV and a note under .mlflow are the store's
    for path in (
        record.parent / "summary.txt",
        record.with_name(record.stem + ".per_query.csv"),
        record.parent / ".mlflow" / record.name,
    ):
        with pytest.raises(UsageError, match="would be written into the results folder"):
            check_output_paths([(path, "--output")])
    # a copy of a record outside any store is a record too; a JSON of another shape is not
    copy = elsewhere / record.name
    copy.write_bytes(before)
    with pytest.raises(UsageError, match="is a finished record"):
        check_output_paths([(copy, "--output")])
    plain = env.root / "plain"
    plain.mkdir()
    other = plain / ("0" * 64 + ".json")
    other.write_text('{"key": "something else"}')
    assert store_on_disk(other) is None


def test_a_results_folder_is_refused_for_a_folder_option(env):
    code, out = env.fake_run("--no-mlflow")
    assert code == 0, out
    with pytest.raises(UsageError, match="results folder"):
        check_output_paths([(env.cwd / "res", "--plots")], folders=["--plots"])


def test_recognising_stores_never_opens_a_named_pipe_for_blocking_reads(tmp_path):
    import os
    import signal

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def hung(signum, frame):
        raise TimeoutError("blocked on the named pipe")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)
    try:
        assert store_on_disk(fifo) is None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)

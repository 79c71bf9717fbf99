"""A re-run whose cells are all finished: no fold loaded, no MLflow logging process started,
and still no old number for changed data and no record left out of MLflow."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from ltr_bench.cli import main
from ltr_bench.cli import mlflow_start as mlflow_start_module
from ltr_bench.results import ResultStore
from ltr_bench.run import harness
from ltr_bench.run.listener import Listener
from ltr_bench.tracking.as_logged import artifact_binding
from ltr_bench.tracking.store import resolve_tracking_uri, sqlite_path

TINY = ["--dataset-option", "n_queries=30", "--dataset-option", "docs_per_query=6"]
TINY += ["--dataset-option", "n_features=5", "--dataset-option", "n_informative=3"]


@pytest.fixture
def work(tmp_path, monkeypatch, fake_rankers):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def loads(monkeypatch):
    """The folds the harness loads, by (dataset, fold)."""
    seen: list[tuple[str, int]] = []
    real = harness.load_fold

    def spy(cell, *args, **kwargs):
        seen.append((cell.dataset, cell.fold))
        return real(cell, *args, **kwargs)

    monkeypatch.setattr(harness, "load_fold", spy)
    return seen


def _run(*args):
    return CliRunner().invoke(main, ["run", "--ranker", "fake-linear", *args])


def _synthetic(*extra):
    return _run("--dataset", "synthetic", "--folds", "1,2", *TINY, *extra)


def test_a_finished_rerun_loads_no_fold_and_still_shows_its_results(work, loads):
    first = _synthetic("--no-mlflow")
    assert first.exit_code == 0, first.output
    assert sorted(loads) == [("synthetic", 1), ("synthetic", 2)]
    loads.clear()
    again = _synthetic("--no-mlflow")
    assert again.exit_code == 0, again.output
    assert loads == []
    assert again.output.count("finished earlier, skipped") == 2
    assert "loading synthetic" not in again.output
    assert "fake-linear" in again.output.split("finished earlier")[-1]  # the summary's row


def test_a_note_that_no_longer_matches_its_records_means_loading(work, loads):
    assert _synthetic("--no-mlflow").exit_code == 0
    for note in (work / "mlflow_runs" / "results" / ".folds").iterdir():
        note.write_text(note.read_text().replace('"train": "', '"train": "0'))
    loads.clear()
    again = _synthetic("--no-mlflow")
    assert again.exit_code == 0, again.output
    assert sorted(loads) == [("synthetic", 1), ("synthetic", 2)]  # then reused: same data
    assert again.output.count("finished earlier, skipped") == 2


def _letor(folder, seed: int) -> None:
    rng = random.Random(seed)
    folder.mkdir(exist_ok=True)
    for name, queries in (("train.txt", range(1, 9)), ("test.txt", range(20, 26))):
        lines = [
            f"{rng.randint(0, 2)} qid:{q} 1:{rng.random():.4f} 2:{rng.random():.4f} 3:0.5"
            for q in queries
            for _ in range(5)
        ]
        (folder / name).write_text("\n".join(lines) + "\n")


def test_an_edited_letor_file_is_recomputed_never_answered_with_the_old_number(work, loads):
    data = work / "mydata"
    _letor(data, seed=1)
    first = _run("--dataset", str(data), "--no-mlflow")
    assert first.exit_code == 0, first.output
    loads.clear()
    assert _run("--dataset", str(data), "--no-mlflow").exit_code == 0
    assert loads == []  # unchanged: proven by the files' signatures
    _letor(data, seed=2)  # other labels and features, same names
    again = _run("--dataset", str(data), "--no-mlflow")
    assert again.exit_code == 0, again.output
    assert len(loads) == 1
    assert "the data differs from the data of the saved result" in again.output
    assert "finished earlier, skipped" not in again.output
    assert "recomputing it" in again.output


class _FakeLogging(Listener):
    """Stands in for the MLflow logging process: counts its starts, logs nothing."""

    starts = 0
    error = None
    interrupted = detached = False
    pid = None
    on_error = on_note = None

    def __init__(self, uri):
        self.uri = uri

    def yield_to_fits(self, threads):
        pass

    def open(self, **kwargs):
        pass

    def close(self, **kwargs):
        pass

    def close_now(self):
        pass

    def interrupt(self):
        pass


@pytest.fixture
def starts(monkeypatch):
    started: list[str] = []

    def start(self):
        if self.process is None:
            started.append(self.uri)
            self.process = _FakeLogging(self.uri)
        return self.process

    monkeypatch.setattr(mlflow_start_module.LoggingStart, "start", start)
    return started


def _artifacts(folder: Path) -> Path:
    return folder / "artifacts"


def _mlflow_copy(work: Path, uri: str) -> ResultStore:
    """What a logging process leaves, made by hand: an SQLite file with MLflow's tables (the
    columns ltr-bench reads), one FINISHED parent run, a FINISHED fold run per record with its
    artifacts in a local folder, and each record's note with the artifacts' binding."""
    store = ResultStore(work / "mlflow_runs" / "results")
    db = sqlite_path(uri)
    con = sqlite3.connect(db)
    con.executescript(
        "create table alembic_version (version_num text);"
        "create table experiments (experiment_id integer, name text, lifecycle_stage text);"
        "create table runs (run_uuid text, status text, lifecycle_stage text,"
        " artifact_uri text, experiment_id integer);"
        "create table tags (key text, value text, run_uuid text);"
        "create table logged_models (model_id text, lifecycle_stage text);"
        "insert into experiments values (1, 'ltr-bench/synthetic', 'active');"
        "insert into runs values ('p', 'FINISHED', 'active', 'file:///nowhere', 1);"
    )
    for i, rec in enumerate(store.records()):
        run_id = f"f{i}"
        folder = work / "art" / run_id / "artifacts"
        folder.mkdir(parents=True)
        (folder / "record.json").write_text(json.dumps(rec.to_dict()))
        (folder / "per_query_metrics.csv").write_text("qid,ndcg@10\n1,0.5\n")
        con.execute(
            "insert into runs values (?, 'FINISHED', 'active', ?, 1)", (run_id, folder.as_uri())
        )
        for key, value in (
            ("ltr_bench_key", rec.key),
            ("ltr_bench_finished", rec.finished),
            ("mlflow.parentRunId", "p"),
        ):
            con.execute("insert into tags values (?, ?, ?)", (key, value, run_id))
        con.commit()
        ids = {"tracking_uri": uri, "experiment_id": "1", "parent_run_id": "p", "run_id": run_id}
        store.note_mlflow(rec, ids, artifact_binding(uri, run_id))
    con.commit()
    con.close()
    return store


@pytest.fixture
def copied(work):
    """A finished run's results and their copy in (a hand-made) MLflow: ``(uri argument,
    resolved uri, store)``."""
    uri_arg = f"sqlite:///{work}/m.db"
    uri = resolve_tracking_uri(uri_arg)
    assert _synthetic("--no-mlflow").exit_code == 0
    return uri_arg, uri, _mlflow_copy(work, uri)


def test_no_logging_process_when_every_record_is_in_this_store_as_logged(
    work, starts, loads, copied
):
    uri_arg, uri, _ = copied
    loads.clear()
    again = _synthetic("--tracking-uri", uri_arg)
    assert again.exit_code == 0, again.output
    assert (starts, loads) == ([], [])
    assert "logging to MLflow" not in again.output
    assert f"MLflow {uri} has every one (not opened)" in again.output
    other = _synthetic("--tracking-uri", f"sqlite:///{work}/other.db")  # noted elsewhere
    assert other.exit_code == 0, other.output
    assert len(starts) == 1


def _sql(uri: str, statement: str) -> None:
    con = sqlite3.connect(sqlite_path(uri))
    con.execute(statement)
    con.commit()
    con.close()


def _first_note(store: ResultStore) -> Path:
    return store.mlflow_note_path(store.records()[0].key)


def _edit_note(store: ResultStore, edit) -> None:
    doc = json.loads(_first_note(store).read_text())
    edit(doc)
    _first_note(store).write_text(json.dumps(doc))


#: what a re-run would repair in MLflow (or cannot prove it need not): each starts logging
DAMAGES = {
    "an edited record.json": lambda w, u, s: next((w / "art").rglob("record.json")).write_text(
        "{}"
    ),
    "a per-query artifact deleted": lambda w, u, s: next(
        (w / "art").rglob("per_query_metrics.csv")
    ).unlink(),
    "an artifact that was not there when logged": lambda w, u, s: _edit_note(
        s, lambda doc: doc["artifacts"].pop("per_query_metrics.csv")
    ),
    "a fold run deleted": lambda w, u, s: _sql(
        u, "update runs set lifecycle_stage = 'deleted' where run_uuid = 'f0'"
    ),
    "a fold run gone": lambda w, u, s: _sql(u, "delete from runs where run_uuid = 'f1'"),
    "a parent run left RUNNING": lambda w, u, s: _sql(
        u, "update runs set status = 'RUNNING' where run_uuid = 'p'"
    ),
    "the experiment deleted": lambda w, u, s: _sql(
        u, "update experiments set lifecycle_stage = 'deleted'"
    ),
    "a fold run of another computation": lambda w, u, s: _sql(
        u, "update tags set value = '1999' where key = 'ltr_bench_finished' and run_uuid = 'f0'"
    ),
    "a noted model gone": lambda w, u, s: _edit_note(
        s, lambda doc: doc["mlflow"].update(model_id="m-1")
    ),
    "the store file gone": lambda w, u, s: sqlite_path(u).unlink(),
    "artifacts away from this machine": lambda w, u, s: _sql(
        u, "update runs set artifact_uri = 'mlflow-artifacts:/1/f0/artifacts'"
    ),
    "a note without the artifacts' binding": lambda w, u, s: _edit_note(
        s, lambda doc: doc.pop("artifacts")
    ),
    "one record without its note": lambda w, u, s: _first_note(s).unlink(),
    "a note of an earlier computation": lambda w, u, s: _first_note(s).write_text(
        _first_note(s).read_text().replace('"finished": "', '"finished": "1999')
    ),
    "a logging process that did not end its parents": lambda w, u, s: (
        s.root / ".mlflow" / "logging-999999999.open"
    ).touch(),  # what a kill leaves
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_anything_a_rerun_would_repair_starts_the_logging_process(work, starts, copied, damage):
    uri_arg, uri, store = copied
    DAMAGES[damage](work, uri, store)
    again = _synthetic("--tracking-uri", uri_arg)
    assert again.exit_code == 0, again.output
    assert starts == [uri]


def test_a_fold_of_the_group_not_in_mlflow_starts_the_logging_process(work, starts, copied):
    """The parent run's aggregates cover every local fold of its group: a re-run of fold 1
    alone ends it with fold 2 too, so fold 2's record must be in MLflow as logged as well."""
    uri_arg, uri, store = copied
    one = _run("--dataset", "synthetic", "--folds", "1", *TINY, "--tracking-uri", uri_arg)
    assert one.exit_code == 0, one.output
    assert starts == []
    fold2 = next(r for r in store.records() if r.fold == 2)
    note = store.mlflow_note_path(fold2.key)  # fold 2 logged to another store since
    note.write_text(note.read_text().replace(str(work / "m.db"), str(work / "other.db")))
    again = _run("--dataset", "synthetic", "--folds", "1", *TINY, "--tracking-uri", uri_arg)
    assert again.exit_code == 0, again.output
    assert starts == [uri]


def test_real_mlflow_a_finished_rerun_opens_nothing_and_an_edited_artifact_is_repaired(
    work, monkeypatch
):
    """Against MLflow itself: the notes written by the logging process prove the copy
    unchanged (no process started), and an artifact edited since sends the next run through
    MLflow, which logs the local record again."""
    real_start = mlflow_start_module.LoggingStart.start
    started: list[str] = []

    def start(self):
        started.append(self.uri)
        return real_start(self)

    monkeypatch.setattr(mlflow_start_module.LoggingStart, "start", start)
    uri_arg = f"sqlite:///{work}/m.db"
    first = _synthetic("--tracking-uri", uri_arg)
    assert first.exit_code == 0, first.output
    assert len(started) == 1
    again = _synthetic("--tracking-uri", uri_arg)
    assert again.exit_code == 0, again.output
    assert len(started) == 1 and "has every one (not opened)" in again.output
    path = next((work / "artifacts").rglob("record.json"))
    doc = json.loads(path.read_text())
    doc["metrics"]["ndcg@10"] = 0.999
    path.write_text(json.dumps(doc))
    repaired = _synthetic("--tracking-uri", uri_arg)
    assert repaired.exit_code == 0, repaired.output
    assert len(started) == 2
    assert "differs from the local record; logged again" in repaired.output
    last = _synthetic("--tracking-uri", uri_arg)  # intact again: proven without MLflow
    assert last.exit_code == 0, last.output
    assert len(started) == 2 and "has every one (not opened)" in last.output


def test_a_clean_logging_end_removes_its_mark_and_those_of_gone_processes(tmp_path):
    store = ResultStore(tmp_path)
    (tmp_path / ".mlflow").mkdir()
    (tmp_path / ".mlflow" / "logging-999999999.open").touch()  # gone
    (tmp_path / ".mlflow" / "logging-1.open").touch()  # init: alive, another run's
    mark = store.logging_mark()
    assert store.logging_unfinished()
    store.logging_done(mark)
    assert sorted(p.name for p in (tmp_path / ".mlflow").iterdir()) == ["logging-1.open"]

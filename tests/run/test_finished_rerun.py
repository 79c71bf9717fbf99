"""A re-run whose cells are all finished: no fold loaded, no MLflow logging process started,
and still no old number for changed data and no record left out of MLflow."""

from __future__ import annotations

import random

import pytest
from click.testing import CliRunner

from ltr_bench.cli import main
from ltr_bench.cli import mlflow_start as mlflow_start_module
from ltr_bench.results import ResultStore
from ltr_bench.run import harness
from ltr_bench.run.listener import Listener
from ltr_bench.tracking.store import resolve_tracking_uri

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


def _note_all(work, uri: str) -> ResultStore:
    store = ResultStore(work / "mlflow_runs" / "results")
    for rec in store.records():
        store.note_mlflow(rec, {"tracking_uri": uri, "experiment_id": "1", "run_id": "r"})
    return store


def test_no_logging_process_when_every_record_is_noted_in_this_store(work, starts, loads):
    uri_arg = f"sqlite:///{work}/m.db"
    uri = resolve_tracking_uri(uri_arg)
    assert _synthetic("--no-mlflow").exit_code == 0
    found = _synthetic("--tracking-uri", uri_arg)  # records never logged: logging starts
    assert found.exit_code == 0, found.output
    assert starts == [uri]
    _note_all(work, uri)
    starts.clear()
    loads.clear()
    again = _synthetic("--tracking-uri", uri_arg)
    assert again.exit_code == 0, again.output
    assert (starts, loads) == ([], [])
    assert "logging to MLflow" not in again.output
    assert f"MLflow {uri} has every one (not opened)" in again.output
    other = _synthetic("--tracking-uri", f"sqlite:///{work}/other.db")  # noted elsewhere
    assert other.exit_code == 0, other.output
    assert len(starts) == 1


def test_one_record_without_its_note_starts_the_logging_process(work, starts):
    uri_arg = f"sqlite:///{work}/m.db"
    assert _synthetic("--no-mlflow").exit_code == 0
    store = _note_all(work, resolve_tracking_uri(uri_arg))
    store.mlflow_note_path(store.records()[0].key).unlink()
    again = _synthetic("--tracking-uri", uri_arg)
    assert again.exit_code == 0, again.output
    assert len(starts) == 1


def test_a_note_of_an_earlier_computation_does_not_count(work, starts):
    uri_arg = f"sqlite:///{work}/m.db"
    assert _synthetic("--no-mlflow").exit_code == 0
    store = _note_all(work, resolve_tracking_uri(uri_arg))
    path = store.mlflow_note_path(store.records()[0].key)
    path.write_text(path.read_text().replace('"finished": "', '"finished": "1999'))
    again = _synthetic("--tracking-uri", uri_arg)
    assert again.exit_code == 0, again.output
    assert len(starts) == 1


def test_a_logging_process_that_did_not_end_its_parents_means_logging_again(work, starts):
    uri_arg = f"sqlite:///{work}/m.db"
    assert _synthetic("--no-mlflow").exit_code == 0
    store = _note_all(work, resolve_tracking_uri(uri_arg))
    (store.root / ".mlflow" / "logging-999999999.open").touch()  # what a kill leaves
    again = _synthetic("--tracking-uri", uri_arg)
    assert again.exit_code == 0, again.output
    assert len(starts) == 1


def test_a_clean_logging_end_removes_its_mark_and_those_of_gone_processes(tmp_path):
    store = ResultStore(tmp_path)
    (tmp_path / ".mlflow").mkdir()
    (tmp_path / ".mlflow" / "logging-999999999.open").touch()  # gone
    (tmp_path / ".mlflow" / "logging-1.open").touch()  # init: alive, another run's
    mark = store.logging_mark()
    assert store.logging_unfinished()
    store.logging_done(mark)
    assert sorted(p.name for p in (tmp_path / ".mlflow").iterdir()) == ["logging-1.open"]

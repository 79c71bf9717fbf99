"""Kept models (:mod:`ltr_bench.run.keep`): every finished cell keeps its fitted model beside its
result, in a folder its record names; a forced or resumed run never leaves a model that is not
its record's; a kill while the model is written leaves the whole model or none; a ranker that
cannot be saved keeps its metrics and says why."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from ltr_bench.models import load_model
from ltr_bench.results import ResultStore
from ltr_bench.run.cells import expand_plan
from ltr_bench.run.harness import run_plan
from ltr_bench.run.plan import DatasetChoice, Plan, RankerChoice

TINY = {"n_queries": 30, "docs_per_query": 8, "n_features": 5, "n_informative": 3}
FAST = {"n_estimators": 10, "num_leaves": 7, "min_data_in_leaf": 2}


def _plan(ranker="lightgbm", params=FAST, folds=(1, 2)):
    return Plan(
        rankers=[RankerChoice(ranker, dict(params))],
        datasets=[DatasetChoice("synthetic", dict(TINY))],
        folds=list(folds),
        seed=0,
        threads=1,
    )


def _run(root: Path, *, keep=True, force=False, plan=None):
    expanded = expand_plan(plan or _plan(), score_repeats=1, keep_models=root if keep else None)
    return run_plan(expanded, ResultStore(root), force=force)


def _model_folders(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if ".model." in p.name)


def test_every_finished_cell_keeps_a_model_that_its_record_names(tmp_path):
    from ltr_bench import data

    report = _run(tmp_path)
    assert len(report.records) == 2
    for rec in report.records:
        folder = Path(rec.model_dir)
        assert folder.parent == tmp_path and folder.name.startswith(f"{rec.key}.model.")
        assert rec.stage_seconds["save"] >= 0
        test = data.load_fold("synthetic", rec.fold, seed=0, options=dict(TINY)).test
        assert np.isfinite(load_model(folder).predict(test.X, test.qid)).all()
        again = ResultStore(tmp_path).get(rec.key)  # the saved record names it too
        assert again.model_dir == rec.model_dir
    assert len(_model_folders(tmp_path)) == 2


def test_keep_models_none_keeps_no_model(tmp_path):
    report = _run(tmp_path, keep=False)
    assert all(rec.model_dir is None for rec in report.records)
    assert _model_folders(tmp_path) == []


def test_a_forced_run_leaves_only_the_model_of_its_new_record(tmp_path):
    old = {r.key: r.model_dir for r in _run(tmp_path).records}
    new = {r.key: r.model_dir for r in _run(tmp_path, force=True).records}
    assert old.keys() == new.keys()
    for key in old:
        assert old[key] != new[key] and not Path(old[key]).exists() and Path(new[key]).is_dir()
    assert _model_folders(tmp_path) == sorted(Path(p).name for p in new.values())
    _run(tmp_path, keep=False, force=True)  # no model now: none is left that is not its record's
    assert _model_folders(tmp_path) == []


def test_models_left_by_a_killed_run_are_removed_when_the_cell_is_saved(tmp_path):
    cells = expand_plan(_plan(folds=[1]), keep_models=tmp_path).cells
    key = cells[0].key
    tmp_path.mkdir(exist_ok=True)
    orphan = tmp_path / f"{key}.model.0123456789ab"  # written, its record never was
    half = tmp_path / f".{key}.model.ba9876543210.tmp-999999-abcd"  # the writer's temporary
    for folder in (orphan, half):
        folder.mkdir()
        (folder / "manifest.json").write_text("{}")
    rec = _run(tmp_path, plan=_plan(folds=[1])).records[0]
    assert _model_folders(tmp_path) == [Path(rec.model_dir).name]
    assert not half.exists()


def test_a_model_left_by_a_killed_forced_run_is_removed_when_the_finished_cell_is_skipped(
    tmp_path,
):
    rec = _run(tmp_path, plan=_plan(folds=[1])).records[0]
    # a --force run killed after writing its model, before its record: the old record stays
    orphan = tmp_path / f"{rec.key}.model.0123456789ab"
    orphan.mkdir()
    (orphan / "manifest.json").write_text("{}")
    held = ResultStore(tmp_path).claim(rec.key)  # another process is computing the cell
    again = _run(tmp_path, plan=_plan(folds=[1]))
    assert again.n_skipped == 1 and orphan.is_dir()  # its model may be the one it will name
    held.release()
    again = _run(tmp_path, plan=_plan(folds=[1]))
    assert again.n_skipped == 1
    assert _model_folders(tmp_path) == [Path(rec.model_dir).name]  # only the record's own


def test_a_skipped_cell_without_its_model_says_so_when_models_are_kept(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from ltr_bench.cli import main

    monkeypatch.chdir(tmp_path)
    argv = ["run", "--ranker", "ridge", "--dataset", "synthetic", "--folds", "1", "--no-mlflow"]
    argv += [f"--dataset-option={k}={v}" for k, v in TINY.items()]
    first = CliRunner().invoke(main, [*argv, "--keep-models", "none"])
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(main, argv)
    assert again.exit_code == 0, again.output
    assert "finished earlier, skipped" in again.output
    assert "it has no kept model (it was run with --keep-models none" in again.output
    assert "--force refits it and keeps its model" in again.output
    quiet = CliRunner().invoke(main, [*argv, "--keep-models", "none"])
    assert "no kept model" not in quiet.output  # not asked for: nothing to say


def test_a_ranker_that_cannot_be_saved_keeps_its_metrics_and_says_why(tmp_path, fake_rankers):
    report = _run(tmp_path, plan=_plan("fake-linear", {}, folds=[1]))
    rec = report.records[0]
    assert rec.ok and rec.metrics and rec.model_dir is None
    assert any(w.startswith("model not kept:") and "fake-linear" in w for w in rec.warnings)
    assert _model_folders(tmp_path) == []


KILLED_WRITER = """
import sys, time
from pathlib import Path
from ltr_bench_baselines.lightgbm import LightGBMRanker
from ltr_bench.results import ResultStore
from ltr_bench.run.cells import expand_plan
from ltr_bench.run.harness import run_plan
from ltr_bench.run.plan import DatasetChoice, Plan, RankerChoice

native = LightGBMRanker.save_native
def slow_save(self, folder):
    extras = native(self, folder)
    Path(sys.argv[1], "writing").touch()
    time.sleep(60)  # killed here: the model's files are written, its manifest is not
    return extras
LightGBMRanker.save_native = slow_save
root = Path(sys.argv[1])
plan = Plan(rankers=[RankerChoice("lightgbm", {FAST!r})],
            datasets=[DatasetChoice("synthetic", {TINY!r})], folds=[1], seed=0, threads=1)
run_plan(expand_plan(plan, score_repeats=1, keep_models=root), ResultStore(root))
"""


@pytest.mark.slow
def test_a_kill_while_the_model_is_written_leaves_no_model_and_a_rerun_keeps_a_whole_one(tmp_path):
    script = textwrap.dedent(KILLED_WRITER).replace("{FAST!r}", repr(FAST))
    script = script.replace("{TINY!r}", repr(TINY))
    proc = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)])
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "writing").exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the writer never started"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert _model_folders(tmp_path) == [] or all(
        n.startswith(".") for n in _model_folders(tmp_path)
    )
    assert not list(tmp_path.glob("*.json"))  # no record without its model
    rec = _run(tmp_path, plan=_plan(folds=[1])).records[0]
    assert _model_folders(tmp_path) == [Path(rec.model_dir).name]  # whole, and only it
    load_model(rec.model_dir)


@pytest.mark.slow
def test_cells_on_dask_workers_keep_their_models_written_by_the_worker(tmp_path, monkeypatch):
    import ltr_bench.models
    from ltr_bench.run.dask_executor import DaskExecutor

    def not_here(*args, **kwargs):
        raise AssertionError("a model was saved by the client, not by the worker that fitted it")

    monkeypatch.setattr(ltr_bench.models, "save_model", not_here)  # this process only
    expanded = expand_plan(_plan(), score_repeats=1, keep_models=tmp_path)
    with DaskExecutor(workers=1, threads=1) as executor:
        report = run_plan(expanded, ResultStore(tmp_path), executor=executor)
    assert not report.failed and len(report.records) == 2
    for rec in report.records:
        assert Path(rec.model_dir).is_dir()
        assert not [w for w in rec.warnings if w.startswith("model not kept")]
        assert load_model(rec.model_dir).manifest["n_features"] == TINY["n_features"]
    assert len(_model_folders(tmp_path)) == 2


def test_the_commands_keep_models_by_default_and_not_with_keep_models_none(tmp_path, monkeypatch):
    import json

    from click.testing import CliRunner

    from ltr_bench.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LTR_BENCH_CACHE", str(tmp_path / "cache"))
    data = ["--dataset", "synthetic", "--folds", "1", "--no-mlflow"]
    data += [x for k, v in TINY.items() for x in ("--dataset-option", f"{k}={v}")]
    for command, extra, results, kept in (
        ("run", ["--ranker", "ridge", "--keep-models", "none"], "none", 0),
        ("tune", ["--ranker", "ridge", "--trials", "2"], "tuned", 1),
    ):
        args = [command, *extra, *data, "--results-dir", results]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        assert len(_model_folders(tmp_path / results)) == kept
        (record,) = [json.loads(p.read_text()) for p in (tmp_path / results).glob("*.json")]
        assert (record["model_dir"] is not None) == bool(kept)

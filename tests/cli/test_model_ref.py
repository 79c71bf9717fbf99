"""``--model`` takes whatever ``ltr-bench models`` prints: a fold run's id (alone, ``runs:/<id>``
or ``runs:/<id>/model``), the logged model (``models:/<id>`` or ``m-...`` alone) and the model
folder (relative too); a parent run's id is answered with its fold runs and their model URIs
(exit 2), never MLflow's "failed to download"; a run that is not there, one without a logged
model, and a store that does not exist exit 1, and no store is created."""

from __future__ import annotations

import dataclasses
import os

import pytest
from click.testing import CliRunner

from ltr_bench.cli import main


def _predict(logged, model, fold=1, *extra):
    args = ["predict", "--model", model, *logged.data_args(fold), "--metrics", "ndcg@10", *extra]
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert not (result.exception and not isinstance(result.exception, SystemExit)), result.output
    return result


@pytest.mark.slow
def test_every_id_and_uri_models_prints_loads_the_fold_model(logged_models, monkeypatch):
    rec = next(r for r in logged_models.records if r.ranker == "lightgbm" and r.fold == 2)
    run_id = logged_models.run_ids[rec.key]
    model_id = logged_models.model_ids[run_id]
    monkeypatch.chdir(logged_models.root.parent)
    refs = [run_id, f"runs:/{run_id}", f"runs:/{run_id}/model", model_id, f"models:/{model_id}"]
    refs.append(os.path.relpath(rec.model_dir))  # the table's folder, relative to the cwd
    for ref in refs:
        result = _predict(logged_models, ref, 2)
        assert result.exit_code == 0, (ref, result.output)
        assert f"ndcg@10         {rec.metrics['ndcg@10']:.6f}" in result.stdout, ref


@pytest.mark.slow
def test_a_parent_run_is_answered_with_its_fold_runs(logged_models):
    fold_run = logged_models.run_ids[logged_models.records[0].key]
    parent = logged_models.parents[fold_run]
    folds = [r for r, p in logged_models.parents.items() if p == parent]
    assert len(folds) == 2
    for ref in (parent, f"runs:/{parent}/model"):
        result = _predict(logged_models, ref)
        assert result.exit_code == 2, result.output
        assert "is the parent run" in result.stderr and "Failed to download" not in result.stderr
        for run_id in folds:
            model = f"models:/{logged_models.model_ids[run_id]}"
            assert f"runs:/{run_id}/model ({model})" in result.stderr
        others = set(logged_models.parents) - set(folds)
        assert not any(r in result.stderr for r in others)  # only this parent's folds


@pytest.mark.slow
def test_a_run_that_is_not_in_the_store_exits_1(logged_models):
    result = _predict(logged_models, "f" * 32)
    assert result.exit_code == 1
    assert f"no run {'f' * 32}" in result.stderr and "ltr-bench models" in result.stderr


def test_a_run_id_without_a_store_exits_1_and_creates_none(tmp_path):
    absent = tmp_path / "mlflow.db"
    args = ["predict", "--model", "a" * 32, "--data", "synthetic", "--tracking-uri", absent]
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 1 and "no MLflow store" in result.stderr
    assert not absent.exists()


@pytest.mark.slow
def test_a_fold_run_without_a_logged_model_says_so(logged_models, tmp_path):
    from ltr_bench.tracking import Tracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    rec = dataclasses.replace(logged_models.records[0], model_dir=None)
    tracker = Tracker(uri)
    tracker.check()
    run_id = tracker.log_record(rec)
    tracker.finish()
    args = ["predict", "--model", run_id, "--data", "synthetic", "--tracking-uri", uri]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    assert "has no logged model" in result.stderr and "--keep-models none" in result.stderr

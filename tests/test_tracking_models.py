"""Kept models in MLflow (:mod:`ltr_bench.tracking.models`): a fold run's model is an MLflow
Model that ``mlflow.pyfunc`` loads and that ranks a pandas frame with a ``qid`` column exactly
as the kept folder does; it is listed as the run's logged model (the Models tab); ``report
--register`` registers the best configuration's models with their metrics in the
description, and ``predict`` takes every MLflow model URI."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from ltrb_logged import GBDT, TINY, run_and_log

from ltr_bench.cli import main
from ltr_bench.models import load_model
from ltr_bench.tracking import Tracker


def _cli(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert not (result.exception and not isinstance(result.exception, SystemExit)), result.output
    return result.exit_code, result.output


@pytest.mark.slow
def test_kept_models_are_mlflow_models_that_rank_frames_register_and_predict(tmp_path):
    import mlflow

    uri, _, report, run_ids = run_and_log(tmp_path, {"lightgbm": GBDT, "ridge": {}}, [1, 2])

    from ltr_bench import data

    rec = report.records[0]
    test = data.load_fold("synthetic", rec.fold, seed=0, options=dict(TINY)).test
    frame = pd.DataFrame(test.X, columns=[f"f{j}" for j in range(1, 6)])
    frame.insert(0, "qid", test.qid)
    mlflow.set_tracking_uri(uri)
    pyfunc = mlflow.pyfunc.load_model(f"runs:/{run_ids[rec.key]}/model")
    assert pyfunc.metadata.get_input_schema().input_names() == ["qid", "f1", "f2", "f3", "f4", "f5"]
    np.testing.assert_array_equal(
        np.asarray(pyfunc.predict(frame)), load_model(rec.model_dir).predict(test.X, test.qid)
    )
    client = mlflow.MlflowClient(uri)
    exp = client.get_run(run_ids[rec.key]).info.experiment_id
    listed = client.search_logged_models(experiment_ids=[exp])
    assert {m.source_run_id for m in listed} == set(run_ids.values())  # the Models tab

    code, out = _cli(
        "report", "--dataset", "synthetic", "--tracking-uri", uri, "--register", "best"
    )
    assert code == 0, out
    versions = client.search_model_versions("name='best'")
    best = max(
        {r.label for r in report.records},
        key=lambda label: np.mean(
            [r.metrics["ndcg@10"] for r in report.records if r.label == label]
        ),
    )
    chosen = [r for r in report.records if r.label == best]
    assert sorted(v.run_id for v in versions) == sorted(run_ids[r.key] for r in chosen)
    for v in versions:
        r = next(r for r in chosen if run_ids[r.key] == v.run_id)
        assert (
            f"fold {r.fold}: " in v.description
            and f"ndcg@10 {r.metrics['ndcg@10']:.4f}" in v.description
        )
        assert "Best of 2 configuration(s)" in v.description
    v1 = next(v for v in versions if str(v.version) == "1")
    r1 = next(r for r in chosen if run_ids[r.key] == v1.run_id)
    data_args = [
        "--data",
        f"synthetic:{r1.fold}:test",
        "--tracking-uri",
        uri,
        "--metrics",
        "ndcg@10",
    ]
    data_args += [x for k, v in TINY.items() for x in ("--dataset-option", f"{k}={v}")]
    for model_uri in ("models:/best/1", v1.source, f"runs:/{v1.run_id}/model"):
        code, out = _cli("predict", "--model", model_uri, *data_args)
        assert code == 0 and f"ndcg@10         {r1.metrics['ndcg@10']:.6f}" in out, out


def test_register_refuses_local_results_before_reading_them(tmp_path):
    code, out = _cli("report", "--results-dir", tmp_path, "--register", "x")
    assert code == 2 and "--register" in out


def test_an_unknown_model_uri_is_refused_naming_it(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    code, out = _cli(
        "predict", "--model", "models:/nothing/3", "--data", "synthetic", "--tracking-uri", uri
    )
    assert code == 1 and "models:/nothing/3" in out and "Traceback" not in out


@pytest.mark.slow
def test_a_replaced_fold_run_takes_its_logged_model_with_it(tmp_path):
    import dataclasses

    import mlflow

    from ltr_bench.results import now

    uri, _, report, run_ids = run_and_log(tmp_path, {"lightgbm": GBDT}, [1])
    (rec,) = report.records
    old = run_ids[rec.key]
    tracker = Tracker(uri)
    tracker.check()
    new = tracker.log_record(dataclasses.replace(rec, finished=now()))  # as --force does
    assert new != old
    client = mlflow.MlflowClient(uri)
    exp = client.get_run(new).info.experiment_id
    assert [m.source_run_id for m in client.search_logged_models(experiment_ids=[exp])] == [new]


def test_saving_a_model_skips_mlflows_scan_of_every_installed_distribution(tmp_path, monkeypatch):
    """MLflow's check of the pip requirements (pinned to the installed versions) would build
    a map of every installed distribution's files on the first save of a process (~2 s at
    the end of a short run); the saved model still pins the requirements."""
    import mlflow.utils.environment
    import mlflow.utils.requirements_utils as requirements_utils

    from ltr_bench.tracking import models

    scans = []
    monkeypatch.setattr(requirements_utils, "_PACKAGES_TO_MODULES", None)
    monkeypatch.setattr(
        requirements_utils, "_init_packages_to_modules_map", lambda: scans.append(1)
    )
    check = mlflow.utils.environment.warn_dependency_requirement_mismatches
    folder = tmp_path / "kept"
    folder.mkdir()
    (folder / "manifest.json").write_text('{"ranker": "ridge", "n_features": 3}')
    models._save(tmp_path / "model", "run", "m-1", folder, {"ranker": "ridge"}, 3)
    assert scans == []
    assert mlflow.utils.environment.warn_dependency_requirement_mismatches is check  # restored
    pins = (tmp_path / "model" / "requirements.txt").read_text().split()
    assert any(p.startswith("ltr-bench==") for p in pins)
    assert any(p.startswith("mlflow==") for p in pins)

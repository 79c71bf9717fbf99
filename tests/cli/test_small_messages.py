"""Small things a new user reads: a single fold's mean has no "± nan" in a registered
model's description, and ``models --best METRIC`` names its own option when METRIC is not
recorded."""

from __future__ import annotations

import numpy as np
from click.testing import CliRunner

from ltr_bench.cli import main
from ltr_bench.report.register import best_row, model_description
from ltr_bench.report.tables import build_report
from ltr_bench.results import ResultRecord

TINY = ["n_queries=12", "docs_per_query=5", "n_features=4", "n_informative=2"]


def _record(label: str, shift: float) -> ResultRecord:
    v = np.linspace(0.3, 0.7, 12) + shift
    return ResultRecord(
        key=label, plan_key=f"pk-{label}", config_key=f"ck-{label}", ranker=label, label=label,
        dataset="synthetic", fold=1, seed=0, started="2025-06-01T10:00",
        metrics={"ndcg@10": float(v.mean())},
        per_query={"qid": list(range(12)), "ndcg@10": v.tolist()},
        fit_seconds=1.0, score_us_per_doc=1.0, fingerprints={"train": "t1", "test": "te1"},
        dataset_identity={"name": "synthetic"},
    )  # fmt: skip


def test_a_single_fold_description_has_no_nan_spread():
    report = build_report([_record("ridge", 0.0), _record("lightgbm", 0.1)], dataset="synthetic")
    text = model_description(report, best_row(report))
    assert "nan" not in text and "over 1 fold run(s)" in text, text


def test_models_best_names_best_for_a_metric_not_recorded(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    options = [x for o in TINY for x in ("--dataset-option", o)]
    run = ["run", "--ranker", "ridge", "--dataset", "synthetic", "--folds", "1", "--no-mlflow"]
    assert CliRunner().invoke(main, run + options).exit_code == 0
    result = CliRunner().invoke(main, ["models", "--best", "ndcg@99", "--no-mlflow"])
    assert result.exit_code == 2, result.output
    assert "--best ndcg@99: not recorded" in result.stderr and "--metric" not in result.stderr

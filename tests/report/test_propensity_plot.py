"""The plot of estimated against true propensities by rank."""

from __future__ import annotations

import numpy as np
import pytest

from ltr_bench.report.plots import write_plots
from ltr_bench.report.propensity_plot import estimated_curves, true_curve
from ltr_bench.report.tables import build_report
from ltr_bench.results import ResultRecord

CLICKS = {"model": {"name": "pbm", "args": {"eta": 2.0, "eps": 0.1}}, "sessions": 10}


def _records():
    out = []
    for label, learned in (("dla", True), ("naive", False)):
        for f in (1, 2):
            info = {f"propensity@{k}": 1.0 / k + 0.01 * f for k in range(1, 4)} if learned else {}
            out.append(
                ResultRecord(
                    key=f"{label}-{f}",
                    plan_key=f"pk-{label}",
                    config_key=f"ck-{label}",
                    ranker="neural",
                    label=label,
                    dataset="toy",
                    fold=f,
                    seed=0,
                    metrics={"ndcg@10": 0.5, "ndcg@5": 0.4},
                    per_query={"qid": [0, 1], "ndcg@10": [0.4, 0.6], "ndcg@5": [0.3, 0.5]},
                    fit_seconds=1.0,
                    score_us_per_doc=1.0,
                    fingerprints={"train": f"c{f}", "test": f"t{f}"},
                    dataset_identity={"name": "toy", "clicks": CLICKS},
                    model_info=info,
                )
            )
    return out


def test_true_curve_is_the_position_based_models_and_none_for_others():
    assert true_curve(CLICKS, 3) == pytest.approx([1.0, 0.25, 1 / 9])
    assert true_curve({"model": {"name": "cascade", "args": {}}}, 3) is None
    assert true_curve(None, 3) is None


def test_curves_are_the_fold_means_of_the_rows_that_learned_propensities():
    rep = build_report(_records(), dataset="toy", baseline="naive")
    curves = estimated_curves(rep)
    assert set(curves) == {"dla"}
    mean, std = curves["dla"]
    assert mean == pytest.approx([1.015, 0.515, 1 / 3 + 0.015])
    assert std == pytest.approx([np.std([0.01, 0.02], ddof=1)] * 3)


def test_report_plots_include_the_propensity_figure(tmp_path):
    rep = build_report(_records(), dataset="toy", baseline="naive")
    paths = write_plots(rep, tmp_path)
    png = tmp_path / "toy_propensities.png"
    assert png in paths and png.read_bytes()[:4] == b"\x89PNG"

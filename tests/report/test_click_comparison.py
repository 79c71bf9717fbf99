"""The report compares rankers trained on simulated clicks with the true-label skyline of the
same folds on the same test labels, and still refuses rows whose test data differ."""

from __future__ import annotations

import numpy as np

from ltr_bench.report.tables import build_report
from ltr_bench.results import ResultRecord

PBM = {"model": {"name": "pbm", "args": {"eta": 1.0, "eps": 0.1}}, "sessions": 10, "top_k": 10}


def _record(label, fold, values, *, clicks=None, train="tr", test="te"):
    v = np.asarray(values, dtype=float)
    identity = {"name": "toy"} | ({"clicks": clicks} if clicks else {})
    return ResultRecord(
        key=f"{label}-{fold}",
        plan_key=f"pk-{label}",
        config_key=f"ck-{label}",
        ranker=label.split()[0],
        label=label,
        dataset="toy",
        fold=fold,
        seed=0,
        metrics={"ndcg@10": float(v.mean())},
        per_query={"qid": list(range(v.size)), "ndcg@10": v.tolist()},
        fit_seconds=1.0,
        score_us_per_doc=1.0,
        fingerprints={"train": f"{train}{fold}", "test": f"{test}{fold}"},
        dataset_identity=identity,
    )


def _runs(rng):
    base = [rng.uniform(0.3, 0.6, size=12) for _ in range(3)]
    out = []
    for f, b in enumerate(base, start=1):
        out.append(_record("lightgbm skyline", f, b + 0.1))
        out.append(_record("lightgbm naive", f, b, clicks=PBM, train="clicked"))
        out.append(_record("lightgbm unbiased", f, b + 0.05, clicks=PBM, train="clicked"))
    return out


def test_click_rows_and_the_skyline_are_compared_on_the_same_test_labels():
    rep = build_report(_runs(np.random.default_rng(0)), dataset="toy", baseline="lightgbm naive")
    labels = {row.label for row in rep.rows}
    naive, unbiased = "lightgbm naive · clicks pbm x10", "lightgbm unbiased · clicks pbm x10"
    assert labels == {"lightgbm skyline", naive, unbiased}
    assert rep.comparisons[("lightgbm skyline", "ndcg@10")].mark == "win"
    assert rep.comparisons[(unbiased, "ndcg@10")].mark == "win"
    notes = " ".join(rep.notes)
    assert "lightgbm skyline was trained on true labels" in notes
    assert "clicks pbm(eps=0.1, eta=1.0), 10 sessions" in notes
    assert "same test split" in notes
    # rows on the same click data say nothing extra
    assert "lightgbm unbiased was trained" not in notes


def test_a_click_row_with_other_test_data_is_still_left_out():
    runs = _runs(np.random.default_rng(0))
    runs = [
        _record("lightgbm naive", r.fold, r.per_query["ndcg@10"], clicks=PBM, test="other")
        if r.label == "lightgbm naive"
        else r
        for r in runs
    ]
    rep = build_report(runs, dataset="toy", baseline="lightgbm skyline")
    assert "lightgbm naive" not in {row.label for row in rep.rows}
    assert any("lightgbm naive · clicks pbm x10 left out" in n for n in rep.notes)


def test_two_true_label_rows_with_other_training_data_are_still_left_out():
    runs = _runs(np.random.default_rng(0))
    runs.extend(_record("lightgbm other", f, [0.5] * 12, train="changed") for f in (1, 2, 3))
    rep = build_report(runs, dataset="toy", baseline="lightgbm skyline")
    assert "lightgbm other" not in {row.label for row in rep.rows}

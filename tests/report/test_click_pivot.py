"""report.click_pivot: each learner's skyline, naive and debiased rows side by side, every
debiased row tested against its own naive row on the same test queries."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from ltrb_click_config import resolved_pbm
from scipy import stats

from ltr_bench.evaluation.stats import holm
from ltr_bench.report.tables import build_report
from ltr_bench.report.text import format_report
from ltr_bench.results import ResultRecord

PBM = resolved_pbm()
POS = ["position", "propensity"]
FOLDS = (1, 2, 3)


def _record(label, ranker, fold, values, *, params=None, clicks=None, keywords=None):
    v = np.asarray(values, dtype=float)
    identity = {"name": "toy"} | ({"clicks": clicks} if clicks else {})
    options = {"clicks": clicks["model"]["name"]} if clicks else {}
    config = {} if keywords is None else {"fit_keywords": keywords}
    train = "clicked" if clicks else "tr"
    return ResultRecord(
        key=f"{label}-{fold}",
        plan_key=f"pk-{label}",
        config_key=f"ck-{label}",
        ranker=ranker,
        label=label,
        params=dict(params or {}),
        dataset="toy",
        fold=fold,
        seed=0,
        metrics={"ndcg@10": float(v.mean()), "map": float(v.mean()) / 2},
        per_query={"qid": list(range(v.size)), "ndcg@10": v.tolist(), "map": (v / 2).tolist()},
        fit_seconds=1.0,
        score_us_per_doc=1.0,
        fingerprints={"train": f"{train}{fold}", "test": f"te{fold}"},
        dataset_identity=identity,
        dataset_options=options,
        config=config,
    )


@pytest.fixture
def values():
    rng = np.random.default_rng(3)
    return {f: rng.uniform(0.2, 0.6, size=20) for f in FOLDS}


def _rows(values, *, extra=()):
    """lightgbm: skyline, naive, unbiased; neural: skyline (unbiased=naive), softmax
    skyline, naive, ips, dla (2 parameters from naive)."""
    specs = [
        ("lightgbm skyline", "lightgbm", {"unbiased": False}, None, None, 0.10),
        ("lightgbm naive", "lightgbm", {"unbiased": False}, PBM, [], 0.0),
        ("lightgbm unbiased", "lightgbm", {"unbiased": True}, PBM, POS, 0.03),
        ("neural skyline", "neural", {"unbiased": "naive", "optimizer": "auto"}, None, None, 0.08),
        ("neural softmax", "neural", {"unbiased": "none", "optimizer": "auto"}, None, None, 0.09),
        ("neural naive", "neural", {"unbiased": "naive", "optimizer": "auto"}, PBM, [], 0.02),
        ("neural ips", "neural", {"unbiased": "ips", "optimizer": "auto"}, PBM, POS, 0.04),
        ("neural dla", "neural", {"unbiased": "dla", "optimizer": "adam"}, PBM, POS, 0.01),
        *extra,
    ]
    return [
        _record(label, ranker, f, values[f] + shift + 0.01 * np.sin(np.arange(20) + i), params=p,
                clicks=clicks, keywords=kw)
        for i, (label, ranker, p, clicks, kw, shift) in enumerate(specs)
        for f in FOLDS
    ]  # fmt: skip


def _name(label):
    return (
        f"{label} · clicks pbm x10"
        if label.split()[-1] in ("naive", "unbiased", "ips", "dla")
        else label
    )


def test_each_learner_gets_its_skyline_naive_and_debiased_rows(values):
    rep = build_report(_rows(values), dataset="toy", baseline="lightgbm skyline")
    got = {(p.ranker, p.skyline, p.naive, tuple(p.debiased)) for p in rep.pivots}
    lgbm = ("lightgbm", "lightgbm skyline", _name("lightgbm naive"), (_name("lightgbm unbiased"),))
    debiased = (_name("neural dla"), _name("neural ips"))
    # the skyline is the true-label row with the naive row's parameters, not the softmax
    assert got == {lgbm, ("neural", "neural skyline", _name("neural naive"), debiased)}


def test_a_debiased_row_is_tested_against_its_own_naive_row_on_the_same_queries(values):
    records = _rows(values)
    rep = build_report(records, dataset="toy", baseline="lightgbm skyline")

    def pooled(label):
        mine = sorted((r for r in records if r.label == label), key=lambda r: r.fold)
        return np.concatenate([r.per_query["ndcg@10"] for r in mine])

    pivot = next(p for p in rep.pivots if p.ranker == "neural")
    c = pivot.comparisons[(_name("neural ips"), "ndcg@10")]
    ips, naive = pooled("neural ips"), pooled("neural naive")
    assert c.n_pairs == 60
    assert c.mean_diff == pytest.approx(np.mean(ips - naive))
    assert c.p_ttest == pytest.approx(stats.ttest_rel(ips, naive).pvalue)
    # one Holm family of the pivots' own: 2 pivot rows for lightgbm + 3 for neural, x 2 metrics
    family = [c for p in rep.pivots for c in p.comparisons.values()]
    assert len(family) == 10
    expected = holm([x.p_ttest for x in family])
    assert [x.p_ttest_holm for x in family] == pytest.approx(list(expected))
    # and not the baseline's: against lightgbm skyline the same row differs by another amount
    assert rep.comparisons[(_name("neural ips"), "ndcg@10")].mean_diff != pytest.approx(c.mean_diff)


def test_rows_without_a_place_in_a_pivot_are_named_in_notes(values):
    extra = [
        ("ranknet unbiased", "ranknet", {}, PBM, POS, 0.0),  # no naive row of its ranker
        ("ridge old", "ridge", {}, PBM, None, 0.0),  # recorded before fit_keywords
    ]
    rep = build_report(_rows(values, extra=extra), dataset="toy", baseline="lightgbm skyline")
    notes = " ".join(rep.notes)
    assert (
        f"{_name('ranknet unbiased')} learns from the click positions, but no ranknet row" in notes
    )
    assert "ridge old · clicks pbm x10: the records do not say whether fit took" in notes


def test_the_markdown_report_shows_the_pivot_with_differences_to_each_naive(values):
    rep = build_report(_rows(values), dataset="toy", baseline="lightgbm skyline")
    md = format_report(rep, "md")
    assert "### Learning from clicks: each learner against its own naive row (ndcg@10)" in md
    line = next(l for l in md.splitlines() if l.startswith("|  | lightgbm unbiased"))
    diff = rep.pivots[0].comparisons[(_name("lightgbm unbiased"), "ndcg@10")].mean_diff
    assert f"+{diff:.4f}" in line
    assert "| lightgbm on clicks pbm x10 | lightgbm skyline | skyline (true labels) |" in md
    lines = list(csv.DictReader(io.StringIO(format_report(rep, "csv"))))
    unbiased = next(
        r for r in lines if r["ranker"] == _name("lightgbm unbiased") and r["quantity"] == "map"
    )
    assert (unbiased["its_naive"], unbiased["naive_n_pairs"]) == (_name("lightgbm naive"), "60")
    assert float(unbiased["naive_mean_diff"]) == pytest.approx(0.015, abs=1e-3)


def test_click_rows_get_no_published_numbers_beside_them(values):
    from ltr_bench.report.published import published_section

    rows = [
        _record(label, "listnet", f, values[f], clicks=clicks, keywords=kw)
        for label, clicks, kw in (("listnet", None, None), ("listnet naive", PBM, []))
        for f in FOLDS
    ]
    for r in rows:  # OHSUMED's published ListNet is under the LETOR 3.0 convention
        r.dataset = "ohsumed"
        r.metrics["ndcg@10_letor3"] = r.metrics["ndcg@10"]
    rep = build_report(rows, dataset="ohsumed", baseline="listnet")
    assert {line.label for line in published_section(rep).lines if line.label} == {"listnet"}
    clicks_only = [r for r in rows if r.dataset_identity.get("clicks")]
    rep = build_report(clicks_only, dataset="ohsumed")
    section = published_section(rep)
    assert section.lines == [] and section.notes == []
    assert "ublished" not in format_report(rep, "md")

"""Highly relevant / negative documents and the sampling of local metrics."""

import numpy as np

from ltr_bench_lgmml.local_metrics import QuerySets, fit_local_metrics, highly_relevant_threshold


def test_highly_relevant_rules():
    lab = np.array([0, 1, 2, 2])
    assert highly_relevant_threshold(lab, "upper_half") == 1.0  # median of {0,1,2}
    assert highly_relevant_threshold(np.array([0, 1]), "upper_half") == 1.0
    assert highly_relevant_threshold(np.array([0, 2, 4]), "upper_half") == 2.0
    assert highly_relevant_threshold(lab, "top") == 2.0
    assert highly_relevant_threshold(lab, 2) == 2.0
    assert highly_relevant_threshold(np.array([0, 0]), "upper_half") == np.inf


def test_query_sets_negatives_zero_versus_lower_and_eligibility():
    y = np.array([0, 1, 2, 1, 2, 2])
    bounds = np.array([0, 3, 5, 6])
    zero = QuerySets(y, bounds, "top", "zero")
    assert [p.tolist() for p in zero.pos] == [[2], [4], [5]]
    assert [n.tolist() for n in zero.neg] == [[0], [], []]
    assert zero.eligible.tolist() == [0]
    lower = QuerySets(y, bounds, "top", "lower")
    assert [n.tolist() for n in lower.neg] == [[0, 1], [3], []]
    assert lower.eligible.tolist() == [0, 1]


def test_all_labels_equal_falls_back_without_crashing():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    y = np.zeros(12, dtype=int)
    bounds = np.array([0, 5, 12])
    sets = QuerySets(y, bounds, "upper_half", "zero")
    metrics, anchors, nd = fit_local_metrics(
        rng=rng,
        y=y,
        sets=sets,
        rows=lambda idx: X[idx],
        query_points=None,
        n_metrics=3,
        queries_per_metric=1,
        max_positives=4,
        max_negatives=4,
        reg_lambda=0.1,
        t=0.5,
        distance="paper",
        anchor_k=10,
    )
    assert len(metrics) == 3 and anchors.shape == (3, 3) and np.all(nd == 0)


def test_anchors_come_from_the_sampled_highly_relevant_documents():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 4))
    y = np.tile([0, 0, 1, 2, 0], 6)
    bounds = np.array([0, 10, 20, 30])
    sets = QuerySets(y, bounds, "top", "zero")
    _, anchors, nd = fit_local_metrics(
        rng=rng,
        y=y,
        sets=sets,
        rows=lambda idx: X[idx],
        query_points=None,
        n_metrics=5,
        queries_per_metric=2,
        max_positives=None,
        max_negatives=None,
        reg_lambda=0.1,
        t=0.5,
        distance="mahalanobis",
        anchor_k=10,
    )
    top_docs = X[y == 2]
    for a in anchors:
        assert np.any(np.all(top_docs == a, axis=1))
    assert np.all((nd > 0) & (nd <= 1))

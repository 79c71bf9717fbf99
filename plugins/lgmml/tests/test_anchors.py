"""Anchors: the candidate whose distance ranking has the highest NDCG (Algorithm 2)."""

import numpy as np
from sklearn.metrics import ndcg_score

from ltr_bench_lgmml.anchors import pairwise_sq_distances, select_anchor
from ltr_bench_lgmml.gmml import gmml_lowrank


def test_each_anchor_maximises_the_ndcg_it_was_chosen_by():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 6))
    y = rng.integers(0, 3, size=40)
    P = X[y == 2]
    metric = gmml_lowrank([(P, X[y == 0])], reg_lambda=0.1, t=0.5, distance="paper")
    best, value = select_anchor(metric, P, [(X, y)], k=10)
    M2 = metric.dense()
    # Independent reference: dense quadratic form and scikit-learn's NDCG (ties averaged).
    ref = []
    for p in P:
        dist = np.einsum("ij,jk,ik->i", X - p, M2, X - p)
        ref.append(ndcg_score([np.exp2(y) - 1], [-dist], k=10))
    assert value == max(ref) or np.isclose(value, max(ref), rtol=1e-12)
    assert np.isclose(ref[best], max(ref), rtol=1e-12)


def test_pairwise_distances_match_the_dense_quadratic_form():
    rng = np.random.default_rng(1)
    A, B = rng.normal(size=(4, 7)), rng.normal(size=(5, 7))
    metric = gmml_lowrank([(A[:3], B[:2])], reg_lambda=0.5, t=0.5, distance="mahalanobis")
    M = metric.dense()
    ref = np.array([[(a - b) @ M @ (a - b) for b in B] for a in A])
    assert np.allclose(pairwise_sq_distances(metric, A, B), ref, rtol=1e-9, atol=1e-12)


def test_query_without_relevant_document_does_not_crash_and_keeps_first_candidate():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(6, 3))
    metric = gmml_lowrank([(X[:3], X[3:])], reg_lambda=0.1, t=0.5, distance="paper")
    best, value = select_anchor(metric, X[:3], [(X, np.zeros(6, dtype=int))])
    assert best == 0 and value == 0.0

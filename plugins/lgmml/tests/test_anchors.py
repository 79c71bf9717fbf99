"""Anchors: the candidate whose distance ranking has the highest NDCG (Algorithm 2)."""

import numpy as np
import pytest
from sklearn.metrics import ndcg_score

from ltr_bench_lgmml.anchors import (
    _candidate_ndcgs_per_candidate,
    candidate_ndcgs,
    pairwise_sq_distances,
    select_anchor,
)
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


def _tied_anchor_problem(seed):
    """A metric, candidates with exact duplicates, and queries whose documents repeat
    (integer features): distance ties within a ranking and NDCG ties between candidates."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, size=(80, 5)).astype(float)
    y = rng.integers(0, 4, size=80)
    pos, neg = X[y >= 2], X[y == 0]
    metric = gmml_lowrank(
        [(pos[:6], neg[:6])], reg_lambda=0.1, t=0.5, distance="paper", reg_scale="relative"
    )
    cands = np.vstack([pos[:8], pos[:3]])  # the last three repeat the first three
    queries = [(X[:30], y[:30]), (X[30:55], y[30:55]), (X[55:], np.zeros(25, dtype=int))]
    return metric, cands, queries


@pytest.mark.parametrize("seed", range(6))
def test_batched_candidate_ndcgs_equal_the_per_candidate_loop_to_the_last_bit(seed):
    metric, cands, queries = _tied_anchor_problem(seed)
    for k in (3, 10):
        got = candidate_ndcgs(metric, cands, queries, k)
        assert np.array_equal(got, _candidate_ndcgs_per_candidate(metric, cands, queries, k))
        # duplicated candidates tie exactly, so argmax keeps the first of them
        assert np.array_equal(got[8:], got[:3])
        best, value = select_anchor(metric, cands, queries, k)
        assert best == int(np.argmax(got)) and best < 8 and value == got[best]


def test_equal_ndcgs_go_to_the_first_candidate_in_sampling_order():
    metric, cands, queries = _tied_anchor_problem(0)
    reordered = np.vstack([cands[8:], cands[:8]])  # duplicates first now
    scores = candidate_ndcgs(metric, reordered, queries)
    best, _ = select_anchor(metric, reordered, queries)
    assert best == int(np.flatnonzero(scores == scores.max())[0])


def test_candidate_ndcgs_with_no_candidates_or_no_queries():
    metric, cands, queries = _tied_anchor_problem(1)
    assert candidate_ndcgs(metric, cands[:0], queries).shape == (0,)
    assert np.array_equal(candidate_ndcgs(metric, cands, []), np.zeros(len(cands)))


def _ranking_data(seed=0, n_queries=40, n_docs=25, d=8):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=n_queries * n_docs)
    X = rng.normal(size=(y.size, d))
    X[:, 0] += y
    X[:, 1:4] = np.round(X[:, 1:4])  # coarse features: duplicate documents and distance ties
    X[::7] = X[1::7]
    return X, y, np.repeat(np.arange(n_queries), n_docs)


@pytest.mark.parametrize(
    "params",
    [{}, {"queries_per_metric": 3, "max_positives": 8, "max_negatives": 10, "n_metrics": 30}],
)
def test_ranker_with_batched_anchor_search_is_bit_identical_to_the_per_candidate_loop(
    monkeypatch, params
):
    import ltr_bench_lgmml.anchors as anchors
    from ltr_bench_lgmml import LGMMLRanker

    X, y, qid = _ranking_data()
    new = LGMMLRanker(random_state=4, **params).fit(X, y, qid=qid)
    # the model as fitted before the batching: select_anchor looks candidate_ndcgs up in
    # its module, so this swaps in the old per-candidate loop
    calls = []

    def per_candidate(*args, **kw):
        calls.append(1)
        return anchors._candidate_ndcgs_per_candidate(*args, **kw)

    monkeypatch.setattr(anchors, "candidate_ndcgs", per_candidate)
    old = LGMMLRanker(random_state=4, **params).fit(X, y, qid=qid)
    assert len(calls) == old.n_metrics  # one anchor search per metric went the old way
    assert np.array_equal(new.metric_bank_.anchors, old.metric_bank_.anchors)
    assert np.array_equal(new.anchor_ndcg_, old.anchor_ndcg_)
    assert np.array_equal(new.weights_, old.weights_)
    assert np.array_equal(new.predict(X), old.predict(X))

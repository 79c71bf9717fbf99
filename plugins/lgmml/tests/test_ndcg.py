"""The internal NDCG used to choose anchors, checked against scikit-learn; the batched
version (all candidates of a query at once) against the single-ranking one, bit for bit."""

import numpy as np
import pytest
from sklearn.metrics import ndcg_score

from ltr_bench_lgmml.ndcg import ndcg_at_k, ndcg_at_k_rows


def test_hand_worked_value_with_exponential_gain_and_log2_discount():
    # Ranking labels [0, 2, 1]: DCG = 3/log2(3) + 1/log2(4); ideal [2, 1, 0]: 3 + 1/log2(3).
    got = ndcg_at_k([0, 2, 1], [3.0, 2.0, 1.0], k=10)
    assert got == pytest.approx((3 / np.log2(3) + 0.5) / (3 + 1 / np.log2(3)))


@pytest.mark.parametrize("seed", range(5))
def test_matches_sklearn_with_ties_averaged(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=30)
    s = rng.integers(0, 6, size=30).astype(float)  # many ties
    ref = ndcg_score([np.exp2(y) - 1], [s], k=10)  # sklearn: linear gain, ties averaged
    assert ndcg_at_k(y, s, k=10) == pytest.approx(ref, rel=1e-12)


def test_query_without_relevant_document_returns_the_empty_value():
    assert ndcg_at_k([0, 0], [1.0, 2.0]) == 0.0
    assert ndcg_at_k([0, 0], [1.0, 2.0], empty=1.0) == 1.0


# ---------------------------------------------------------------- many rankings at once


def _per_row(labels, scores, k, empty=0.0):
    return np.array([ndcg_at_k(labels, row, k, empty=empty) for row in scores])


def _tie_heavy_cases(seed):
    """(labels, scores (rows, n), k): continuous scores, few distinct scores (many ties),
    long tie runs across the cutoff, duplicate rows, k beyond n."""
    rng = np.random.default_rng(seed)
    for trial in range(150):
        n, rows = int(rng.integers(1, 160)), int(rng.integers(1, 12))
        k = int(rng.integers(1, 25))
        y = rng.integers(0, 5, size=n)
        kind = trial % 4
        if kind == 0:
            S = rng.normal(size=(rows, n))
        elif kind == 1:
            S = rng.integers(0, 4, size=(rows, n)).astype(float)
        elif kind == 2:  # one tie group covering positions on both sides of the cutoff
            S = np.round(rng.normal(size=(rows, n)), 1)
            S[:, : max(1, n // 2)] = S[:, :1]
        else:  # identical rankings (candidates that are the same document)
            S = np.repeat(rng.normal(size=(1, n)), rows, axis=0)
        yield y, S, k


@pytest.mark.parametrize("seed", range(4))
def test_rows_equal_the_single_ranking_ndcg_to_the_last_bit_with_ties(seed):
    for y, S, k in _tie_heavy_cases(seed):
        assert np.array_equal(ndcg_at_k_rows(y, S, k), _per_row(y, S, k)), (y, S, k)


def test_rows_equal_the_single_ranking_ndcg_on_distances_with_zeros_and_duplicates():
    # the anchor search ranks by -distance: exact zeros (a candidate among its own query's
    # documents, clipped negative round-off) and duplicated documents tie
    rng = np.random.default_rng(7)
    X = rng.integers(0, 3, size=(60, 4)).astype(float)  # many duplicate documents
    y = rng.integers(0, 3, size=60)
    P = X[:9]
    dist = np.maximum(((P[:, None, :] - X[None, :, :]) ** 2).sum(-1), 0.0)
    for k in (1, 5, 10, 60, 100):
        assert np.array_equal(ndcg_at_k_rows(y, -dist, k), _per_row(y, -dist, k))


def test_rows_give_the_empty_value_without_relevant_documents_or_documents():
    S = np.arange(6.0).reshape(2, 3)
    assert np.array_equal(ndcg_at_k_rows([0, 0, 0], S), [0.0, 0.0])
    assert np.array_equal(ndcg_at_k_rows([0, 0, 0], S, empty=1.0), [1.0, 1.0])
    assert np.array_equal(ndcg_at_k_rows(np.zeros(0), np.zeros((3, 0)), empty=0.5), [0.5] * 3)
    assert ndcg_at_k_rows([1, 0, 2], np.zeros((0, 3))).shape == (0,)


def test_rows_hand_worked_values_best_worst_and_all_tied():
    # labels [2, 1, 0]; k = 2. Ideal DCG@2 = 3 + 1/log2(3).
    idcg = 3 + 1 / np.log2(3)
    S = np.array(
        [
            [3.0, 2.0, 1.0],  # ideal order
            [1.0, 2.0, 3.0],  # reversed: gains 0, 1 in the top 2
            [5.0, 5.0, 5.0],
        ]
    )  # one tie: every position gets the mean gain 4/3
    got = ndcg_at_k_rows([2, 1, 0], S, k=2)
    want = [1.0, (1 / np.log2(3)) / idcg, (4 / 3) * (1 + 1 / np.log2(3)) / idcg]
    assert got == pytest.approx(want, rel=1e-14)


@pytest.mark.parametrize(
    "labels, scores, match",
    [
        (np.zeros((2, 3)), np.zeros((1, 3)), "labels must be 1-D"),
        (np.zeros(3), np.zeros(3), "scores must be 2-D"),
        (np.zeros(3), np.zeros((2, 4)), r"scores must be 2-D \(n_rankings, 3\)"),
    ],
)
def test_rows_reject_shapes_that_do_not_match_with_a_value_error(labels, scores, match):
    with pytest.raises(ValueError, match=match):
        ndcg_at_k_rows(labels, scores)

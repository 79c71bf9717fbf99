"""The internal NDCG used to choose anchors, checked against scikit-learn."""

import numpy as np
import pytest
from sklearn.metrics import ndcg_score

from ltr_bench_lgmml.ndcg import ndcg_at_k


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

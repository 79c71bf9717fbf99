"""Propensity estimation: result randomisation and regression EM recover a known curve."""

from __future__ import annotations

import numpy as np
import pytest

from ltr_bench.clicks.estimation import (
    compare_to_truth,
    propensity_by_randomisation,
    propensity_by_regression_em,
    randomised_log,
)
from ltr_bench.clicks.models import PositionBasedModel, attraction


def test_randomisation_is_the_ctr_ratio_by_hand():
    # rank 1: 4 clicks in 10 sessions; rank 2: 1 click in 10 and 1 in 10 -> CTR 0.1
    position = np.array([1, 2, 2])
    clicks = np.array([4, 1, 1])
    est = propensity_by_randomisation(position, clicks, shown=np.array([10, 10, 10]))
    assert est.tolist() == pytest.approx([1.0, 0.25])


def test_randomisation_refuses_a_log_without_clicks_at_rank_one():
    with pytest.raises(ValueError, match="rank 1"):
        propensity_by_randomisation([1, 2], [0, 3], shown=5)


@pytest.mark.parametrize("eta", [0.5, 1.0, 2.0])
def test_randomisation_recovers_the_position_based_curve(eta):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, size=400 * 20)
    qid = np.repeat(np.arange(400), 20)
    model = PositionBasedModel(eta=eta, eps=0.1)
    pos, c, n = randomised_log(y, qid, model, max_label=2, top_k=10, sessions=25, rng=rng)
    true = (1.0 / np.arange(1, 11)) ** eta
    errors = compare_to_truth(propensity_by_randomisation(pos, c, n), true)
    # 10,000 impressions per rank; the CTR ratio's standard error is about 0.02 here
    assert errors["max_abs"] < 0.08, errors


def _deterministic_log(rng, eta, n_queries=600, L=10, sessions=10):
    """Ordinary (non-randomised) log: each list shown in the order of a noisy logging score,
    gamma = attraction of a label that is a step function of the first feature."""
    X = rng.normal(size=(n_queries * L, 4))
    y = (X[:, 0] > 0.3).astype(int) + (X[:, 0] > 1.2)
    logging = X[:, 0] + 1.5 * rng.normal(size=len(y))
    pos = np.empty(len(y), dtype=np.int64)
    for q in range(n_queries):
        s = slice(q * L, (q + 1) * L)
        pos[s] = np.argsort(np.argsort(-logging[s])) + 1
    p = (1.0 / pos) ** eta * attraction(y, 2, 0.1)
    return X, pos, rng.binomial(sessions, p), sessions


@pytest.mark.slow
@pytest.mark.parametrize("eta", [1.0, 2.0])
def test_regression_em_recovers_the_position_based_curve(eta):
    rng = np.random.default_rng(1)
    X, pos, clicks, sessions = _deterministic_log(rng, eta)
    est = propensity_by_regression_em(X, pos, clicks, sessions, iterations=30)
    true = (1.0 / np.arange(1, 11)) ** eta
    errors = compare_to_truth(est, true)
    # the click-through-rate ratio of the same log (what ignoring relevance gives) is far off
    # because the logging ranker puts relevant documents on top
    ctr = propensity_by_randomisation(pos, clicks, sessions)
    assert errors["mae"] < 0.05, (est, errors)
    assert errors["mae"] < 0.5 * compare_to_truth(ctr, true)["mae"], (est, ctr)


def test_compare_to_truth_reports_per_rank_and_summary_errors():
    out = compare_to_truth([1.0, 0.6, 0.2], [1.0, 0.5, 1 / 3])
    assert out["abs@2"] == pytest.approx(0.1)
    assert out["mae"] == pytest.approx((0.1 + 1 / 3 - 0.2) / 2)
    assert out["max_abs"] == pytest.approx(1 / 3 - 0.2)

"""RankBoost (ltr_bench_baselines.rankboost) against brute force over enumerated pairs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ltr_bench.ranker import query_boundaries
from ltr_bench.testing import check_ranker, make_check_data
from ltr_bench_baselines.rankboost import (
    RankBoostRanker,
    _LabelLayout,
    candidate_thresholds,
    pair_potentials,
)


def _pairs(y, qid):
    return [
        (i, j) for i in range(y.size) for j in range(y.size) if qid[i] == qid[j] and y[i] > y[j]
    ]


def _pair_loss(H, pairs):
    """sum over crucial pairs of D_1 exp(H_lo - H_hi), D_1 uniform: the loss by brute force."""
    return float(np.mean([np.exp(H[j] - H[i]) for i, j in pairs]))


def test_rankboost_follows_the_ranker_contract():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check_ranker(RankBoostRanker(rounds=15))
        check_ranker(RankBoostRanker(rounds=15, use_validation=False, n_thresholds=3))


def test_candidate_thresholds_are_ranklibs_grid_from_max_down_plus_one_below_the_minimum():
    X = np.array([[0.0, 5.0], [1.0, 5.0], [4.0, 5.0]])
    grids = candidate_thresholds(X, 4)
    # feature 0: max 4, step 1 -> 4, 3, 2, 1 and min - 1e8; feature 1 constant -> 5, -1e8 + 5
    assert np.allclose(grids[0], [0.0 - 1e8, 1.0, 2.0, 3.0, 4.0])
    assert np.allclose(grids[1], [5.0 - 1e8, 5.0])


def test_factorised_potentials_equal_the_potentials_of_enumerated_pair_weights():
    X, y, qid = make_check_data(n_queries=6)
    H = np.random.default_rng(0).normal(scale=2.0, size=y.size)
    pairs = _pairs(y, qid)
    weights = np.array([np.exp(H[j] - H[i]) for i, j in pairs])
    D = weights / weights.sum()
    expected = np.zeros(y.size)
    for (i, j), d in zip(pairs, D):
        expected[i] += d  # i is ranked above j
        expected[j] -= d
    pi, W = pair_potentials(H, _LabelLayout(y, query_boundaries(qid)))
    np.testing.assert_allclose(pi, expected, atol=1e-12)
    assert W == pytest.approx(weights.sum(), rel=1e-12)


def test_training_pair_loss_never_increases_and_matches_brute_force():
    X, y, qid = make_check_data(n_queries=15, n_features=4)
    model = RankBoostRanker(rounds=40, use_validation=False).fit(X, y, qid=qid)
    loss = model.loss_history_
    assert loss[0] == 1.0 and loss.size == model.rounds_run_ + 1
    assert np.all(np.diff(loss) <= 1e-12), loss
    assert loss[-1] < 0.5 * loss[0]
    pairs = _pairs(y, qid)
    H = model.predict(X)
    assert loss[-1] == pytest.approx(_pair_loss(H, pairs) / _pair_loss(np.zeros(y.size), pairs))


def test_first_weak_ranker_maximises_abs_r_that_is_minimises_the_z_bound_by_brute_force():
    X, y, qid = make_check_data(n_queries=10, n_features=4)
    model = RankBoostRanker(rounds=1, use_validation=False, n_thresholds=7).fit(X, y, qid=qid)
    pairs = _pairs(y, qid)
    best_bound, best = np.inf, None
    for f, grid in enumerate(candidate_thresholds(X, 7)):
        for theta in grid:
            h = (X[:, f] > theta).astype(float)
            r = np.mean([h[i] - h[j] for i, j in pairs])  # D_1 uniform over the pairs
            bound = np.sqrt(1.0 - r * r)  # Z <= sqrt(1 - r^2) at alpha = ln((1+r)/(1-r))/2
            if bound < best_bound - 1e-15:
                best_bound, best = bound, (f, theta, r)
    f, theta, r = best
    assert model.features_[0] == f and model.thresholds_[0] == theta
    assert model.alphas_[0] == pytest.approx(0.5 * np.log((1 + r) / (1 - r)))
    # the realised Z of that round (brute force) is within the bound
    h = (X[:, f] > theta).astype(float)
    Z = np.mean([np.exp(model.alphas_[0] * (h[j] - h[i])) for i, j in pairs])
    assert Z <= best_bound + 1e-12 and Z == pytest.approx(model.loss_history_[1])


def test_validation_keeps_the_best_prefix_of_rounds():
    X, y, qid = make_check_data(n_queries=15)
    Xv, yv, qv = make_check_data(seed=5, n_queries=8)
    model = RankBoostRanker(rounds=30).fit(X, y, qid=qid, eval_set=(Xv, yv, qv))
    hist = model.validation_history_
    assert hist.size == model.rounds_run_
    assert model.best_round_ == int(np.argmax(hist)) + 1 == model.alphas_.size


def test_queries_without_label_differences_are_skipped_and_counted():
    X, y, qid = make_check_data(n_queries=6)
    y = y.copy()
    y[qid == qid[-1]] = 0
    with pytest.warns(UserWarning, match="1 of 6"):
        model = RankBoostRanker(rounds=5).fit(X, y, qid=qid)
    assert model.fitted_info()["n_queries_skipped"] == 1
    with pytest.warns(UserWarning, match="6 of 6"):
        empty = RankBoostRanker(rounds=5).fit(X, np.ones_like(y), qid=qid)
    assert empty.rounds_run_ == 0 and np.all(empty.predict(X) == 0.0)


@pytest.mark.parametrize(
    "params, word",
    [({"rounds": 0}, "rounds"), ({"n_thresholds": 0}, "n_thresholds"), ({"metric": "auc"}, "map")],
)
def test_bad_parameters_are_refused_before_any_data(params, word):
    with pytest.raises(ValueError, match=word):
        RankBoostRanker(**params).validate_params()

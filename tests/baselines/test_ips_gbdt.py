"""``unbiased="ips"`` of the tree learners: the inverse-propensity-weighted softmax
cross-entropy as a custom objective of LightGBM and XGBoost."""

from __future__ import annotations

import numpy as np
import pytest

from ltr_bench.ranker import RankerInputError
from ltr_bench_baselines.ips_gbdt import SoftmaxIPS, ips_weights
from ltr_bench_baselines.lightgbm import LightGBMRanker
from ltr_bench_baselines.xgboost import XGBoostLambdaMARTRanker

IPS = [LightGBMRanker, XGBoostLambdaMARTRanker]


def test_gradient_and_hessian_are_the_derivatives_of_the_loss():
    rng = np.random.default_rng(0)
    qid = np.repeat([0, 1, 2], [4, 1, 5])
    w = rng.uniform(0, 3, 10) * (rng.random(10) < 0.6)
    obj = SoftmaxIPS(qid, w)
    s = rng.normal(size=10)
    g, h = obj(s)
    eps = 1e-6
    for i in range(10):
        e = np.zeros(10)
        e[i] = eps
        assert g[i] == pytest.approx((obj.loss(s + e) - obj.loss(s - e)) / (2 * eps), abs=1e-6)
        g_plus, g_minus = obj(s + e)[0][i], obj(s - e)[0][i]
        assert h[i] == pytest.approx((g_plus - g_minus) / (2 * eps), abs=1e-6)


def _exact_expected_log(seed: int = 0):
    """A log whose click counts are exactly their expectation under position-based
    examination: ``c = S alpha / k`` at rank k (``S = 25200`` makes every count an
    integer), beside the counts without position bias, ``S alpha``."""
    rng = np.random.default_rng(seed)
    n_q, k = 40, 10
    X = rng.normal(size=(n_q * k, 4))
    alpha = np.choose((X[:, 0] > 0.3).astype(int) + (X[:, 1] > 0.8), [0.1, 0.5, 1.0])
    position = np.tile(np.arange(1, k + 1), n_q)
    S = 25200
    counts = (S * alpha / position).round().astype(np.int64)
    assert np.all(counts * position == (S * alpha).round())  # exact
    return X, np.repeat(np.arange(n_q), k), position, counts, (S * alpha).round().astype(np.int64)


@pytest.mark.parametrize("cls", IPS)
def test_ips_on_expected_biased_counts_fits_the_model_of_the_unbiased_counts(cls):
    """With ``E[c] = S p alpha``, weights ``c / p`` are ``S alpha``: the position factor
    cancels through the library, and IPS fits the trees of the unbiased log exactly, where
    the same objective with unit propensities does not."""
    X, qid, position, biased, unbiased = _exact_expected_log()
    settings = dict(gain="linear", unbiased="ips", n_estimators=5, n_jobs=1, random_state=0)
    p = 1.0 / position
    ips = cls(**settings).fit(X, biased, qid=qid, position=position, propensity=p)
    truth = cls(**settings).fit(X, unbiased, qid=qid, position=position, propensity=np.ones(p.size))
    naive = cls(**settings).fit(X, biased, qid=qid, position=position, propensity=np.ones(p.size))
    assert np.allclose(ips.predict(X), truth.predict(X), rtol=1e-6, atol=1e-9)
    assert not np.allclose(naive.predict(X), truth.predict(X), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("cls", IPS)
def test_ips_refuses_a_shown_row_without_a_propensity(cls):
    X, qid, position, biased, _ = _exact_expected_log()
    p = 1.0 / position
    p[3] = np.nan
    with pytest.raises(RankerInputError, match="positive propensity for every shown row"):
        cls(gain="linear", unbiased="ips", n_estimators=2, n_jobs=1).fit(
            X, biased, qid=qid, position=position, propensity=p
        )


def test_weights_are_counts_over_propensities_and_zero_where_not_shown():
    w = ips_weights("x", np.array([3, 0, 2]), np.array([2, 1, 0]), np.array([0.5, 1.0, np.nan]))
    assert w.tolist() == [6.0, 0.0, 0.0]


@pytest.mark.parametrize("cls", IPS)
def test_tags_declare_true_or_estimated_propensities(cls):
    true = cls(unbiased="ips").ranker_tags()
    assert true.requires_position and true.requires_propensity
    assert true.propensity_estimate is None
    em = cls(unbiased="ips", propensity="em").ranker_tags()
    assert em.requires_position and not em.requires_propensity
    assert em.propensity_estimate == "em"
    assert cls(unbiased=True).ranker_tags().propensity_estimate is None


@pytest.mark.parametrize("cls", IPS)
def test_a_propensity_source_without_ips_is_refused(cls):
    with pytest.raises(ValueError, match="nothing uses them"):
        cls(unbiased=True, propensity="em").validate_params()


@pytest.mark.parametrize("cls", IPS)
def test_an_ips_model_saved_and_loaded_scores_the_same(cls, tmp_path):
    X, qid, position, biased, _ = _exact_expected_log()
    ranker = cls(gain="linear", unbiased="ips", n_estimators=5, n_jobs=1).fit(
        X, biased, qid=qid, position=position, propensity=1.0 / position
    )
    ranker.save_native(tmp_path)
    again = cls.load_native(tmp_path, {"params": ranker.get_params(deep=False)})
    assert np.array_equal(again.predict(X), ranker.predict(X))
    assert ranker.fitted_info()["n_trees"] >= 1


@pytest.mark.parametrize("cls", IPS)
def test_naive_is_the_ips_objective_with_every_propensity_one_and_needs_no_positions(cls):
    X, qid, position, biased, _ = _exact_expected_log()
    settings = dict(gain="linear", n_estimators=5, n_jobs=1, random_state=0)
    naive = cls(unbiased="naive", **settings)
    assert not naive.ranker_tags().accepts_position
    naive.fit(X, biased, qid=qid)
    ips = cls(unbiased="ips", **settings).fit(
        X, biased, qid=qid, position=position, propensity=np.ones(len(position))
    )
    assert np.array_equal(naive.predict(X), ips.predict(X))

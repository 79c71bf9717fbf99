"""The unbiased (position-debiased) modes of ``lightgbm`` and ``xgboost-lambdamart``."""

from __future__ import annotations

import numpy as np
import pytest

from ltr_bench.evaluation.metrics import evaluate
from ltr_bench.ranker import RankerInputError
from ltr_bench_baselines.lightgbm import LightGBMRanker
from ltr_bench_baselines.unbiased_gbdt import displayed_order
from ltr_bench_baselines.xgboost import XGBoostGBRTRanker, XGBoostLambdaMARTRanker

UNBIASED = [LightGBMRanker, XGBoostLambdaMARTRanker]


def _position_biased_clicks(rng, n_queries, L=10, eta=2.0, sessions=10):
    """Lists of L documents shown in the order of a logging score that mostly follows an
    irrelevant feature (column 2); clicks ~ Binomial(sessions, (1/rank)^eta * P(click|y))."""
    X = rng.normal(size=(n_queries * L, 5))
    rel = (X[:, 0] + 0.5 * X[:, 1] > 0.5).astype(int) + (X[:, 0] > 1.5)
    qid = np.repeat(np.arange(n_queries), L)
    logging_score = X[:, 2] + 0.3 * X[:, 0]
    pos = np.empty(len(qid), dtype=np.int64)
    for q in range(n_queries):
        s = slice(q * L, (q + 1) * L)
        pos[s] = np.argsort(np.argsort(-logging_score[s])) + 1
    p_click = (1.0 / pos) ** eta * (0.1 + 0.9 * (2.0**rel - 1) / 3)
    return X, rel, qid, pos, rng.binomial(sessions, p_click)


@pytest.mark.parametrize("cls", UNBIASED)
def test_tag_accepts_position_exactly_when_unbiased(cls):
    assert cls(unbiased=True).ranker_tags().accepts_position is True
    assert cls(unbiased=True).ranker_tags().requires_position is True
    assert cls().ranker_tags().accepts_position is False
    assert XGBoostGBRTRanker().ranker_tags().accepts_position is False
    assert "unbiased" not in XGBoostGBRTRanker().get_params()


@pytest.mark.parametrize("cls", UNBIASED)
def test_unbiased_must_be_a_boolean_before_any_data(cls):
    with pytest.raises(ValueError, match="unbiased"):
        cls(unbiased="yes").validate_params()


@pytest.mark.parametrize("cls", UNBIASED)
def test_unbiased_without_positions_is_a_clear_error(cls):
    X, rel, qid, _, clicks = _position_biased_clicks(np.random.default_rng(0), 5)
    with pytest.raises(RankerInputError, match="no positions.*clicks=pbm"):
        cls(unbiased=True, n_estimators=2, n_jobs=1).fit(X, clicks, qid=qid)


def test_lightgbm_unbiased_refuses_xendcg_before_any_data():
    with pytest.raises(ValueError, match="lambdarank"):
        LightGBMRanker(unbiased=True, objective="rank_xendcg").validate_params()


def test_displayed_order_sorts_each_query_by_position_unshown_last():
    qid = np.array([1, 1, 1, 2, 2, 2])
    position = np.array([2, 0, 1, 1, 3, 2])
    assert displayed_order(qid, position).tolist() == [2, 0, 1, 3, 5, 4]


@pytest.mark.parametrize("cls", UNBIASED)
def test_unbiased_beats_naive_on_true_labels_under_strong_position_bias(cls):
    # the logging ranker shows an irrelevant feature first, so naive clicks reward it;
    # margins over five seeds were 0.06-0.08 (lightgbm) and 0.03-0.04 (xgboost)
    rng = np.random.default_rng(0)
    X, _, qid, pos, clicks = _position_biased_clicks(rng, 300)
    Xt, rel_t, qid_t, _, _ = _position_biased_clicks(rng, 200)
    ndcg = {}
    for unbiased in (False, True):
        model = cls(unbiased=unbiased, n_estimators=50, n_jobs=1)
        model.fit(X, clicks, qid=qid, **({"position": pos} if unbiased else {}))
        ndcg[unbiased] = evaluate(rel_t, model.predict(Xt), qid_t, ("ndcg@10",))["ndcg@10"]
    assert ndcg[True] > ndcg[False] + 0.01, ndcg


@pytest.mark.parametrize("cls", UNBIASED)
def test_unbiased_configuration_passes_the_position_check_of_the_conformance_suite(cls):
    from ltr_bench.testing import ranker_checks

    checks = dict(ranker_checks(cls(unbiased=True, n_estimators=10, n_jobs=1)))
    checks["position_accepted"]()


@pytest.mark.parametrize(
    "ranker",
    [
        LightGBMRanker(n_estimators=2, n_jobs=1),
        LightGBMRanker(n_estimators=2, n_jobs=1, extra_params={"label_gain": list(range(41))}),
        XGBoostLambdaMARTRanker(n_estimators=2, n_jobs=1),
    ],
    ids=["lightgbm", "lightgbm-label_gain-41", "xgboost-lambdamart"],
)
def test_declared_max_label_is_the_largest_label_the_library_accepts(ranker):
    """The plan check refuses click counts above ``RankerTags.max_label`` before any work,
    so the tag must be the library's own limit: a fit with that label works, one above fails."""
    from sklearn.base import clone

    top = ranker.ranker_tags().max_label
    assert top is not None
    rng = np.random.default_rng(0)
    X, qid = rng.random((40, 3)), np.repeat(np.arange(4), 10)
    y = rng.integers(0, 3, 40)
    y[0] = top
    clone(ranker).fit(X, y, qid=qid)
    y[0] = top + 1
    with pytest.raises(Exception, match="[Ll]abel|[Rr]elevance"):
        clone(ranker).fit(X, y, qid=qid)


@pytest.mark.parametrize("cls", UNBIASED)
def test_linear_gain_declares_no_label_limit_and_fits_labels_far_above_the_exponential_cap(cls):
    ranker = cls(gain="linear", n_estimators=3, n_jobs=1)
    assert ranker.ranker_tags().max_label is None
    rng = np.random.default_rng(0)
    X, qid = rng.random((40, 3)), np.repeat(np.arange(4), 10)
    y = rng.integers(0, 3, 40)
    y[0] = 5000
    ranker.fit(X, y, qid=qid, eval_set=(X, y, qid))
    assert np.isfinite(ranker.predict(X)).all()


def test_xgboost_gain_is_a_parameter_not_an_extra_param():
    with pytest.raises(ValueError, match="ndcg_exp_gain.*'gain'"):
        XGBoostLambdaMARTRanker(extra_params={"ndcg_exp_gain": False}).validate_params()

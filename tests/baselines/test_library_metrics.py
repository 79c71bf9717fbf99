"""Where our metrics equal LightGBM's, XGBoost's and CatBoost's own evaluation and where they
do not.

The libraries evaluate given scores here without learning anything: the scores go in as
``init_score`` (LightGBM, one round whose tree cannot split because ``min_data_in_leaf``
exceeds the rows, so every document gets the same offset) or ``base_margin`` (XGBoost, one
round with ``eta=0``), and the metric of round 1 is read from ``evals_result``; CatBoost
evaluates scores directly (``catboost.utils.eval_metric``, its metric code without a model).

Documented differences (README, "Metric conventions"; ``ltr_bench.evaluation.metrics``):
* ties: LightGBM and XGBoost rank tied documents in file order, CatBoost worst-first (the
  lowest label first), we take the expected value over all orderings of the tied documents;
* XGBoost's ``map`` without a cutoff is ``map@32`` (XGBoost >= 2), whose AP divides by
  ``min(32, R)``; ours uses the whole list and divides by ``R``.
"""

from __future__ import annotations

import numpy as np
import pytest

from ltr_bench.evaluation.metrics import evaluate


def xgboost_metrics(y, scores, sizes, metrics):
    import xgboost as xgb

    data = xgb.DMatrix(np.zeros((len(y), 1)), label=y, base_margin=scores)
    data.set_group(sizes)
    out = {}
    xgb.train(
        {"objective": "rank:ndcg", "eta": 0.0, "eval_metric": list(metrics), "verbosity": 0},
        data,
        num_boost_round=1,
        evals=[(data, "v")],
        evals_result=out,
        verbose_eval=False,
    )
    return {m: float(v[-1]) for m, v in out["v"].items()}


def lightgbm_ndcg(y, scores, sizes, ks):
    import lightgbm as lgb

    data = lgb.Dataset(
        np.zeros((len(y), 1)), label=y, group=sizes, init_score=scores, params={"verbosity": -1}
    )
    out = {}
    lgb.train(
        {
            "objective": "lambdarank",
            "metric": "ndcg",
            "eval_at": list(ks),
            "min_data_in_leaf": len(y) + 1,
            "verbosity": -1,
        },
        data,
        num_boost_round=1,
        valid_sets=[data],
        valid_names=["v"],
        callbacks=[lgb.record_evaluation(out)],
    )
    return {m: float(v[-1]) for m, v in out["v"].items()}


def catboost_ndcg(y, scores, qid, ks):
    """CatBoost's ``NDCG:top=k;type=Exp`` (gain ``2^rel - 1``, its default ``type=Base``
    takes the label itself as the gain) of given scores."""
    from catboost.utils import eval_metric

    group = np.asarray(qid, dtype=np.int64)
    return {
        f"ndcg@{k}": float(eval_metric(y, scores, f"NDCG:top={k};type=Exp", group_id=group)[0])
        for k in ks
    }


def worst_first(y, scores):
    """The same scores with ties broken against the ranking: the lower label ranks higher."""
    order = np.lexsort((y, -scores))  # by score descending, then label ascending
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(len(scores))
    return -ranks


def graded_queries(seed, sizes):
    rng = np.random.default_rng(seed)
    qid = np.repeat(np.arange(len(sizes)), sizes)
    y = rng.integers(0, 4, size=int(np.sum(sizes)))
    return y, qid


def file_order(scores):
    """The same scores with ties broken by position (earlier row ranks higher)."""
    order = np.lexsort((np.arange(len(scores)), -scores))
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(len(scores))
    return -ranks


SIZES = np.array([10, 25, 7, 40, 15])


def test_our_ndcg_equals_both_libraries_on_scores_without_ties():
    # precondition of the tie test below: the evaluation route reproduces our values
    y, qid = graded_queries(0, SIZES)
    scores = np.random.default_rng(1).normal(size=len(y))
    ours = evaluate(y, scores, qid, ("ndcg@5", "ndcg@10"))
    assert lightgbm_ndcg(y, scores, SIZES, (5, 10)) == pytest.approx(ours, abs=1e-6)
    assert xgboost_metrics(y, scores, SIZES, ("ndcg@5", "ndcg@10")) == pytest.approx(ours, abs=1e-6)
    assert catboost_ndcg(y, scores, qid, (5, 10)) == pytest.approx(ours, abs=1e-6)


def test_on_tied_scores_both_libraries_rank_in_file_order_and_we_average_over_orderings():
    y, qid = graded_queries(2, SIZES)
    # coarse scores: many ties inside every query
    scores = np.random.default_rng(3).integers(0, 3, size=len(y)).astype(float)
    ours = evaluate(y, scores, qid, ("ndcg@5", "ndcg@10"))
    in_file_order = evaluate(y, file_order(scores), qid, ("ndcg@5", "ndcg@10"))
    lgb_values = lightgbm_ndcg(y, scores, SIZES, (5, 10))
    xgb_values = xgboost_metrics(y, scores, SIZES, ("ndcg@5", "ndcg@10"))
    assert lgb_values == pytest.approx(in_file_order, abs=1e-6)
    assert xgb_values == pytest.approx(in_file_order, abs=1e-6)
    assert abs(ours["ndcg@10"] - lgb_values["ndcg@10"]) > 1e-3

    # the extreme case: a constant scorer with relevant documents first in the file gets
    # NDCG 1 from the libraries; ours is the value of a random ranking
    y1 = np.array([3, 2, 1, 0, 0, 0, 0, 0, 0, 0])
    constant = np.zeros(10)
    assert lightgbm_ndcg(y1, constant, [10], (10,))["ndcg@10"] == pytest.approx(1.0)
    assert xgboost_metrics(y1, constant, [10], ("ndcg@10",))["ndcg@10"] == pytest.approx(1.0)
    random_value = evaluate(y1, constant, np.zeros(10), "ndcg@10")["ndcg@10"]
    assert 0.3 < random_value < 0.8


def test_xgboost_map_without_cutoff_is_map_at_32_and_differs_from_ours_on_long_queries():
    rng = np.random.default_rng(4)
    sizes = [100, 20]  # a query longer than 32 documents and a short one
    qid = np.repeat([0, 1], sizes)
    y = (rng.random(120) < 0.5).astype(np.int64)  # XGBoost's map wants binary labels
    scores = rng.normal(size=120)
    long, short = qid == 0, qid == 1
    R = int(y[long].sum())
    assert R > 32  # so that min(32, R) differs from R as well

    theirs_long = xgboost_metrics(y[long], scores[long], [100], ("map", "map@32", "map@100"))
    ours_long = evaluate(y[long], scores[long], qid[long], ("map", "map@32"))
    assert theirs_long["map"] == pytest.approx(theirs_long["map@32"], abs=1e-9)
    # XGBoost's AP@32 divides by min(32, R); ours by R
    assert theirs_long["map"] == pytest.approx(ours_long["map@32"] * R / 32, abs=1e-6)
    assert theirs_long["map@100"] == pytest.approx(ours_long["map"], abs=1e-6)
    assert abs(theirs_long["map"] - ours_long["map"]) > 0.05

    theirs_short = xgboost_metrics(y[short], scores[short], [20], ("map",))
    assert theirs_short["map"] == pytest.approx(
        evaluate(y[short], scores[short], qid[short], "map")["map"], abs=1e-6
    )


def test_catboost_scores_a_query_without_relevant_documents_1_as_our_default():
    y, qid = graded_queries(5, SIZES)
    y = np.where(qid == 1, 0, y)  # the 25-document query has no relevant document
    scores = np.random.default_rng(6).normal(size=len(y))
    theirs = catboost_ndcg(y, scores, qid, (10,))["ndcg@10"]
    assert theirs == pytest.approx(evaluate(y, scores, qid, "ndcg@10")["ndcg@10"], abs=1e-6)
    empty0 = evaluate(y, scores, qid, "ndcg@10", empty_query=0.0)["ndcg@10"]
    assert abs(theirs - empty0) == pytest.approx(1 / len(SIZES), abs=1e-6)


def test_on_tied_scores_catboost_ranks_worst_first_and_we_average_over_orderings():
    y, qid = graded_queries(2, SIZES)
    scores = np.random.default_rng(3).integers(0, 3, size=len(y)).astype(float)
    ours = evaluate(y, scores, qid, ("ndcg@5", "ndcg@10"))
    worst = evaluate(y, worst_first(y, scores), qid, ("ndcg@5", "ndcg@10"))
    theirs = catboost_ndcg(y, scores, qid, (5, 10))
    assert theirs == pytest.approx(worst, abs=1e-6)
    assert ours["ndcg@10"] - theirs["ndcg@10"] > 1e-3  # the average beats the worst case
    # the file order does not matter to CatBoost: reversing each query's rows changes nothing
    y1 = np.array([3, 2, 1, 0, 0, 0, 0, 0, 0, 0])
    constant, group = np.zeros(10), np.zeros(10, dtype=np.int64)
    a = catboost_ndcg(y1, constant, group, (10,))["ndcg@10"]
    b = catboost_ndcg(y1[::-1].copy(), constant, group, (10,))["ndcg@10"]
    assert a == pytest.approx(b, abs=1e-12)
    assert a == pytest.approx(
        evaluate(y1, worst_first(y1, constant), group, "ndcg@10")["ndcg@10"], abs=1e-9
    )

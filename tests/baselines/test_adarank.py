"""AdaRank (ltr_bench_baselines.adarank) against brute force with an independent metric."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.metrics import average_precision_score, ndcg_score

from ltr_bench.cli import main
from ltr_bench.testing import check_ranker, make_check_data
from ltr_bench_baselines.adarank import AdaRankRanker


def _per_query(metric, y, scores, qid):
    """Per query (in order of appearance), by scikit-learn: NDCG@k with gain 2^rel - 1 (as
    relevance for ndcg_score, which averages ties) or average precision (label >= 1)."""
    out = []
    for q in dict.fromkeys(qid.tolist()):
        m = qid == q
        if metric == "map":
            out.append(average_precision_score(y[m] >= 1, scores[m]))
        else:
            k = int(metric.split("@")[1])
            out.append(ndcg_score([np.exp2(y[m]) - 1.0], [scores[m]], k=k))
    return np.array(out)


def _varied(X, y, qid):
    """Only the queries with label differences (the ones AdaRank trains on)."""
    keep = np.zeros(y.size, dtype=bool)
    for q in np.unique(qid):
        m = qid == q
        keep |= m & (y[m].max() > y[m].min())
    return X[keep], y[keep], qid[keep]


def _data(n_queries=12, seed=20240531):
    return _varied(*make_check_data(seed, n_queries=n_queries, n_features=6))


def test_adarank_follows_the_ranker_contract():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check_ranker(AdaRankRanker(rounds=10))
        check_ranker(AdaRankRanker(rounds=10, metric="map", enqueue=False, use_validation=False))


@pytest.mark.parametrize("metric", ["ndcg@10", "ndcg@3", "map"])
def test_first_round_picks_the_feature_with_the_best_weighted_metric_by_brute_force(metric):
    X, y, qid = _data()
    E = np.column_stack([_per_query(metric, y, X[:, f], qid) for f in range(X.shape[1])])
    P = np.full(E.shape[0], 1.0 / E.shape[0])
    k = int(np.argmax(P @ E))
    alpha = 0.5 * np.log((P @ (1 + E[:, k])) / (P @ (1 - E[:, k])))
    model = AdaRankRanker(metric=metric, rounds=1, use_validation=False).fit(X, y, qid=qid)
    expected = np.zeros(X.shape[1])
    expected[k] = alpha
    np.testing.assert_allclose(model.coef_, expected, rtol=1e-10)


def test_second_round_uses_the_papers_weights_exp_of_minus_the_metric_of_f1():
    X, y, qid = _data()
    metric = "ndcg@10"
    E = np.column_stack([_per_query(metric, y, X[:, f], qid) for f in range(X.shape[1])])
    n_q = E.shape[0]
    w = np.zeros(X.shape[1])
    P = np.full(n_q, 1.0 / n_q)
    for _ in range(2):  # the paper's loop, written out with the reference metric
        k = int(np.argmax(P @ E))
        w[k] += 0.5 * np.log((P @ (1 + E[:, k])) / (P @ (1 - E[:, k])))
        e = np.exp(-_per_query(metric, y, X @ w, qid))
        P = e / e.sum()
    model = AdaRankRanker(
        metric=metric, rounds=2, tolerance=1.0, enqueue=False, use_validation=False
    ).fit(X, y, qid=qid)
    np.testing.assert_allclose(model.coef_, w, rtol=1e-10)


def test_tolerance_rule_drops_the_round_that_lowers_the_training_metric_and_stops():
    X, y, qid = _data(20)
    model = AdaRankRanker(rounds=200, enqueue=False, use_validation=False).fit(X, y, qid=qid)
    info = model.fitted_info()
    if info["stop_reason"] == "training metric dropped by tolerance":
        # the kept model is the last one before the drop: one more round would lose >= 0.002
        assert model.n_weak_rankers_ == model.rounds_run_ - 1
    train = _per_query("ndcg@10", y, model.predict(X), qid).mean()
    assert train == pytest.approx(info["train_metric"], abs=1e-12)


def test_enqueue_rolls_back_a_feature_chosen_twice_in_a_row_and_queues_it():
    X, y, qid = _data(20)
    model = AdaRankRanker(rounds=40, tolerance=1.0, use_validation=False).fit(X, y, qid=qid)
    trace = model.trace_
    assert any(event == "rollback" for _, event in trace), trace
    first_requeue = next((i for i, (_, e) in enumerate(trace) if e == "requeued"), len(trace))
    kept = []  # the model's features during the enqueue phase, rollbacks undone
    for feature, event in trace[:first_requeue]:
        if event == "added":
            assert not kept or kept[-1] != feature  # never the same feature twice in a row
            kept.append(feature)
        elif event == "rollback":
            assert kept[-1] == feature  # the previous round used it: that round is undone
            kept.pop()
    rounds_run = sum(e != "requeued" for _, e in trace)
    assert rounds_run == model.rounds_run_ and model.n_weak_rankers_ == sum(
        1 if e == "added" else -1 if e == "rollback" else 0 for _, e in trace
    )


def test_validation_keeps_the_model_with_the_best_validation_metric():
    X, y, qid = _data(20)
    Xv, yv, qv = _data(10, seed=9)
    model = AdaRankRanker(rounds=20, enqueue=False, tolerance=1.0).fit(
        X, y, qid=qid, eval_set=(Xv, yv, qv)
    )
    best = model.fitted_info()["validation_metric"]
    assert _per_query("ndcg@10", yv, model.predict(Xv), qv).mean() == pytest.approx(best)
    for rounds in range(1, model.rounds_run_ + 1):  # every prefix is at most as good
        prefix = AdaRankRanker(rounds=rounds, enqueue=False, tolerance=1.0, use_validation=False)
        prefix.fit(X, y, qid=qid)
        assert _per_query("ndcg@10", yv, prefix.predict(Xv), qv).mean() <= best + 1e-12


def test_a_query_with_all_labels_equal_is_skipped_and_counted():
    X, y, qid = _data()
    n_q = np.unique(qid).size
    y = y.copy()
    y[qid == qid[0]] = 1
    with pytest.warns(UserWarning, match=f"1 of {n_q}"):
        model = AdaRankRanker(rounds=3).fit(X, y, qid=qid)
    assert model.fitted_info()["n_queries_skipped"] == 1
    with pytest.warns(UserWarning, match=f"{n_q} of {n_q}"):
        model = AdaRankRanker(rounds=3).fit(X, np.zeros_like(y), qid=qid)
    assert np.all(model.predict(X) == 0.0)


@pytest.mark.parametrize(
    "params, word",
    [
        ({"metric": "err@10"}, "metric must be one of ndcg@k, map"),
        ({"metric": "ndcg@0"}, "metric must be one of"),
        ({"rounds": 0}, "rounds"),
        ({"tolerance": -1}, "tolerance"),
        ({"max_consecutive": 0}, "max_consecutive"),
        ({"enqueue": "yes"}, "enqueue"),
    ],
)
def test_bad_parameters_are_refused_before_any_data(params, word):
    with pytest.raises(ValueError, match=word):
        AdaRankRanker(**params).validate_params()


@pytest.mark.parametrize(
    "param, message",
    [
        ("adarank.metric=auc", "metric must be one of ndcg@k, map"),
        ("adarank.rounds=0", "rounds must be an integer >= 1"),
    ],
)
def test_cli_refuses_bad_adarank_parameters_with_exit_2(tmp_path, monkeypatch, param, message):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        main,
        ["run", "--no-mlflow", "--ranker", "adarank", "--dataset", "synthetic", "--param", param],
    )
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output

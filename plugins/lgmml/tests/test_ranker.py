"""LGMMLRanker: the ranker contract, determinism, degenerate queries, parameters."""

import numpy as np
import pytest

from ltr_bench.testing import parametrize_with_checks
from ltr_bench_lgmml import LGMMLRanker


def _data(seed=0, n_queries=12, n_docs=25, d=6):
    rng = np.random.default_rng(seed)
    X, y, qid = [], [], []
    for q in range(n_queries):
        lab = rng.integers(0, 3, size=n_docs)
        x = rng.normal(size=(n_docs, d))
        x[:, 0] += 1.5 * lab  # one informative feature
        X.append(x), y.append(lab), qid.append(np.full(n_docs, q))
    return np.vstack(X), np.concatenate(y), np.concatenate(qid)


@parametrize_with_checks([LGMMLRanker(n_metrics=8, random_state=0)])
def test_lgmml_follows_the_ranker_contract(ranker, check):
    check(ranker)


def test_same_random_state_gives_identical_scores_and_different_state_differs():
    X, y, qid = _data()
    a = LGMMLRanker(n_metrics=10, random_state=3).fit(X, y, qid=qid).predict(X)
    b = LGMMLRanker(n_metrics=10, random_state=3).fit(X, y, qid=qid).predict(X)
    c = LGMMLRanker(n_metrics=10, random_state=4).fit(X, y, qid=qid).predict(X)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("strategy", ["uniform", "mean", "global"])
def test_degenerate_queries_do_not_crash(strategy):
    X, y, qid = _data(n_queries=4)
    y = y.copy()
    y[qid == 1] = 2  # no label-0 document
    y[qid == 2] = 1  # all labels equal
    X = np.vstack([X, np.ones((1, X.shape[1]))])  # a query with one document
    y, qid = np.r_[y, 0], np.r_[qid, 99]
    r = LGMMLRanker(n_metrics=5, weight_strategy=strategy, random_state=0)
    s = r.fit(X, y, qid=qid).predict(X, qid=qid)
    assert s.shape == (X.shape[0],) and s.dtype == np.float64 and np.all(np.isfinite(s))
    flat = LGMMLRanker(n_metrics=3, weight_strategy=strategy, random_state=0)
    s = flat.fit(X, np.zeros_like(y), qid=qid).predict(X)  # every label 0 everywhere
    assert np.all(np.isfinite(s))


@pytest.mark.parametrize("strategy", ["uniform", "mean", "global"])
@pytest.mark.parametrize("scaling", ["l2", "zscore"])
def test_closer_first_form_learns_the_informative_feature_better_than_chance(strategy, scaling):
    # Relevant documents cluster near the anchors here, so a closer-first score must beat
    # chance. The "positive" form with l2 scaling (best on OHSUMED validation) ranks far
    # documents first and does not (see the ranker docstring).
    from ltr_bench.evaluation.metrics import evaluate

    X, y, qid = _data(seed=1)
    Xt, yt, qt = _data(seed=2)
    r = LGMMLRanker(
        n_metrics=20, weight_strategy=strategy, score_form="rising", scaling=scaling, random_state=0
    ).fit(X, y, qid=qid)
    got = evaluate(yt, r.predict(Xt), qt, "ndcg@10")["ndcg@10"]
    chance = evaluate(yt, np.zeros(len(yt)), qt, "ndcg@10")["ndcg@10"]
    assert got > chance + 0.1


def test_auto_score_form_is_positive_for_letor_rows_and_rising_for_query_by_example():
    X, y, qid = _data()
    assert LGMMLRanker().score_form == "eq13"  # the paper's Eq. 13, chosen on validation
    r = LGMMLRanker(n_metrics=4, score_form="auto", random_state=0).fit(X, y, qid=qid)
    assert r.score_form_ == "positive"
    assert r.metric_bank_.sign == 1.0
    Xq = np.hstack([X, X + 0.1])
    r = LGMMLRanker(n_metrics=4, score_form="auto", query_dim=X.shape[1], random_state=0).fit(
        Xq, y, qid=qid
    )
    assert r.score_form_ == "rising" and r.metric_bank_.sign == -1.0
    r = LGMMLRanker(n_metrics=4, score_form="eq13", random_state=0).fit(X, y, qid=qid)
    assert r.score_form_ == "eq13"


def test_positive_form_with_l2_scaling_ranks_by_plus_weighted_g_of_distances_below_one():
    # Pins down the documented behaviour of the validation-tuned form: l2-scaled distances
    # are below 1, and the score is +Phi . g(delta), so it grows with the distance.
    from ltr_bench_lgmml.scoring import g_of

    X, y, qid = _data()
    # (the absolute lambda and Mahalanobis distance of the earlier defaults: a relative
    # lambda makes the metrics less isotropic and some distances exceed 1)
    r = LGMMLRanker(
        n_metrics=6,
        score_form="positive",
        distance="mahalanobis",
        reg_scale="absolute",
        random_state=0,
    ).fit(X, y, qid=qid)
    Z = r.scaler_.transform(X)
    delta = np.sqrt(r.metric_bank_.sq_distances(Z, dtype=np.float64))
    assert delta.max() < 1.0
    r.set_params(dtype="float64")
    assert np.allclose(r.predict(X), g_of(delta) @ r.weights_, rtol=1e-10)


def test_scaling_is_fitted_on_training_data_only():
    X, y, qid = _data()
    r = LGMMLRanker(n_metrics=5, scaling="zscore", random_state=0).fit(X, y, qid=qid)
    assert np.allclose(r.scaler_.shift, X.mean(0)) and np.allclose(r.scaler_.scale, X.std(0))
    # A test document scores the same alone as inside any batch: nothing is refitted.
    Xt = _data(seed=5)[0] * 10 + 3
    assert np.allclose(r.predict(Xt[:1]), r.predict(Xt)[:1], rtol=1e-12)


def test_strategies_set_the_unseen_query_weights_as_documented():
    X, y, qid = _data()
    uni = LGMMLRanker(n_metrics=6, weight_strategy="uniform", random_state=0).fit(X, y, qid=qid)
    assert np.array_equal(uni.weights_, np.ones(6)) and uni.n_iter_ == 0
    mean = LGMMLRanker(n_metrics=6, weight_strategy="mean", random_state=0).fit(X, y, qid=qid)
    assert mean.query_weights_.shape == (12, 6)
    assert np.allclose(mean.weights_, mean.query_weights_.mean(0))
    glob = LGMMLRanker(n_metrics=6, weight_strategy="global", random_state=0).fit(X, y, qid=qid)
    assert glob.query_weights_ is None and glob.weights_.min() >= 0
    assert not np.array_equal(glob.weights_, np.ones(6))


def test_query_dependent_mode_ranks_documents_near_the_query_point_first():
    rng = np.random.default_rng(0)
    d, rows, labels, qids = 4, [], [], []
    for q in range(10):
        qp = rng.normal(size=d) * 3
        docs = qp + rng.normal(size=(30, d)) * np.r_[np.full(10, 0.3), np.full(20, 3.0)][:, None]
        rows.append(np.hstack([np.tile(qp, (30, 1)), docs]))
        labels.append(np.r_[np.ones(10, int), np.zeros(20, int)]), qids.append(np.full(30, q))
    X, y, qid = np.vstack(rows), np.concatenate(labels), np.concatenate(qids)
    r = LGMMLRanker(n_metrics=5, query_dim=d, random_state=0).fit(X, y, qid=qid)
    assert r.metric_bank_.anchors is None
    s = r.predict(X)
    from ltr_bench.evaluation.metrics import evaluate

    assert evaluate(y, s, qid, "ndcg@10")["ndcg@10"] > 0.9
    with pytest.raises(ValueError, match="query_dim"):
        LGMMLRanker(query_dim=3).fit(X, y, qid=qid)


@pytest.mark.parametrize(
    "param,value,message",
    [
        ("distance", "euclid", "distance must be one of \\['paper', 'mahalanobis'\\]"),
        ("score_form", "x", "score_form must be one of \\['auto', 'rising', 'eq13', 'positive'\\]"),
        ("weight_strategy", "best", "weight_strategy must be one of"),
        ("scaling", "minmax", "scaling must be one of \\['l2', 'zscore', 'none'\\]"),
        ("t", 1.5, "t must be a number in \\[0, 1\\]"),
        ("reg_lambda", 0.0, "reg_lambda must be a number in \\(0"),
        ("n_metrics", 0, "n_metrics must be an integer >= 1"),
        ("step_size", "fast", "step_size must be a number"),
        ("highly_relevant", "half", "highly_relevant must be one of"),
        ("dtype", "float16", "dtype must be one of"),
        ("random_state", -1, "random_state must be"),
    ],
)
def test_invalid_parameters_name_the_parameter_and_allowed_values(param, value, message):
    X, y, qid = _data(n_queries=2)
    with pytest.raises(ValueError, match=message):
        LGMMLRanker(**{param: value}).fit(X, y, qid=qid)


def test_n_threads_limits_blas_without_changing_scores():
    X, y, qid = _data()
    a = LGMMLRanker(n_metrics=6, random_state=0, n_threads=1).fit(X, y, qid=qid).predict(X)
    b = LGMMLRanker(n_metrics=6, random_state=0, n_threads=2).fit(X, y, qid=qid).predict(X)
    assert np.array_equal(a, b)
    # the harness's --threads goes to n_threads, the one thread knob (test_parallel.py)
    assert LGMMLRanker().ranker_tags().thread_param == "n_threads"


def test_all_zero_warp_weights_fall_back_to_uniform_with_a_warning(monkeypatch):
    # WARP's projection onto >= 0 can zero every weight (seen on gauss-100, m = 100, seed 0);
    # a constant scorer must not be returned silently.
    import ltr_bench_lgmml.ranker as ranker_module

    X, y, qid = _data()
    normal = LGMMLRanker(n_metrics=4, random_state=0).fit(X, y, qid=qid)
    assert not normal.warp_collapsed_
    monkeypatch.setattr(ranker_module, "train_warp", lambda **kw: np.zeros(kw["n_metrics"]))
    r = LGMMLRanker(n_metrics=4, initial_weight=2.0, random_state=0)
    with pytest.warns(RuntimeWarning, match="every weight to 0"):
        r.fit(X, y, qid=qid)
    assert r.warp_collapsed_ and np.all(r.weights_ == 2.0)
    assert np.unique(r.predict(X)).size > 1


def test_fitted_info_is_json_scalars_and_has_validation_diagnostics_only_with_eval_set():
    import json

    X, y, qid = _data(seed=1)
    Xv, yv, qv = _data(seed=2)
    plain = LGMMLRanker(n_metrics=6, random_state=0).fit(X, y, qid=qid)
    with_vali = LGMMLRanker(n_metrics=6, random_state=0).fit(X, y, qid=qid, eval_set=(Xv, yv, qv))
    info, vinfo = plain.fitted_info(), with_vali.fitted_info()
    for d in (info, vinfo):
        json.dumps(d)
        assert all(type(v) in (bool, int, float, str) for v in d.values())
        assert d["n_metrics"] == 6 and d["metric_eig_ratio_median"] >= 1.0
        assert 0.0 <= d["top_anchor_r2"] <= 1.0 + 1e-12
    assert "vali_ndcg10" not in info
    assert np.isclose(
        vinfo["vali_gain_learned_over_uniform"],
        vinfo["vali_ndcg10"] - vinfo["vali_ndcg10_uniform_weights"],
    )
    # the validation diagnostics do not change the model
    assert np.array_equal(plain.predict(Xv), with_vali.predict(Xv))


def test_vali_ndcg_in_fitted_info_equals_evaluating_predict_on_the_eval_set():
    from ltr_bench.evaluation.metrics import evaluate

    X, y, qid = _data(seed=1)
    Xv, yv, qv = _data(seed=2)
    r = LGMMLRanker(n_metrics=6, random_state=0).fit(X, y, qid=qid, eval_set=(Xv, yv, qv))
    want = evaluate(yv, r.predict(Xv), qv, "ndcg@10", empty_query=0.0)["ndcg@10"]
    assert np.isclose(r.fitted_info()["vali_ndcg10"], want)
    Z = r.scaler_.transform(Xv)
    far = evaluate(yv, (Z * Z).sum(1), qv, "ndcg@10", empty_query=0.0)["ndcg@10"]
    assert np.isclose(r.fitted_info()["vali_ndcg10_ref_norm_far_first"], far)


def test_validation_diagnostics_stream_in_chunks_and_structure_uses_the_first_queries(monkeypatch):
    # memory bounded at MSLR size: the validation scores are computed chunk by chunk (the
    # same numbers as in one piece), the variance shares on the first queries only
    import ltr_bench_lgmml.diagnostics as diagnostics
    import ltr_bench_lgmml.ranker as ranker

    X, y, qid = _data(seed=1)
    Xv, yv, qv = _data(seed=2)
    whole = LGMMLRanker(n_metrics=6, random_state=0).fit(X, y, qid=qid, eval_set=(Xv, yv, qv))
    monkeypatch.setattr(ranker, "_CHUNK_BYTES", 1)  # 64-row chunks (predict's and theirs)
    monkeypatch.setattr(diagnostics, "_STRUCTURE_DOCS", 30)
    chunked = LGMMLRanker(n_metrics=6, random_state=0).fit(X, y, qid=qid, eval_set=(Xv, yv, qv))
    a, b = whole.fitted_info(), chunked.fitted_info()
    assert Xv.shape[0] > 64  # several chunks
    for key in (
        "vali_ndcg10",
        "vali_ndcg10_uniform_weights",
        "vali_ndcg10_ref_norm_far_first",
        "vali_ndcg10_ref_norm_near_first",
    ):
        assert np.isclose(a[key], b[key], rtol=0, atol=1e-12), key
    assert 0.0 <= b["top_anchor_r2"] <= 1.0 + 1e-12
    assert b["top_anchor_r2"] != a["top_anchor_r2"]  # fewer documents looked at


def test_relative_lambda_makes_scores_invariant_to_rescaling_raw_features():
    # scaling="none": multiplying every feature by 1000 changes nothing with a relative
    # lambda and "rising" (its distance quantile rescales too; Eq. 13's g(delta) does not,
    # so "eq13" is not scale-free); it does change the ranking with an absolute lambda.
    X, y, qid = _data(seed=1)
    kw = dict(
        n_metrics=6,
        scaling="none",
        score_form="rising",
        distance="mahalanobis",
        random_state=0,
        dtype="float64",
    )
    a = LGMMLRanker(**kw).fit(X, y, qid=qid).predict(X)
    b = LGMMLRanker(**kw).fit(1000 * X, y, qid=qid).predict(1000 * X)
    assert np.allclose(-np.argsort(np.argsort(a)), -np.argsort(np.argsort(b)))
    kw["reg_scale"] = "absolute"
    kw["reg_lambda"] = 10.0
    a = LGMMLRanker(**kw).fit(X, y, qid=qid).predict(X)
    b = LGMMLRanker(**kw).fit(1000 * X, y, qid=qid).predict(1000 * X)
    assert not np.array_equal(np.argsort(a), np.argsort(b))


def test_listnet_weights_beat_chance_and_listnet_with_per_query_mean_is_rejected():
    from ltr_bench.evaluation.metrics import evaluate

    X, y, qid = _data(seed=1)
    Xt, yt, qt = _data(seed=2)
    r = LGMMLRanker(n_metrics=10, weight_method="listnet", random_state=0)
    s = r.fit(X, y, qid=qid).predict(Xt)
    rand = np.random.default_rng(0).normal(size=yt.size)
    assert (
        evaluate(yt, s, qt, "ndcg@10")["ndcg@10"]
        > evaluate(yt, rand, qt, "ndcg@10")["ndcg@10"] + 0.05
    )
    assert r.fitted_info()["weight_method"] == "listnet"
    with pytest.raises(ValueError, match="weight_method"):
        LGMMLRanker(weight_method="listnet", weight_strategy="mean").fit(X, y, qid=qid)

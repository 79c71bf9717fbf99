"""The fast predict paths give the scores of the formulas they replace (to rounding where the
sum is rearranged: 1e-12 of the largest score, metrics to 1e-9), and keep the input contract:
the same errors for bad input, no copy of an array that is already what the model needs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ltr_bench.evaluation.metrics import evaluate
from ltr_bench.model_state import fitted_attributes
from ltr_bench.predict_input import all_finite, linear_scores, predict_matrix
from ltr_bench.ranker import RankerInputError
from ltr_bench.registry import make_ranker


def _data(seed=0, n_queries=40, docs=12, d=20):
    """Features of very different scales and offsets (as LETOR's raw counts and scores):
    where a rearranged standardisation would lose most to rounding."""
    rng = np.random.default_rng(seed)
    n = n_queries * docs
    X = rng.normal(size=(n, d)) * np.logspace(-2, 4, d) + np.logspace(0, 5, d)
    X[:, 3] = 7.0  # a constant feature: its standardised weight is 0
    z = (X[:, 0] - X[:, 0].mean()) / X[:, 0].std() - (X[:, 5] - X[:, 5].mean()) / X[:, 5].std()
    y = np.clip((1.5 + z + 0.5 * rng.normal(size=n)).round(), 0, 4).astype(int)
    qid = np.repeat(np.arange(n_queries), docs)
    return X, y, qid


def _bare_linear(r, X):
    return r.scaler_.transform(X) @ r.coef_ + getattr(r, "intercept_", 0.0)


def _bare_rankboost(r, X):
    s = np.zeros(X.shape[0])
    for f, theta, alpha in zip(r.features_, r.thresholds_, r.alphas_):
        s += alpha * (X[:, f] > theta)
    return s


def _bare_mlr(r, X):
    from ltr_bench_baselines.mlr_solver import psd_factor, row_scores

    return row_scores(r._differences(X), psd_factor(r.W_))


def _bare_xgboost(r, X):
    import xgboost as xgb

    data = xgb.DMatrix(X, nthread=1)
    return r.booster_.predict(data, iteration_range=(0, r.best_iteration_)).astype(np.float64)


#: (registered name, parameters, the formula predict computed before its fast path, exact)
CASES = [
    ("ridge", {"alpha": 1.0}, _bare_linear, False),
    ("listnet", {"max_iter": 50}, _bare_linear, False),
    ("ranksvm", {"C": 1.0}, _bare_linear, False),
    ("adarank", {}, lambda r, X: X @ r.coef_, True),
    ("coordinate-ascent", {"restarts": 1}, lambda r, X: X @ r.coef_, True),
    ("rankboost", {"rounds": 40}, _bare_rankboost, True),
    ("mlr", {"max_iter": 5}, _bare_mlr, False),
    # one thread, as the suite's other fits (the default is every CPU): the suite's workers
    # share the cores, and a thread pool per worker only adds threads that wait on each other
    ("xgboost-lambdamart", {"n_estimators": 20, "n_jobs": 1}, _bare_xgboost, True),
    ("xgboost-gbrt", {"n_estimators": 20, "n_jobs": 1}, _bare_xgboost, True),
]


def _fit(name, params, X, y, qid):
    if name.startswith("xgboost"):
        pytest.importorskip("xgboost")
    r = make_ranker(name, dict(params))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence notes of the short fits
        return r.fit(X, y, qid=qid)


@pytest.mark.parametrize(("name", "params", "bare", "exact"), CASES, ids=[c[0] for c in CASES])
def test_predict_agrees_with_the_formula_it_replaces(name, params, bare, exact):
    X, y, qid = _data()
    r = _fit(name, params, X, y, qid)
    Xt, yt, qt = _data(seed=1)
    fast, ref = r.predict(Xt), bare(r, Xt)
    assert fast.dtype == np.float64 and fast.shape == ref.shape
    assert np.any(ref != ref[0]), "the test needs a model that is not constant"
    if exact:
        np.testing.assert_array_equal(fast, ref)
    else:
        assert np.max(np.abs(fast - ref)) <= 1e-12 * np.max(np.abs(ref))
    keys = ("ndcg@10", "map", "err@10")
    a, b = evaluate(yt, fast, qt, keys), evaluate(yt, ref, qt, keys)
    for k in keys:
        assert abs(a[k] - b[k]) <= 1e-9, k
    # one query at a time: the same numbers as in bulk
    one = np.concatenate([r.predict(Xt[i : i + 12], qid=qt[i : i + 12]) for i in range(0, 480, 12)])
    np.testing.assert_array_equal(one, fast)


@pytest.mark.parametrize(("name", "params", "bare", "exact"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused_as_before(name, params, bare, exact):
    X, y, qid = _data()
    r = _fit(name, params, X, y, qid)
    for bad in (np.nan, np.inf, -np.inf):
        Xb = X[:24].copy()
        Xb[5, 7] = bad
        with pytest.raises(RankerInputError, match="NaN or infinite"):
            r.predict(Xb)
    with pytest.raises(RankerInputError, match="features, but the ranker was fitted with"):
        r.predict(X[:, :-1])
    with pytest.raises(RankerInputError, match="query id occurs in separate"):
        r.predict(X[:3], qid=[1, 2, 1])
    # other dtypes and layouts are converted, as before
    np.testing.assert_array_equal(r.predict(np.asfortranarray(X[:50])), r.predict(X[:50]))
    np.testing.assert_array_equal(r.predict(X[:50].tolist()), r.predict(X[:50]))


@pytest.mark.parametrize("rows", [4, 30_000])  # a query's rows; a split (checked after)
def test_a_nan_under_a_zero_weight_is_still_refused(rows):
    X = np.ones((rows, 3))
    X[2, 1] = np.nan
    with pytest.raises(RankerInputError, match="NaN or infinite"):
        linear_scores(X, None, n_features=3, w=np.array([1.0, 0.0, 2.0]))


@pytest.mark.parametrize("rows", [2, 30_000])
def test_finite_input_whose_linear_score_overflows_keeps_its_infinite_score(rows):
    X = np.full((rows, 2), 1e308)
    with np.errstate(over="ignore"):
        s = linear_scores(X, None, n_features=2, w=np.array([10.0, 10.0]))
    assert np.all(np.isinf(s))


def test_an_array_that_is_already_float64_c_contiguous_is_not_copied():
    X = np.random.default_rng(0).normal(size=(30, 4))
    got, q = predict_matrix(X, np.zeros(30, dtype=np.int64), n_features=4)
    assert got is X and q is not None
    assert predict_matrix(X.astype(np.float32), n_features=4)[0].dtype == np.float64
    big = np.full((40_000, 2), 1e308)  # its sum overflows: every entry is looked at
    assert all_finite(big)
    big[-1, -1] = np.nan
    assert not all_finite(big)
    assert not all_finite(np.array([[1.0, np.inf]]))


@pytest.mark.parametrize("name", ["ridge", "ranksvm", "mlr"])
def test_the_folded_weights_are_not_saved_and_a_loaded_model_scores_the_same(tmp_path, name):
    params = dict(next(c[1] for c in CASES if c[0] == name))
    X, y, qid = _data()
    r = _fit(name, params, X, y, qid)
    before = r.predict(X)  # fills the cache
    assert not any("cache" in k for k in fitted_attributes(r))
    folder = tmp_path / "m"
    folder.mkdir()
    r.save_native(folder)
    loaded = type(r).load_native(folder, {"params": r.get_params(deep=False)})
    np.testing.assert_array_equal(loaded.predict(X), before)


def test_a_frozen_qid_found_valid_is_not_checked_again(monkeypatch):
    import ltr_bench.predict_input as predict_input

    calls = []
    real = predict_input.query_boundaries
    monkeypatch.setattr(predict_input, "query_boundaries", lambda q: calls.append(1) or real(q))
    X = np.zeros((6000, 2))
    frozen = np.repeat(np.arange(60), 100)
    frozen.flags.writeable = False
    for _ in range(3):
        predict_matrix(X, frozen, n_features=2)
    assert len(calls) == 1
    writable = np.repeat(np.arange(60), 100)
    for _ in range(2):
        predict_matrix(X, writable, n_features=2)
    assert len(calls) == 3  # a qid that may change is checked every call
    writable[-1] = 0  # rows of query 0 in two blocks: still refused
    with pytest.raises(RankerInputError, match="query id occurs in separate"):
        predict_matrix(X, writable, n_features=2)


@pytest.mark.parametrize("scorer", ["linear", "mlp"])
def test_neural_predict_is_its_forward_pass_on_the_standardised_rows(scorer):
    torch = pytest.importorskip("torch")
    from ltr_bench_neural.features import transform_features
    from ltr_bench_neural.training import score_matrix

    X, y, qid = _data(d=8)
    r = _fit("neural", {"scorer": scorer, "epochs": 2, "random_state": 0}, X, y, qid)
    Xs = (transform_features(X, r.feature_transform) - r.feature_mean_) / r.feature_scale_
    param = next(r.model_.parameters())
    with torch.no_grad():
        ref = score_matrix(r.model_, Xs, qid, r, param.device, param.dtype)
    np.testing.assert_array_equal(r.predict(X, qid=qid), ref)

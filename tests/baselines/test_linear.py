"""The linear baselines: ridge against a closed-form reference, its validation choice of alpha,
ListNet's loss and gradient against a per-query reference and finite differences, both against
random ranking, determinism, declared tags, fitted_info, parameter errors and the contract."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import check_grad

from ltr_bench.evaluation.metrics import evaluate
from ltr_bench.ranker import RankerTags, query_boundaries
from ltr_bench.registry import load_ranker_class
from ltr_bench.testing import make_check_data, parametrize_with_checks
from ltr_bench_baselines.linear import (
    DEFAULT_ALPHA_GRID,
    ListNetRanker,
    RidgeRanker,
    listnet_loss_and_grad,
)


def zscore(X_train, X):
    mean, sd = X_train.mean(axis=0), X_train.std(axis=0)
    return (X - mean) / np.where(sd > 0, sd, 1.0)


def problem(seed, n_queries, n_features=6):
    return make_check_data(
        seed, n_queries=n_queries, n_features=n_features, min_docs=5, max_docs=25
    )


@parametrize_with_checks(
    [RidgeRanker(n_jobs=1), RidgeRanker(alpha=3.0, n_jobs=1), ListNetRanker(n_jobs=1)]
)
def test_linear_ranker_follows_the_ranker_contract(ranker, check):
    check(ranker)


def test_ridge_equals_the_closed_form_on_training_standardised_features():
    X, y, qid = problem(1, 30)
    X_new = np.random.default_rng(2).normal(size=(50, X.shape[1])) * 3 + 1
    X = X * np.array([1, 10, 100, 0.1, 5, 1]) + 7  # scales that standardisation must undo
    X_new = X_new * np.array([1, 10, 100, 0.1, 5, 1]) + 7
    alpha = 5.0
    ranker = RidgeRanker(alpha=alpha, n_jobs=1).fit(X, y, qid=qid)
    # min ||y - Z w - b||^2 + alpha ||w||^2 with centred Z: b = mean(y),
    # w = (Z^T Z + alpha I)^-1 Z^T (y - mean(y))
    Z = zscore(X, X)
    w = np.linalg.solve(Z.T @ Z + alpha * np.eye(Z.shape[1]), Z.T @ (y - y.mean()))
    expected = zscore(X, X_new) @ w + y.mean()
    np.testing.assert_allclose(ranker.predict(X_new), expected, rtol=1e-10, atol=1e-10)
    # and scikit-learn's Ridge on the same standardised rows
    from sklearn.linear_model import Ridge

    sk = Ridge(alpha=alpha).fit(Z, y)
    np.testing.assert_allclose(
        ranker.predict(X_new), sk.predict(zscore(X, X_new)), rtol=1e-10, atol=1e-10
    )


def test_ridge_picks_the_grid_alpha_with_the_best_validation_ndcg():
    X, y, qid = problem(3, 25)
    Xv, yv, qv = problem(4, 15)
    grid = (0.01, 1.0, 100.0, 1e4, 1e6)
    ranker = RidgeRanker(alpha_grid=grid, n_jobs=1).fit(X, y, qid=qid, eval_set=(Xv, yv, qv))
    # reference: each alpha fitted on its own, scored on the validation split
    ndcg = {
        a: evaluate(
            yv, RidgeRanker(alpha=a, n_jobs=1).fit(X, y, qid=qid).predict(Xv), qv, "ndcg@10"
        )["ndcg@10"]
        for a in grid
    }
    assert ranker.validation_ndcg_ == pytest.approx(ndcg, abs=1e-12)
    best = max(ndcg.values())
    assert ranker.alpha_ == max(a for a, v in ndcg.items() if v == best)
    assert ranker.alpha_source_ == "validation"
    info = ranker.fitted_info()
    assert info["alpha"] == ranker.alpha_ and info["validation_ndcg"] == pytest.approx(best)
    # the chosen model is the fixed-alpha model
    np.testing.assert_allclose(
        ranker.predict(Xv),
        RidgeRanker(alpha=ranker.alpha_, n_jobs=1).fit(X, y, qid=qid).predict(Xv),
        rtol=1e-12,
    )


def test_ridge_without_validation_split_uses_alpha_1_and_fixed_alpha_ignores_it():
    X, y, qid = problem(3, 25)
    val = problem(4, 15)
    none = RidgeRanker(n_jobs=1).fit(X, y, qid=qid)
    assert (none.alpha_, none.alpha_source_) == (1.0, "no-validation-split")
    assert "validation_ndcg" not in none.fitted_info()
    fixed = RidgeRanker(alpha=1e6, n_jobs=1).fit(X, y, qid=qid, eval_set=val)
    assert (fixed.alpha_, fixed.alpha_source_, fixed.validation_ndcg_) == (1e6, "fixed", {})


def test_ridge_declares_eval_set_use_exactly_when_it_chooses_alpha():
    common = dict(thread_param="n_jobs", query_dim_param="query_dim")
    assert RidgeRanker().ranker_tags() == RankerTags(uses_eval_set=True, **common)
    assert RidgeRanker(alpha=1.0).ranker_tags() == RankerTags(uses_eval_set=False, **common)
    assert ListNetRanker().ranker_tags() == RankerTags(uses_eval_set=False, **common)
    assert RidgeRanker().alpha_grid == DEFAULT_ALPHA_GRID


def _listnet_reference_loss(w, Z, y, qid, l2):
    """Per-query loop: - sum_i P(i) log softmax(Z w)_i, P = softmax(y), mean over queries
    with label differences, plus l2/2 ||w||^2."""
    total, n = 0.0, 0
    b = query_boundaries(qid)
    for i in range(len(b) - 1):
        yq, sq = y[b[i] : b[i + 1]].astype(float), Z[b[i] : b[i + 1]] @ w
        if yq.min() == yq.max():
            continue
        p = np.exp(yq) / np.exp(yq).sum()
        log_softmax = sq - np.log(np.exp(sq).sum())
        total -= p @ log_softmax
        n += 1
    return total / n + 0.5 * l2 * w @ w


def _kept(Z, y, qid):
    b = query_boundaries(qid)
    keep = [i for i in range(len(b) - 1) if y[b[i] : b[i + 1]].min() < y[b[i] : b[i + 1]].max()]
    rows = np.concatenate([np.arange(b[i], b[i + 1]) for i in keep])
    sizes = np.array([b[i + 1] - b[i] for i in keep])
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    yk = y[rows].astype(float)
    P = np.concatenate(
        [np.exp(yk[s : s + m]) / np.exp(yk[s : s + m]).sum() for s, m in zip(starts, sizes)]
    )
    return Z[rows], P, starts


def test_listnet_loss_equals_a_per_query_reference_and_its_gradient_passes_check_grad():
    X, y, qid = problem(5, 20, n_features=7)
    y[: query_boundaries(qid)[1]] = 1  # one query without label differences: left out
    Z = zscore(X, X)
    Zk, P, starts = _kept(Z, y, qid)
    rng = np.random.default_rng(0)
    for l2 in (0.0, 0.3):
        for _ in range(3):
            w = rng.normal(size=7)
            loss, _ = listnet_loss_and_grad(w, Zk, P, starts, l2)
            assert loss == pytest.approx(_listnet_reference_loss(w, Z, y, qid, l2), rel=1e-12)
            err = check_grad(
                lambda v: listnet_loss_and_grad(v, Zk, P, starts, l2)[0],
                lambda v: listnet_loss_and_grad(v, Zk, P, starts, l2)[1],
                w,
            )
            assert err < 1e-6 * max(
                1.0, np.linalg.norm(listnet_loss_and_grad(w, Zk, P, starts, l2)[1])
            )
    # large scores do not overflow: the softmax subtracts each query's maximum
    loss, grad = listnet_loss_and_grad(np.full(7, 300.0), Zk, P, starts, 0.0)
    assert np.isfinite(loss) and np.isfinite(grad).all()


def test_listnet_reaches_the_minimum_of_its_objective():
    X, y, qid = problem(6, 30)
    ranker = ListNetRanker(l2=1e-3, n_jobs=1).fit(X, y, qid=qid)
    Zk, P, starts = _kept(zscore(X, X), y, qid)
    _, grad = listnet_loss_and_grad(ranker.coef_, Zk, P, starts, 1e-3)
    assert ranker.converged_ and np.abs(grad).max() < 1e-5
    assert ranker.loss_ == pytest.approx(
        _listnet_reference_loss(ranker.coef_, zscore(X, X), y, qid, 1e-3), rel=1e-10
    )
    info = ranker.fitted_info()
    assert info["converged"] is True and info["n_iter"] == ranker.n_iter_ >= 1
    assert info["n_queries_used"] == 30


@pytest.mark.parametrize("cls", [RidgeRanker, ListNetRanker])
def test_linear_rankers_beat_random_ranking_on_a_linear_problem(cls):
    # make_check_data's labels are cut from one hidden linear relevance plus noise: the
    # first 60 queries train, the other 60 test
    rng = np.random.default_rng(7)
    X_all, y_all, q_all = make_check_data(7, n_queries=120, n_features=6, min_docs=5, max_docs=25)
    b = query_boundaries(q_all)
    cut = b[60]
    X, y, qid = X_all[:cut], y_all[:cut], q_all[:cut]
    Xt, yt, qt = X_all[cut:], y_all[cut:], q_all[cut:]
    scores = cls(n_jobs=1).fit(X, y, qid=qid).predict(Xt)
    ours = evaluate(yt, scores, qt, "ndcg@10")["ndcg@10"]
    random = np.mean(
        [evaluate(yt, rng.random(len(yt)), qt, "ndcg@10")["ndcg@10"] for _ in range(20)]
    )
    assert ours > random + 0.25, (ours, random)


@pytest.mark.parametrize("cls", [RidgeRanker, ListNetRanker])
def test_linear_rankers_are_deterministic(cls):
    X, y, qid = problem(9, 20)
    val = problem(10, 10)
    a = cls(n_jobs=1).fit(X, y, qid=qid, eval_set=val).predict(val[0])
    b = cls(n_jobs=1).fit(X, y, qid=qid, eval_set=val).predict(val[0])
    assert np.array_equal(a, b)


def test_listnet_without_label_differences_learns_the_zero_model():
    X, y, qid = problem(11, 5)
    ranker = ListNetRanker(n_jobs=1).fit(X, np.zeros_like(y), qid=qid)
    assert not ranker.coef_.any() and ranker.n_iter_ == 0 and ranker.n_queries_used_ == 0
    assert ranker.fitted_info()["constant_model"] is True
    assert np.array_equal(ranker.predict(X), np.zeros(len(X)))


def test_bad_parameters_give_errors_that_name_them():
    X, y, qid = problem(12, 5)
    for ranker, name in (
        (RidgeRanker(alpha=-1), "alpha"),
        (RidgeRanker(alpha_grid=()), "alpha_grid"),
        (RidgeRanker(alpha_grid=(1.0, 0.0)), "alpha_grid value"),
        (RidgeRanker(eval_at=0), "eval_at"),
        (RidgeRanker(n_jobs=0), "n_jobs"),
        (ListNetRanker(l2=float("nan")), "l2"),
        (ListNetRanker(max_iter=0), "max_iter"),
        (ListNetRanker(tol=0), "tol"),
    ):
        with pytest.raises(ValueError, match=name):
            ranker.fit(X, y, qid=qid)


def test_entry_points_resolve_to_the_linear_classes():
    assert load_ranker_class("ridge") is RidgeRanker
    assert load_ranker_class("listnet") is ListNetRanker


def qbe_problem(seed, n_queries, d=4):
    """Rows [q, x]; a candidate is relevant when it is near its query in the first two
    dimensions (the other two are noise)."""
    rng = np.random.default_rng(seed)
    rows, labels, qids = [], [], []
    for i in range(n_queries):
        q = rng.normal(size=d)
        x = rng.normal(size=(15, d))
        near = np.linalg.norm(x[:, :2] - q[:2], axis=1)
        labels.append((near < np.quantile(near, 0.3)).astype(np.int64))
        rows.append(np.hstack([np.tile(q, (15, 1)), x]))
        qids.append(np.full(15, i))
    return np.vstack(rows), np.concatenate(labels), np.concatenate(qids)


@pytest.mark.parametrize("cls", [RidgeRanker, ListNetRanker])
def test_query_by_example_rows_are_scored_by_a_learned_diagonal_distance(cls):
    X, y, qid = qbe_problem(20, 60)
    Xt, yt, qt = qbe_problem(21, 40)
    ranker = cls(query_dim=4, n_jobs=1).fit(X, y, qid=qid)
    # the same model as on the explicit squared differences
    plain = cls(n_jobs=1).fit((X[:, :4] - X[:, 4:]) ** 2, y, qid=qid)
    np.testing.assert_allclose(
        ranker.predict(Xt), plain.predict((Xt[:, :4] - Xt[:, 4:]) ** 2), rtol=1e-9, atol=1e-9
    )
    # the informative dimensions get negative weights (nearer ranks higher), and the ranking
    # is far better than chance; on the raw rows a linear model cannot rank at all
    assert (ranker.coef_[:2] < 0).all()
    ours = evaluate(yt, ranker.predict(Xt), qt, "ndcg@10")["ndcg@10"]
    raw = evaluate(yt, cls(n_jobs=1).fit(X, y, qid=qid).predict(Xt), qt, "ndcg@10")["ndcg@10"]
    assert ours > raw + 0.25, (ours, raw)

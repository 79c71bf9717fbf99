"""MLR / R-MLR: separation oracles against brute force, the inner solver against its dual,
PSD-ness, regularisation paths, determinism, kNN error, score formulas, parameter errors and
the ranker contract."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest
from sklearn.neighbors import KNeighborsClassifier

from ltr_bench.progress import progress_handler
from ltr_bench.ranker import RankerTags
from ltr_bench.testing import parametrize_with_checks
from ltr_bench_baselines import mlr_oracles as O
from ltr_bench_baselines import mlr_solver as S
from ltr_bench_baselines.mlr import MLRRanker, RMLRRanker, knn_error, knn_predict, qbe_rows

FAST = dict(max_iter=40, admm_max_iter=200)


@functools.cache
def _fitted(cls, data: str, **params):
    """``cls(**params, **FAST)`` fitted on ``_wine_rows()`` (``data="wine"``) or on
    ``_two_informative_of_eight()`` (``"two"``), once per module: the tests that fit the same
    ranker on the same rows read one fit (none of them changes it); each fit takes 1-2 s."""
    make = {"wine": lambda: qbe_rows(*_wine_rows()), "two": _two_informative_of_eight}
    rows, y, q = make[data]()
    return cls(**params, **FAST).fit(rows, y, qid=q)


# ------------------------------------------------------------------ brute force reference
def _discount(r, k):
    return np.where(r <= k, 1.0 / np.log2(np.maximum(r, 2)), 0.0)


def _brute_force(s, rel, loss, k):
    """Objective Delta(y) + 1/(PN) sum_{i+, j-} y_ij (s_i - s_j) of every permutation."""
    n = s.size
    perms = np.array(list(itertools.permutations(range(n))))
    pos = np.argsort(perms, axis=1)  # pos[p, item] = 0-based rank of item in permutation p
    ip, jn = np.flatnonzero(rel), np.flatnonzero(~rel)
    P, N = ip.size, jn.size
    yij = np.where(pos[:, ip][:, :, None] < pos[:, jn][:, None, :], 1.0, -1.0)
    score = (yij * (s[ip][:, None] - s[jn][None, :])).sum(axis=(1, 2)) / (P * N)
    r = np.sort(pos[:, ip], axis=1) + 1  # 1-based ranks of relevant items, ascending
    if loss == "auc":
        delta = (yij < 0).sum(axis=(1, 2)) / (P * N)
    elif loss == "precision":
        delta = (min(P, k) - (r <= k).sum(axis=1)) / k
    elif loss == "map":
        delta = 1.0 - (np.arange(1, P + 1) / r).mean(axis=1)
    elif loss == "mrr":
        delta = 1.0 - 1.0 / r[:, 0]
    else:
        ideal = _discount(np.arange(1, min(P, k) + 1), k).sum()
        delta = 1.0 - _discount(r, k).sum(axis=1) / ideal
    return perms, delta + score


@pytest.mark.parametrize("loss", O.LOSSES)
def test_oracle_ranking_equals_brute_force_over_all_permutations(loss):
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(25):
        n = int(rng.integers(2, 9))  # lists of 2..8 items
        rel = rng.random(n) < rng.uniform(0.2, 0.8)
        if rel.all() or not rel.any():
            continue
        s = rng.normal(size=n) * rng.choice([0.05, 0.5, 3.0])
        k = int(rng.integers(1, n + 2))
        perms, obj = _brute_force(s, rel, loss, k)
        best = int(np.argmax(obj))
        order, delta = O.most_violated_ranking(s, rel, loss, k)
        hit = int(np.flatnonzero((perms == order).all(axis=1))[0])
        assert obj[hit] == pytest.approx(obj[best], abs=1e-12)
        if np.sort(obj)[-2] < obj[best] - 1e-9:  # unique maximiser: the very same ranking
            assert hit == best
        assert delta == pytest.approx(O.ranking_loss(rel[order], loss, k), abs=1e-12)
        checked += 1
    assert checked >= 15


@pytest.mark.parametrize("loss", O.LOSSES)
def test_batched_oracle_equals_one_query_at_a_time(loss):
    rng = np.random.default_rng(3)
    sizes = [1, 5, 30, 7, 12, 3, 60]
    s = rng.normal(size=sum(sizes))
    rel = rng.random(s.size) < 0.35
    rel[sum(sizes[:2]) : sum(sizes[:3])] = False  # a query without relevant rows
    bounds = np.r_[0, np.cumsum(sizes)]
    res = O.separation_oracle(s, rel, bounds, loss, 4)
    for q in range(len(sizes)):
        a, b = bounds[q], bounds[q + 1]
        one = O.separation_oracle(s[a:b], rel[a:b], np.array([0, b - a]), loss, 4)
        np.testing.assert_allclose(res.coef[a:b], one.coef, atol=1e-15)
        assert res.delta[q] == pytest.approx(one.delta[0], abs=1e-15)
        assert res.usable[q] == one.usable[0]
    assert not res.usable[0] and not res.usable[2]
    assert np.all(res.coef[: sizes[0]] == 0)


def test_auc_sort_oracle_matches_the_exact_dynamic_programme():
    rng = np.random.default_rng(11)
    n = 120
    s = rng.normal(size=n) * 0.7
    rel = rng.random(n) < 0.4
    P, N = int(rel.sum()), int((~rel).sum())
    sp = np.sort(s[rel])[::-1]
    sn = np.sort(s[~rel])[::-1]
    b_dp = O._dp_b("auc", 10, {0: sp}, {0: sn}, np.array([P]), np.array([N]), [np.array([0])])[0]
    b_sort = O._auc_b(np.zeros(P, np.int64), sp, np.zeros(N, np.int64), sn)
    np.testing.assert_array_equal(b_dp, b_sort)


def test_oracle_coefficients_reproduce_the_joint_feature_map():
    # <W, delta_psi> from coefficients equals the pairwise definition of psi (paper Eq. 3)
    rng = np.random.default_rng(5)
    s = rng.normal(size=9)
    rel = np.array([1, 0, 0, 1, 1, 0, 0, 0, 1], bool)
    res = O.separation_oracle(s, rel, np.array([0, 9]), "map", 10)
    order, _ = O.most_violated_ranking(s, rel, "map")
    pos = np.empty(9, int)
    pos[order] = np.arange(9)
    ip, jn = np.flatnonzero(rel), np.flatnonzero(~rel)
    psi_y = sum((1 if pos[i] < pos[j] else -1) * (s[i] - s[j]) for i in ip for j in jn)
    psi_star = sum(s[i] - s[j] for i in ip for j in jn)
    assert res.coef @ s == pytest.approx((psi_star - psi_y) / (ip.size * jn.size))


# ------------------------------------------------------------------ solver
def _wine_rows(n=45, seed=0, noise=0):
    from sklearn.datasets import load_wine

    X, c = load_wine(return_X_y=True)
    rng = np.random.default_rng(seed)
    idx = rng.choice(c.size, n, replace=False)
    X, c = X[idx], c[idx]
    if noise:
        X = np.hstack([X, rng.normal(size=(n, noise))])
    X = (X - X.mean(0)) / X.std(0)
    return X, c


def test_admm_inner_solution_matches_a_dual_feasible_bound():
    # min tr W + C xi has the dual max sum a_t Delta_t, a >= 0, sum a <= C, I - sum a Psi >= 0
    X, c = _wine_rows(30)
    rows, y, q = qbe_rows(X, c)
    D = rows[:, :13] - rows[:, 13:]
    bounds = np.r_[0, np.cumsum(np.bincount(q))]
    res = S.train_mlr(D, y >= 1, bounds, loss="auc", k=10, C=10.0, max_iter=8)
    assert res.n_iter == 8
    W = np.zeros((13, 13))
    Psis, Deltas = [], []
    for _ in range(6):  # a working set built from a few oracle calls
        s = S.row_scores(D, S.psd_factor(W + 0.01 * np.eye(13) * (len(Psis) + 1)))
        o = O.separation_oracle(s, y >= 1, bounds, "auc")
        n = o.usable.sum()
        Psis.append((-(D.T * o.coef) @ D / n).ravel())
        Deltas.append(o.delta.sum() / n)
    Pf, Dl = np.array(Psis), np.array(Deltas)
    admm = S._ADMM(13, 0.0)
    W, _ = admm.solve(Pf, Dl, Pf @ Pf.T, 10.0, 5000, 1e-8)
    primal = np.trace(W) + 10.0 * max(0.0, (Dl - Pf @ W.ravel()).max())
    alpha = np.maximum(admm.rho * admm.u / np.sqrt(np.diag(Pf @ Pf.T)), 0.0)
    alpha *= min(1.0, 10.0 / alpha.sum())
    lam_max = np.linalg.eigvalsh((alpha @ Pf).reshape(13, 13)).max()
    alpha /= max(1.0, lam_max)
    dual = alpha @ Dl
    assert dual <= primal + 1e-9
    assert primal - dual <= 1e-4 * max(1.0, primal)


@pytest.mark.parametrize("cls", [MLRRanker, RMLRRanker])
def test_learned_W_is_symmetric_positive_semidefinite(cls):
    m = _fitted(cls, "wine", C=100.0, query_dim=13, random_state=3)  # random_state: unused
    np.testing.assert_array_equal(m.W_, m.W_.T)
    assert np.linalg.eigvalsh(m.W_).min() >= -1e-10 * max(1.0, np.abs(m.W_).max())
    assert np.trace(m.W_) > 0


def test_larger_trace_regulariser_gives_smaller_trace():
    # tr(W) + C xi: a smaller C weighs the trace regulariser more
    tr = [
        np.trace(_fitted(MLRRanker, "wine", C=C, query_dim=13, random_state=3).W_)
        for C in (100.0, 3.0, 0.3)
    ]
    assert tr[0] > tr[1] > tr[2] >= 0


def _two_informative_of_eight():
    """Query-by-example rows of 40 z-scored points in 2 classes: features 0 and 1 carry the
    class, the other six are pure noise."""
    rng = np.random.default_rng(0)
    n = 40
    c = np.arange(n) % 2
    X = rng.normal(size=(n, 8))
    X[:, 0] += 2.0 * c
    X[:, 1] -= 1.5 * c
    return qbe_rows((X - X.mean(0)) / X.std(0), c)


def test_larger_group_penalty_zeroes_whole_columns():
    zero = {}
    for lam in (0.0, 30.0):
        W = _fitted(RMLRRanker, "two", C=10.0, lam=lam, query_dim=8).W_
        cols = np.flatnonzero(~W.any(axis=0))
        assert not W[cols].any()  # zero columns are zero rows too (W symmetric)
        zero[lam] = set(cols.tolist())
    assert zero[0.0] == set()
    assert len(zero[30.0]) >= 3 and zero[30.0] <= set(range(2, 8))  # only noise removed


def test_same_input_and_seed_give_identical_W():
    # the first fit is the module's shared one (whichever test made it): a fit in a process
    # that has run other fits since must still give the same W
    a = _fitted(RMLRRanker, "wine", C=100.0, query_dim=13, random_state=3)
    rows, y, q = qbe_rows(*_wine_rows())
    b = RMLRRanker(C=100.0, query_dim=13, random_state=3, **FAST).fit(rows, y, qid=q)
    np.testing.assert_array_equal(a.W_, b.W_)


def test_progress_is_reported_once_per_cutting_plane_iteration():
    X, c = _wine_rows(25)
    rows, y, q = qbe_rows(X, c)
    seen = []
    with progress_handler(lambda done, total, msg: seen.append((done, total))):
        m = MLRRanker(C=10.0, query_dim=13, max_iter=5).fit(rows, y, qid=q)
    assert m.n_iter_ == 5 and not m.converged_
    assert seen == [(i, 5) for i in range(1, 6)]


# ------------------------------------------------------------------ scores and kNN
def test_query_by_example_scores_are_negative_distances_in_the_input_space():
    X, c = _wine_rows(30)
    X = X * np.linspace(1.0, 5.0, 13) + 3.0  # unscaled inputs: zscore inside the ranker
    rows, y, q = qbe_rows(X, c)
    m = MLRRanker(C=10.0, query_dim=13, **FAST).fit(rows, y, qid=q)
    diff = rows[:50, :13] - rows[:50, 13:]
    expect = -np.einsum("ij,jk,ik->i", diff, m.M_, diff)
    np.testing.assert_allclose(m.predict(rows[:50]), expect, rtol=1e-10, atol=1e-12)


def test_ideal_candidate_mode_scores_distance_to_top_label_mean():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 4)) * [1.0, 2.0, 3.0, 4.0]
    y = rng.integers(0, 3, size=60)
    X[y == 2] += [1.0, 2.0, 0.0, 0.0]
    qid = np.repeat(np.arange(6), 10)
    m = MLRRanker(C=10.0, **FAST).fit(X, y, qid=qid)
    Xs = (X - X.mean(0)) / X.std(0)
    np.testing.assert_allclose(m.z_, Xs[y == 2].mean(0), rtol=1e-12)
    diff = Xs - m.z_
    np.testing.assert_allclose(
        m.predict(X), -np.einsum("ij,jk,ik->i", diff, m.W_, diff), rtol=1e-10, atol=1e-12
    )


def test_knn_error_with_identity_matches_scikit_learn():
    rng = np.random.default_rng(4)
    Xa, Xb = rng.normal(size=(80, 3)), rng.normal(size=(40, 3))
    ca = (Xa[:, 0] + 0.5 * rng.normal(size=80) > 0).astype(int)
    cb = (Xb[:, 0] > 0).astype(int)
    for k in (1, 3, 7):  # two classes, odd k: no vote ties
        sk = KNeighborsClassifier(n_neighbors=k).fit(Xa, ca).predict(Xb)
        assert knn_error(np.eye(3), Xa, ca, Xb, cb, k) == pytest.approx(np.mean(sk != cb))


def test_knn_vote_tie_goes_to_the_nearest_tied_class_and_W_changes_neighbours():
    Xa = np.array([[1.0, 0.0], [0.0, 2.0], [0.0, -3.0], [5.0, 5.0]])
    ca = np.array([0, 1, 2, 2])
    t = np.zeros((1, 2))
    assert knn_predict(np.eye(2), Xa, ca, t, 2)[0] == 0  # tie 0 vs 1: class 0 is nearer
    # weighting the first coordinate 100x makes (0, 2) nearer than (1, 0)
    assert knn_predict(np.diag([100.0, 1.0]), Xa, ca, t, 2)[0] == 1
    assert knn_error(np.diag([100.0, 1.0]), Xa, ca, t, np.array([0]), 1) == 1.0


# ------------------------------------------------------------------ contract and errors
@pytest.mark.parametrize(
    "params, word",
    [
        ({"loss": "ndcg10"}, "loss"),
        ({"k": 0}, "k"),
        ({"C": -1.0}, "C"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"max_iter": 1.5}, "max_iter"),
        ({"query_dim": 0}, "query_dim"),
        ({"scaling": "l2"}, "scaling"),
        ({"n_threads": 0}, "n_threads"),
    ],
)
def test_bad_parameters_raise_errors_naming_them(params, word):
    X = np.random.default_rng(0).normal(size=(6, 4))
    with pytest.raises(ValueError, match=word):
        MLRRanker(**params).fit(X, np.array([1, 0, 0, 1, 0, 0]), qid=np.repeat([1, 2], 3))


def test_rmlr_rejects_negative_lam_and_query_dim_width_mismatch():
    X = np.random.default_rng(0).normal(size=(6, 4))
    y, q = np.array([1, 0, 0, 1, 0, 0]), np.repeat([1, 2], 3)
    with pytest.raises(ValueError, match="lam"):
        RMLRRanker(lam=-1.0).fit(X, y, qid=q)
    with pytest.raises(ValueError, match="query_dim=3"):
        MLRRanker(query_dim=3).fit(X, y, qid=q)


def test_registry_names_resolve_to_these_classes():
    from ltr_bench.registry import load_ranker_class

    assert load_ranker_class("mlr") is MLRRanker
    assert load_ranker_class("rmlr") is RMLRRanker


@parametrize_with_checks([MLRRanker(C=10.0, **FAST), RMLRRanker(C=10.0, **FAST)])
def test_mlr_ranker_follows_the_ranker_contract(ranker, check):
    check(ranker)


@pytest.mark.parametrize("cls", [MLRRanker, RMLRRanker], ids=lambda c: c.__name__)
def test_tags_declare_the_query_block_and_threads_and_no_seed(cls):
    # no randomness in training: nothing for a seed to do
    assert cls().ranker_tags() == RankerTags(
        requires_qid_at_predict=False,
        uses_eval_set=False,
        deterministic=True,
        thread_param="n_threads",
        seed_param=None,
        query_dim_param="query_dim",
    )


def test_fitted_info_reports_rank_columns_and_convergence_of_W():
    m = _fitted(RMLRRanker, "two", C=10.0, lam=30.0, query_dim=8)
    info = m.fitted_info()
    used = np.flatnonzero(m.W_.any(axis=0))
    assert info["n_features"] == 8
    assert info["n_nonzero_columns"] == used.size < 8  # the group penalty removed some
    assert 1 <= info["rank_W"] <= used.size
    # rank independently: of the block on the used features, by singular values
    assert info["rank_W"] == np.linalg.matrix_rank(m.W_[np.ix_(used, used)])
    assert info["n_iter"] == m.n_iter_ and info["converged"] is m.converged_ is True
    assert info["final_violation"] <= info["xi"] + m.epsilon  # the stopping rule fired
    assert info["trace_W"] == pytest.approx(np.trace(m.W_))


def test_fitted_info_rank_ignores_eigenvalues_at_rounding_level():
    X, y, qid = _tiny_ranking()
    m = MLRRanker(C=10.0, **FAST).fit(X, y, qid=qid)
    A = np.random.default_rng(1).normal(size=(4, 2))
    m.W_ = A @ A.T + 1e-13 * np.eye(4)  # rank 2 up to rounding noise
    assert m.fitted_info()["rank_W"] == 2
    m.W_ = np.zeros((4, 4))
    assert m.fitted_info()["rank_W"] == 0 and m.fitted_info()["n_nonzero_columns"] == 0


def _tiny_ranking():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(24, 4))
    y = (X[:, 0] > 0).astype(int)
    return X, y, np.repeat(np.arange(4), 6)

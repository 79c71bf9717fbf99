"""Coordinate Ascent (ltr_bench_baselines.coordinate_ascent): its batched NDCG against the
project's metric, the gain-coded sort of its line search against brute force (ties and
near ties included), monotone training NDCG, and the exact optimum of 2-feature problems."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ltr_bench.evaluation.metrics import evaluate
from ltr_bench.ranker import query_boundaries
from ltr_bench.testing import check_ranker, make_check_data
from ltr_bench_baselines.coordinate_ascent import CoordinateAscentRanker, TopKNDCG


def test_coordinate_ascent_follows_the_ranker_contract():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check_ranker(CoordinateAscentRanker(restarts=2, random_state=0))
        check_ranker(CoordinateAscentRanker(restarts=1, use_validation=False, random_state=0))


@pytest.mark.parametrize("k", [1, 3, 10, 40])
def test_batched_top_k_ndcg_equals_the_projects_ndcg_on_tie_free_scores(k):
    rng = np.random.default_rng(k)
    sizes = rng.integers(2, 30, size=40)  # some queries shorter than k, widths bucketed
    qid = np.repeat(np.arange(40), sizes)
    y = rng.integers(0, 5, size=qid.size)
    y[np.r_[0, np.cumsum(sizes)[:-1]]] = 1 + rng.integers(0, 4, size=40)  # none empty
    S = rng.standard_normal((5, qid.size))
    ndcg = TopKNDCG(y, query_boundaries(qid), k)
    got = ndcg.mean(np.stack([ndcg.pad(s, -np.inf) for s in S]))
    expected = [evaluate(y, s, qid, f"ndcg@{k}")[f"ndcg@{k}"] for s in S]
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_training_ndcg_never_decreases_within_a_restart():
    X, y, qid = make_check_data(n_queries=25, n_features=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model = CoordinateAscentRanker(restarts=3, random_state=4).fit(X, y, qid=qid)
    assert len(model.trace_) == 3
    for trace, final in zip(model.trace_, model.restart_scores_):
        assert np.all(np.diff(trace) > 0) and trace[-1] == final
    keep = np.isin(qid, [q for q in np.unique(qid) if np.ptp(y[qid == q]) > 0])
    start = evaluate(y[keep], X[keep].sum(axis=1), qid[keep], "ndcg@10")["ndcg@10"]
    assert model.train_metric_ >= start
    assert model.train_metric_ == pytest.approx(model.restart_scores_.max(), abs=1e-12)


def _two_feature_problem(seed, noise, n_queries=6, m=12):
    """Labels 0/1/2 from the top documents of ``x1 - 0.6 x2 + noise``."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_queries * m, 2))
    qid = np.repeat(np.arange(n_queries), m)
    rel = X[:, 0] - 0.6 * X[:, 1] + noise * rng.standard_normal(X.shape[0])
    y = np.zeros(X.shape[0], dtype=np.int64)
    for q in range(n_queries):
        r = rel[qid == q]
        y[qid == q] = (r >= np.sort(r)[-3]).astype(int) + (r >= r.max())
    return X, y, qid


def _exact_best_ndcg(X, y, qid):
    """The best NDCG@10 of any direction (cos t, sin t): the ranking changes only at angles
    where two documents of a query tie, so one angle strictly between each pair of
    consecutive such angles visits every ranking a linear model on 2 features can make."""
    angles = [0.0, 2 * np.pi]
    for q in np.unique(qid):
        Z = X[qid == q]
        for i in range(len(Z)):
            for j in range(i + 1, len(Z)):
                d = Z[i] - Z[j]
                t = np.arctan2(-d[0], d[1])
                angles += [t % (2 * np.pi), (t + np.pi) % (2 * np.pi)]
    angles = np.sort(angles)
    mids = (angles[1:] + angles[:-1]) / 2
    return max(
        evaluate(y, X @ np.array([np.cos(t), np.sin(t)]), qid, "ndcg@10")["ndcg@10"] for t in mids
    )


@pytest.mark.parametrize("seed", range(4))
def test_reaches_the_brute_force_optimum_of_a_two_feature_problem(seed):
    X, y, qid = _two_feature_problem(seed, noise=0.0)
    best = _exact_best_ndcg(X, y, qid)
    assert best == pytest.approx(1.0)  # noise-free: some direction orders every query
    model = CoordinateAscentRanker(random_state=0).fit(X, y, qid=qid)
    assert model.train_metric_ == pytest.approx(best, abs=1e-12)


def test_the_same_seed_gives_the_same_model_and_weights_have_unit_l1_norm():
    X, y, qid = make_check_data(n_queries=15)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        a = CoordinateAscentRanker(restarts=2, random_state=3).fit(X, y, qid=qid)
        b = CoordinateAscentRanker(restarts=2, random_state=3).fit(X, y, qid=qid)
    assert np.array_equal(a.coef_, b.coef_)
    assert np.abs(a.coef_).sum() == pytest.approx(1.0)


def test_a_query_with_all_labels_equal_is_skipped_and_counted():
    X, y, qid = make_check_data(n_queries=6)
    y = np.where(qid == qid[0], 0, y)
    with pytest.warns(UserWarning, match="queries have all labels equal"):
        model = CoordinateAscentRanker(restarts=1).fit(X, y, qid=qid)
    assert model.fitted_info()["n_queries_skipped"] >= 1
    with pytest.warns(UserWarning, match="6 of 6"):
        flat = CoordinateAscentRanker(restarts=1).fit(X, np.zeros_like(y), qid=qid)
    assert np.isfinite(flat.predict(X)).all()


@pytest.mark.parametrize(
    "params, word",
    [
        ({"metric": "map"}, "ndcg@k for coordinate-ascent"),
        ({"metric": "nDCG"}, "metric must be one of"),
        ({"restarts": 0}, "restarts"),
        ({"max_steps": 0}, "max_steps"),
        ({"step_base": 0.0}, "step_base"),
        ({"tolerance": -0.1}, "tolerance"),
    ],
)
def test_bad_parameters_are_refused_before_any_data(params, word):
    with pytest.raises(ValueError, match=word):
        CoordinateAscentRanker(**params).validate_params()


@pytest.mark.parametrize("direction", [1, -1])
def test_line_search_equals_evaluating_every_trial_on_every_document(direction):
    rng = np.random.default_rng(7)
    sizes = rng.integers(2, 160, size=60)  # long lists get pruned, short ones do not
    qid = np.repeat(np.arange(60), sizes)
    y = rng.integers(0, 5, size=qid.size)
    y[np.r_[0, np.cumsum(sizes)[:-1]]] = 2
    X = rng.standard_normal((qid.size, 2))
    ndcg = TopKNDCG(y, query_boundaries(qid), 10)
    s, x = ndcg.pad(X[:, 0], -np.inf), ndcg.pad(X[:, 1], 0.0)
    deltas = direction * 0.001 * (2.0 ** np.arange(1, 26) - 1)
    full = ndcg.mean(s[None, :] + deltas[:, None] * x[None, :])
    np.testing.assert_allclose(ndcg.line(s, x, deltas), full, rtol=1e-12)
    expected = [evaluate(y, X[:, 0] + d * X[:, 1], qid, "ndcg@10")["ndcg@10"] for d in deltas]
    np.testing.assert_allclose(full, expected, rtol=1e-12)


def _near_tie_problem(seed, k):
    """Queries of 2..80 documents whose top holds pairs of scores 1-3 units in the last place
    apart with the better one less relevant (a sort on gain-coded low bits would swap them),
    and exact ties between documents of equal label; ``x = 0`` on those, so every trial step
    keeps them."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 80, size=50)
    qid = np.repeat(np.arange(50), sizes)
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    y = rng.integers(0, 5, size=qid.size)
    s, x = rng.standard_normal(qid.size), rng.standard_normal(qid.size)
    for q, a in enumerate(starts):
        if sizes[q] < 4:
            y[a] = 1 + rng.integers(0, 4)
            continue
        top = 3.0 + rng.uniform(-1, 1)  # above the others at small steps
        s[a], s[a + 1] = top, top + (1 + q % 3) * np.spacing(top)
        y[a], y[a + 1] = 4, q % 4  # the higher score is less relevant
        s[a + 2], s[a + 3] = top - 0.5, top - 0.5  # an exact tie, equal labels
        y[a + 2] = y[a + 3] = 2
        x[a : a + 4] = 0.0
    return s, x, y, qid


@pytest.mark.parametrize("k", [1, 3, 10, 40])
@pytest.mark.parametrize("direction", [1, -1])
def test_gain_coded_sort_equals_brute_force_ndcg_with_near_ties_redone_exactly(
    k, direction, monkeypatch
):
    import ltr_bench_baselines.coordinate_ascent as ca

    s, x, y, qid = _near_tie_problem(k + direction, k)
    ndcg = TopKNDCG(y, query_boundaries(qid), k)
    redone = []
    exact_dcg = ca._dcg
    monkeypatch.setattr(ca, "_dcg", lambda S, *a: redone.append(S.shape[1]) or exact_dcg(S, *a))
    deltas = direction * 0.001 * (2.0 ** np.arange(1, 26) - 1)
    got = ndcg.line(ndcg.pad(s, -np.inf), ndcg.pad(x, 0.0), deltas)
    assert sum(redone) > 0  # the near ties were caught and redone from the exact scores
    expected = [evaluate(y, s + d * x, qid, f"ndcg@{k}")[f"ndcg@{k}"] for d in deltas]
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("k", [2, 10])
def test_line_search_and_mean_give_bit_identical_values_for_the_same_scores(k):
    s, x, y, qid = _near_tie_problem(100 + k, k)
    ndcg = TopKNDCG(y, query_boundaries(qid), k)
    sp, xp = ndcg.pad(s, -np.inf), ndcg.pad(x, 0.0)
    for deltas in (np.array([-0.3]), 0.01 * (2.0 ** np.arange(1, 26) - 1)):
        line = ndcg.line(sp, xp, deltas)
        assert np.array_equal(line, ndcg.mean(sp[None, :] + deltas[:, None] * xp[None, :]))


def test_line_search_in_blocks_of_one_query_equals_one_block_per_bucket(monkeypatch):
    import ltr_bench_baselines.coordinate_ascent as ca

    s, x, y, qid = _near_tie_problem(5, 10)
    ndcg = TopKNDCG(y, query_boundaries(qid), 10)
    sp, xp = ndcg.pad(s, -np.inf), ndcg.pad(x, 0.0)
    deltas = -0.001 * (2.0 ** np.arange(1, 26) - 1)
    whole = ndcg.line(sp, xp, deltas)
    assert max(nb for _, nb, *_ in ndcg.buckets) > 1  # some bucket really is cut up
    monkeypatch.setattr(ca, "_CHUNK", 1)  # one query per block
    assert np.array_equal(ndcg.line(sp, xp, deltas), whole)


def test_many_label_values_get_wider_gain_codes_and_stay_exact():
    rng = np.random.default_rng(11)
    sizes = rng.integers(2, 60, size=40)
    qid = np.repeat(np.arange(40), sizes)
    y = rng.integers(0, 21, size=qid.size)  # 21 gains: 5 code bits
    y[np.r_[0, np.cumsum(sizes)[:-1]]] = 20
    s, x = rng.standard_normal(qid.size), rng.standard_normal(qid.size)
    ndcg = TopKNDCG(y, query_boundaries(qid), 10)
    assert ndcg.code_bits == 5
    deltas = 0.001 * (2.0 ** np.arange(1, 26) - 1)
    got = ndcg.line(ndcg.pad(s, -np.inf), ndcg.pad(x, 0.0), deltas)
    expected = [evaluate(y, s + d * x, qid, "ndcg@10")["ndcg@10"] for d in deltas]
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_negative_labels_keep_the_padding_at_minus_infinity_in_the_gain_coded_sort():
    rng = np.random.default_rng(12)
    sizes = rng.integers(2, 30, size=30)  # short queries: padded rows reach the top k
    qid = np.repeat(np.arange(30), sizes)
    y = rng.integers(-2, 3, size=qid.size)  # gains below 0 as well
    y[np.r_[0, np.cumsum(sizes)[:-1]]] = 2
    s, x = rng.standard_normal(qid.size), rng.standard_normal(qid.size)
    ndcg = TopKNDCG(y, query_boundaries(qid), 10)
    assert ndcg.gain_of_code[0] == 0.0 and ndcg.gain_of_code.min() < 0
    sp, xp = ndcg.pad(s, -np.inf), ndcg.pad(x, 0.0)
    deltas = 0.01 * (2.0 ** np.arange(1, 26) - 1)
    line = ndcg.line(sp, xp, deltas)
    assert np.array_equal(line, ndcg.mean(sp[None, :] + deltas[:, None] * xp[None, :]))

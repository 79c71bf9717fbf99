"""Batched distances and the score of Eq. 13 (and its variants) against dense formulas."""

import numpy as np
import pytest

from ltr_bench_lgmml.gmml import gmml_lowrank
from ltr_bench_lgmml.scoring import MetricBank, g_of


def _bank(rng, d=9, m=4, distance="paper", score_form="eq13", query_dependent=False):
    metrics = []
    for r in range(m):
        n_pos, n_neg = 2 + r, 1 + (r % 3)
        if r == m - 1:
            n_pos, n_neg = 1, 0  # rank-0 metric: exercises the padded zero column
        metrics.append(
            gmml_lowrank(
                [(rng.normal(size=(n_pos, d)), rng.normal(size=(n_neg, d)))],
                reg_lambda=0.3,
                t=0.5,
                distance=distance,
            )
        )
    anchors = None if query_dependent else rng.normal(size=(m, d))
    return MetricBank.from_metrics(metrics, anchors, score_form), metrics, anchors


@pytest.mark.parametrize("distance", ["paper", "mahalanobis"])
def test_batched_squared_distances_equal_the_dense_formula(distance):
    rng = np.random.default_rng(0)
    bank, metrics, anchors = _bank(rng, distance=distance)
    X = rng.normal(size=(50, 9))
    ref = np.stack(
        [np.einsum("ij,jk,ik->i", X - a, q.dense(), X - a) for q, a in zip(metrics, anchors)],
        axis=1,
    )
    got = bank.sq_distances(X, dtype=np.float64)
    assert np.allclose(got, ref, rtol=1e-10, atol=1e-12)


def test_query_dependent_distances_are_to_each_rows_own_query_point():
    rng = np.random.default_rng(1)
    bank, metrics, _ = _bank(rng, query_dependent=True)
    X, Q = rng.normal(size=(20, 9)), rng.normal(size=(20, 9))
    ref = np.stack([np.einsum("ij,jk,ik->i", X - Q, q.dense(), X - Q) for q in metrics], axis=1)
    assert np.allclose(bank.sq_distances(X, Q, dtype=np.float64), ref, rtol=1e-10)


def test_float32_distances_stay_close_to_float64():
    rng = np.random.default_rng(2)
    bank, _, _ = _bank(rng)
    X = rng.normal(size=(200, 9))
    d64 = np.sqrt(bank.sq_distances(X, dtype=np.float64))
    d32 = np.sqrt(bank.sq_distances(X, dtype=np.float32))
    assert np.max(np.abs(d32 - d64) / d64) < 1e-4


def test_eq13_literal_score_is_minus_weighted_g_of_distance():
    rng = np.random.default_rng(3)
    bank, _, _ = _bank(rng, score_form="eq13")
    X, phi = rng.normal(size=(10, 9)), rng.uniform(0.1, 2, size=4)
    delta = np.sqrt(bank.sq_distances(X, dtype=np.float64))
    expected = -(phi * delta * np.exp(-delta)).sum(axis=1)
    assert np.allclose(bank.sign * bank.features(X, dtype=np.float64) @ phi, expected)


@pytest.mark.parametrize("score_form", ["rising", "eq13"])
def test_documents_closer_to_the_anchor_score_higher(score_form):
    # One isotropic metric (single document: M = I) with anchor at the origin. Distances
    # along a ray; for eq13 they stay below 1 (the rising side), for rising they go far out.
    one = gmml_lowrank(
        [(np.zeros((1, 3)), np.zeros((0, 3)))], reg_lambda=1.0, t=0.5, distance="mahalanobis"
    )
    bank = MetricBank.from_metrics([one], np.zeros((1, 3)), score_form)
    radii = np.linspace(0.0, 0.9 if score_form == "eq13" else 50.0, 12)
    X = np.outer(radii, [1.0, 0.0, 0.0])
    if score_form == "rising":
        bank.fit_dist_scale(X, None, 1.0, dtype=np.float64)
    scores = bank.sign * bank.features(X, dtype=np.float64) @ np.ones(1)
    assert np.all(np.diff(scores) < 0)


def test_eq13_literal_ranks_far_documents_first_on_the_falling_side():
    # The failure docs/decisions.md#lgmml-score-direction describes: beyond distance 1, -g(d)
    # increases with d.
    one = gmml_lowrank(
        [(np.zeros((1, 2)), np.zeros((0, 2)))], reg_lambda=1.0, t=0.5, distance="mahalanobis"
    )
    bank = MetricBank.from_metrics([one], np.zeros((1, 2)), "eq13")
    X = np.array([[2.0, 0.0], [5.0, 0.0]])
    s = bank.sign * bank.features(X, dtype=np.float64)[:, 0]
    assert s[1] > s[0]
    assert g_of(np.array([1.0]))[0] == pytest.approx(np.exp(-1))


def test_dense_check_covers_metrics_with_negative_and_positive_coefficients():
    # The scorer sums positive-g and negative-g columns in separate runs; the dense-formula
    # test above proves that sign handling only if both signs occur in one bank.
    bank, _, _ = _bank(np.random.default_rng(0))
    assert (bank.g < 0).any() and (bank.g > 0).any()
    ends = np.r_[bank.seg[1:], bank.g.size]
    assert any((bank.g[a:b] < 0).any() and (bank.g[a:b] > 0).any() for a, b in zip(bank.seg, ends))


@pytest.mark.parametrize("max_rank", [1, 2, 3])
def test_truncated_bank_equals_building_with_max_rank_and_the_dense_truncated_form(max_rank):
    rng = np.random.default_rng(3)
    bank, metrics, anchors = _bank(rng)
    X = rng.normal(size=(40, 9))
    built = MetricBank.from_metrics(metrics, anchors, "eq13", max_rank=max_rank)
    cut = bank.truncated(max_rank)
    assert np.allclose(
        cut.sq_distances(X, dtype=np.float64),
        built.sq_distances(X, dtype=np.float64),
        rtol=1e-12,
        atol=1e-12,
    )
    # Hand-built reference: each metric keeps its max_rank largest-|g| directions.
    ref = []
    for q, a in zip(metrics, anchors):
        keep = np.argsort(-np.abs(q.g), kind="stable")[:max_rank]
        Qd = q.alpha * np.eye(9) + (q.V[:, keep] * q.g[keep]) @ q.V[:, keep].T
        ref.append(np.einsum("ij,jk,ik->i", X - a, Qd, X - a))
    assert np.allclose(
        cut.sq_distances(X, dtype=np.float64), np.stack(ref, axis=1), rtol=1e-10, atol=1e-12
    )
    assert np.all(np.diff(np.r_[cut.seg, cut.V.shape[1]]) <= max_rank)


def test_truncating_above_every_rank_changes_nothing():
    rng = np.random.default_rng(4)
    bank, _, _ = _bank(rng)
    X = rng.normal(size=(30, 9))
    assert np.array_equal(
        bank.truncated(100).sq_distances(X, dtype=np.float64),
        bank.sq_distances(X, dtype=np.float64),
    )


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, None])
def test_truncated_rejects_a_bad_max_rank(bad):
    bank, _, _ = _bank(np.random.default_rng(5))
    with pytest.raises(ValueError, match="max_rank"):
        bank.truncated(bad)


@pytest.mark.parametrize("slack", [0.0, 10.0])
def test_padded_and_run_layouts_give_the_same_distances_with_mixed_ranks_and_signs(
    monkeypatch, slack
):
    # ranks 0..5 and g of both signs; slack 0 forces the run layout (padding would add
    # columns), slack 10 the padded one: both must equal the dense formula
    import ltr_bench_lgmml.scoring as scoring
    from ltr_bench_lgmml.gmml import LowRankQuadratic

    monkeypatch.setattr(scoring, "_PAD_SLACK", slack)
    rng = np.random.default_rng(11)
    d, metrics = 7, []
    for k in (3, 0, 5, 1, 5):
        V, _ = np.linalg.qr(rng.normal(size=(d, max(k, 1))))
        metrics.append(LowRankQuadratic(0.7, V[:, :k], rng.uniform(-0.6, 2.0, size=k)))
    A = rng.normal(size=(len(metrics), d))
    bank = MetricBank.from_metrics(metrics, A, "eq13")
    X = rng.normal(size=(30, d))
    got = bank.sq_distances(X, dtype=np.float64)
    assert bool(bank._prepared(np.float64)[-1]) == (slack > 0)
    want = np.stack(
        [np.einsum("ij,jk,ik->i", X - a, q.dense(), X - a) for q, a in zip(metrics, A)], axis=1
    )
    assert np.allclose(got, want, rtol=1e-10, atol=1e-12)

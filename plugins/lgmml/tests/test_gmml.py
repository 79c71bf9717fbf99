"""GMML closed form (Eq. 4-9) and its exact low-rank form (docs/decisions.md#gmml-low-rank)."""

import numpy as np
import pytest

from ltr_bench_lgmml.gmml import geometric_mean, gmml, gmml_lowrank


def _spd(rng, d, shift=0.5):
    A = rng.normal(size=(d, 2 * d))
    return A @ A.T / d + shift * np.eye(d)


def _rel(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


def test_half_point_solves_riccati_equation_M_S_M_equals_D():
    rng = np.random.default_rng(0)
    S, D = _spd(rng, 7), _spd(rng, 7)
    M = geometric_mean(S, D, 0.5)
    assert _rel(M @ S @ M, D) < 1e-10


def test_endpoints_t0_is_S_inverse_and_t1_is_D():
    rng = np.random.default_rng(1)
    S, D = _spd(rng, 6), _spd(rng, 6)
    assert _rel(geometric_mean(S, D, 0.0), np.linalg.inv(S)) < 1e-10
    assert _rel(geometric_mean(S, D, 1.0), D) < 1e-10


def test_geodesic_point_is_symmetric_positive_definite_for_every_t():
    rng = np.random.default_rng(2)
    S, D = _spd(rng, 5, 1e-3), _spd(rng, 5, 1e-3)
    for t in (0.0, 0.25, 0.5, 0.9, 1.0):
        M = geometric_mean(S, D, t)
        assert np.array_equal(M, M.T)
        assert np.linalg.eigvalsh(M).min() > 0


def test_geometric_mean_matches_scipy_matrix_power_formula():
    # Independent route: S^-1/2 (S^1/2 D S^1/2)^t S^-1/2 with scipy's fractional power.
    from scipy.linalg import fractional_matrix_power, sqrtm

    rng = np.random.default_rng(3)
    S, D = _spd(rng, 4), _spd(rng, 4)
    Sh = np.real(sqrtm(S))
    Smh = np.linalg.inv(Sh)
    ref = Smh @ np.real(fractional_matrix_power(Sh @ D @ Sh, 0.3)) @ Smh
    assert _rel(geometric_mean(S, D, 0.3), ref) < 1e-8


def test_gmml_from_pairs_is_invariant_to_pair_order():
    rng = np.random.default_rng(4)
    sim, dis = rng.normal(size=(9, 5)), rng.normal(size=(12, 5))
    M1 = gmml(sim, dis, reg_lambda=0.1, t=0.5)
    M2 = gmml(sim[rng.permutation(9)], dis[rng.permutation(12)], reg_lambda=0.1, t=0.5)
    assert np.allclose(M1, M2, rtol=1e-12, atol=1e-12)


def _pairs_from_groups(groups):
    sim, dis = [], []
    for P, N in groups:
        for i in range(len(P)):
            for j in range(i + 1, len(P)):
                sim.append(P[i] - P[j])
            for k in range(len(N)):
                dis.append(P[i] - N[k])
    d = groups[0][0].shape[1]
    return np.reshape(sim, (-1, d)), np.reshape(dis, (-1, d))


@pytest.mark.parametrize("t", [0.0, 0.5, 0.8])
def test_lowrank_form_equals_the_full_d_by_d_solution(t):
    # Few documents in d = 20: the span has rank 6 + 4 - 1 + 3 + 2 - 1 = 13 < 20.
    rng = np.random.default_rng(5)
    groups = [
        (rng.normal(size=(6, 20)), rng.normal(size=(4, 20))),
        (rng.normal(size=(3, 20)), rng.normal(size=(2, 20))),
    ]
    sim, dis = _pairs_from_groups(groups)
    M = gmml(sim, dis, reg_lambda=0.1, t=t)
    maha = gmml_lowrank(groups, reg_lambda=0.1, t=t, distance="mahalanobis")
    paper = gmml_lowrank(groups, reg_lambda=0.1, t=t, distance="paper")
    assert maha.V.shape[1] == 13
    assert _rel(maha.dense(), M) < 1e-9
    assert _rel(paper.dense(), M @ M) < 1e-9
    x = rng.normal(size=(5, 20))
    assert np.allclose(maha.quad(x), np.einsum("ij,jk,ik->i", x, M, x), rtol=1e-9)
    assert np.allclose(paper.quad(x), np.sum((x @ M) ** 2, axis=1), rtol=1e-9)


def test_lowrank_form_with_more_documents_than_dimensions_is_full_rank_and_exact():
    rng = np.random.default_rng(6)
    groups = [(rng.normal(size=(8, 5)), rng.normal(size=(9, 5)))]
    sim, dis = _pairs_from_groups(groups)
    q = gmml_lowrank(groups, reg_lambda=0.3, t=0.5, distance="mahalanobis")
    assert q.V.shape[1] == 5
    assert _rel(q.dense(), gmml(sim, dis, reg_lambda=0.3, t=0.5)) < 1e-9


def test_single_document_gives_isotropic_metric_lambda_power():
    q = gmml_lowrank(
        [(np.ones((1, 4)), np.zeros((0, 4)))], reg_lambda=0.2, t=0.5, distance="mahalanobis"
    )
    assert q.V.shape[1] == 0 and q.alpha == pytest.approx(0.2**0.0)
    q = gmml_lowrank(
        [(np.ones((1, 4)), np.zeros((0, 4)))], reg_lambda=0.2, t=0.0, distance="mahalanobis"
    )
    assert q.alpha == pytest.approx(1 / 0.2)


def test_unknown_distance_is_rejected_with_allowed_values():
    with pytest.raises(ValueError, match="'paper' or 'mahalanobis'"):
        gmml_lowrank([(np.ones((2, 3)), np.zeros((1, 3)))], distance="euclid")


def _groups(rng, d=6, scale=1.0):
    return [(scale * rng.normal(size=(4, d)), scale * rng.normal(size=(7, d))) for _ in range(2)]


def test_relative_lambda_makes_the_metric_invariant_to_a_common_feature_scale():
    # S and D scale by s^2 with the features; a lambda relative to their trace scales too,
    # so at t = 1/2 the metric is unchanged. An absolute lambda does not scale with them.
    base = _groups(np.random.default_rng(5), scale=0.01)  # small, like l2-scaled features
    big = [(1000.0 * P, 1000.0 * N) for P, N in base]
    rel = [
        gmml_lowrank(g, reg_lambda=0.1, reg_scale="relative", distance="mahalanobis")
        for g in (base, big)
    ]
    assert _rel(rel[1].dense(), rel[0].dense()) < 1e-8
    assert np.isclose(rel[1].reg_lambda, 1e6 * rel[0].reg_lambda)
    ab = [
        gmml_lowrank(g, reg_lambda=0.1, reg_scale="absolute", distance="mahalanobis")
        for g in (base, big)
    ]
    assert _rel(ab[1].dense(), ab[0].dense()) > 0.1


def test_relative_lambda_is_the_fraction_of_the_mean_scatter_eigenvalue():
    # lambda = reg_lambda * (tr A + tr B) / (2 d) with A, B from explicit pair loops; the
    # low-rank result then equals full GMML with that absolute lambda.
    rng = np.random.default_rng(6)
    groups = _groups(rng)
    d = groups[0][0].shape[1]
    sim = [P[i] - P[j] for P, _ in groups for i in range(len(P)) for j in range(i + 1, len(P))]
    dis = [p - n for P, N in groups for p in P for n in N]
    lam = 0.3 * (sum(v @ v for v in sim) + sum(v @ v for v in dis)) / (2 * d)
    q = gmml_lowrank(groups, reg_lambda=0.3, reg_scale="relative", distance="mahalanobis")
    assert np.isclose(q.reg_lambda, lam)
    assert _rel(q.dense(), gmml(np.array(sim), np.array(dis), reg_lambda=lam)) < 1e-8


def test_eig_ratio_is_the_condition_number_of_the_dense_form():
    q = gmml_lowrank(_groups(np.random.default_rng(7)), reg_lambda=0.05, distance="mahalanobis")
    w = np.linalg.eigvalsh(q.dense())
    assert np.isclose(q.eig_ratio(), w.max() / w.min())


def test_unknown_reg_scale_is_rejected_by_name():
    with pytest.raises(ValueError, match="reg_scale"):
        gmml_lowrank(_groups(np.random.default_rng(0)), reg_scale="trace")

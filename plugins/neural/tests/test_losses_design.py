"""The design paper's losses against independent references: brute force over permutations
(Plackett-Luce) and label configurations (the MRF), explicit loops (pairwise, softmax), the
exact metrics of ltr_bench.evaluation at T -> 0 (smoothed metrics), gradcheck in float64."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from ltr_bench.evaluation.metrics import evaluate
from ltr_bench_neural.losses import LOSSES, check_loss_args
from ltr_bench_neural.weights import element_weights, pair_weights

D = torch.float64


def _t(values, dtype=D):
    return torch.tensor([values], dtype=dtype)


def _one(scores, labels):
    s, y = _t(scores), _t(labels)
    return s, y, torch.ones_like(y, dtype=torch.bool)


def _loss(name, s, y, m, weights=None, **args):
    spec = LOSSES[name]
    return float(spec.function_object()(s, y, m, weights=weights, **args))


# --------------------------------------------------------------------- Plackett-Luce


def _pl_sequential(scores, order):
    """-log P(order) by Plackett's sequential formula, order[0] the object ranked first."""
    total = 0.0
    for k, i in enumerate(order):
        rest = order[k:]
        total += -scores[i] + math.log(sum(math.exp(scores[j]) for j in rest))
    return total


def _labels_for(order):
    """Distinct labels that put ``order`` first-to-last."""
    y = [0.0] * len(order)
    for rank, i in enumerate(order):
        y[i] = float(len(order) - 1 - rank)
    return y


def test_pl_is_the_plackett_luce_likelihood_summing_to_one_over_all_permutations():
    scores = [0.3, -1.2, 2.0, 0.7]
    total = 0.0
    for order in itertools.permutations(range(4)):
        s, y, m = _one(scores, _labels_for(order))
        nll = _loss("pl", s, y, m)
        assert nll == pytest.approx(_pl_sequential(scores, order), rel=1e-12)
        total += math.exp(-nll)
    assert total == pytest.approx(1.0, rel=1e-12)


def test_rpl_is_a_distribution_over_permutations_eliminating_the_worst_first():
    scores = [0.3, -1.2, 2.0, 0.7]
    total = 0.0
    for order in itertools.permutations(range(4)):
        s, y, m = _one(scores, _labels_for(order))
        nll = _loss("rpl", s, y, m)
        # Q: choose the last object with prob. prop. to exp(-f), then the next-to-last, ...
        expected, rest = 0.0, list(order)
        while rest:
            last = rest[-1]
            expected += scores[last] + math.log(sum(math.exp(-scores[j]) for j in rest))
            rest = rest[:-1]
        assert nll == pytest.approx(expected, rel=1e-12)
        total += math.exp(-nll)
    assert total == pytest.approx(1.0, rel=1e-12)


def test_weighted_pl_weights_each_factor_of_the_chain():
    scores, order = [0.5, -0.1, 1.5, 0.2], (2, 0, 3, 1)
    s, y, m = _one(scores, _labels_for(order))
    W = _t([0.9, 0.1, 2.0, 0.4])
    expected = sum(
        W[0, i].item() * (-scores[i] + math.log(sum(math.exp(scores[j]) for j in order[k:])))
        for k, i in enumerate(order)
    )
    assert _loss("pl", s, y, m, W) == pytest.approx(expected, rel=1e-12)


def test_pl_and_rpl_with_ties_use_breslow_risk_sets_and_ignore_row_order():
    scores, labels = [0.4, 1.1, -0.3, 0.9, 0.0], [2, 1, 1, 0, 1]
    s, y, m = _one(scores, labels)
    e = [math.exp(v) for v in scores]
    # PL: object i chosen among the objects not strictly better than i
    pl = sum(
        -scores[i] + math.log(sum(e[j] for j in range(5) if labels[j] <= labels[i]))
        for i in range(5)
    )
    rpl = sum(
        scores[i] + math.log(sum(1 / e[j] for j in range(5) if labels[j] >= labels[i]))
        for i in range(5)
    )
    assert _loss("pl", s, y, m) == pytest.approx(pl, rel=1e-12)
    assert _loss("rpl", s, y, m) == pytest.approx(rpl, rel=1e-12)
    perm = [3, 1, 4, 0, 2]
    s2, y2, m2 = _one([scores[i] for i in perm], [labels[i] for i in perm])
    assert _loss("pl", s2, y2, m2) == pytest.approx(pl, rel=1e-12)
    assert _loss("rpl", s2, y2, m2) == pytest.approx(rpl, rel=1e-12)


# --------------------------------------------------------------------- the MRF


def _mrf_log_z(scores, K, gamma):
    N = len(scores)
    values = []
    for r in itertools.product(range(K), repeat=N):
        values.append(_mrf_energy(scores, r, gamma))
    return float(np.logaddexp.reduce(values))


def _mrf_energy(scores, r, gamma):
    N = len(scores)
    return gamma * sum(
        np.sign(r[i] - r[j]) * (scores[i] - scores[j]) for i in range(N) for j in range(i + 1, N)
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_wpll_is_the_pseudo_likelihood_of_the_enumerated_mrf(seed):
    rng = np.random.default_rng(seed)
    N, K = 4, 3
    scores = rng.normal(size=N) * 2
    labels = rng.integers(0, K, size=N)
    gamma = 2 / (N * (N - 1))
    W = rng.uniform(0.1, 2.0, size=N)
    expected = 0.0
    for i in range(N):
        # P(r_i | r_-i) from the joint: P(r) / sum over r_i' of P(r with r_i = r_i')
        energies = []
        for a in range(K):
            r = list(labels)
            r[i] = a
            energies.append(_mrf_energy(scores, r, gamma))
        expected += W[i] * (np.logaddexp.reduce(energies) - energies[labels[i]])
    s, y, m = _one(list(scores), list(labels.astype(float)))
    got = _loss("wpll", s, y, m, _t(list(W)), n_levels=K)
    assert got == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("seed", range(6))
def test_wub_plus_the_appendix_constant_bounds_the_exact_mrf_log_loss(seed):
    rng = np.random.default_rng(seed)
    N, K = 5, 3
    scores = rng.normal(size=N) * 3
    labels = rng.integers(0, K, size=N)
    gamma = float(rng.choice([2 / (N * (N - 1)), 0.7, 1.5]))
    exact = _mrf_log_z(scores, K, gamma) - _mrf_energy(scores, labels, gamma)  # -log P(r)
    s, y, m = _one(list(scores), list(labels.astype(float)))
    wub = _loss("wub", s, y, m, gamma=gamma, n_levels=K)
    # the pairwise terms by their definition: log Z_ij - log psi(r_i, r_j)
    direct = 0.0
    for i in range(N):
        for j in range(i + 1, N):
            d = gamma * (scores[i] - scores[j])
            z = sum(math.exp(np.sign(a - b) * d) for a in range(K) for b in range(K))
            direct += math.log(z) - np.sign(labels[i] - labels[j]) * d
    assert wub == pytest.approx(direct, rel=1e-10)
    assert wub + (N - 2) * math.log(K) >= exact - 1e-9


# --------------------------------------------------------------------- pairwise


PHI = {
    "pair-quadratic": lambda d: (1 - d) ** 2,
    "pair-hinge": lambda d: max(0.0, 1 - d),
    "pair-exp": lambda d: math.exp(-d),
    "pair-logistic": lambda d: math.log1p(math.exp(-d)),
}


@pytest.mark.parametrize("name", sorted(PHI))
def test_pairwise_losses_sum_v_phi_over_preferred_pairs(name):
    rng = np.random.default_rng(4)
    scores = rng.normal(size=6)
    labels = np.array([2, 0, 1, 1, 0, 3], dtype=float)
    V = rng.uniform(0.1, 1.0, size=(6, 6))
    V = V + V.T
    expected = sum(
        V[i, j] * PHI[name](scores[i] - scores[j])
        for i in range(6)
        for j in range(6)
        if labels[i] > labels[j]
    )
    s, y, m = _one(list(scores), list(labels))
    got = _loss(name, s, y, m, torch.tensor(V[None]))
    assert got == pytest.approx(expected, rel=1e-12)


# --------------------------------------------------------------------- softmax (Eq. 5)


def test_softmax_is_minus_log_probability_of_the_best_object():
    scores, labels = [0.2, 1.0, -0.5], [0, 2, 1]
    s, y, m = _one(scores, labels)
    expected = -(1.0 - math.log(sum(math.exp(v) for v in scores)))
    assert _loss("softmax", s, y, m) == pytest.approx(expected, rel=1e-12)
    # tied best objects: the mean of their -log P; all-zero labels: no best object
    s, y, m = _one(scores, [1, 1, 0])
    lse = math.log(sum(math.exp(v) for v in scores))
    assert _loss("softmax", s, y, m) == pytest.approx(lse - 0.6, rel=1e-12)
    s, y, m = _one(scores, [0, 0, 0])
    assert _loss("softmax", s, y, m) == 0.0


def test_softmax_labels_target_is_listnet_cross_entropy():
    scores, labels = [0.2, 1.0, -0.5], [0, 2, 1]
    s, y, m = _one(scores, labels)
    p = np.exp(scores) / np.exp(scores).sum()
    t = np.exp(labels) / np.exp(labels).sum()
    assert _loss("softmax", s, y, m, target="labels") == pytest.approx(-(t * np.log(p)).sum())


# --------------------------------------------------------------------- smoothed metrics


@pytest.mark.parametrize("seed", range(4))
def test_smoothed_metrics_tend_to_the_exact_metrics_as_temperature_goes_to_zero(seed):
    rng = np.random.default_rng(seed)
    n = 9
    scores = rng.normal(size=n)
    labels = rng.integers(0, 4, size=n)
    labels[0] = 3
    qid = np.zeros(n, dtype=int)
    exact = evaluate(labels, scores, qid, [f"ndcg@{n}", f"err@{n}", "mrr"], max_label=3)
    s, y, m = _one(list(scores), list(labels.astype(float)))
    gaps = {}
    for T in (1.0, 1e-2, 1e-5):
        ndcg = 1 - _loss("smooth-ndcg", s, y, m, temperature=T)
        err = 1 - _loss("smooth-err", s, y, m, temperature=T, max_label=3)
        mrr = 1 - _loss("smooth-mrr", s, y, m, temperature=T)
        gaps[T] = (
            abs(ndcg - exact[f"ndcg@{n}"]),
            abs(err - exact[f"err@{n}"]),
            abs(mrr - exact["mrr"]),
        )
    assert max(gaps[1e-5]) < 1e-6, gaps
    assert max(gaps[1.0]) > max(gaps[1e-5])  # the smoothing is not the metric itself


# --------------------------------------------------------------------- gradients, edge cases


def _weights_for(name, y, m):
    kind = LOSSES[name].weights
    if kind == "element":
        return element_weights("inv-log-pos", y, m, n_levels=4)
    if kind == "pair":
        return pair_weights("ndcg-delta/max", y, m, n_levels=4)
    return None


def _batch():
    y = torch.tensor([[3, 0, 1, 2, 1, -1], [0, 2, 1, -1, -1, -1]], dtype=D)
    return y, y >= 0


MY_LOSSES = [
    n
    for n, spec in LOSSES.items()
    if spec.module in ("listwise", "smooth", "elementwise", "pairwise", "mrf")
]


@pytest.mark.parametrize("name", MY_LOSSES)
def test_gradients_match_finite_differences_in_float64(name):
    y, m = _batch()
    gen = torch.Generator().manual_seed(5)
    scores = torch.randn(y.shape, generator=gen, dtype=D, requires_grad=True)
    args = {k: v for k, v in check_loss_args(name, None).items() if v is not None}
    if "temperature" in check_loss_args(name, None):
        args["temperature"] = 0.7
    fn = LOSSES[name].function_object()
    w = _weights_for(name, y, m)
    assert torch.autograd.gradcheck(lambda s: fn(s, y, m, weights=w, **args), (scores,))


@pytest.mark.parametrize("name", MY_LOSSES)
def test_one_document_and_all_zero_queries_give_finite_losses_and_gradients(name):
    y = torch.tensor([[2, -1, -1, -1], [0, 0, 0, 0], [0, -1, -1, -1]], dtype=torch.float32)
    m = y >= 0
    scores = torch.tensor([[50.0, 0, 0, 0], [30.0, -30.0, 0.0, 1e-3], [-40.0, 0, 0, 0]])
    scores.requires_grad_(True)
    args = {"temperature": 1e-3} if "temperature" in LOSSES[name].args else {}
    if "n_levels" in LOSSES[name].args:
        args["n_levels"] = 3
    loss = LOSSES[name].function_object()(scores, y, m, weights=_weights_for(name, y, m), **args)
    loss.backward()
    assert torch.isfinite(loss)
    assert torch.isfinite(scores.grad).all()


def test_padding_changes_nothing():
    y = torch.tensor([[2.0, 0.0, 1.0]], dtype=D)
    s = torch.tensor([[0.3, -0.2, 1.4]], dtype=D)
    yp = torch.tensor([[2.0, 0.0, 1.0, -1.0, -1.0]], dtype=D)
    sp = torch.tensor([[0.3, -0.2, 1.4, 99.0, -99.0]], dtype=D)
    for name in MY_LOSSES:
        args = {"n_levels": 3} if "n_levels" in LOSSES[name].args else {}
        if "temperature" in LOSSES[name].args:
            args["temperature"] = 0.5
        fn = LOSSES[name].function_object()
        a = float(fn(s, y, y >= 0, **args))
        b = float(fn(sp, yp, yp >= 0, **args))
        assert a == pytest.approx(b, rel=1e-12), name

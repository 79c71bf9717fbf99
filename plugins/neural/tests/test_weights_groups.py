"""Weights of Tables 8-9 and the group-level functionals of Table 2, against hand-worked
values; pi (the true position) for ties is the competition rank 1 + #{j : r_j > r_i}."""

from __future__ import annotations

import math

import pytest
import torch

from ltr_bench_neural import design
from ltr_bench_neural.groups import group_scores
from ltr_bench_neural.losses._common import true_positions
from ltr_bench_neural.weights import element_weights, pair_weights

D = torch.float64
# one query: labels 2, 0, 2, 1 (a tie at the top) and one padding entry
Y = torch.tensor([[2.0, 0.0, 2.0, 1.0, -1.0]], dtype=D)
M = Y >= 0
K = 3  # |L|: labels 0..2


def test_true_positions_share_the_best_position_of_a_tie():
    assert true_positions(Y, M)[0, :4].tolist() == [1.0, 4.0, 1.0, 3.0]


def test_element_weights_of_table_8():
    pi = [1.0, 4.0, 1.0, 3.0]
    r = [2.0, 0.0, 2.0, 1.0]
    expected = {
        "rating": r,
        "sqrt-rating": [math.sqrt(v) for v in r],
        "gain": [(2**v - 1) / (2**K - 1) for v in r],
        "inv-pos": [1 / p for p in pi],
        "inv-log-pos": [1 / math.log2(1 + p) for p in pi],
    }
    assert element_weights("one", Y, M, n_levels=K) is None
    for name, values in expected.items():
        w = element_weights(name, Y, M, n_levels=K)[0]
        assert w[:4].tolist() == pytest.approx(values, rel=1e-12), name
        assert w[4] == 0.0
    assert set(expected) | {"one"} == set(design.ELEMENT_WEIGHTS)


def test_pair_weights_of_table_9():
    r = [2.0, 0.0, 2.0, 1.0]
    pi = [1.0, 4.0, 1.0, 3.0]
    R = [(2**v - 1) / (2**K - 1) for v in r]
    eta = [1 / math.log2(1 + p) for p in pi]
    ideal = sorted(R, reverse=True)
    ndcg_max = sum(g / math.log2(2 + k) for k, g in enumerate(ideal))
    n = 4
    formulas = {
        "inv-nq": lambda i, j: 1 / n,
        "rating-diff": lambda i, j: abs(r[i] - r[j]),
        "rating-diff/nq": lambda i, j: abs(r[i] - r[j]) / n,
        "ndcg-delta": lambda i, j: abs((R[i] - R[j]) * (eta[i] - eta[j])),
        "ndcg-delta/max": lambda i, j: abs((R[i] - R[j]) * (eta[i] - eta[j])) / ndcg_max,
        "gain-diff": lambda i, j: abs(R[i] - R[j]),
        "gain-diff/nq": lambda i, j: abs(R[i] - R[j]) / n,
    }
    assert pair_weights("one", Y, M, n_levels=K) is None
    for name, f in formulas.items():
        V = pair_weights(name, Y, M, n_levels=K)[0]
        for i in range(4):
            for j in range(4):
                assert V[i, j].item() == pytest.approx(f(i, j), rel=1e-12, abs=1e-15), name
        assert V[4].abs().sum() == 0 and V[:, 4].abs().sum() == 0
    assert set(formulas) | {"one"} == set(design.PAIR_WEIGHTS)


def test_group_functionals_follow_table_2():
    s = torch.tensor([[0.5, -1.0, 2.0, 0.25, 7.0]], dtype=D)
    members = {2: [0.5, 2.0], 0: [-1.0], 1: [0.25]}
    table2 = {
        "min": min,
        "max": max,
        "mean": lambda v: sum(v) / len(v),
        "geomean": lambda v: math.log(sum(math.exp(x) for x in v) / len(v)),
    }
    for name, f in table2.items():
        g, labels, present = group_scores(s, Y, M, name, n_levels=4)
        assert labels[0].tolist() == [0.0, 1.0, 2.0, -1.0]  # label 3 is absent
        assert present[0].tolist() == [True, True, True, False]
        for level, values in members.items():
            assert g[0, level].item() == pytest.approx(f(values), rel=1e-12), name


def test_group_gradient_reaches_only_the_members_the_functional_uses():
    s = torch.tensor([[0.5, -1.0, 2.0, 0.25, 7.0]], dtype=D, requires_grad=True)
    g, _, present = group_scores(s, Y, M, "max", n_levels=3)
    g[present].sum().backward()
    assert s.grad[0].tolist() == [0.0, 1.0, 1.0, 1.0, 0.0]  # 0.5 < 2.0 in the top group

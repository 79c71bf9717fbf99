"""The literature click models against their definitions.

Each model's definition is written out here independently as a walk down the list driven by
explicit latent coin flips (examined / attracted / satisfied / goes on); enumerating every
outcome of the coins over short lists gives the exact distribution of click vectors. The
models' closed forms (examination, marginal click probability) must equal it, and the
models' samplers must reproduce its joint frequencies within sampling error.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ltr_bench.clicks.models import (
    CascadeModel,
    DBNModel,
    DCMModel,
    PositionBasedModel,
    ShownLists,
    attraction,
)

YMAX = 4
LISTS = [[4, 0, 2, 1], [0, 0, 3, 4], [2, 2, 2, 2]]


def _alpha(y, eps):
    return eps + (1 - eps) * (2.0**y - 1) / (2.0**YMAX - 1)


def _sigma(y):
    return (2.0**y - 1) / (2.0**YMAX - 1)


def _walk(model, y, coins):
    """One session of ``model``'s definition for list ``y`` given its coins (dict of 0/1
    tuples per position): returns (clicks, examined) as tuples of 0/1."""
    K = len(y)
    clicks, examined = [0] * K, [0] * K
    if isinstance(model, PositionBasedModel):
        for k in range(K):
            examined[k] = coins["E"][k]
            clicks[k] = coins["E"][k] & coins["A"][k]
        return tuple(clicks), tuple(examined)
    for k in range(K):
        examined[k] = 1
        clicked = coins["A"][k]
        clicks[k] = clicked
        if isinstance(model, DBNModel):
            if clicked and coins["S"][k]:
                break
            if not coins["G"][k]:
                break
        elif isinstance(model, DCMModel):
            if clicked and not coins["L"][k]:
                break
        elif clicked:  # cascade: stop after the first click
            break
    return tuple(clicks), tuple(examined)


def _coin_probs(model, y):
    """{coin name: per-position P(coin = 1)} of the model's definition."""
    a = [_alpha(v, model.eps) for v in y]
    if isinstance(model, PositionBasedModel):
        return {"E": [(1 / (k + 1)) ** model.eta for k in range(len(y))], "A": a}
    if isinstance(model, DBNModel):
        return {"A": a, "S": [_sigma(v) for v in y], "G": [model.gamma] * len(y)}
    if isinstance(model, DCMModel):
        return {"A": a, "L": [model.lam] * len(y)}
    return {"A": a}


def brute_force(model, y):
    """(P(click vector) dict, P(examined at k), P(click at k)) by enumerating every coin."""
    probs = _coin_probs(model, y)
    names = sorted(probs)
    K = len(y)
    joint: dict[tuple, float] = {}
    exam = np.zeros(K)
    click = np.zeros(K)
    for bits in itertools.product((0, 1), repeat=K * len(names)):
        coins = {n: bits[i * K : (i + 1) * K] for i, n in enumerate(names)}
        p = 1.0
        for n in names:
            for k in range(K):
                p *= probs[n][k] if coins[n][k] else 1 - probs[n][k]
        clicks, examined = _walk(model, y, coins)
        joint[clicks] = joint.get(clicks, 0.0) + p
        exam += p * np.array(examined)
        click += p * np.array(clicks)
    return joint, exam, click


MODELS = [
    PositionBasedModel(eta=1.0, eps=0.1),
    PositionBasedModel(eta=2.0, eps=0.05),
    CascadeModel(eps=0.1),
    DCMModel(lam=0.6, eps=0.1),
    DBNModel(gamma=0.8, eps=0.1),
]
IDS = ["pbm-eta1", "pbm-eta2", "cascade", "dcm", "dbn"]


def test_attraction_is_the_literature_noise_formula():
    assert attraction([0, 2, 4], 4, 0.1) == pytest.approx([0.1, 0.1 + 0.9 * 3 / 15, 1.0])
    assert attraction([1], 1, 0.0) == pytest.approx([1.0])


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_closed_forms_equal_brute_force_over_every_latent_outcome(model):
    lists = ShownLists(y=np.array(LISTS), max_label=YMAX)
    exam, click = model.examination(lists), model.click_probability(lists)
    for q, y in enumerate(LISTS):
        joint, bf_exam, bf_click = brute_force(model, y)
        assert sum(joint.values()) == pytest.approx(1.0)
        np.testing.assert_allclose(exam[q], bf_exam, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(click[q], bf_click, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_sampled_click_vectors_follow_the_brute_force_distribution(model):
    n = 40_000
    lists = ShownLists(y=np.array(LISTS), max_label=YMAX)
    clicks = model.sample(lists, np.random.default_rng(7), n)
    assert clicks.shape == (n, len(LISTS), 4) and clicks.dtype == bool
    for q, y in enumerate(LISTS):
        joint, _, _ = brute_force(model, y)
        vectors, counts = np.unique(clicks[:, q, :].astype(int), axis=0, return_counts=True)
        seen = {tuple(v): c / n for v, c in zip(vectors, counts)}
        for vec in set(joint) | set(seen):
            p = joint.get(vec, 0.0)
            tol = 5 * np.sqrt(max(p * (1 - p), 1e-12) / n) + 1e-9
            assert abs(seen.get(vec, 0.0) - p) <= tol, (vec, seen.get(vec), p)


def test_padding_is_never_clicked_nor_examined():
    y = np.array([[3, 1, -1, -1], [0, 4, 2, 1]])
    lists = ShownLists(y=y, max_label=YMAX)
    for model in MODELS:
        clicks = model.sample(lists, np.random.default_rng(0), 500)
        assert not clicks[:, 0, 2:].any()
        assert np.all(model.examination(lists)[0, 2:] == 0)


def test_pbm_examination_is_one_over_rank_to_the_eta():
    lists = ShownLists(y=np.zeros((1, 5), dtype=np.int64), max_label=YMAX)
    exam = PositionBasedModel(eta=1.5).examination(lists)[0]
    np.testing.assert_allclose(exam, (1 / np.arange(1, 6)) ** 1.5)


def test_dcm_with_lam_zero_is_the_cascade_and_with_lam_one_has_no_position_bias():
    lists = ShownLists(y=np.array(LISTS), max_label=YMAX)
    np.testing.assert_allclose(
        DCMModel(lam=0.0).examination(lists), CascadeModel().examination(lists)
    )
    np.testing.assert_allclose(DCMModel(lam=1.0).examination(lists), 1.0)


def test_the_same_generator_state_gives_the_same_clicks():
    lists = ShownLists(y=np.array(LISTS), max_label=YMAX)
    for model in MODELS:
        a = model.sample(lists, np.random.default_rng(3), 50)
        b = model.sample(lists, np.random.default_rng(3), 50)
        assert np.array_equal(a, b)

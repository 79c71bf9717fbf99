"""The default path (issue 35): optimizer ``auto`` and ``l2=None`` resolved per loss and
scorer; padding-bounded full batches give the same objective; mini-batches are cut from the
queries sorted by length (Sinkhorn itself: test_sinkhorn.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ltr_bench.testing import make_check_data
from ltr_bench_neural import defaults
from ltr_bench_neural.batching import build_batches
from ltr_bench_neural.losses import neuralndcg as nn_mod
from ltr_bench_neural.ranker import NeuralRanker


@pytest.mark.parametrize(
    "params, optimizer, l2, max_iter",
    [
        (dict(loss="neuralndcg"), "adam", 1e-4, defaults.NEURALNDCG_AUTO_MAX_ITER),
        (dict(loss="neuralndcg", loss_args={"max_iter": 50}), "adam", 1e-4, 50),
        (dict(loss="neuralndcg", optimizer="lbfgs"), "lbfgs", 1e-4, None),
        (dict(loss="listnet"), "lbfgs", 1e-4, None),
        (dict(loss="lambdaloss", l2=0.5), "lbfgs", 0.5, None),
        (dict(scorer="bilinear"), "lbfgs", 1e-2, None),
        (dict(scorer="distance", l2=0.0), "lbfgs", 0.0, None),
        (dict(unbiased="dla"), "adam", 1e-4, None),
        (dict(unbiased="ips"), "lbfgs", 1e-4, None),
    ],
)
def test_auto_optimizer_and_l2_resolve_by_loss_and_scorer(params, optimizer, l2, max_iter):
    ranker = NeuralRanker(**params)
    resolved = defaults.resolve(ranker)
    assert (resolved.optimizer, resolved.l2) == (optimizer, l2)
    assert (resolved.loss_args or {}).get("max_iter") == max_iter
    assert ranker.optimizer == params.get("optimizer", "auto")  # the ranker is not changed


def test_fitted_info_records_the_optimizer_and_l2_the_fit_used():
    X, y, q = make_check_data()
    info = NeuralRanker(loss="neuralndcg", epochs=2).fit(X, y, qid=q).fitted_info()
    assert (info["optimizer"], info["l2"]) == ("adam", 1e-4)


def _lengths_data(lengths, d=3, seed=0):
    rng = np.random.default_rng(seed)
    qid = np.repeat(np.arange(len(lengths)), lengths)
    X = rng.normal(size=(len(qid), d))
    y = rng.integers(0, 3, size=len(qid)).astype(float)
    return X, y, qid


def test_full_batches_bound_padding_and_keep_every_document_once():
    X, y, qid = _lengths_data([2, 3, 3, 40, 45, 120])
    batches = build_batches(X, y, qid, max_queries=None, budget=2**24, width=lambda L: L)
    assert len(batches) > 1
    rows = np.concatenate([b.rows[b.mask].numpy() for b in batches])
    assert sorted(rows) == list(range(len(qid)))
    for b in batches:
        n = b.mask.sum(1).numpy()
        L = b.X.shape[1]
        assert b.X.shape[0] == 1 or b.X.shape[0] * L * L <= 2 * (n * n).sum()


def test_mini_batches_hold_every_query_once_cut_from_the_queries_sorted_by_length():
    rng = np.random.default_rng(1)
    lengths = rng.integers(1, 60, size=150)
    X, y, qid = _lengths_data(list(lengths))
    batches = build_batches(X, y, qid, max_queries=64, budget=2**24, width=lambda L: L)
    assert [b.n_queries for b in batches] == [64, 64, 22]
    rows = np.concatenate([b.rows[b.mask].numpy() for b in batches])
    assert sorted(rows) == list(range(len(qid)))
    spans = [np.sort(b.mask.sum(1).numpy()) for b in batches]
    for shorter, longer in zip(spans, spans[1:]):
        assert shorter[-1] <= longer[0]  # no batch waits on a longer list than the next one's
    assert [int(b.X.shape[1]) for b in batches] == [int(sp[-1]) for sp in spans]


def test_the_full_objective_does_not_depend_on_how_queries_are_batched():
    X, y, qid = _lengths_data([2, 3, 3, 40, 45, 120])
    s = torch.as_tensor(X @ np.array([1.0, -0.5, 0.2]))
    # mini-batch mode with room for all: one batch, no padding bound
    one = build_batches(
        X, y, qid, max_queries=100, budget=2**30, width=lambda L: L, dtype=torch.float64
    )
    many = build_batches(
        X, y, qid, max_queries=None, budget=2**24, width=lambda L: L, dtype=torch.float64
    )
    assert len(one) == 1 and len(many) > 1

    def total(batches):
        out = 0.0
        for b in batches:
            sc = torch.where(b.mask, s[b.rows.clamp(min=0)], torch.zeros(()))
            # one Sinkhorn block: no stopping rule, which is decided per batch (within tol)
            out += float(nn_mod.neuralndcg(sc, b.y, b.mask, max_iter=5)) * b.n_queries
        return out / len(np.unique(qid))

    assert total(many) == pytest.approx(total(one), rel=1e-10)

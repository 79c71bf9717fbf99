"""Inverse propensity scoring for the tree learners (``unbiased="ips"`` of ``lightgbm`` and
``xgboost-lambdamart``): a custom objective, because the libraries' own inputs cannot express it.

Why not per-row weights. LightGBM's lambdarank multiplies a row's gradient and hessian by the
row's weight (``rank_objective.hpp``); that gradient is the sum of the LambdaRank terms of every
pair the row is in, as the better *and* as the worse document, so weighting it by ``1 / p_i``
scales the pair ``(i, j)`` by ``1 / p_i`` on i's side and ``1 / p_j`` on j's: no longer the
gradient of any loss, and not the inverse-propensity estimate of one. XGBoost's ranking
objectives take one weight per query group, not per document. Neither library has a
per-document click weight inside its pairs, so the IPS objective is given as a custom one.

The objective is the propensity-weighted softmax cross-entropy of Ai et al. (SIGIR 2018), the
one ``neural.unbiased=ips`` trains (:mod:`ltr_bench_neural.unbiased`), per query with click
counts ``c_i``, propensities ``p_i`` and scores ``s_i``::

    l(s) = - sum_i w_i log softmax(s)_i,       w_i = c_i / p_i
    dl/ds_i = W softmax(s)_i - w_i,            W = sum_j w_j
    d2l/ds_i^2 = W softmax(s)_i (1 - softmax(s)_i)   (the diagonal the trees use)

summed over queries. With ``E[c_i] = S p_i alpha(y_i)`` (``S`` sessions, examination ``p_i``
and attraction ``alpha``), ``E[l] = - sum_i S alpha(y_i) log softmax(s)_i``: the loss on the
true click-through rates, the position factor gone. It is linear in the counts, so it needs no
gain table and takes any number of sessions. With every ``p_i = 1`` it is the naive objective
of the same form, ``unbiased="naive"`` (no positions needed), the uncorrected counterpart.

Early stopping and ``best_iteration_`` follow the library's validation NDCG on the validation
clicks (naively, as for every other learner on click data; the test labels alone are true).
"""

from __future__ import annotations

import numpy as np

from ltr_bench.ranker import RankerInputError, query_boundaries

__all__ = ["SoftmaxIPS", "ips_weights"]


def ips_weights(ranker: str, y, position, propensity) -> np.ndarray:
    """``w_i = c_i / p_i`` per training row (0 where nothing was clicked or the row was not
    shown); :class:`RankerInputError` naming ``ranker`` when the propensities are missing or
    not positive where a row was shown."""
    if propensity is None:
        raise RankerInputError(
            f"{ranker}: unbiased='ips' weights each click by its examination propensity, but "
            "fit got none: the data has no simulated clicks (add --dataset-option clicks=pbm)"
        )
    c = np.asarray(y, dtype=np.float64)
    p = np.asarray(propensity, dtype=np.float64)
    pos = np.asarray(position)
    if p.shape != c.shape:
        raise RankerInputError(
            f"{ranker}: propensity must have one entry per training row ({c.size}), got {p.shape}"
        )
    shown = pos > 0
    bad = shown & ~(np.isfinite(p) & (p > 0))
    if bad.any():
        raise RankerInputError(
            f"{ranker}: unbiased='ips' needs a positive propensity for every shown row, but "
            f"{int(bad.sum())} have none (NaN) or 0: the click model defines none there; use "
            "estimated propensities (propensity='em') or unbiased=true"
        )
    return np.where(shown & (c > 0), c / np.where(shown, p, 1.0), 0.0)


class SoftmaxIPS:
    """The objective's gradient and hessian for one training set (module docstring).

    ``qid`` (n,): contiguous query blocks; ``weights`` (n,): ``c_i / p_i``. Call with the
    current scores (n,) to get ``(gradient, hessian)`` (n,) each."""

    def __init__(self, qid, weights):
        b = query_boundaries(np.asarray(qid))
        self.starts = b[:-1]
        self.block = np.repeat(np.arange(b.size - 1), np.diff(b))
        self.w = np.asarray(weights, dtype=np.float64)
        self.W = np.add.reduceat(self.w, self.starts) if self.w.size else np.zeros(0)

    def softmax(self, scores) -> np.ndarray:
        """Per query ``softmax(s)_i`` (shifted by the query's largest score)."""
        s = np.asarray(scores, dtype=np.float64)
        top = np.maximum.reduceat(s, self.starts)
        e = np.exp(s - top[self.block])
        return e / np.add.reduceat(e, self.starts)[self.block]

    def loss(self, scores) -> float:
        """``sum_q l_q(s)``."""
        p = self.softmax(scores)
        return float(-(self.w * np.log(np.maximum(p, 1e-300))).sum())

    def __call__(self, scores) -> tuple[np.ndarray, np.ndarray]:
        p = self.softmax(scores)
        W = self.W[self.block]
        return W * p - self.w, W * p * (1.0 - p)

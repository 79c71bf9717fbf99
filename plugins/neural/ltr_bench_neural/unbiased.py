"""Unbiased learning to rank from clicks for ``neural``: ``unbiased="ips"`` and ``"dla"``
(and ``"naive"``, their uncorrected counterpart).

All three train the ranker's scorer f with the propensity-weighted softmax cross-entropy of Ai et
al. (SIGIR 2018, Eq. 3-5), per query with documents i, click counts c_i (clicks summed over
the sessions the list was shown in; ``y`` on click data) and weights w_i::

    l(f) = - sum_i w_i c_i log softmax(f)_i,     softmax(f)_i = exp f_i / sum_j exp f_j

(the softmax over every document of the query, mean over queries like every ``neural``
loss). A document that was never clicked adds nothing; unclicked documents still lose
probability mass through the normaliser.

* ``naive``: ``w_i = 1`` -- the same objective without correction (the naive estimator of
  Joachims et al. and Ai et al.), so that a comparison with ``ips`` / ``dla`` differs in the
  weights alone (the default ``loss="softmax"`` of ``neural`` puts its target on the
  documents of the highest label only, a different loss on click counts). Needs no positions.
* ``ips`` (inverse propensity scoring, Joachims, Swaminathan and Schnabel, WSDM 2017):
  ``w_i = 1 / p_i`` with ``p_i`` the click model's true examination probability at the row's
  shown position (``propensity``, passed by the harness on click data). Rows whose
  propensity is NaN (a click model that defines none, e.g. cascade) are refused. With these
  weights the expected loss equals the loss on the true relevance (the clicks' examination
  factor cancels), which is what makes IPS unbiased.
* ``dla`` (the dual learning algorithm, Ai et al. 2018): the propensities are unknown and
  learned jointly. A propensity model g holds one logit per shown position k = 1..K
  (K = the largest training position); for the positions of a list,
  ``P(o_k) = softmax(g)_k`` and the ranker's weights are ``w_i = P(o_1) / P(o_{pos_i})``.
  Symmetrically g is trained with ``l(g) = - sum_i r_i c_i log softmax(g)_{pos_i}``,
  ``r_i = softmax(f)_{i*} / softmax(f)_i`` (inverse relevance weights, ``i*`` the document
  shown at the list's top position; the softmax of f over the shown documents). Weights
  carry no gradient (each model is trained with the other's current estimates); the two
  losses are summed and minimised together by a mini-batch optimizer (``adam``, ``adamw``,
  ``sgd``: the line search of ``lbfgs`` needs one objective, which the pair is not). The
  estimated propensity of position k is ``softmax(g)_k / softmax(g)_1``
  (``NeuralRanker.propensity_``, and ``propensity@k`` in ``fitted_info()`` for k <= 10).
  Rows without a position (``position <= 0``, never shown) have no propensity: their
  clicks (always 0) give no weight and they are left out of g's softmax.

Only the plain scorer is supported: ``group`` must be ``none`` and ``loss`` ``softmax`` (the
unbiased objective replaces it; the element weights of Table 8 do not apply). Early stopping
uses the validation split as usual -- on click data its labels are clicks too (the test
labels alone are true relevance), so the criterion is the naive click NDCG.
"""

from __future__ import annotations

import numpy as np
import torch

from ltr_bench.ranker import RankerInputError
from ltr_bench_neural.losses import resolve
from ltr_bench_neural.losses._common import NEG, query_mean
from ltr_bench_neural.unbiased_params import (
    POSITION_MODES,
    UNBIASED_MODES,
    check_unbiased_params,
)

__all__ = [
    "POSITION_MODES",
    "UNBIASED_MODES",
    "DLAObjective",
    "IPSObjective",
    "check_unbiased_params",
    "dla_propensity_loss",
    "ips_softmax_loss",
    "objective_factory",
]


def ips_softmax_loss(scores, clicks, mask, weights):
    """Per query ``-sum_i w_i c_i log softmax(s)_i`` over the real entries, mean over queries.

    scores, clicks, weights: [B, L]; mask [B, L] bool (False at padding). A query without
    clicks adds 0. ``weights`` must be finite where ``clicks > 0``."""
    logp = torch.log_softmax(scores.masked_fill(~mask, NEG), dim=1).masked_fill(~mask, 0.0)
    cw = torch.where(mask & (clicks > 0), clicks * weights, torch.zeros_like(scores))
    return query_mean(-(cw * logp).sum(dim=1))


def dla_propensity_loss(logits, pos, clicks, shown, relevance_weights):
    """Per query ``-sum_i r_i c_i log softmax(g)_{pos_i}`` over the shown entries, softmax
    over the positions of the list's shown entries, mean over queries.

    logits: [K] (g); pos: [B, L] long, 1-based (anything where ``shown`` is False);
    clicks, relevance_weights: [B, L]; shown: [B, L] bool."""
    idx = (pos.clamp(1, logits.shape[0]) - 1).long()
    g = logits[idx].masked_fill(~shown, NEG)
    logp = torch.log_softmax(g, dim=1).masked_fill(~shown, 0.0)
    cw = torch.where(shown & (clicks > 0), clicks * relevance_weights, torch.zeros_like(g))
    return query_mean(-(cw * logp).sum(dim=1))


class IPSObjective:
    """loss(batch) of ``unbiased="ips"``: :func:`ips_softmax_loss` with ``w = 1 / p``."""

    def __init__(self, model, inverse_propensity: np.ndarray):
        self.spec = resolve("softmax")[0]  # memory shape of the loss (a list-wise softmax)
        self.model = model
        self.inverse = inverse_propensity  # per input row; 0 where nothing can be clicked

    def __call__(self, batch):
        scores = self.model(batch.X, batch.mask)
        w = _gather(self.inverse, batch.rows, scores)
        return ips_softmax_loss(scores, batch.y, batch.mask, w)


class _Logits(torch.nn.Module):
    """g: one logit per position, held as 0-dimensional parameters so that ``neural``'s L2
    prior (on parameters with ``ndim >= 1``, the scorer's weights) leaves them alone."""

    def __init__(self, k: int, dtype):
        super().__init__()
        self.values = torch.nn.ParameterList(
            [torch.nn.Parameter(torch.zeros((), dtype=dtype)) for _ in range(k)]
        )

    def vector(self) -> torch.Tensor:
        return torch.stack(list(self.values))


class DLAObjective:
    """loss(batch) of ``unbiased="dla"``: l(f) + l(g) with each model's weights from the
    other (module docstring). The logits live on the scorer as the submodule
    ``dla_propensity`` so that the optimiser and the early-stopping snapshot include them."""

    def __init__(self, model, position: np.ndarray, n_positions: int, dtype):
        self.spec = resolve("softmax")[0]  # memory shape of the loss (a list-wise softmax)
        self.model = model
        self.position = position
        model.add_module("dla_propensity", _Logits(n_positions, dtype))

    def propensities(self) -> np.ndarray:
        """``P(o_k) / P(o_1)``, k = 1..K, as float64."""
        with torch.no_grad():
            p = torch.softmax(self.model.dla_propensity.vector().double(), dim=0)
            return (p / p[0]).cpu().numpy()

    def __call__(self, batch):
        scores = self.model(batch.X, batch.mask)
        pos = _gather(self.position, batch.rows, scores).long()
        shown = batch.mask & (pos > 0)
        logits = self.model.dla_propensity.vector()
        with torch.no_grad():
            theta = torch.softmax(logits, dim=0)
            w = theta[0] / theta[(pos.clamp(1, logits.shape[0]) - 1)]
            w = torch.where(shown, w, torch.zeros_like(w))
            # inverse relevance weights: the top shown document's relevance over each one's
            rel = torch.softmax(scores.masked_fill(~shown, NEG), dim=1)
            top = torch.where(shown, pos, torch.full_like(pos, 1 << 30)).argmin(dim=1)
            r = rel.gather(1, top[:, None]) / rel.clamp_min(1e-30)
            r = torch.where(shown, r, torch.zeros_like(r))
        ranking = ips_softmax_loss(scores, batch.y, batch.mask, w)
        return ranking + dla_propensity_loss(logits, pos, batch.y, shown, r)


def _gather(values: np.ndarray, rows, like) -> torch.Tensor:
    """``values[rows]`` as a tensor like ``like`` ([B, L]); 0 at padding (rows == -1)."""
    r = rows.cpu().numpy()
    out = np.where(r >= 0, values[np.maximum(r, 0)], 0)
    return torch.as_tensor(out, dtype=like.dtype, device=like.device)


def objective_factory(ranker, n_rows: int, position, propensity):
    """``(make_objective, holder)`` for ``training.fit_model``: ``make_objective(ranker,
    model, n_levels, max_label)`` builds the unbiased objective; ``holder["objective"]`` is
    the built one (for the learned propensities). Checks the click arrays first:
    :class:`RankerInputError` when they are missing or malformed."""
    mode = ranker.unbiased
    holder: dict = {}
    if mode == "naive":
        ones = np.ones(n_rows)

        def make_naive(ranker, model, n_levels, max_label):
            holder["objective"] = IPSObjective(model, ones)
            return holder["objective"]

        return make_naive, holder
    if position is None:
        raise RankerInputError(
            f"neural: unbiased={mode!r} learns from the position each training document was "
            "shown at, but fit got no positions: the data has no simulated clicks (add "
            "--dataset-option clicks=pbm, or leave unbiased at 'none')"
        )
    pos = np.asarray(position)
    if pos.shape != (n_rows,):
        raise RankerInputError(f"neural: position must have shape ({n_rows},), got {pos.shape}")
    pos = pos.astype(np.int64)
    if mode == "ips":
        if propensity is None:
            raise RankerInputError("neural: unbiased='ips' needs the propensity of every row")
        p = np.asarray(propensity, dtype=np.float64)
        if p.shape != (n_rows,):
            raise RankerInputError(f"neural: propensity must have shape ({n_rows},)")
        shown = pos > 0
        if np.isnan(p[shown]).any() or (p[shown] <= 0).any():
            raise RankerInputError(
                "neural: unbiased='ips' needs a positive propensity for every shown row, but "
                "the click model defines none (NaN) or 0 for some; use unbiased='dla', which "
                "learns the propensities"
            )
        inverse = np.where(shown, 1.0 / np.where(shown, p, 1.0), 0.0)

        def make(ranker, model, n_levels, max_label):
            holder["objective"] = IPSObjective(model, inverse)
            return holder["objective"]

    else:
        k = int(pos.max()) if pos.size and pos.max() > 0 else 1

        def make(ranker, model, n_levels, max_label):
            dtype = next(model.parameters()).dtype
            holder["objective"] = DLAObjective(model, pos, k, dtype)
            return holder["objective"]

    return make, holder

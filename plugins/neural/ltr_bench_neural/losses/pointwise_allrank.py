"""allRank's pointwise losses: ``bce``, ``ordinal`` and ``rmse``.

Each is the mean over queries of a per-query loss; ``t = clamp(y, 0, 1)`` is the binary
target (graded labels >= 1 count as relevant; labels already in [0, 1], such as click
rates, are used as they are, which is what allRank's ``bce`` expects).

* ``bce``: ``sum_i BCE(p_i, t_i)`` over the query's documents, with
  ``BCE(p, t) = -[t log p + (1 - t) log(1 - p)]``. ``logits=True`` (default) reads the score
  as a logit, ``p = sigmoid(s)`` (computed stably); ``logits=False`` reads it as a
  probability, as allRank does after a ``Sigmoid`` output activation.
* ``ordinal`` (allRank's): a scorer with ``d_output = n`` outputs, one per threshold
  ``c = 1..n``, read as probabilities ``p_ic`` (the scorer needs a ``Sigmoid`` output
  activation, as in allRank's configs); ``sum_i sum_c BCE(p_ic, 1[y_i >= c])``. ``scores``
  is then [B, L, n]; the ranking score is ``sum_c p_ic``, the expected label (allRank's
  ``OutputLayer.score``).
  allRank averages over documents instead of queries; the two differ by the batch's mean
  list length.
* ``rmse``: ``sqrt(mean_i (y_i - m * s_i)^2)`` per query, with ``m = no_of_levels``
  (allRank's scaling of a sigmoid output to the label range) or ``m = 1`` when
  ``no_of_levels`` is None; a 1e-12 inside the root keeps the gradient finite at a perfect fit.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ltr_bench_neural.losses._ndcg_terms import check_no_weights, query_mean

__all__ = ["bce", "ordinal", "rmse"]


def _bce(p_or_logit: torch.Tensor, target: torch.Tensor, logits: bool) -> torch.Tensor:
    if logits:
        return F.binary_cross_entropy_with_logits(p_or_logit, target, reduction="none")
    if bool(((p_or_logit < 0) | (p_or_logit > 1)).any()):
        raise ValueError(
            "logits=False reads scores as probabilities, but some lie outside [0, 1]; "
            "give the scorer a Sigmoid output activation (scorer_args output_activation=Sigmoid)"
        )
    return F.binary_cross_entropy(p_or_logit, target, reduction="none")


def bce(
    scores: torch.Tensor,
    y: torch.Tensor,
    mask: torch.Tensor,
    *,
    weights=None,
    logits: bool = True,
) -> torch.Tensor:
    """Binary cross-entropy summed over each query's documents; see the module docstring."""
    check_no_weights("bce", weights)
    t = torch.where(mask, y.clamp(0.0, 1.0), torch.zeros_like(y))
    s = torch.where(mask, scores, torch.zeros_like(scores))
    per_doc = torch.where(mask, _bce(s, t, bool(logits)), torch.zeros_like(s))
    return query_mean(per_doc.sum(dim=-1), mask.any(dim=-1))


def ordinal(
    scores: torch.Tensor,
    y: torch.Tensor,
    mask: torch.Tensor,
    *,
    weights=None,
    n: int | None = None,
) -> torch.Tensor:
    """allRank's ordinal loss over [B, L, n] outputs; see the module docstring."""
    check_no_weights("ordinal", weights)
    if scores.ndim != 3:
        raise ValueError(
            "ordinal needs one output per threshold: give the scorer d_output = n (allRank: "
            f"post_model.d_output), got scores of shape {tuple(scores.shape)}"
        )
    n_out = scores.shape[-1]
    if n is not None and int(n) != n_out:
        raise ValueError(f"ordinal: n = {n} but the scorer has d_output = {n_out}; make them equal")
    thresholds = torch.arange(1, n_out + 1, dtype=y.dtype, device=y.device)
    t = (y[:, :, None] >= thresholds).to(scores.dtype)
    m3 = mask[:, :, None].expand_as(scores)
    s = torch.where(m3, scores, torch.zeros_like(scores))
    per = torch.where(m3, _bce(s, t, logits=False), torch.zeros_like(s))
    return query_mean(per.sum(dim=(-2, -1)), mask.any(dim=-1))


def rmse(
    scores: torch.Tensor,
    y: torch.Tensor,
    mask: torch.Tensor,
    *,
    weights=None,
    no_of_levels: float | None = None,
) -> torch.Tensor:
    """Per-query root mean squared error; see the module docstring."""
    check_no_weights("rmse", weights)
    m = 1.0 if no_of_levels is None else float(no_of_levels)
    err = torch.where(mask, y - m * scores, torch.zeros_like(scores))
    n = mask.sum(dim=-1).clamp(min=1).to(scores.dtype)
    per_query = torch.sqrt((err**2).sum(dim=-1) / n + 1e-12)
    return query_mean(per_query, mask.any(dim=-1))

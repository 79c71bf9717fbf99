"""Shared pieces of the allRank-family losses: gains, discounts, ideal DCG, query means.

Tensor conventions (the plugin's): ``scores`` float [B, L], ``y`` float [B, L] graded labels
(padding -1), ``mask`` bool [B, L], True for real documents. Positions are 1-based.

* gain ``G(y) = 2^y - 1`` (or ``y`` when relevancies are not powered), the NDCG convention of
  :mod:`ltr_bench.evaluation.metrics`;
* discount ``1 / log2(1 + r)`` at position ``r``;
* ``IDCG@k`` = DCG@k of the labels sorted in descending order (padding counts as gain 0).
"""

from __future__ import annotations

import torch

__all__ = [
    "PAD_SCORE",
    "check_no_weights",
    "discounts",
    "gains",
    "ideal_dcg",
    "query_mean",
    "ranks_by_score",
]

# A finite stand-in for -inf: exp() of it is exactly 0 in float32 and float64, yet it keeps
# log-sum-exp and its gradient finite where a whole suffix of a list is padding.
PAD_SCORE = -1e30


def check_no_weights(name: str, weights) -> None:
    """Refuse the element-/pair-wise weights of the design-paper losses (they do not apply)."""
    if weights is not None:
        raise ValueError(
            f"loss {name!r} takes no weights (the `weight` parameter applies to the "
            "design-paper losses only); leave weight at its default"
        )


def gains(y: torch.Tensor, mask: torch.Tensor, *, powered: bool = True) -> torch.Tensor:
    """``2^y - 1`` (``powered``) or ``y`` per document, 0 at padding. Shape of ``y``."""
    y0 = torch.where(mask, y, torch.zeros_like(y))
    return torch.pow(2.0, y0) - 1.0 if powered else y0


def discounts(n: int, *, dtype, device) -> torch.Tensor:
    """``[1 / log2(1 + r) for r = 1..n]``, shape [n]."""
    r = torch.arange(1, n + 1, dtype=dtype, device=device)
    return 1.0 / torch.log2(1.0 + r)


def ideal_dcg(
    y: torch.Tensor, mask: torch.Tensor, k: int | None = None, *, powered: bool = True
) -> torch.Tensor:
    """IDCG@k per query, shape [B]: DCG@k of the gains sorted descending (``k=None``: all)."""
    g = gains(y, mask, powered=powered)
    g_sorted, _ = torch.sort(g, dim=-1, descending=True)
    d = discounts(y.shape[-1], dtype=g.dtype, device=g.device)
    if k is not None:
        d = torch.where(torch.arange(d.numel(), device=d.device) < k, d, torch.zeros_like(d))
    return (g_sorted * d).sum(dim=-1)


def ranks_by_score(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """1-based position of every document when its query is sorted by descending score.

    Padding goes last; equal scores keep input order (a stable sort), which is what
    allRank's ``sort`` does on CPU. Returns int64 [B, L]; no gradient flows through ranks.
    """
    s = torch.where(mask, scores.detach(), torch.full_like(scores, float("-inf")))
    order = torch.sort(s, dim=-1, descending=True, stable=True).indices
    ranks = torch.empty_like(order)
    positions = torch.arange(1, s.shape[-1] + 1, device=s.device).expand_as(order)
    ranks.scatter_(-1, order, positions)
    return ranks


def query_mean(per_query: torch.Tensor, counted: torch.Tensor) -> torch.Tensor:
    """Mean of ``per_query`` [B] over the queries where ``counted`` [B] is True.

    With no counted query the result is ``0 * per_query.sum()``: zero, still attached to
    the graph, so a batch of empty queries gives a zero gradient instead of NaN.
    """
    n = counted.sum()
    total = torch.where(counted, per_query, torch.zeros_like(per_query)).sum()
    if int(n) == 0:
        return 0.0 * per_query.sum()
    return total / n

"""The LambdaLoss framework (Wang et al., CIKM 2018) with allRank's weighing schemes.

For one query, sort the documents by descending score; ``r_i`` is document i's 1-based
position, ``D_i = log2(1 + r_i)``, ``G_i = (2^{y_i} - 1) / IDCG@k`` (IDCG over the labels
sorted descending, truncated at k). The loss is a weighted pairwise logistic loss in base 2::

    LambdaLoss(s, y) = - sum_{(i, j) in P} w_ij * log2 sigmoid(sigma * (s_i - s_j))

where ``P`` holds the pairs with ``y_i > y_j`` (``ndcgLoss1``: every ordered pair (i, j),
i = j included, as allRank and the paper's Eq. for NDCG-Loss1 do), and with ``k`` set only
pairs whose positions are both <= k (allRank's truncation). Weighing schemes ``w_ij``:

* ``rankNet``      1 (RankNet in base 2 over the ``y_i > y_j`` pairs);
* ``ndcgLoss1``    ``G_i / D_i``;
* ``ndcgLoss2``    ``delta_ij |G_i - G_j|`` with
  ``delta_ij = |1/log2(1 + |r_i - r_j|) - 1/log2(2 + |r_i - r_j|)|``;
* ``lambdaRank``   ``|1/D_i - 1/D_j| |G_i - G_j|`` = |change of NDCG@max when i and j swap|;
* ``ndcgLoss2++``  ``mu * ndcgLoss2 + lambdaRank``;
* ``rankNetWeightedByGTDiff`` ``|y_i - y_j|`` and ``rankNetWeightedByGTDiffPowed``
  ``|y_i^2 - y_j^2|`` (allRank's extra schemes, accepted so its configs run).

Positions come from the current scores and carry no gradient (as in the paper and allRank).
``reduction="sum"`` sums over P per query (allRank's default), ``"mean"`` averages over P;
``reduction_log="binary"`` uses log2 (allRank's default), ``"natural"`` ln.

Reduction over the batch: the mean over queries of each query's loss. allRank sums over all
pairs of the batch instead, i.e. our value times the batch size; Adam is invariant to that
constant, SGD's learning rate is not (scale it by the batch size to match).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ltr_bench_neural.losses._ndcg_terms import (
    check_no_weights,
    gains,
    ideal_dcg,
    query_mean,
    ranks_by_score,
)
from ltr_bench_neural.losses.arguments import WEIGHING_SCHEMES

__all__ = ["WEIGHING_SCHEMES", "lambdaloss"]


def pair_weights(
    scheme: str, y: torch.Tensor, mask: torch.Tensor, ranks: torch.Tensor, k, mu: float
) -> torch.Tensor:
    """``w_ij`` of a weighing scheme, shape [B, L, L] (document indices in input order)."""
    if scheme == "rankNet":
        return torch.ones(y.shape + y.shape[-1:], dtype=y.dtype, device=y.device)
    y0 = torch.where(mask, y, torch.zeros_like(y))
    if scheme == "rankNetWeightedByGTDiff":
        return (y0[:, :, None] - y0[:, None, :]).abs()
    if scheme == "rankNetWeightedByGTDiffPowed":
        return (y0[:, :, None] ** 2 - y0[:, None, :] ** 2).abs()
    idcg = ideal_dcg(y, mask, k).clamp(min=1e-10)  # allRank's eps: an empty query has G = 0
    G = gains(y, mask) / idcg[:, None]
    inv_D = 1.0 / torch.log2(1.0 + ranks.to(y.dtype))
    if scheme == "ndcgLoss1":
        return (G * inv_D)[:, :, None].expand(-1, -1, y.shape[-1])
    G_diff = (G[:, :, None] - G[:, None, :]).abs()
    lambda_rank = (inv_D[:, :, None] - inv_D[:, None, :]).abs() * G_diff
    if scheme == "lambdaRank":
        return lambda_rank
    gap = (ranks[:, :, None] - ranks[:, None, :]).abs().to(y.dtype)
    # delta at gap 0 (i = j) is 0; clamp keeps log2(1 + 0) out of the division.
    delta = (1.0 / torch.log2(1.0 + gap.clamp(min=1.0)) - 1.0 / torch.log2(2.0 + gap)).abs()
    ndcg_loss2 = torch.where(gap > 0, delta, torch.zeros_like(delta)) * G_diff
    if scheme == "ndcgLoss2":
        return ndcg_loss2
    if scheme == "ndcgLoss2++":
        return mu * ndcg_loss2 + lambda_rank
    raise ValueError(
        f"lambdaloss: unknown weighing_scheme {scheme!r}; known: {', '.join(WEIGHING_SCHEMES)}"
    )


def lambdaloss(
    scores: torch.Tensor,
    y: torch.Tensor,
    mask: torch.Tensor,
    *,
    weights=None,
    weighing_scheme: str = "ndcgLoss2++",
    k: int | None = None,
    sigma: float = 1.0,
    mu: float = 10.0,
    reduction: str = "sum",
    reduction_log: str = "binary",
) -> torch.Tensor:
    """LambdaLoss; see the module docstring for the formula. Returns a scalar tensor."""
    check_no_weights("lambdaloss", weights)
    if weighing_scheme not in WEIGHING_SCHEMES:
        raise ValueError(
            f"lambdaloss: unknown weighing_scheme {weighing_scheme!r}; "
            f"known: {', '.join(WEIGHING_SCHEMES)}"
        )
    if reduction not in ("sum", "mean"):
        raise ValueError(f"lambdaloss: reduction must be 'sum' or 'mean', got {reduction!r}")
    if reduction_log not in ("binary", "natural"):
        raise ValueError(
            f"lambdaloss: reduction_log must be 'binary' or 'natural', got {reduction_log!r}"
        )
    if k is not None and (isinstance(k, bool) or int(k) != k or k < 1):
        raise ValueError(f"lambdaloss: k must be a positive integer or None, got {k!r}")
    ranks = ranks_by_score(scores, mask)
    pair_real = mask[:, :, None] & mask[:, None, :]
    if weighing_scheme == "ndcgLoss1":
        pairs = pair_real
    else:
        pairs = pair_real & (y[:, :, None] > y[:, None, :])
    if k is not None:
        top = ranks <= k
        pairs = pairs & top[:, :, None] & top[:, None, :]
    w = pair_weights(weighing_scheme, y, mask, ranks, k, mu)
    log_p = F.logsigmoid(sigma * (scores[:, :, None] - scores[:, None, :]))
    if reduction_log == "binary":
        log_p = log_p / math.log(2.0)
    pair_loss = torch.where(pairs, -w * log_p, torch.zeros_like(log_p))
    per_query = pair_loss.sum(dim=(-2, -1))
    n_pairs = pairs.sum(dim=(-2, -1))
    if reduction == "mean":
        per_query = per_query / n_pairs.clamp(min=1).to(per_query.dtype)
    return query_mean(per_query, mask.any(dim=-1))

"""ApproxNDCG (Qin, Liu and Li, Information Retrieval 13(4), 2010): NDCG with smoothed positions.

The position of document i, ``r_i = 1 + sum_{j != i} 1[s_j > s_i]``, is replaced by its
sigmoid relaxation (the paper's Eqs. 19-20)::

    r^_i = 1 + sum_{j != i} sigmoid(alpha * (s_j - s_i))

    ApproxNDCG(s, y) = (1 / IDCG) * sum_i (2^{y_i} - 1) / log2(1 + r^_i)

and the loss is ``-mean over queries of ApproxNDCG`` (no truncation, as in allRank). As
``alpha`` grows, ``r^_i`` tends to the true position and the value to the exact NDCG of the
ranking by ``s`` (the tests check this against :func:`ltr_bench.evaluation.evaluate`). A
query with no relevant document has IDCG = 0; its term is 0 (allRank's clamp of IDCG) and it
still counts in the mean, so it adds nothing to the gradient.
"""

from __future__ import annotations

import torch

from ltr_bench_neural.losses._ndcg_terms import check_no_weights, gains, ideal_dcg, query_mean

__all__ = ["approxndcg"]


def approxndcg(
    scores: torch.Tensor,
    y: torch.Tensor,
    mask: torch.Tensor,
    *,
    weights=None,
    alpha: float = 1.0,
) -> torch.Tensor:
    """Negative ApproxNDCG; see the module docstring. Returns a scalar tensor."""
    check_no_weights("approxndcg", weights)
    if not alpha > 0:
        raise ValueError(f"approxndcg: alpha must be > 0, got {alpha!r}")
    others = mask[:, None, :] & mask[:, :, None]
    others = others & ~torch.eye(y.shape[-1], dtype=torch.bool, device=y.device)
    # sigmoid(alpha * (s_j - s_i)) at [b, i, j]
    beats = torch.sigmoid(alpha * (scores[:, None, :] - scores[:, :, None]))
    approx_rank = 1.0 + torch.where(others, beats, torch.zeros_like(beats)).sum(dim=-1)
    idcg = ideal_dcg(y, mask).clamp(min=1e-10)
    dcg = (gains(y, mask) / torch.log2(1.0 + approx_rank)).sum(dim=-1)
    return -query_mean(dcg / idcg, mask.any(dim=-1))

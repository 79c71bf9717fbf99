"""Pairwise decompositions, Eq. 9, with the pairwise losses phi of Table 3.

Per query: sum over ordered pairs (i, j) with r_i > r_j (i preferred; each unordered pair of
different labels once, tied pairs add nothing) of V_ij phi(f_i - f_j), with V from
``weights`` [B, L, L] (None: all ones):

=================  ===================================
pair-quadratic     phi(d) = (1 - d)^2
pair-hinge         phi(d) = max(0, 1 - d)
pair-exp           phi(d) = exp(-d)
pair-logistic      phi(d) = log(1 + exp(-d))  (RankNet with V = 1)
=================  ===================================

Memory: [B, L, L] per batch (the trainer bounds B * L * L).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ltr_bench_neural.losses._common import preference_pairs, query_mean


def _pairwise(phi, scores, y, mask, weights):
    pairs = preference_pairs(y, mask)
    d = scores[:, :, None] - scores[:, None, :]
    w = pairs.to(scores.dtype) if weights is None else weights * pairs
    # phi at non-pairs is multiplied by 0; where() keeps exp() overflow there from making NaN
    return query_mean((w * torch.where(pairs, phi(d), torch.zeros_like(d))).sum(dim=(1, 2)))


def pair_quadratic_loss(scores, y, mask, *, weights=None):
    """Eq. 9 with phi(d) = (1 - d)^2 (Table 3, quadratic)."""
    return _pairwise(lambda d: (1.0 - d) ** 2, scores, y, mask, weights)


def pair_hinge_loss(scores, y, mask, *, weights=None):
    """Eq. 9 with phi(d) = max(0, 1 - d) (Table 3, hinge; RankSVM)."""
    return _pairwise(lambda d: torch.clamp_min(1.0 - d, 0.0), scores, y, mask, weights)


def pair_exp_loss(scores, y, mask, *, weights=None):
    """Eq. 9 with phi(d) = exp(-d) (Table 3, exponential; RankBoost)."""
    return _pairwise(lambda d: torch.exp(-d), scores, y, mask, weights)


def pair_logistic_loss(scores, y, mask, *, weights=None):
    """Eq. 9 with phi(d) = log(1 + exp(-d)) (Table 3, logistic; RankNet when V = 1)."""
    return _pairwise(lambda d: F.softplus(-d), scores, y, mask, weights)

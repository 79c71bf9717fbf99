"""Helpers the losses share: true positions, per-query means, pair masks (torch)."""

from __future__ import annotations

import torch

#: a finite stand-in for -inf at padding (exp() of it is exactly 0 in float32 and float64,
#: and, unlike -inf, it never turns a gradient into NaN)
NEG = -1e30


def true_positions(y: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """pi [B, L]: ``1 + #{real j : y_j > y_i}`` (competition ranking: tied objects share the
    best position of their tie group). Padding gets a large position. O(L log L)."""
    B, L = y.shape
    key = torch.where(mask, y, torch.full_like(y, -1.0))
    order = torch.argsort(key, dim=1, descending=True, stable=True)
    ys = torch.gather(key, 1, order)
    pos = torch.arange(L, device=y.device).expand(B, L)
    new_group = torch.ones_like(mask)
    new_group[:, 1:] = ys[:, 1:] != ys[:, :-1]
    start = torch.cummax(torch.where(new_group, pos, torch.zeros_like(pos)), dim=1).values
    pi_sorted = (start + 1).to(y.dtype)
    pi = torch.empty_like(pi_sorted).scatter_(1, order, pi_sorted)
    return torch.where(mask, pi, torch.full_like(pi, float(L + 1)))


def query_mean(per_query: torch.Tensor) -> torch.Tensor:
    """Mean over the batch's queries (every query counts, degenerate ones with their constant)."""
    return per_query.mean()


def n_docs(mask: torch.Tensor, dtype) -> torch.Tensor:
    return mask.sum(dim=1).to(dtype)


def preference_pairs(y: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """bool [B, L, L]: True where i and j are real documents and y_i > y_j (i preferred)."""
    both = mask[:, :, None] & mask[:, None, :]
    return both & (y[:, :, None] > y[:, None, :])

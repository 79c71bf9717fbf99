"""The linear rank functional f(x) = a0 + w'x (the paper's first-order baseline)."""

from __future__ import annotations

import torch
from torch import nn


class LinearScorer(nn.Module):
    """scores[b, l] = bias + X[b, l] . w; w starts at 0 (the L-BFGS problem is convex for the
    convex losses, so the start does not matter there, and 0 is deterministic)."""

    def __init__(self, n_features: int, dtype):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(n_features, dtype=dtype))
        self.bias = nn.Parameter(torch.zeros((), dtype=dtype))

    def forward(self, X, mask):
        return X @ self.weight + self.bias


def build(ctx) -> nn.Module:
    return LinearScorer(ctx.n_features, ctx.dtype)

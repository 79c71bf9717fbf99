"""The distance rank functional of Eq. 3 for separate query/object representations:
f2(y, z) = -||A y - B z||^2 / tau, y the query block and z the document block of
query-by-example rows; A (dim x n1), B (dim x n2), tau > 0 fixed. A and B start at N(0, 1/n)
entries from the ranker's seed."""

from __future__ import annotations

import math

import torch
from torch import nn


class DistanceScorer(nn.Module):
    def __init__(self, query_dim, doc_dim, dim, tau, generator, dtype):
        super().__init__()
        self.query_dim = query_dim
        self.tau = float(tau)
        self.A = nn.Parameter(
            torch.randn(dim, query_dim, generator=generator, dtype=dtype) / math.sqrt(query_dim)
        )
        self.B = nn.Parameter(
            torch.randn(dim, doc_dim, generator=generator, dtype=dtype) / math.sqrt(doc_dim)
        )

    def forward(self, X, mask):
        y, z = X[..., : self.query_dim], X[..., self.query_dim :]
        diff = y @ self.A.T - z @ self.B.T
        return -(diff * diff).sum(-1) / self.tau


def build(ctx) -> nn.Module:
    qd = ctx.query_dim
    return DistanceScorer(qd, ctx.n_features - qd, ctx.dim, ctx.tau, ctx.generator, ctx.dtype)

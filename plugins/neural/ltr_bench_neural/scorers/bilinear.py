"""The bilinear rank functional of Eq. 2 for separate query/object representations:
f1(y, z) = sigma(A y)' (B z), y the query block, z the document block of query-by-example
rows ``[y (n1), z (n2)]``; A (dim x n1), B (dim x n2); sigma = sigmoid or tanh element-wise.
A and B start at N(0, 1/n) entries from the ranker's seed (zero is a saddle point)."""

from __future__ import annotations

import math

import torch
from torch import nn


class BilinearScorer(nn.Module):
    def __init__(self, query_dim, doc_dim, dim, activation, generator, dtype):
        super().__init__()
        self.query_dim = query_dim
        self.A = nn.Parameter(
            torch.randn(dim, query_dim, generator=generator, dtype=dtype) / math.sqrt(query_dim)
        )
        self.B = nn.Parameter(
            torch.randn(dim, doc_dim, generator=generator, dtype=dtype) / math.sqrt(doc_dim)
        )
        self.act = torch.sigmoid if activation == "sigmoid" else torch.tanh

    def forward(self, X, mask):
        y, z = X[..., : self.query_dim], X[..., self.query_dim :]
        return (self.act(y @ self.A.T) * (z @ self.B.T)).sum(-1)


def build(ctx) -> nn.Module:
    qd = ctx.query_dim
    return BilinearScorer(
        qd, ctx.n_features - qd, ctx.dim, ctx.activation, ctx.generator, ctx.dtype
    )

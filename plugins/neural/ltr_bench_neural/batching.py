"""Queries -> padded tensors, built once per fit (not per epoch).

A :class:`Batch` holds B queries padded to the longest, L: ``X`` [B, L, d], ``y`` [B, L]
(padding -1), ``mask`` [B, L] bool and ``rows`` [B, L] (the input row of each entry, -1 at
padding, so scores go back to the input order). Documents keep their input order inside a
query.

Queries are sorted by length (stable) and cut into consecutive batches of at most
``max_queries`` queries whose cost stays within ``budget`` elements, where the cost of a
batch is B * L * width and ``width`` is what the scorer/loss builds per document (L for a
loss with [B, L, L] tensors, the scorer's feature width for the quadratic scorer). Sorting by
length keeps padding small; a query longer than the budget alone gets a batch of its own.
Without ``max_queries`` (the full batch of L-BFGS, and prediction) a batch is also cut when its
padded cost B * L * width(L) would exceed twice the cost of its real documents,
sum_q n_q * width(n_q): on lists of very different lengths (MQ2008: 5 to 120 documents) one
padded batch would spend most of a [B, L, L] loss's time on padding. The value of the full
objective does not depend on how the queries are batched.
The composition of the batches is fixed for the fit; mini-batch training shuffles their order
every epoch.

``slate_length`` bounds training lists: a longer query keeps a random subset of
``slate_length`` documents (drawn once per fit from the ranker's seed, in input order) --
the documented sampling that bounds the memory of pairwise and MRF losses on long lists.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from ltr_bench.ranker import query_boundaries


@dataclass
class Batch:
    X: torch.Tensor
    y: torch.Tensor
    mask: torch.Tensor
    rows: torch.Tensor

    @property
    def n_queries(self) -> int:
        return int(self.X.shape[0])


def query_slices(qid: np.ndarray) -> list[np.ndarray]:
    """Row indices of each contiguous query block."""
    b = query_boundaries(qid)
    return [np.arange(b[i], b[i + 1]) for i in range(len(b) - 1)]


def build_batches(
    X: np.ndarray,
    y: np.ndarray | None,
    qid: np.ndarray,
    *,
    max_queries: int | None,
    budget: int,
    width: Callable[[int], int],
    slate_length: int | None = None,
    rng: np.random.Generator | None = None,
    dtype=torch.float32,
    device="cpu",
) -> list[Batch]:
    """Padded batches of the queries in ``qid`` (see the module docstring). ``width(L)`` is
    the per-document cost of a list of length L; ``y=None`` (prediction) pads zeros."""
    queries = query_slices(qid)
    if slate_length is not None:
        rng = rng if rng is not None else np.random.default_rng(0)
        queries = [
            np.sort(rng.choice(q, size=slate_length, replace=False)) if len(q) > slate_length else q
            for q in queries
        ]
    order = sorted(range(len(queries)), key=lambda i: len(queries[i]))
    groups: list[list[int]] = []
    current: list[int] = []
    real = 0  # sum of n_q * width(n_q) over the current batch
    for i in order:
        L = len(queries[i])  # the longest so far: queries come in increasing length
        w = max(1, width(L))
        cost = (len(current) + 1) * L * w
        if max_queries is not None:
            full = len(current) >= max_queries
        else:  # full batch: bound the padding instead (see the module docstring)
            full = cost > 2 * (real + L * w)
        if current and (full or cost > budget):
            groups.append(current)
            current, real = [], 0
        current.append(i)
        real += L * w
    if current:
        groups.append(current)
    return [_pad([queries[i] for i in g], X, y, dtype, device) for g in groups]


def _pad(blocks, X, y, dtype, device) -> Batch:
    B, L, d = len(blocks), max(len(b) for b in blocks), X.shape[1]
    Xb = np.zeros((B, L, d), dtype=np.float64 if dtype == torch.float64 else np.float32)
    yb = np.full((B, L), -1.0)
    rows = np.full((B, L), -1, dtype=np.int64)
    for k, idx in enumerate(blocks):
        n = len(idx)
        Xb[k, :n] = X[idx]
        if y is not None:
            yb[k, :n] = y[idx]
        rows[k, :n] = idx
    mask = rows >= 0
    return Batch(
        X=torch.as_tensor(Xb, device=device),
        y=torch.as_tensor(yb, dtype=dtype, device=device),
        mask=torch.as_tensor(mask, device=device),
        rows=torch.as_tensor(rows, device=device),
    )

"""NeuralNDCG (Pobrotyn and Bialobrzeski, 2021, arXiv:2102.07831): NDCG through NeuralSort.

NeuralSort (Grover et al., ICLR 2019) relaxes the permutation matrix that sorts the scores
``s`` (n real documents of one query) in descending order. Row i (position i), column j
(document j)::

    P^[i, :] = softmax( ((n + 1 - 2i) * s - A_s 1) / temperature ),   A_s[j, l] = |s_j - s_l|

As the temperature goes to 0, ``P^`` tends to the exact sorting permutation (distinct scores).
NeuralNDCG makes ``P^`` doubly stochastic by Sinkhorn scaling (alternate row and column
normalisation, at most ``max_iter`` rounds, stopping once every row and column sum is within
``tol`` of 1; :mod:`ltr_bench_neural.losses._sinkhorn` says how), then applies it to the
gains::

    NeuralNDCG@k(s, y) = (1 / IDCG@k) * sum_{i=1..k} (P^ g)_i / log2(1 + i)

with ``g = 2^y - 1`` (``powered_relevancies=True``) or ``g = y``, and IDCG@k computed with the
same gain. ``k=None`` means the whole list (NeuralNDCG@max). The loss is ``-mean`` of this over
the queries with IDCG > 0 (0 when there is none). Padding is left out of the sort: a query
with n real documents is relaxed as a list of n. This is allRank's deterministic variant; its
stochastic variant (Gumbel perturbations, ``stochastic=True``) is not provided.
"""

from __future__ import annotations

import torch

from ltr_bench_neural.losses._ndcg_terms import (
    PAD_SCORE,
    check_no_weights,
    discounts,
    gains,
    ideal_dcg,
    query_mean,
)
from ltr_bench_neural.losses._sinkhorn import sinkhorn

__all__ = ["neural_sort", "neuralndcg", "sinkhorn"]


def neural_sort(
    scores: torch.Tensor, mask: torch.Tensor, temperature: float, *, log: bool = False
) -> torch.Tensor:
    """Relaxed descending-sort permutation matrices, shape [B, L, L] (row = position).

    Rows beyond a query's length and columns of padding are 0; every other row sums to 1.
    ``log=True`` returns ``log P^`` (``PAD_SCORE`` outside each query's n x n block),
    computed by ``log_softmax`` so that it stays finite where ``P^`` underflows.
    """
    n_real = mask.sum(dim=-1, keepdim=True).to(scores.dtype)  # [B, 1]
    pos = torch.arange(1, scores.shape[-1] + 1, dtype=scores.dtype, device=scores.device)
    scaling = n_real + 1.0 - 2.0 * pos  # [B, L]: (n + 1 - 2i) for position i
    s = torch.where(mask, scores, torch.zeros_like(scores))
    pair_real = mask[:, :, None] & mask[:, None, :]
    abs_diff = torch.where(pair_real, (s[:, :, None] - s[:, None, :]).abs(), 0.0)
    b = abs_diff.sum(dim=-1)  # (A_s 1)_j over real documents, [B, L]
    logits = (scaling[:, :, None] * s[:, None, :] - b[:, None, :]) / temperature
    row_real = mask[:, :, None]  # position i <= n
    # Padding columns get -inf in real rows; rows past the query's end get 0 everywhere
    # (a finite softmax that is then zeroed: a row of -inf would put NaN into the gradient).
    neg_inf = torch.full_like(logits, float("-inf"))
    logits = torch.where(pair_real, logits, torch.where(row_real, neg_inf, 0.0))
    if log:
        logp = torch.log_softmax(logits, dim=-1)
        return torch.where(pair_real, logp, torch.full_like(logp, PAD_SCORE))
    p = torch.softmax(logits, dim=-1)
    return torch.where(row_real, p, torch.zeros_like(p))


def neuralndcg(
    scores: torch.Tensor,
    y: torch.Tensor,
    mask: torch.Tensor,
    *,
    weights=None,
    temperature: float = 1.0,
    powered_relevancies: bool = True,
    k: int | None = None,
    stochastic: bool = False,
    max_iter: int = 50,
    tol: float = 1e-6,
) -> torch.Tensor:
    """Negative NeuralNDCG@k; see the module docstring. Returns a scalar tensor."""
    check_no_weights("neuralndcg", weights)
    if stochastic:
        raise ValueError(
            "neuralndcg: stochastic=True (allRank's Gumbel-perturbed variant) is not "
            "provided; use stochastic=False"
        )
    if not temperature > 0:
        raise ValueError(f"neuralndcg: temperature must be > 0, got {temperature!r}")
    if k is not None and (isinstance(k, bool) or int(k) != k or k < 1):
        raise ValueError(f"neuralndcg: k must be a positive integer or None, got {k!r}")
    logp = neural_sort(scores, mask, temperature, log=True)
    p = sinkhorn(logp, mask, max_iter=max_iter, tol=tol)
    g = gains(y, mask, powered=bool(powered_relevancies))
    sorted_gains = torch.matmul(p, g.unsqueeze(-1)).squeeze(-1)  # [B, L], by position
    d = discounts(y.shape[-1], dtype=scores.dtype, device=scores.device)
    if k is not None:
        d = torch.where(torch.arange(d.numel(), device=d.device) < k, d, torch.zeros_like(d))
    dcg = (sorted_gains * d).sum(dim=-1)
    idcg = ideal_dcg(y, mask, k, powered=bool(powered_relevancies))
    counted = idcg > 0
    ndcg = dcg / torch.where(counted, idcg, torch.ones_like(idcg))
    return -query_mean(ndcg, counted)

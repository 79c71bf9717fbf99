"""ListMLE (Xia et al., ICML 2008): the negative Plackett-Luce log-likelihood of the true order.

For one query with scores ``s`` and a permutation ``pi`` that sorts its documents by
descending label (``pi(1)`` is the most relevant)::

    ListMLE(s, y) = -log P_PL(pi | s) = sum_{i=1..n} [ log sum_{j=i..n} exp(s_pi(j)) - s_pi(i) ]

The loss of a batch is the mean of this over its queries (a one-document query has loss 0).

Ties. Documents of equal label have no true order. As allRank does, ``pi`` orders them
uniformly at random, drawn anew at each call from torch's global generator (seeded by the
ranker's ``random_state``, so a seeded run is reproducible): the loss is then an unbiased
estimate of the mean of ``-log P_PL(pi | s)`` over all label-consistent permutations ``pi``
(the tests check both facts against enumeration). ``ties="first"`` keeps input order among
ties instead (deterministic, but it favours whatever order the data comes in).

This is the same quantity as the design paper's unweighted ``pl`` loss (Eq. 11 with W = 1)
on tie-free labels; the two differ only in how ties are resolved.
"""

from __future__ import annotations

import torch

from ltr_bench_neural.losses._ndcg_terms import PAD_SCORE, check_no_weights, query_mean

__all__ = ["listmle"]


def listmle(
    scores: torch.Tensor,
    y: torch.Tensor,
    mask: torch.Tensor,
    *,
    weights=None,
    ties: str = "random",
) -> torch.Tensor:
    """ListMLE; see the module docstring for the formula. Returns a scalar tensor."""
    check_no_weights("listmle", weights)
    if ties not in ("random", "first"):
        raise ValueError(f"listmle: ties must be 'random' or 'first', got {ties!r}")
    n_docs = y.shape[-1]
    if ties == "random":
        # A random order first, then a stable sort by label: ties end up uniformly shuffled.
        shuffle = torch.argsort(torch.rand(y.shape, device=y.device), dim=-1)
    else:
        shuffle = torch.arange(n_docs, device=y.device).expand(y.shape)
    y_key = torch.where(mask, y, torch.full_like(y, float("-inf"))).gather(-1, shuffle)
    order = shuffle.gather(-1, torch.sort(y_key, dim=-1, descending=True, stable=True).indices)
    s_sorted = torch.where(mask, scores, torch.full_like(scores, PAD_SCORE)).gather(-1, order)
    real_sorted = mask.gather(-1, order)
    # log sum_{j >= i} exp(s_pi(j)): a reversed log-cum-sum-exp (padding sits at the end).
    tail_lse = torch.logcumsumexp(s_sorted.flip(-1), dim=-1).flip(-1)
    terms = torch.where(real_sorted, tail_lse - s_sorted, torch.zeros_like(s_sorted))
    return query_mean(terms.sum(dim=-1), mask.any(dim=-1))

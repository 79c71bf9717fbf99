"""Element-wise decompositions, Eq. 8: sum_i W_i omega_i, with W_i from ``weights`` [B, L].

Plackett-Luce with ties (the paper assumes a strict order). Objects are ordered by label; for
tied labels we use Breslow's approximation (as in Cox regression with tied event times): each
object of a tie group is chosen from the set of all objects not strictly better than it (PL)
or eliminated from the set of all objects not strictly worse (RPL). The loss then depends on
the labels only, never on the row order, and equals the exact (reverse) Plackett-Luce
negative log-likelihood whenever the labels are distinct. Worth phi = exp f.
"""

from __future__ import annotations

import torch

from ltr_bench_neural.losses._common import NEG, query_mean


def _weighted_sum(values, mask, weights):
    w = mask.to(values.dtype) if weights is None else weights * mask
    return query_mean((w * values.masked_fill(~mask, 0.0)).sum(dim=1))


def pointwise_loss(scores, y, mask, *, weights=None):
    """Per query: sum_i W_i (r_i - f_i)^2 (weighted pointwise regression, Eq. 8)."""
    return _weighted_sum((y - scores) ** 2, mask, weights)


def _sorted_by_label(scores, y, mask):
    """Sort each list by label, best first, padding last: (order, labels, scores, real)."""
    key = torch.where(mask, y, torch.full_like(y, -1.0))
    order = torch.argsort(key, dim=1, descending=True, stable=True)
    return (
        order,
        torch.gather(key, 1, order),
        torch.gather(scores, 1, order),
        torch.gather(mask, 1, order),
    )


def _group_index(ys, *, last: bool):
    """For each sorted position, the first (``last=False``) or last position of its tie group."""
    B, L = ys.shape
    pos = torch.arange(L, device=ys.device).expand(B, L)
    if not last:
        new = torch.ones(B, L, dtype=torch.bool, device=ys.device)
        new[:, 1:] = ys[:, 1:] != ys[:, :-1]
        return torch.cummax(torch.where(new, pos, torch.zeros_like(pos)), dim=1).values
    end = torch.ones(B, L, dtype=torch.bool, device=ys.device)
    end[:, :-1] = ys[:, :-1] != ys[:, 1:]
    rev = torch.where(end, pos, torch.full_like(pos, L - 1)).flip(1)
    return torch.cummin(rev, dim=1).values.flip(1)


def pl_loss(scores, y, mask, *, weights=None):
    """Weighted Plackett-Luce, Eq. 11. Per query, over objects i in label order:
    -sum_i W_i log P(pi_i | pi_1:i-1) = sum_i W_i [log sum_{j : r_j <= r_i} exp f_j - f_i]
    (ties: Breslow, see the module). The worst object of a strict order adds 0."""
    order, ys, ss, real = _sorted_by_label(scores, y, mask)
    s = ss.masked_fill(~real, NEG)
    tail = torch.logcumsumexp(s.flip(1), dim=1).flip(1)  # log sum_{k >= p} exp s_k
    start = _group_index(ys, last=False)
    nll = torch.gather(tail, 1, start) - ss
    w = None if weights is None else torch.gather(weights, 1, order)
    return _weighted_sum(nll, real, w)


def rpl_loss(scores, y, mask, *, weights=None):
    """Weighted reverse Plackett-Luce, Eq. 13 (eliminate the worst first, probability
    proportional to phi^-1 = exp(-f)). Per query:
    -sum_i W_i log Q(pi_i | pi_i+1:N) = sum_i W_i [log sum_{j : r_j >= r_i} exp(-f_j) + f_i]
    (ties: Breslow). The best object of a strict order adds 0."""
    order, ys, ss, real = _sorted_by_label(scores, y, mask)
    s = (-ss).masked_fill(~real, NEG)
    head = torch.logcumsumexp(s, dim=1)  # log sum_{k <= p} exp(-s_k)
    end = _group_index(ys, last=True)
    nll = torch.gather(head, 1, end) + ss
    w = None if weights is None else torch.gather(weights, 1, order)
    return _weighted_sum(nll, real, w)

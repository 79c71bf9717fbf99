"""Losses of the Markov random field over ratings, Eqs. 14-18.

The model: P(r) = (1/Z) exp(gamma sum_{i<j} sign(r_i - r_j)(f_i - f_j)), every r_i in the
label set {0, ..., K-1} (K = ``n_levels``, the paper's |L|), Z summing over all K^N label
configurations; gamma = 2 / (N (N - 1)) by default (the paper's choice; 1 when N < 2).

wpll (Eq. 16): -sum_i W_i log P(r_i | r_-i) with
    P(r_i = a | r_-i) = exp(gamma E_i(a)) / sum_{a' in L} exp(gamma E_i(a')),
    E_i(a) = sum_{j != i} sign(a - r_j)(f_i - f_j).
  E_i(a) = sum_{l < a} A_i(l) - sum_{l > a} A_i(l) with A_i(l) = c_l f_i - S_l (c_l, S_l:
  count and score sum of the objects of label l), so the cost is O(N K), not O(N^2 K).

wub (Eq. 18): sum_{i<j} V_ij [-log Q(r_i, r_j)], Q(r_i, r_j) = psi(r_i, r_j) / Z_ij,
    psi(a, b) = exp(gamma sign(a - b)(f_i - f_j)),
    Z_ij = sum_{a, b in L} psi(a, b) = K + m (e^{gamma d} + e^{-gamma d}), m = K(K-1)/2.
  With V = 1, -log P(r) <= wub + (N - 2) log K (the appendix). All pairs count, tied ones
  too (their -log Q = log Z_ij pulls their scores together). Memory [B, L, L].
"""

from __future__ import annotations

import torch

from ltr_bench_neural.losses._common import n_docs, query_mean


def _gamma(mask, gamma, dtype):
    N = n_docs(mask, dtype)
    if gamma is not None:
        return torch.full_like(N, float(gamma))
    return torch.where(N >= 2, 2.0 / (N * (N - 1)).clamp_min(1.0), torch.ones_like(N))


def _levels(y, n_levels):
    K = int(n_levels) if n_levels is not None else int(y.max().item()) + 1
    if K < 2:
        K = 2
    if int(y.max().item()) >= K:
        raise ValueError(f"a label {int(y.max().item())} is outside the label set 0..{K - 1}")
    return K


def wpll_loss(scores, y, mask, *, weights=None, gamma=None, n_levels=None):
    """Weighted pseudo-likelihood of the MRF, Eq. 16 (see the module docstring)."""
    K = _levels(y, n_levels)
    g = _gamma(mask, gamma, scores.dtype)[:, None, None]
    s = scores.masked_fill(~mask, 0.0)
    levels = torch.arange(K, device=y.device, dtype=y.dtype)
    onehot = ((y[:, :, None] == levels) & mask[:, :, None]).to(scores.dtype)  # [B, L, K]
    count = onehot.sum(dim=1)  # [B, K]
    ssum = (onehot * s[:, :, None]).sum(dim=1)  # [B, K]
    A = count[:, None, :] * s[:, :, None] - ssum[:, None, :]  # A_i(l), [B, L, K]
    below = torch.cumsum(A, dim=2) - A  # sum_{l < a}
    above = A.sum(dim=2, keepdim=True) - torch.cumsum(A, dim=2)  # sum_{l > a}
    E = g * (below - above)  # [B, L, K]
    label = y.clamp_min(0).long()[:, :, None]
    nll = torch.logsumexp(E, dim=2) - torch.gather(E, 2, label).squeeze(2)
    w = mask.to(scores.dtype) if weights is None else weights * mask
    return query_mean((w * nll.masked_fill(~mask, 0.0)).sum(dim=1))


def wub_loss(scores, y, mask, *, weights=None, gamma=None, n_levels=None):
    """Weighted pairwise upper bound of the MRF log-loss, Eq. 18 (see the module docstring)."""
    K = _levels(y, n_levels)
    g = _gamma(mask, gamma, scores.dtype)[:, None, None]
    L = scores.shape[1]
    d = g * (scores[:, :, None] - scores[:, None, :])  # gamma (f_i - f_j)
    m = K * (K - 1) / 2
    # log Z_ij = log(K + m e^{d} + m e^{-d}) = |d| + log(m + K e^{-|d|} + m e^{-2|d|}):
    # stable, and without the three stacked [B, L, L] copies of a logsumexp
    a = d.abs()
    e = torch.exp(-a)
    log_z = a + torch.log(m + K * e + m * e * e)
    sign = torch.sign(y[:, :, None] - y[:, None, :])
    nll = log_z - sign * d
    eye = torch.eye(L, dtype=torch.bool, device=scores.device)
    valid = mask[:, :, None] & mask[:, None, :] & ~eye
    w = valid.to(scores.dtype) if weights is None else weights * valid
    # each unordered pair appears twice in the symmetric [L, L] matrix
    return query_mean(0.5 * (w * torch.where(valid, nll, torch.zeros_like(nll))).sum(dim=(1, 2)))

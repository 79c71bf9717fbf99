"""The weights of Eq. 8 (element-wise W, Table 8) and Eq. 9 (pairwise V, Table 9), computed
from the labels of a padded batch. Formulas and the definition of pi: :mod:`.design`.
Weights are constants of the labels (no gradient) and are 0 at padding."""

from __future__ import annotations

import torch

from ltr_bench_neural.losses._common import true_positions


def _gain(y, mask, n_levels):
    """R_i = (2^r_i - 1) / (2^|L| - 1)."""
    return torch.where(mask, (torch.exp2(y.clamp_min(0)) - 1.0) / (2.0**n_levels - 1.0), 0.0)


def element_weights(name: str, y, mask, *, n_levels: int):
    """W [B, L] of Table 8, or None for ``one`` (the losses treat None as all ones)."""
    if name == "one":
        return None
    r = y.clamp_min(0)
    if name == "rating":
        w = r
    elif name == "sqrt-rating":
        w = torch.sqrt(r)
    elif name == "gain":
        w = _gain(y, mask, n_levels)
    elif name in ("inv-pos", "inv-log-pos"):
        pi = true_positions(y, mask)
        w = 1.0 / pi if name == "inv-pos" else 1.0 / torch.log2(1.0 + pi)
    else:
        raise ValueError(f"unknown element-wise weight {name!r}")
    return torch.where(mask, w, torch.zeros_like(w))


def pair_weights(name: str, y, mask, *, n_levels: int):
    """V [B, L, L] of Table 9 (symmetric), or None for ``one``."""
    if name == "one":
        return None
    both = mask[:, :, None] & mask[:, None, :]
    nq = mask.sum(dim=1).to(y.dtype).clamp_min(1.0)[:, None, None]
    if name in ("rating-diff", "rating-diff/nq"):
        v = (y[:, :, None] - y[:, None, :]).abs()
    elif name in ("gain-diff", "gain-diff/nq"):
        R = _gain(y, mask, n_levels)
        v = (R[:, :, None] - R[:, None, :]).abs()
    elif name in ("ndcg-delta", "ndcg-delta/max"):
        R = _gain(y, mask, n_levels)
        eta = torch.where(mask, 1.0 / torch.log2(1.0 + true_positions(y, mask)), 0.0)
        v = ((R[:, :, None] - R[:, None, :]) * (eta[:, :, None] - eta[:, None, :])).abs()
        if name == "ndcg-delta/max":
            # NDCGMax_q: the ideal DCG with gains R and discount eta (labels sorted)
            ideal = torch.sort(R, dim=1, descending=True).values
            pos = torch.arange(1, y.shape[1] + 1, device=y.device, dtype=y.dtype)
            idcg = (ideal / torch.log2(1.0 + pos)).sum(dim=1)
            v = v / idcg.clamp_min(1e-30)[:, None, None]
    elif name == "inv-nq":
        v = torch.ones_like(both, dtype=y.dtype)
    else:
        raise ValueError(f"unknown pairwise weight {name!r}")
    if name.endswith("/nq") or name == "inv-nq":
        v = v / nq
    return torch.where(both, v, torch.zeros_like(v))


def weights_for_loss(kind: str, name: str, y, mask, *, n_levels: int):
    """Dispatch on the loss's weight kind (``element``, ``pair`` or ``none``)."""
    if kind == "element":
        return element_weights(name, y, mask, n_levels=n_levels)
    if kind == "pair":
        return pair_weights(name, y, mask, n_levels=n_levels)
    return None

"""Smoothed rank metrics, Eqs. 6-7: loss = 1 - M(r, {rho(f_i, f_j)}), with the step
delta[f_j > f_i] replaced by the sigmoid rho_ji = 1 / (1 + exp(-(f_j - f_i) / T)).

The smoothed position is pi-hat_i = 1 + sum_{j != i} rho_ji (the paper's predicted position
with the indicator smoothed). As T -> 0 with distinct scores every rho_ji tends to the
indicator, so each smoothed metric tends to the exact metric of
:mod:`ltr_bench.evaluation.metrics` on the whole list (NDCG and ERR without a cut-off; MRR
with label >= 1 relevant). A query without a relevant document adds 0 (the metrics' empty-
query value is 1). Memory: [B, L, L].
"""

from __future__ import annotations

import torch

from ltr_bench_neural.losses._common import query_mean


def _check_temperature(temperature):
    if temperature is None or not float(temperature) > 0:
        raise ValueError(f"smoothed metric losses need a temperature > 0, got {temperature!r}")
    return float(temperature)


def _above(scores, mask, temperature):
    """rho[b, i, j] = sigmoid((f_j - f_i) / T): j smoothly above i; 0 for j = i or padding."""
    T = _check_temperature(temperature)
    rho = torch.sigmoid((scores[:, None, :] - scores[:, :, None]) / T)
    L = scores.shape[1]
    eye = torch.eye(L, dtype=torch.bool, device=scores.device)
    valid = mask[:, :, None] & mask[:, None, :] & ~eye
    return rho * valid


def smooth_ndcg_loss(scores, y, mask, *, weights=None, temperature=1.0):
    """1 - SmoothNDCG per query: DCG = sum_i (2^r_i - 1) / log2(1 + pi-hat_i), divided by
    the ideal DCG of the query's labels (whole list)."""
    rho = _above(scores, mask, temperature)
    pos = 1.0 + rho.sum(dim=2)
    gain = torch.where(mask, torch.exp2(y.clamp_min(0)) - 1.0, torch.zeros_like(y))
    dcg = (gain / torch.log2(1.0 + pos)).sum(dim=1)
    ideal = torch.sort(gain, dim=1, descending=True).values
    disc = 1.0 / torch.log2(torch.arange(2, gain.shape[1] + 2, device=y.device, dtype=gain.dtype))
    idcg = (ideal * disc).sum(dim=1)
    has = idcg > 0
    ndcg = torch.where(has, dcg / idcg.clamp_min(1e-30), torch.ones_like(dcg))
    return query_mean(1.0 - ndcg)


def smooth_err_loss(scores, y, mask, *, weights=None, temperature=1.0, max_label=None):
    """1 - SmoothERR per query: ERR = sum_i (R_i / pi-hat_i) prod_{j != i} (1 - R_j rho_ji),
    R = (2^r - 1) / 2^g_max with g_max = ``max_label`` (the training split's largest label,
    as ltr_bench's ERR; default: the batch's). At T -> 0 the product runs over the objects
    ranked above i: Chapelle et al.'s cascade."""
    rho = _above(scores, mask, temperature)
    pos = 1.0 + rho.sum(dim=2)
    g_max = float(y.max()) if max_label is None else float(max_label)
    R = torch.where(mask, (torch.exp2(y.clamp_min(0)) - 1.0) / 2.0**g_max, torch.zeros_like(y))
    R = R.clamp(max=1.0 - 2.0 ** -max(g_max, 1.0))  # labels above g_max: keep log1p finite
    survive = torch.exp(torch.log1p(-R[:, None, :] * rho).sum(dim=2))
    err = (R / pos * survive).sum(dim=1)
    has = (R > 0).any(dim=1)
    return query_mean(torch.where(has, 1.0 - err, torch.zeros_like(err)))


def smooth_mrr_loss(scores, y, mask, *, weights=None, temperature=1.0):
    """1 - SmoothMRR per query: MRR = sum_{i relevant} (1 / pi-hat_i) prod_{j relevant,
    j != i} (1 - rho_ji): the reciprocal rank of i, if i is the highest-ranked relevant
    object (label >= 1)."""
    rho = _above(scores, mask, temperature)
    pos = 1.0 + rho.sum(dim=2)
    rel = (mask & (y >= 1)).to(scores.dtype)
    T = _check_temperature(temperature)
    # log(1 - rho_ji) = log sigmoid((f_i - f_j) / T), exact and finite even where rho_ji
    # rounds to 1 (log1p(-rho) would be -inf there, and its gradient NaN)
    log_below = torch.nn.functional.logsigmoid((scores[:, :, None] - scores[:, None, :]) / T)
    L = scores.shape[1]
    others = rel[:, None, :] * ~torch.eye(L, dtype=torch.bool, device=scores.device)
    first = torch.exp((log_below * others).sum(dim=2))
    mrr = (rel / pos * first).sum(dim=1)
    has = rel.sum(dim=1) > 0
    return query_mean(torch.where(has, 1.0 - mrr, torch.zeros_like(mrr)))

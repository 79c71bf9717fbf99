"""Group-level rank functionals (Table 2): the objects of one rating become one mega-object.

For a query with objects of labels r and scores f, group a (label a, K_a >= 1 members) gets

=========  ==========================================
min        min_{j : r_j = a} f_j
max        max_{j : r_j = a} f_j
mean       (1/K_a) sum_{j : r_j = a} f_j
geomean    log((1/K_a) sum_{j : r_j = a} exp f_j)
=========  ==========================================

(``geomean`` is Table 2's "geometric mean": the log of the arithmetic mean of the worths
exp f, i.e. a log-mean-exp.) During training the loss sees one item per label present in the
query, ordered by label, so there are no ties. At prediction time there are no labels and no
groups: documents are ranked by their own f, the functional the groups were built from.
"""

from __future__ import annotations

import torch

from ltr_bench_neural.losses._common import NEG


def group_scores(scores, y, mask, group: str, n_levels: int):
    """``(g_scores [B, K], g_labels [B, K], g_mask [B, K])``: group a sits in column a;
    columns of labels absent from a query are masked (label -1, score 0)."""
    levels = torch.arange(n_levels, device=y.device, dtype=y.dtype)
    member = (y[:, :, None] == levels) & mask[:, :, None]  # [B, L, K]
    count = member.sum(dim=1)
    present = count > 0
    s = scores[:, :, None]
    if group == "min":
        g = torch.where(member, s, torch.full_like(s, -NEG)).amin(dim=1)
    elif group == "max":
        g = torch.where(member, s, torch.full_like(s, NEG)).amax(dim=1)
    elif group == "mean":
        g = (s * member).sum(dim=1) / count.clamp_min(1)
    elif group == "geomean":
        g = torch.logsumexp(torch.where(member, s, torch.full_like(s, NEG)), dim=1)
        g = g - torch.log(count.clamp_min(1).to(scores.dtype))
    else:
        raise ValueError(f"unknown group functional {group!r}")
    g = torch.where(present, g, torch.zeros_like(g))
    labels = torch.where(present, levels.expand_as(g), torch.full_like(g, -1.0))
    return g, labels, present

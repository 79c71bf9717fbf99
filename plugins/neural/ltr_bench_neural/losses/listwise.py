"""The multiclass logistic loss of Eq. 5 (and ListNet's top-one cross-entropy as an option)."""

from __future__ import annotations

import torch

from ltr_bench_neural.losses._common import NEG, query_mean


def softmax_loss(scores, y, mask, *, weights=None, target="best"):
    """Per query: -sum_i t_i log P_i with P_i = exp f_i / sum_j exp f_j (Eq. 5's P(r_i = 1|o)).

    ``target="best"`` (Eq. 5): t uniform over the objects of the query's highest label, i.e.
    -log P(best object first) when there is one best object, and the mean of -log P_i over
    tied best objects otherwise; a query whose labels are all 0 has no best object and adds 0.
    ``target="labels"``: t = softmax of the labels, the cross-entropy of ListNet's top-one
    probabilities (Cao et al. 2007) -- what allRank calls ``listnet``; all-zero labels give
    the uniform target. Padding has P = 0 and t = 0. A one-document query adds 0.
    """
    if target not in ("best", "labels"):
        raise ValueError(f"softmax loss: target must be 'best' or 'labels', got {target!r}")
    logp = torch.log_softmax(scores.masked_fill(~mask, NEG), dim=1).masked_fill(~mask, 0.0)
    if target == "best":
        top = torch.where(mask, y, torch.full_like(y, -1.0)).amax(dim=1, keepdim=True)
        t = (mask & (y == top) & (top > 0)).to(scores.dtype)
        t = t / t.sum(dim=1, keepdim=True).clamp_min(1.0)
    else:
        t = torch.softmax(y.masked_fill(~mask, NEG).to(scores.dtype), dim=1).masked_fill(~mask, 0.0)
    return query_mean(-(t * logp).sum(dim=1))

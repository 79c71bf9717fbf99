"""Whether the rows ``predict`` scores are data the model learnt from: :func:`split_notes`.

The manifest records the fingerprints of the fold the model was fitted on (``{split:
fingerprint}`` of its train / vali / test splits, :class:`ltr_bench.folds.Fold`). A dataset's
split scored by ``predict`` is compared with them:

* the model's own test split (its fingerprint is the recorded ``test``): nothing to say; this
  is the held-out estimate ``run`` recorded (a click-trained model included: clicks replace
  the labels of train and vali only, so its test split is the same with or without them);
* its training or validation split (the same fingerprint): said, the metrics measure fit;
* any other split: the fold the model was fitted on is looked for among the dataset's folds
  (the one whose test split has the recorded fingerprint; labels of train and vali may be
  clicks, the test split never is). Found, the scored queries that were in its training or
  validation split (the same query id with the same feature rows) are counted: a held-out
  number would be a leak, and the note says so. Not found, the data is not the model's
  (another seed, dataset option or version of the files), as before.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

__all__ = ["query_rows", "split_notes"]


def query_rows(split) -> set[tuple[int, str]]:
    """``{(qid, sha256 of the query's feature rows)}`` of ``split`` (rows of a query
    contiguous, as every loaded split has them). Labels are left out: a click-trained fold
    has other labels on the same queries."""
    qid = np.asarray(split.qid)
    if qid.size == 0:
        return set()
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    ends = np.r_[starts[1:], qid.size]
    X = np.asarray(split.X)
    out = set()
    for s, e in zip(starts.tolist(), ends.tolist()):
        rows = np.ascontiguousarray(X[s:e], dtype=np.float64).tobytes()
        out.add((int(qid[s]), hashlib.sha256(rows).hexdigest()))
    return out


def split_notes(
    recorded: Any,
    where: str,
    split,
    fold,
    *,
    load_fold: Callable[[int], Any],
    other_folds: Iterable[int],
) -> list[str]:
    """What the user should know about scoring ``split`` (of ``fold``; ``where`` names it,
    e.g. ``synthetic fold 2 test``) with a model whose manifest recorded the fingerprints
    ``recorded`` (see the module). ``load_fold(k)`` loads fold ``k`` of the same dataset
    with the same options and seed, for the folds in ``other_folds`` (tried in order
    until the model's own is found)."""
    if not isinstance(recorded, dict) or not recorded.get("test"):
        return []  # a model saved without its fold's fingerprints: nothing to compare
    scored = split.fingerprint
    if scored == recorded["test"]:
        return []
    if scored == recorded.get("train"):
        return [
            f"{where} is the split the model was fitted on: these metrics measure how well "
            "it fits its training queries, not how it ranks new ones"
        ]
    if scored == recorded.get("vali"):
        return [
            f"{where} is the model's validation split (used for early stopping and "
            "tuning): these metrics are optimistic (a leak), not a held-out estimate"
        ]
    own = fold if fold.test.fingerprint == recorded["test"] else None
    if own is None:
        for k in other_folds:
            candidate = load_fold(k)
            if candidate.test.fingerprint == recorded["test"]:
                own = candidate
                break
    if own is None:
        return [
            f"{where} is not data of the fold the model was fitted on (no fold of this "
            "dataset, as loaded now, has the model's test split: another seed, dataset "
            "option or version of the files?)"
        ]
    scored_queries = query_rows(split)
    seen = query_rows(own.train) | (query_rows(own.vali) if own.vali is not None else set())
    shared = len(scored_queries & seen)
    model_fold = f"fold {own.index}"
    if shared == 0:
        return [
            f"the model was fitted on {model_fold} of this dataset; none of the "
            f"{len(scored_queries)} queries of {where} were in its training or validation "
            f"data, but its held-out estimate is {model_fold} test"
        ]
    return [
        f"{shared} of the {len(scored_queries)} queries of {where} were in the training or "
        f"validation data of the model (fitted on {model_fold}): these metrics are a leak, "
        f"not a held-out estimate; score {model_fold} test for that"
    ]

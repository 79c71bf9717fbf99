"""Metric convention profiles: the same predictions scored the way another tool scores them.

ltr-bench's own metrics (:mod:`ltr_bench.evaluation.metrics`) follow LightGBM, XGBoost and allRank:
gain ``2^rel - 1``, discount ``1/log2(rank + 1)``, a query without relevant documents scores 1
(or 0 under the ``_empty0`` keys), and tied scores get the expected value over all their
orderings. Published tables use other rules. A profile recomputes the metrics under one of
them, so a number can be put next to a published one. Record keys carry the profile as a
suffix (``ndcg@10_letor4``; see :class:`ltr_bench.evaluation.metrics.MetricKey`).

========  ======================================================================================
profile   definitions
========  ======================================================================================
letor4    The official LETOR 4.0 script (``Eval-Score-4.0.pl``, MQ2007/MQ2008): NDCG gain
          ``2^rel - 1``; discount 1 at ranks 1 and 2, then ``1/log2(rank)``; NDCG@k = 0 for
          a query with fewer than k documents; P@k counts missing ranks as irrelevant (hits /
          k); AP = mean precision at the relevant ranks; a query without relevant documents
          scores 0 in NDCG and MAP; tied scores keep the order of the rows in the file.
letor3    The LETOR 3.0 script (``Eval-Score-3.0.pl``, OHSUMED): as ``letor4`` except that
          P@k of a query with fewer than k documents is 0 (the script leaves it undefined and
          averages it as 0).
trec      trec_eval (``ndcg_cut.k``, ``P.k``, ``map``, ``map_cut.k``, ``recip_rank``,
          ``recall.k``): NDCG gain = the label (linear), discount ``1/log2(rank + 1)``, a
          query shorter than k is scored over the documents it has; a query without relevant
          documents scores 0; ties are broken by document id in descending string order, the
          ids being those of the run files ltr-bench writes: the data file's own document ids
          (``#docid = ...``) when its lines have them, else the rows' positions in the split.
nonempty  ltr-bench's definitions, with queries without relevant documents left out of the
          mean (their per-query value is NaN).
========  ======================================================================================

Every profile treats label >= 1 as relevant (the LETOR scripts only know labels 0-2, for
which that is their rule). Supported metrics: ``ndcg@k``, ``map``, ``map@k``, ``p@k``,
``mrr``, ``recall@k`` (``err`` only under ``nonempty``; the LETOR scripts and trec_eval's
default measures do not define it). Note that keeping file order on ties lets the order of the
data leak into the score: on OHSUMED, where relevant documents tend to come first in the
files, a constant scorer beats real models under ``letor3`` (see the README).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:
    from ltr_bench.evaluation.metric_keys import MetricKey

__all__ = ["PROFILES", "Profile", "evaluate_profile", "profile_keys"]


@dataclass(frozen=True)
class Profile:
    name: str
    title: str
    gain: str  # "exp" (2^rel - 1) or "linear" (rel)
    discount: str  # "log2(r+1)" or "letor" (1 at ranks 1-2, then 1/log2(r))
    short_ndcg_zero: bool  # NDCG@k = 0 when the query has fewer than k documents
    short_p_zero: bool  # P@k = 0 when the query has fewer than k documents
    ties: str  # "file", "docno_desc" or "expected"
    empty: float  # value of NDCG/MAP/MRR/recall for a query without relevant docs


PROFILES: dict[str, Profile] = {
    "letor4": Profile("letor4", "LETOR 4.0 script", "exp", "letor", True, False, "file", 0.0),
    "letor3": Profile("letor3", "LETOR 3.0 script", "exp", "letor", True, True, "file", 0.0),
    "trec": Profile("trec", "trec_eval", "linear", "log2(r+1)", False, False, "docno_desc", 0.0),
    "nonempty": Profile(
        "nonempty",
        "empty queries left out",
        "exp",
        "log2(r+1)",
        False,
        False,
        "expected",
        float("nan"),
    ),
}
_SUPPORTED = {"ndcg", "map", "p", "mrr", "recall"}


def profile_keys(metrics: Iterable[str], profile: str) -> list[str]:
    """Record keys a profile adds for requested ``metrics`` (unsupported ones are skipped)."""
    from ltr_bench.evaluation.metric_keys import MetricKey

    out = []
    for m in metrics:
        key = MetricKey.parse(m)
        if key.name in _SUPPORTED or (profile == "nonempty" and key.name == "err"):
            text = MetricKey(key.name, key.k, "1", profile).text
            if text not in out:
                out.append(text)
    return out


def _order(scores: np.ndarray, ties: str, rows: np.ndarray, names: list[str]) -> np.ndarray:
    """Ranked positions of one query's documents under the profile's tie rule (``names``:
    the documents' names, :func:`ltr_bench.folds.doc_names`, for trec_eval's rule)."""
    if ties == "file":
        return np.lexsort((rows, -scores))
    # trec_eval: equal scores are ordered by docno, the larger string first
    by_docno = sorted(range(scores.size), key=lambda i: names[i], reverse=True)
    order = np.array(by_docno, dtype=np.int64)
    return np.asarray(order[np.argsort(-scores[order], kind="stable")])


def _discount(n: int, kind: str) -> np.ndarray:
    r = np.arange(1, n + 1, dtype=np.float64)
    if kind == "letor":
        return np.where(r <= 2, 1.0, 1.0 / np.log2(np.maximum(r, 2.0)))
    return 1.0 / np.log2(r + 1.0)


def _query_values(
    labels: np.ndarray, prof: Profile, metrics: list[tuple[str, MetricKey]]
) -> dict[str, float]:
    """Metrics of one query whose labels are in ranked order."""
    n = labels.size
    rel = labels >= 1
    n_rel = int(rel.sum())
    gains = (np.exp2(labels) - 1.0) if prof.gain == "exp" else labels.astype(np.float64)
    disc = _discount(n, prof.discount)
    ideal = np.sort(gains)[::-1]
    out: dict[str, float] = {}
    for text, key in metrics:
        k = key.k
        if key.name == "ndcg":
            assert k is not None  # NDCG needs a cutoff (METRIC_TABLE)
            if n_rel == 0:
                v = prof.empty
            elif prof.short_ndcg_zero and n < k:
                v = 0.0
            else:
                m = min(k, n)
                idcg = float(np.dot(ideal[:m], disc[:m]))
                v = float(np.dot(gains[:m], disc[:m])) / idcg if idcg > 0 else prof.empty
        elif key.name == "p":
            assert k is not None  # P needs a cutoff (METRIC_TABLE)
            v = 0.0 if (prof.short_p_zero and n < k) else float(rel[:k].sum()) / k
        elif key.name == "map":
            if n_rel == 0:
                v = prof.empty
            else:
                m = n if k is None else min(k, n)
                hits = np.cumsum(rel[:m])
                prec = hits / np.arange(1, m + 1)
                v = float(prec[rel[:m]].sum()) / n_rel
        elif key.name == "mrr":
            m = n if k is None else min(k, n)
            first = np.flatnonzero(rel[:m])
            v = prof.empty if n_rel == 0 else (1.0 / (int(first[0]) + 1) if first.size else 0.0)
        elif key.name == "recall":
            v = prof.empty if n_rel == 0 else float(rel[:k].sum()) / n_rel
        else:  # pragma: no cover - profile_keys never asks for others
            raise ValueError(f"{key.text} is not defined under the {prof.name} profile")
        out[text] = float(v)  # a Python float: numpy scalars must not reach the records
    return out


def evaluate_profile(
    y_true: ArrayLike,
    scores: ArrayLike,
    qid: ArrayLike,
    metrics: Iterable[str],
    profile: str,
    *,
    max_label: int | None = None,
    docid: ArrayLike | None = None,
) -> tuple[dict[str, float], dict[str, list[Any]]]:
    """``(means, per_query)`` of ``metrics`` under ``profile``, keys as :func:`profile_keys`
    names them; queries in order of first appearance (the order of
    :func:`ltr_bench.evaluation.metrics.query_ids`). Rows of a query are taken in file order (their
    order in the arrays). ``docid``: the rows' document ids from the data file, by which
    ``trec`` breaks ties as trec_eval does on the run file ltr-bench writes
    (:func:`ltr_bench.folds.doc_names`; default: the rows' positions). Raises ValueError for
    an unknown profile.
    """
    from ltr_bench.evaluation.metric_keys import MetricKey
    from ltr_bench.evaluation.metrics import evaluate, query_ids
    from ltr_bench.folds import doc_names

    if profile not in PROFILES:
        raise ValueError(f"unknown convention profile {profile!r}; profiles: {', '.join(PROFILES)}")
    prof = PROFILES[profile]
    keys = profile_keys(metrics, profile)
    y = np.asarray(y_true)
    s = np.asarray(scores, dtype=np.float64)
    q = np.asarray(qid)
    ids = query_ids(q)
    per_query: dict[str, list[Any]] = {}
    if prof.ties == "expected":  # ltr-bench's own definitions, empty queries as NaN
        bases = [MetricKey.parse(k).with_empty("1") for k in keys]
        pq = evaluate(
            y,
            s,
            q,
            [b.base for b in bases],
            empty_query=float("nan"),
            per_query=True,
            max_label=max_label,
        )
        for text, b in zip(keys, bases):
            per_query[text] = np.asarray(pq[b.base], dtype=np.float64).tolist()
    else:
        parsed = [(text, MetricKey.parse(text)) for text in keys]
        names = doc_names(q, docid) if prof.ties == "docno_desc" else []
        for text in keys:
            per_query[text] = []
        order = np.argsort(q, kind="stable")
        q_sorted = q[order]
        starts = np.flatnonzero(np.r_[True, q_sorted[1:] != q_sorted[:-1]])
        bounds = dict(zip(q_sorted[starts].tolist(), zip(starts, np.r_[starts[1:], q.size])))
        for query in ids.tolist():
            lo, hi = bounds[query]
            rows = order[lo:hi]  # this query's rows, in file order (stable sort)
            mine = [names[i] for i in rows.tolist()] if names else []
            ranked = rows[_order(s[rows], prof.ties, rows, mine)]
            vals = _query_values(y[ranked].astype(np.int64), prof, parsed)
            for text in keys:
                per_query[text].append(vals[text])
    means = {
        k: (float(np.nanmean(v)) if np.any(~np.isnan(v)) else float("nan"))
        for k, v in ((k, np.asarray(v, dtype=np.float64)) for k, v in per_query.items())
    }
    return means, per_query

"""Splits, folds and their fingerprints.

A :class:`Split` is one of a fold's train / validation / test parts: a dense feature matrix,
integer labels and a query id per row, rows of each query contiguous. Its
:attr:`Split.fingerprint` is ``sha256`` over the query ids (int64), the labels (int64) and the
feature bytes (float64, C order), so two runs or two rankers can prove they saw identical data.
:func:`doc_names` names its rows in TREC run and qrels files.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Split:
    """One part of a fold.

    X: (n_docs, n_features) float64 (may be a read-only memory map from the cache).
    y: (n_docs,) int64 relevance labels. qid: (n_docs,) int64, contiguous per query.
    extras: optional per-row arrays a dataset adds (e.g. ``doc_class`` / ``query_class`` for
    query-by-example data, ``docid`` from LETOR comments); rankers never see them.
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    qid: np.ndarray
    extras: dict[str, np.ndarray] = field(default_factory=dict)
    _fingerprint: str | None = field(default=None, repr=False, compare=False)

    @property
    def n_docs(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_queries(self) -> int:
        if self.qid.size == 0:
            return 0
        return int(np.count_nonzero(self.qid[1:] != self.qid[:-1]) + 1)

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = fingerprint_arrays(self.X, self.y, self.qid)
        return self._fingerprint


def fingerprint_arrays(X: np.ndarray, y: np.ndarray, qid: np.ndarray) -> str:
    """sha256 hex digest over qid (int64), y (int64), then X (float64, C order), chunked."""
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(qid, dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(y, dtype=np.int64).tobytes())
    X = np.asarray(X)
    h.update(f"{X.shape[0]}x{X.shape[1] if X.ndim == 2 else 0}".encode())
    step = max(1, (1 << 24) // max(1, X.shape[1] * 8))  # ~16 MiB at a time, bounded memory
    for start in range(0, X.shape[0], step):
        h.update(np.ascontiguousarray(X[start : start + step], dtype=np.float64).tobytes())
    return h.hexdigest()


@dataclass
class Fold:
    """A fold of a dataset: ``train``, optional ``vali``, ``test``.

    ``index`` is 1-based as in the official ``Fold1..Fold5`` folders. ``query_dim`` is set for
    query-by-example data (rows are ``[query, document]``; see :mod:`ltr_bench.ranker`).
    ``max_label`` is the dataset's top grade (ERR's normaliser).
    """

    dataset: str
    index: int
    train: Split
    test: Split
    vali: Split | None = None
    max_label: int = 4
    query_dim: int | None = None
    #: wall seconds it took to read or generate this fold (set by the harness; not data)
    load_seconds: float | None = field(default=None, compare=False)

    def fingerprints(self) -> dict[str, str]:
        out = {"train": self.train.fingerprint, "test": self.test.fingerprint}
        if self.vali is not None:
            out["vali"] = self.vali.fingerprint
        return out


def doc_names(qid, docid=None) -> list[str]:
    """The name of each row in TREC run and qrels files (and the document id trec_eval breaks
    ties by): its document id from the data file (``docid``: one per row, bytes or text, as
    :mod:`ltr_bench.data.docids` reads them) when given, else its position in the split,
    0-based.

    A document id repeated inside one query (two lines of the file with the same id) would be
    one document to trec_eval, ranx and ir_measures; its second occurrence is named
    ``<id>~2``, the third ``<id>~3`` and so on (the next free suffix, in row order), so every
    row stays a document of its own and the run and the qrels agree. Ids are decoded as
    UTF-8 (an undecodable byte becomes U+FFFD)."""
    q = np.asarray(qid)
    if docid is None:
        return [str(i) for i in range(q.size)]
    names = [
        d.decode("utf-8", "replace") if isinstance(d, bytes) else str(d)
        for d in np.asarray(docid).tolist()
    ]
    if len(names) != q.size:
        raise ValueError(f"{len(names)} document ids for {q.size} rows")
    seen: dict = {}
    for i, (query, name) in enumerate(zip(q.tolist(), names)):
        used = seen.setdefault(query, set())
        if name in used:
            k = 2
            while f"{name}~{k}" in used:
                k += 1
            name = names[i] = f"{name}~{k}"
        used.add(name)
    return names

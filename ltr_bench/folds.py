"""Splits, folds and their fingerprints.

A :class:`Split` is one of a fold's train / validation / test parts: a dense feature matrix,
integer labels and a query id per row, rows of each query contiguous. Its
:attr:`Split.fingerprint` is ``sha256`` over the query ids (int64), the labels (int64) and the
feature bytes (float64, C order), so two runs or two rankers can prove they saw identical data.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

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
    #: what the making of this fold found out that belongs to its results, not to its data
    #: (rankers never see it): a simulated click log's estimated examination curve
    #: (``info["click_log"]``, :mod:`ltr_bench.clicks.simulate`)
    info: dict[str, Any] = field(default_factory=dict, compare=False)

    def fingerprints(self) -> dict[str, str]:
        out = {"train": self.train.fingerprint, "test": self.test.fingerprint}
        if self.vali is not None:
            out["vali"] = self.vali.fingerprint
        return out

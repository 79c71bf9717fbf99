"""The data of the conformance checks: small random ranking problems from one seed.

Every array :mod:`ltr_bench.testing` feeds a ranker flows from :data:`SEED`: continuous
features (no ties), graded labels 0..3, contiguous query ids in random order, optional
degenerate queries and query-by-example rows.
"""

from __future__ import annotations

import numpy as np

from ltr_bench.ranker import query_boundaries

SEED = 20240531  # the one seed of the suite; every array below flows from it


def make_check_data(
    seed: int = SEED,
    *,
    n_queries: int = 8,
    n_features: int = 5,
    min_docs: int = 4,
    max_docs: int = 12,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A small random ranking problem: ``(X, y, qid)`` with contiguous, unsorted query ids.

    X ~ N(0, 1) (continuous, so no two documents tie), labels ``y`` in 0..3 from a linear
    relevance ``X @ w + noise`` cut at global quantiles, query ids distinct random integers in
    random order. Deterministic in ``seed``.
    """
    rng = np.random.default_rng(seed)
    sizes = rng.integers(min_docs, max_docs + 1, size=n_queries)
    ids = rng.choice(np.arange(1, 10 * n_queries + 10), size=n_queries, replace=False)
    qid = np.repeat(ids, sizes).astype(np.int64)
    X = rng.standard_normal((int(sizes.sum()), n_features))
    w = rng.standard_normal(n_features)
    rel = X @ w + 0.5 * rng.standard_normal(X.shape[0])
    y = np.digitize(rel, np.quantile(rel, [0.5, 0.75, 0.9])).astype(np.int64)
    return X, y, qid


def with_degenerate_queries(
    X: np.ndarray, y: np.ndarray, qid: np.ndarray, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Append a one-document relevant query, a one-document irrelevant query and an
    all-zero-label query of 6 documents (fresh query ids)."""
    rng = np.random.default_rng(seed)
    n_features = X.shape[1]
    base = int(qid.max()) + 1
    Xd = rng.standard_normal((8, n_features))
    yd = np.array([2, 0, 0, 0, 0, 0, 0, 0], dtype=np.int64)
    qd = np.array([base, base + 1] + [base + 2] * 6, dtype=np.int64)
    return np.vstack([X, Xd]), np.r_[y, yd], np.r_[qid, qd]


def make_query_by_example(
    seed: int, n_queries: int, d: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows ``[query vector, document vector]`` (width 2*d); a document's label grows as it
    gets closer to its query."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(4, 9, size=n_queries)
    rows, labels, qids = [], [], []
    for i, m in enumerate(sizes):
        q = rng.standard_normal(d)
        docs = q + rng.standard_normal((m, d)) * rng.uniform(0.2, 2.0, size=(m, 1))
        dist = np.linalg.norm(docs - q, axis=1)
        labels.append(np.digitize(-dist, np.quantile(-dist, [0.5, 0.8])))
        rows.append(np.hstack([np.tile(q, (m, 1)), docs]))
        qids.append(np.full(m, 100 + 7 * i))
    return np.vstack(rows), np.concatenate(labels).astype(np.int64), np.concatenate(qids)


def block_permutation(qid: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A row permutation that shuffles the query blocks and the rows inside each block."""
    b = query_boundaries(qid)
    blocks = [rng.permutation(np.arange(b[i], b[i + 1])) for i in range(len(b) - 1)]
    return np.concatenate([blocks[i] for i in rng.permutation(len(blocks))])

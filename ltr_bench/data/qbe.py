"""Query-by-example data: every point of a labelled point set is a query over the others.

The MLR paper's protocol (McFee & Lanckriet 2010, Section 5.1): seeded random 80/20 train /
test splits, each feature z-scored with the training split's mean and standard deviation,
relevant = same class. Here fold ``k`` is the split drawn with ``random_state = seed + k``
(stratified by class, so every class is in both parts), so folds 1..10 are ten seeded splits.

Rows. A query point ``q`` with candidate documents ``d`` gives one row per pair,
``X[row] = [z_q, z_d]`` (two blocks of width ``d``; ``Fold.query_dim = d``), label
``y = 1 if class(q) == class(d) else 0`` and ``qid = index of q in the full data + 1``.

- train: each training point is a query over the *other* training points
  (``n_train * (n_train - 1)`` rows);
- vali: None (model selection can hold out training queries itself; keeping all training
  points as candidates keeps the test ranking identical to k-NN retrieval in the paper);
- test: each test point is a query over *all* training points (``n_test * n_train`` rows).

``extras``: ``query_class``, ``doc_class`` (class indices per row), ``query_index``,
``doc_index`` (indices of the two points in the full data set), so k-NN accuracy can be
computed from a ranking.

``noise_features`` (option, default 0) appends that many correlated Gaussian noise
dimensions (covariance ``A A^T / m`` with ``A`` standard normal, drawn from ``seed``) before
the split, as in R-MLR's Wine demo (which used 96).
"""

from __future__ import annotations

import numpy as np

from ltr_bench.folds import Fold, Split

__all__ = ["load_qbe_points", "qbe_fold", "qbe_rows"]


def load_qbe_points(name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(X, classes)`` of scikit-learn's bundled ``wine`` or ``wdbc`` (breast cancer) data."""
    from sklearn import datasets

    if name == "wine":
        bunch = datasets.load_wine()
    elif name == "wdbc":
        bunch = datasets.load_breast_cancer()
    else:
        raise KeyError(name)
    return np.asarray(bunch.data, dtype=np.float64), np.asarray(bunch.target, dtype=np.int64)


def _add_noise(X: np.ndarray, n_noise: int, seed: int) -> np.ndarray:
    if n_noise <= 0:
        return X
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x4E015E]))
    A = rng.standard_normal((n_noise, n_noise))
    noise = rng.standard_normal((X.shape[0], n_noise)) @ A.T / np.sqrt(n_noise)
    return np.hstack([X, noise])


def qbe_rows(
    Zq: np.ndarray,
    Zd: np.ndarray,
    cq: np.ndarray,
    cd: np.ndarray,
    iq: np.ndarray,
    idoc: np.ndarray,
    *,
    exclude_self: bool,
    name: str,
) -> Split:
    """Rows ``[z_q, z_d]`` for every query point over every candidate point (see module doc).

    exclude_self: queries and candidates are the same points and a point is not its own
    candidate (the train split).
    """
    nq, nd = Zq.shape[0], Zd.shape[0]
    if exclude_self:
        mask = ~np.eye(nq, dtype=bool)
        qi = np.broadcast_to(np.arange(nq)[:, None], (nq, nd))[mask]
        di = np.broadcast_to(np.arange(nd)[None, :], (nq, nd))[mask]
    else:
        qi = np.repeat(np.arange(nq), nd)
        di = np.tile(np.arange(nd), nq)
    X = np.hstack([Zq[qi], Zd[di]])
    y = (cq[qi] == cd[di]).astype(np.int64)
    extras = {
        "query_class": cq[qi].astype(np.int64),
        "doc_class": cd[di].astype(np.int64),
        "query_index": iq[qi].astype(np.int64),
        "doc_index": idoc[di].astype(np.int64),
    }
    return Split(
        name=name, X=np.ascontiguousarray(X), y=y, qid=iq[qi].astype(np.int64) + 1, extras=extras
    )


def qbe_fold(
    dataset: str,
    X: np.ndarray,
    classes: np.ndarray,
    fold: int,
    *,
    seed: int,
    test_size: float = 0.2,
    noise_features: int = 0,
) -> Fold:
    """Fold ``fold`` of query-by-example data built from points ``X`` with ``classes``."""
    from sklearn.model_selection import train_test_split

    X = _add_noise(np.asarray(X, dtype=np.float64), int(noise_features), seed)
    idx = np.arange(X.shape[0])
    tr, te = train_test_split(idx, test_size=test_size, random_state=seed + fold, stratify=classes)
    tr, te = np.sort(tr), np.sort(te)
    mu = X[tr].mean(axis=0)
    sd = X[tr].std(axis=0)
    sd[sd == 0] = 1.0  # a constant training feature stays 0 instead of dividing by zero
    Z = (X - mu) / sd
    train = qbe_rows(
        Z[tr], Z[tr], classes[tr], classes[tr], tr, tr, exclude_self=True, name="train"
    )
    test = qbe_rows(Z[te], Z[tr], classes[te], classes[tr], te, tr, exclude_self=False, name="test")
    return Fold(
        dataset=dataset,
        index=fold,
        train=train,
        test=test,
        vali=None,
        max_label=1,
        query_dim=X.shape[1],
    )

"""Query subsamples of a LETOR fold: ``train_queries`` / ``test_queries`` dataset options.

A paper that benchmarks on a subset of a large set (the LtR design paper: 1,568 training and
1,520 test queries of Yahoo! LTR set 1) is reproduced by drawing that many whole queries from
the training and the test split. The draw is uniform without replacement over the split's
queries, from ``numpy.random.default_rng([seed, fold, split])`` (the run's one seed; each fold
and split its own stream), and keeps the rows of the chosen queries in file order. The
validation split is kept whole (it chooses models; the paper's subsets are of training and
test). ``0`` means every query.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ltr_bench.data.errors import DatasetOptionError
from ltr_bench.folds import Fold, Split

#: the option names, the split each draws from, and that split's index in the seed
SUBSAMPLE_OPTIONS = {"train_queries": ("train", 0), "test_queries": ("test", 1)}


def subsample_queries(
    split: Split, n_queries: int, rng: np.random.Generator, *, what: str
) -> Split:
    """``split`` restricted to ``n_queries`` whole queries drawn by ``rng`` (rows in order)."""
    ids = np.unique(split.qid)
    if n_queries > ids.size:
        raise DatasetOptionError(
            f"option {what}={n_queries}: the {split.name} split has only {ids.size} queries; "
            f"give at most {ids.size} (or 0 for all of them)."
        )
    chosen = ids[np.sort(rng.choice(ids.size, size=n_queries, replace=False))]
    keep = np.flatnonzero(np.isin(split.qid, chosen))
    extras = {k: v[keep] for k, v in split.extras.items()}
    return Split(
        name=split.name,
        X=np.ascontiguousarray(split.X[keep]),
        y=split.y[keep],
        qid=split.qid[keep],
        extras=extras,
    )


def subsampled(fold: Fold, options: dict, seed: int) -> Fold:
    """``fold`` with its training and test splits cut to the options' query counts (0: all)."""
    changes: dict[str, Any] = {}
    for option, (split_name, code) in SUBSAMPLE_OPTIONS.items():
        n = int(options.get(option) or 0)
        if n:
            rng = np.random.default_rng([int(seed), int(fold.index), code])
            changes[split_name] = subsample_queries(getattr(fold, split_name), n, rng, what=option)
    return dataclasses.replace(fold, **changes) if changes else fold

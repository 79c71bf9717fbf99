"""Rankers for the L-GMML paper's experiments (Su, King & Lyu, SIGIR 2017) that are not
registered rankers: the no-learning Euclidean reference of Fig. 2 and MLR's Table 2.

A plan names them by import path: ``ranker = "experiments.paper:EuclideanRanker"``.
"""

from __future__ import annotations

import numpy as np

from ltr_bench.model_state import load_fitted_state, save_fitted_state
from ltr_bench.ranker import BaseRanker, RankerTags, check_ranking_input, split_query_document

__all__ = ["EuclideanRanker"]


class EuclideanRanker(BaseRanker):
    """Rank by plain Euclidean distance: MLR's score with the identity metric ``W = I``.

    Query-by-example rows ``[q (d), x (d)]`` (``query_dim = d``; the harness sets it on
    ``wine``, ``wdbc``, ``gauss-*``): score ``-||q - x||^2``, so the top-k documents are the
    query's k nearest training points and the harness's ``knn_error`` is the Euclidean k-NN
    error of the MLR paper's Table 2 ("Euclidean" column) and the "no learning" line of the
    L-GMML paper's Fig. 2.

    Query-document rows (``query_dim=None``): there is no query point, so, like MLR's
    ideal-candidate adaptation (docs/decisions.md, "MLR on query-document data"), score
    ``-||x - z||^2`` with ``z`` the mean of the training documents that carry the largest
    training label. Features are used as given (no scaling): the query-by-example datasets
    are already z-scored with training statistics by the loader.

    Nothing is learned on query-by-example data except the input width; there is no
    randomness (no seed parameter) and the validation split is not used.
    """

    def __init__(self, query_dim=None):
        self.query_dim = query_dim

    def ranker_tags(self) -> RankerTags:
        return RankerTags(
            requires_qid_at_predict=False,
            uses_eval_set=False,
            deterministic=True,
            thread_param=None,
            seed_param=None,
            query_dim_param="query_dim",
        )

    def fit(self, X, y, *, qid, eval_set=None):
        X, y, qid = check_ranking_input(X, y, qid)
        Q, D = split_query_document(X, self.query_dim)
        # z only matters without a query block; with one it is left None
        self.z_ = D[y == y.max()].mean(axis=0) if Q is None else None
        self.n_features_in_ = X.shape[1]
        return self

    def save_native(self, folder) -> dict:
        return save_fitted_state(self, folder)

    @classmethod
    def load_native(cls, folder, manifest):
        return load_fitted_state(cls, folder, manifest)

    def predict(self, X, *, qid=None):
        self._check_fitted("n_features_in_")
        X, _, _ = check_ranking_input(
            X, None, qid, n_features=self.n_features_in_, require_qid=False
        )
        Q, D = split_query_document(X, self.query_dim)
        diff = D - (self.z_ if Q is None else Q)
        return -np.einsum("ij,ij->i", diff, diff)

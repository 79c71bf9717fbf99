"""MLR / R-MLR with their regularisation chosen inside ``fit``, never on test data.

The MLR paper (McFee & Lanckriet 2010, Table 2) reports the best ``C`` measured on the test
points; R-MLR's noisy-Wine result (Lim, McFee & Lanckriet 2013) needs ``lam`` chosen relative
to ``C``. A plan cannot run a selection procedure, so these wrappers do it in ``fit`` and the
harness sees one ranker (docs/decisions.md, "Choosing `C`, `lam` and `k`"):

* :class:`MLRWithCV` chooses from a grid by ``cv``-fold cross-validation on the **training
  rows only** (MLR's Table 2 protocol, the noisy-Wine study).
* :class:`MLRWithValidation` chooses on the validation split (``eval_set``) by NDCG@10 (the
  OHSUMED rows; query-document data come with a validation split).

Grid: ``lam_ratios=None`` is MLR (``C`` from ``C_grid``); a list of ratios ``r`` is R-MLR with
``lam = r * C`` for every ``C`` and ``r``, because the group penalty's threshold for removing
a feature scales with ``C`` (docs/decisions.md, "R-MLR's group penalty and the scale of
`lam`"). Ties go to the first configuration in grid order (``C`` outer, ``r`` inner). The
chosen configuration is refitted on all training rows.

Cross-validation criterion (:class:`MLRWithCV`):

* Query-by-example training rows that form a labelled point set (every training point is a
  query over the other training points, binary labels = same class; the layout of ``wine``,
  ``wdbc``, ``gauss-*``): the points are split by stratified ``cv``-fold (shuffled with
  ``random_state``); the model is fitted on the rows among the fitting points and each
  held-out point is ranked against the fitting points; the criterion is the k-NN error with
  k = 3 of those rankings (:func:`~ltr_bench.evaluation.metrics.knn_error`, the same k as the
  harness's ``knn_error``, so selection and report measure one thing). Classes are recovered
  from the labels as the connected components of the "relevant" pairs.
* Any other data: the queries are split by ``GroupKFold``; the criterion is the held-out
  queries' mean NDCG@10 (:func:`ltr_bench.evaluation.metrics.evaluate`, empty queries = 1).

``fitted_info()`` adds the choice (``chosen_C``, ``chosen_lam``, ``selection_score``,
``selection_criterion``, ``final_fit_seconds``: the refit alone; the harness's fit time
includes the whole grid) to the MLR model's own information.
"""

from __future__ import annotations

import numbers
import time
from pathlib import Path

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from sklearn.model_selection import GroupKFold, KFold, StratifiedKFold

from ltr_bench.evaluation.metrics import evaluate, knn_error
from ltr_bench.model_state import load_fitted_state, save_fitted_state
from ltr_bench.ranker import BaseRanker, RankerTags, check_ranking_input
from ltr_bench.run.unit import KNN_K  # select with the k the harness reports
from ltr_bench_baselines.mlr import MLRRanker, RMLRRanker

__all__ = ["MLRWithCV", "MLRWithValidation", "KNN_K"]


def _check_grid(name, values, *, allow_none=False):
    if values is None and allow_none:
        return None
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ValueError(f"{name} must be a non-empty list of positive numbers, got {values!r}")
    out = list(values)
    if not out or not all(
        isinstance(v, numbers.Real) and not isinstance(v, bool) and np.isfinite(v) and v > 0
        for v in out
    ):
        raise ValueError(f"{name} must be a non-empty list of positive numbers, got {values!r}")
    return [float(v) for v in out]


def point_set(X, y, qid, query_dim):
    """``(query_point, doc_point, classes)`` when the rows are a query-by-example point set,
    else ``None``.

    Point ``i`` is the ``i``-th distinct query id (sorted); a document is the point whose
    query vector equals its document block exactly (the loader copies both from one array).
    Requires binary labels that are exactly "same class" for the connected components of
    the relevant pairs.
    """
    if query_dim is None or X.shape[1] != 2 * int(query_dim):
        return None
    d = int(query_dim)
    if not np.isin(y, (0, 1)).all() or not (y == 1).any():
        return None
    ids, first = np.unique(qid, return_index=True)
    points = np.ascontiguousarray(X[first, :d])
    index = {p.tobytes(): i for i, p in enumerate(points)}
    if len(index) != ids.size:
        return None
    docs = np.ascontiguousarray(X[:, d:])
    doc_point = np.fromiter(
        (index.get(r.tobytes(), -1) for r in docs), dtype=np.int64, count=docs.shape[0]
    )
    if (doc_point < 0).any():
        return None
    query_point = np.searchsorted(ids, qid)
    rel = y == 1
    graph = coo_matrix(
        (np.ones(int(rel.sum())), (query_point[rel], doc_point[rel])), shape=(ids.size, ids.size)
    )
    _, classes = connected_components(graph, directed=False)
    if not np.array_equal(rel, classes[query_point] == classes[doc_point]):
        return None
    return query_point, doc_point, classes


class _SelectedMLR(BaseRanker):
    """Shared parameters, grid, refit and prediction of the two selection wrappers."""

    def __init__(
        self,
        loss="auc",
        k=10,
        C_grid=(1.0, 10.0, 100.0),
        lam_ratios=None,
        epsilon=1e-3,
        max_iter=200,
        admm_max_iter=500,
        scaling="zscore",
        query_dim=None,
        n_threads=1,
        random_state=None,
    ):
        self.loss = loss
        self.k = k
        self.C_grid = C_grid
        self.lam_ratios = lam_ratios
        self.epsilon = epsilon
        self.max_iter = max_iter
        self.admm_max_iter = admm_max_iter
        self.scaling = scaling
        self.query_dim = query_dim
        self.n_threads = n_threads
        self.random_state = random_state

    def _configs(self) -> list[tuple[type, dict]]:
        """(class, parameters) of every grid point, in the order ties are broken."""
        cs = _check_grid("C_grid", self.C_grid)
        ratios = _check_grid("lam_ratios", self.lam_ratios, allow_none=True)
        common = dict(
            loss=self.loss,
            k=self.k,
            epsilon=self.epsilon,
            max_iter=self.max_iter,
            admm_max_iter=self.admm_max_iter,
            scaling=self.scaling,
            query_dim=self.query_dim,
            n_threads=self.n_threads,
        )
        if ratios is None:
            return [(MLRRanker, dict(common, C=c)) for c in cs]
        return [(RMLRRanker, dict(common, C=c, lam=r * c)) for c in cs for r in ratios]

    def _refit(self, configs, scores, criterion, X, y, qid):
        best = int(np.argmax(scores))  # first maximum: ties go to grid order
        cls, params = configs[best]
        start = time.perf_counter()
        self.model_ = cls(**params).fit(X, y, qid=qid)
        self.final_fit_seconds_ = time.perf_counter() - start
        self.chosen_params_ = dict(params)
        self.selection_scores_ = np.asarray(scores, dtype=np.float64)
        self.selection_criterion_ = criterion
        self.n_features_in_ = X.shape[1]
        return self

    def save_native(self, folder) -> dict:
        """The selected MLR / R-MLR model in ``selected/`` (its own save_native), the
        selection's numbers beside it."""
        self._check_fitted("model_")
        inner = {"class": type(self.model_).__name__, "params": self.model_.get_params()}
        (Path(folder) / "selected").mkdir()
        self.model_.save_native(Path(folder) / "selected")
        return save_fitted_state(self, folder, replace={"model_": inner})

    @classmethod
    def load_native(cls, folder, manifest):
        classes = {c.__name__: c for c in (MLRRanker, RMLRRanker)}
        rebuild = {
            "model_": lambda inner: classes[inner["class"]].load_native(
                Path(folder) / "selected", {"params": inner["params"]}
            )
        }
        return load_fitted_state(cls, folder, manifest, rebuild=rebuild)

    def predict(self, X, *, qid=None):
        self._check_fitted("model_")
        return self.model_.predict(X, qid=qid)

    def fitted_info(self) -> dict[str, int | float | str]:
        self._check_fitted("model_")
        best = int(np.argmax(self.selection_scores_))
        return {
            **self.model_.fitted_info(),
            "chosen_C": float(self.chosen_params_["C"]),
            "chosen_lam": float(self.chosen_params_.get("lam", 0.0)),
            "selection_criterion": self.selection_criterion_,
            "selection_score": float(self.selection_scores_[best]),
            "final_fit_seconds": float(self.final_fit_seconds_),
        }


class MLRWithCV(_SelectedMLR):
    """MLR (``lam_ratios=None``) or R-MLR chosen by cross-validation on the training rows.

    Parameters are MLR's (``loss``, ``k``, ``epsilon``, ``max_iter``, ``admm_max_iter``,
    ``scaling``, ``query_dim``, ``n_threads``; see ``ltr_bench_baselines.mlr``) plus
    ``C_grid`` (list of C), ``lam_ratios`` (None, or list of lam / C for R-MLR), ``cv``
    (folds, >= 2) and ``random_state`` (shuffles the stratified point folds; None means 0,
    so a fit is reproducible). The criterion is described in the module docstring: k-NN
    error (k = 3) of held-out training points on a query-by-example point set, otherwise
    held-out queries' NDCG@10. The validation split is not used.
    """

    def __init__(
        self,
        loss="auc",
        k=10,
        C_grid=(1.0, 10.0, 100.0),
        lam_ratios=None,
        cv=3,
        epsilon=1e-3,
        max_iter=200,
        admm_max_iter=500,
        scaling="zscore",
        query_dim=None,
        n_threads=1,
        random_state=None,
    ):
        super().__init__(
            loss=loss,
            k=k,
            C_grid=C_grid,
            lam_ratios=lam_ratios,
            epsilon=epsilon,
            max_iter=max_iter,
            admm_max_iter=admm_max_iter,
            scaling=scaling,
            query_dim=query_dim,
            n_threads=n_threads,
            random_state=random_state,
        )
        self.cv = cv

    def ranker_tags(self) -> RankerTags:
        return RankerTags(
            requires_qid_at_predict=False,
            uses_eval_set=False,
            deterministic=True,
            thread_param="n_threads",
            seed_param="random_state",
            query_dim_param="query_dim",
        )

    def _splits(self, labels, groups):
        seed = 0 if self.random_state is None else int(self.random_state)
        if labels is not None:
            n = min(int(self.cv), labels.size)
            if np.bincount(labels).min() >= n:
                return StratifiedKFold(n, shuffle=True, random_state=seed).split(labels, labels)
            return KFold(n, shuffle=True, random_state=seed).split(labels)
        n = min(int(self.cv), np.unique(groups).size)
        return GroupKFold(n).split(groups, groups=groups)

    def fit(self, X, y, *, qid, eval_set=None):
        """Cross-validate every grid point on the training rows, refit the best on all of
        them; ``eval_set`` is not used."""
        if isinstance(self.cv, bool) or not isinstance(self.cv, numbers.Integral) or self.cv < 2:
            raise ValueError(f"cv must be an integer >= 2, got {self.cv!r}")
        configs = self._configs()
        X, y, qid = check_ranking_input(X, y, qid)
        pts = point_set(X, y, qid, self.query_dim)
        scores = np.zeros(len(configs))
        if pts is not None:
            criterion = f"-knn_error@{KNN_K} ({self.cv}-fold CV on training points)"
            query_point, doc_point, classes = pts
            for fit_pts, _held_pts in self._splits(classes, None):
                in_fit = np.zeros(classes.size, dtype=bool)
                in_fit[fit_pts] = True
                rows = in_fit[query_point] & in_fit[doc_point]
                held = ~in_fit[query_point] & in_fit[doc_point]
                for i, (cls, params) in enumerate(configs):
                    model = cls(**params).fit(X[rows], y[rows], qid=qid[rows])
                    s = model.predict(X[held])
                    scores[i] -= knn_error(
                        s, qid[held], classes[doc_point[held]], classes[query_point[held]], k=KNN_K
                    )
        elif np.unique(qid).size >= 2:
            criterion = f"ndcg@10 ({self.cv}-fold CV on training queries)"
            for fit_rows, held in self._splits(None, qid):
                for i, (cls, params) in enumerate(configs):
                    model = cls(**params).fit(X[fit_rows], y[fit_rows], qid=qid[fit_rows])
                    scores[i] += evaluate(y[held], model.predict(X[held]), qid[held], ("ndcg@10",))[
                        "ndcg@10"
                    ]
        else:  # one query cannot be split: nothing to choose on, keep the first grid point
            criterion = "none (one training query)"
        return self._refit(configs, scores, criterion, X, y, qid)


class MLRWithValidation(_SelectedMLR):
    """MLR (``lam_ratios=None``) or R-MLR with the grid point of the best validation NDCG@10.

    Every grid point is fitted on the training rows and scored on ``eval_set`` (NDCG@10,
    empty queries = 1; a constant adds the same to every grid point, so the choice does not
    depend on the convention); the best is kept (no refit needed: it was fitted on the
    training rows). Without ``eval_set`` it falls back to :class:`MLRWithCV`'s
    cross-validation on the training rows (3 folds). Parameters as :class:`MLRWithCV` minus
    ``cv``; ``random_state`` only matters in the fallback.
    """

    def ranker_tags(self) -> RankerTags:
        return RankerTags(
            requires_qid_at_predict=False,
            uses_eval_set=True,
            deterministic=True,
            thread_param="n_threads",
            seed_param="random_state",
            query_dim_param="query_dim",
        )

    def fit(self, X, y, *, qid, eval_set=None):
        """Fit every grid point on the training rows, keep the best on ``eval_set``."""
        if eval_set is None:
            cv = MLRWithCV(**self.get_params(deep=False)).fit(X, y, qid=qid)
            for name in (
                "model_",
                "final_fit_seconds_",
                "chosen_params_",
                "selection_scores_",
                "selection_criterion_",
                "n_features_in_",
            ):
                setattr(self, name, getattr(cv, name))
            return self
        configs = self._configs()
        X, y, qid = check_ranking_input(X, y, qid)
        Xv, yv, qv = check_ranking_input(*eval_set, n_features=X.shape[1])
        scores, models, seconds = [], [], []
        for cls, params in configs:
            start = time.perf_counter()
            models.append(cls(**params).fit(X, y, qid=qid))
            seconds.append(time.perf_counter() - start)
            scores.append(evaluate(yv, models[-1].predict(Xv), qv, ("ndcg@10",))["ndcg@10"])
        best = int(np.argmax(scores))
        self.model_ = models[best]
        self.final_fit_seconds_ = seconds[best]
        self.chosen_params_ = dict(configs[best][1])
        self.selection_scores_ = np.asarray(scores, dtype=np.float64)
        self.selection_criterion_ = "ndcg@10 on the validation split"
        self.n_features_in_ = X.shape[1]
        return self

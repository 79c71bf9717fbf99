"""Linear baselines: pointwise ridge regression and listwise ListNet on standardised features.

Registered as ``ridge`` and ``listnet`` in the ``ltr_bench.rankers`` entry point group (main
``pyproject.toml``), like any plugin. They are the floor a new ranker has to clear: on
LETOR-sized data a linear scorer is often within a few points of a GBDT, so a ranker that
does not beat them has learned little.

Both standardise every feature on the training split (``sklearn.preprocessing.StandardScaler``:
``z = (x - mean) / sd``; a constant feature has ``sd`` taken as 1) and score a document by a
linear function of ``z``. Scores depend on a row alone, so ``predict`` needs no ``qid``.

Query-by-example rows (``wine``, ``wdbc``, ``gauss-*``; ``query_dim_param="query_dim"``, set
by the harness on such data): a linear function of ``[q, x]`` is ``a . q + b . x``, whose
query part is the same for every candidate of a query, so it could only rank all candidates
in one global order whatever the query -- on ``gauss-*`` the least-squares solution is then
exactly 0 (every document is relevant to the same share of queries). With ``query_dim=d``
the features are instead the squared differences ``f_j = (q_j - x_j)^2`` (d of them), so the
score ``sum_j w_j z(f_j) + b`` is a learned diagonal (weighted squared Euclidean) distance
between query and candidate -- the linear counterpart of MLR's full metric.

Threads: ``n_jobs`` limits the BLAS pools (``threadpoolctl``) during ``fit`` and ``predict``;
``None`` or ``-1`` means every CPU available to the process. Neither model has
randomness (no ``seed_param``), so the scores are a function of the data and the parameters.

``ridge`` (:class:`RidgeRanker`)
    Pointwise: ``sklearn.linear_model.Ridge`` fitted to the labels,
    ``min_{w,b} ||y - Z w - b||^2 + alpha ||w||^2``; score ``z . w + b``. ``alpha=None``
    (default) picks ``alpha`` from ``alpha_grid`` by NDCG@``eval_at`` on the validation split
    when ``fit`` gets ``eval_set`` (``ltr_bench.evaluation.metrics``, empty queries 1, ties
    averaged; among equal values the larger ``alpha`` wins), and uses ``alpha=1`` without one; a
    number fixes ``alpha`` and the validation split is then ignored. The tags say so:
    ``uses_eval_set`` is True exactly when ``alpha`` is None.

``listnet`` (:class:`ListNetRanker`)
    Listwise: ListNet's top-one cross-entropy (Cao et al., ICML 2007) on a linear scorer
    ``s = Z w`` (no bias: the loss is invariant to adding a constant per query),

        L(w) = (1/|Q|) sum_q  - sum_{i in q} P_q(i) log softmax(s_q)_i  +  (l2 / 2) ||w||^2,
        P_q(i) = exp(y_i) / sum_{j in q} exp(y_j)      (softmax of the labels),

    with gradient ``(1/|Q|) sum_q Z_q^T (softmax(s_q) - P_q) + l2 w``, minimised from ``w = 0``
    by L-BFGS (``scipy.optimize.minimize(method="L-BFGS-B")``). ``Q`` is the set of training
    queries whose labels are not all equal: a query without label differences says nothing
    about order and would only pull its documents' scores together.

Why ListNet and not a pairwise RankSVM: its loss is smooth with an exact gradient, costs
``O(n_docs * n_features)`` per evaluation whatever the query length (pairs grow with the
square of it: 120-document MSLR queries have thousands), and needs no pair sampling, so the
result has no randomness and no sampling parameter.
"""

from __future__ import annotations

import dataclasses
import numbers

import numpy as np

from ltr_bench.model_state import (
    estimator_from_state,
    estimator_state,
    load_fitted_state,
    save_fitted_state,
)
from ltr_bench.predict_input import LinearScorer, fold_standardisation, predict_matrix
from ltr_bench.ranker import (
    BaseRanker,
    RankerTags,
    query_boundaries,
    split_query_document,
)
from ltr_bench.timing import thread_limit

from .gbdt_common import _check_fit_input, _resolve_threads

__all__ = ["ListNetRanker", "RidgeRanker", "listnet_loss_and_grad"]

#: ridge's validation grid (``alpha_grid`` default): nine decades, wide enough that the
#: weakest end is ordinary least squares for practical purposes and the strongest shrinks
#: every weight of a 10,000-row problem to nearly 0
DEFAULT_ALPHA_GRID = (1e-2, 1e-1, 1.0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6)


def _real(name, value, *, minimum=0.0, allow_zero=True):
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value)
    if not ok or value < minimum or (value == minimum and not allow_zero):
        bound = f">= {minimum}" if allow_zero else f"> {minimum}"
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}")
    return float(value)


def _positive_int(name, value):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


class _LinearRanker(BaseRanker):
    """Shared features, standardisation, threads, predict."""

    def ranker_tags(self) -> RankerTags:
        return RankerTags(
            requires_qid_at_predict=False,
            uses_eval_set=False,
            deterministic=True,
            thread_param="n_jobs",
            seed_param=None,
            query_dim_param="query_dim",
        )

    def _features(self, X):
        """The rows themselves, or ``(q - x)^2`` per dimension for query-by-example rows."""
        Q, D = split_query_document(X, self.query_dim)
        return D if Q is None else (Q - D) ** 2

    def _fit_scaler(self, X):
        from sklearn.preprocessing import StandardScaler

        F = self._features(X)
        self.scaler_ = StandardScaler().fit(F)
        return self.scaler_.transform(F)

    def save_native(self, folder) -> dict:
        """``state.npz`` / ``state.json`` (:mod:`ltr_bench.model_state`): the coefficients,
        the intercept and the training standardisation's mean and scale."""
        return save_fitted_state(
            self, folder, skip=("scaler_",), replace={"scaler_": estimator_state(self.scaler_)}
        )

    @classmethod
    def load_native(cls, folder, manifest):
        from sklearn.preprocessing import StandardScaler

        rebuild = {"scaler_": lambda state: estimator_from_state(StandardScaler, state)}
        return load_fitted_state(cls, folder, manifest, rebuild=rebuild)

    def export_onnx(self, kit):
        """``predict`` as a graph: the features (``(q - x)^2`` for query-by-example rows),
        the training standardisation, ``z . coef_ + intercept_``."""
        self._check_fitted("coef_")
        g = kit.Graph(self.n_features_in_)
        x = g.input
        if self.query_dim is not None:
            q, d = kit.query_document_split(g, x, self.query_dim)
            diff = g.op("Sub", q, d)
            x = g.op("Mul", diff, diff)
        z = kit.standardise(g, x, self.scaler_.mean_, self.scaler_.scale_)
        return g.model(kit.linear(g, z, self.coef_, self.intercept_))

    def predict(self, X, *, qid=None):
        """``z . coef_ + intercept_`` with ``z`` the training-split standardisation of ``X``;
        float64 ``(n_docs,)`` in row order.

        Computed as ``f . w + c`` with the standardisation folded into the weights
        (:func:`fold_standardisation`), so no standardised copy of ``X`` is made; the sum is
        rearranged, so a score may differ from the unfolded formula in its last bits."""
        self._check_fitted("coef_")
        scorer = self._scorer()
        with thread_limit(self.n_threads_):
            if self.query_dim is None:
                return scorer(X, qid, n_features=self.n_features_in_)
            X, _ = predict_matrix(X, qid, n_features=self.n_features_in_)
            return self._features(X) @ scorer.w + scorer.b

    def _scorer(self) -> LinearScorer:
        """The folded model (:func:`fold_standardisation`) as a :class:`LinearScorer`, made
        once per fitted or loaded model (again when ``coef_``, ``scaler_`` or
        ``intercept_`` is replaced)."""
        scorer = self.__dict__.get("_linear_scorer")
        parts = (self.coef_, self.scaler_, self.intercept_)
        if scorer is None or not scorer.of(*parts):
            w, c = fold_standardisation(self.scaler_, self.coef_, self.intercept_)
            scorer = self._linear_scorer = LinearScorer(w, c, sources=parts)
        return scorer


class RidgeRanker(_LinearRanker):
    """Ridge regression on the labels over training-standardised features (see the module).

    Parameters
    ----------
    alpha : float >= 0 or None, default None
        L2 penalty of ``sklearn.linear_model.Ridge``. None: chosen from ``alpha_grid`` by
        validation NDCG@``eval_at`` when ``fit`` gets ``eval_set``, else 1.
    alpha_grid : sequence of float > 0, default ``DEFAULT_ALPHA_GRID`` (1e-2 .. 1e6)
    eval_at : int, default 10      k of the validation NDCG@k that picks ``alpha``
    query_dim : int or None, default None   width of the query block of query-by-example
        rows (set by the harness); None: plain features
    n_jobs : int or None, default None   BLAS threads (None or -1: all available CPUs)

    Attributes: ``coef_`` (n_features,; ``query_dim`` with query blocks) and ``intercept_``
    in the standardised space,
    ``scaler_`` (the fitted ``StandardScaler``), ``alpha_`` (used), ``alpha_source_``
    (``"fixed"``, ``"validation"`` or ``"no-validation-split"``), ``validation_ndcg_``
    (``{alpha: NDCG}`` of the grid, empty unless chosen on validation), ``n_features_in_``,
    ``n_threads_``.
    """

    #: ``ltr-bench tune`` search space (ltr_bench.tune.study.parse_spec): the grid's range
    SEARCH_SPACE = {"alpha": {"low": 1e-2, "high": 1e6, "log": True}}

    def __init__(
        self, alpha=None, alpha_grid=DEFAULT_ALPHA_GRID, eval_at=10, query_dim=None, n_jobs=None
    ):
        self.alpha = alpha
        self.alpha_grid = alpha_grid
        self.eval_at = eval_at
        self.query_dim = query_dim
        self.n_jobs = n_jobs

    def ranker_tags(self) -> RankerTags:
        # the validation split matters only when it picks alpha
        return dataclasses.replace(super().ranker_tags(), uses_eval_set=self.alpha is None)

    def _grid(self) -> list[float]:
        grid = list(self.alpha_grid) if not isinstance(self.alpha_grid, (str, bytes)) else []
        if not grid:
            raise ValueError(
                f"alpha_grid must be a non-empty sequence of numbers > 0, got {self.alpha_grid!r}"
            )
        return sorted({_real("alpha_grid value", a, allow_zero=False) for a in grid})

    def fit(self, X, y, *, qid, eval_set=None):
        from sklearn.linear_model import Ridge

        from ltr_bench.evaluation.metrics import evaluate

        fixed = None if self.alpha is None else _real("alpha", self.alpha)
        grid = self._grid() if fixed is None else []
        k = _positive_int("eval_at", self.eval_at)
        threads = _resolve_threads(self.n_jobs)
        X, y, qid, eval_set = _check_fit_input(X, y, qid, eval_set)
        with thread_limit(threads):
            Z = self._fit_scaler(X)
            yf = y.astype(np.float64)
            scores: dict[float, float] = {}
            if fixed is not None:
                alpha, source = fixed, "fixed"
            elif eval_set is None:
                alpha, source = 1.0, "no-validation-split"
            else:
                Xv, yv, qv = eval_set
                Zv = self.scaler_.transform(self._features(Xv))
                for a in grid:
                    model = Ridge(alpha=a).fit(Z, yf)
                    scores[a] = float(
                        evaluate(
                            yv,
                            Zv @ model.coef_ + model.intercept_,
                            qv,
                            (f"ndcg@{k}",),
                            empty_query=1.0,
                        )[f"ndcg@{k}"]
                    )
                best = max(scores.values())
                # equal validation values: the simpler (more regularised) model
                alpha, source = max(a for a, v in scores.items() if v == best), "validation"
            model = Ridge(alpha=alpha).fit(Z, yf)
        self.coef_ = np.asarray(model.coef_, dtype=np.float64)
        self.intercept_ = float(model.intercept_)
        self.alpha_ = float(alpha)
        self.alpha_source_ = source
        self.validation_ndcg_ = scores
        self.n_features_in_ = X.shape[1]
        self.n_threads_ = threads
        return self

    def fitted_info(self) -> dict[str, int | float | str]:
        """``alpha`` (used) and ``alpha_source`` (see the class), ``validation_ndcg`` (of the
        chosen alpha, when chosen on validation), ``n_features``, ``n_nonzero_coef``
        (weights not exactly 0) and ``constant_model`` (every weight 0: one score for all)."""
        self._check_fitted("coef_")
        info: dict[str, int | float | str] = {
            "alpha": self.alpha_,
            "alpha_source": self.alpha_source_,
            "n_features": int(self.n_features_in_),
            "n_nonzero_coef": int(np.count_nonzero(self.coef_)),
            "constant_model": not np.any(self.coef_),
        }
        if self.validation_ndcg_:
            info["validation_ndcg"] = self.validation_ndcg_[self.alpha_]
        return info


def listnet_loss_and_grad(w, Z, P, starts, l2):
    """ListNet top-one loss and its gradient for a linear scorer (formula in the module).

    ``w`` (d,), ``Z`` (n, d) rows of the kept queries, contiguous per query; ``P`` (n,) the
    target distribution (each query's entries sum to 1); ``starts`` the start offsets of the
    query blocks (no end marker). Returns ``(loss, grad)``, mean over queries plus
    ``l2 / 2 ||w||^2``. Softmax is computed after subtracting each query's maximum score.
    """
    s = Z @ w
    sizes = np.diff(np.r_[starts, s.size])
    s = s - np.repeat(np.maximum.reduceat(s, starts), sizes)
    e = np.exp(s)
    norm = np.add.reduceat(e, starts)
    log_softmax = s - np.repeat(np.log(norm), sizes)
    n_q = starts.size
    loss = -float(P @ log_softmax) / n_q + 0.5 * l2 * float(w @ w)
    grad = Z.T @ (np.exp(log_softmax) - P) / n_q + l2 * w
    return loss, grad


def _softmax_targets(y: np.ndarray, starts: np.ndarray) -> np.ndarray:
    sizes = np.diff(np.r_[starts, y.size])
    ey = np.exp(y - np.repeat(np.maximum.reduceat(y, starts), sizes))
    return ey / np.repeat(np.add.reduceat(ey, starts), sizes)


class ListNetRanker(_LinearRanker):
    """ListNet (top-one softmax cross-entropy) on a linear scorer over training-standardised
    features, L-BFGS (see the module for the loss and gradient).

    Parameters
    ----------
    l2 : float >= 0, default 1e-4     weight of ``(l2 / 2) ||w||^2`` (features are z-scores)
    max_iter : int, default 1000      L-BFGS iterations (OHSUMED needs about 700)
    query_dim : int or None, default None   width of the query block of query-by-example
        rows (set by the harness); None: plain features
    tol : float > 0, default 1e-6     L-BFGS stops once every gradient component is below
                                      ``tol`` (``gtol``), or the objective's relative decrease
                                      per step falls below 1e-12 (``ftol``: no more progress)
    n_jobs : int or None, default None   BLAS threads (None or -1: all available CPUs)

    Attributes: ``coef_`` (n_features,; ``query_dim`` with query blocks) in the
    standardised space, ``intercept_`` (0.0),
    ``scaler_``, ``n_iter_``, ``converged_`` (L-BFGS reported success), ``loss_`` (final
    objective), ``n_queries_used_`` (training queries with label differences),
    ``n_features_in_``, ``n_threads_``. When no training query has label differences the
    model is ``w = 0`` (every score 0) and ``n_iter_ = 0``.
    """

    #: ``ltr-bench tune`` search space (ltr_bench.tune.study.parse_spec)
    SEARCH_SPACE = {"l2": {"low": 1e-6, "high": 1.0, "log": True}}

    def __init__(self, l2=1e-4, max_iter=1000, tol=1e-6, query_dim=None, n_jobs=None):
        self.l2 = l2
        self.max_iter = max_iter
        self.tol = tol
        self.query_dim = query_dim
        self.n_jobs = n_jobs

    def fit(self, X, y, *, qid, eval_set=None):
        from scipy.optimize import minimize

        l2 = _real("l2", self.l2)
        max_iter = _positive_int("max_iter", self.max_iter)
        tol = _real("tol", self.tol, allow_zero=False)
        threads = _resolve_threads(self.n_jobs)
        X, y, qid, _ = _check_fit_input(X, y, qid, eval_set)
        with thread_limit(threads):
            Z = self._fit_scaler(X)
            b = query_boundaries(qid)
            yf = y.astype(np.float64)
            keep = np.flatnonzero(np.maximum.reduceat(yf, b[:-1]) > np.minimum.reduceat(yf, b[:-1]))
            w = np.zeros(Z.shape[1])
            n_iter, converged, loss = 0, True, 0.0
            if keep.size:
                rows = np.concatenate([np.arange(b[i], b[i + 1]) for i in keep])
                sizes = b[keep + 1] - b[keep]
                starts = np.r_[0, np.cumsum(sizes)[:-1]]
                Zk = np.ascontiguousarray(Z[rows])
                P = _softmax_targets(yf[rows], starts)
                res = minimize(
                    listnet_loss_and_grad,
                    w,
                    args=(Zk, P, starts, l2),
                    jac=True,
                    method="L-BFGS-B",
                    options={"maxiter": max_iter, "gtol": tol, "ftol": 1e-12},
                )
                w, n_iter, converged, loss = res.x, int(res.nit), bool(res.success), float(res.fun)
        self.coef_ = np.asarray(w, dtype=np.float64)
        self.intercept_ = 0.0
        self.n_iter_ = n_iter
        self.converged_ = converged
        self.loss_ = loss
        self.n_queries_used_ = int(keep.size)
        self.n_features_in_ = X.shape[1]
        self.n_threads_ = threads
        return self

    def fitted_info(self) -> dict[str, int | float | str]:
        """``n_iter`` (L-BFGS iterations), ``converged``, ``loss`` (final objective),
        ``n_queries_used``, ``n_features``, ``n_nonzero_coef``, ``constant_model`` (``w = 0``)."""
        self._check_fitted("coef_")
        return {
            "n_iter": int(self.n_iter_),
            "converged": bool(self.converged_),
            "loss": float(self.loss_),
            "n_queries_used": int(self.n_queries_used_),
            "n_features": int(self.n_features_in_),
            "n_nonzero_coef": int(np.count_nonzero(self.coef_)),
            "constant_model": not np.any(self.coef_),
        }

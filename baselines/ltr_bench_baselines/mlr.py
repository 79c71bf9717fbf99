"""MLR (McFee & Lanckriet, ICML 2010) and R-MLR (Lim, McFee & Lanckriet, ICML 2013) rankers.

Both learn a PSD metric ``W`` (d x d) and score a candidate ``x`` for a query by its negative
squared distance under ``W``; training is the structural SVM of :mod:`.mlr_solver` with the
separation oracles of :mod:`.mlr_oracles` (written from the papers, not from the GPL
reference code).

Two data layouts:

* **Query-by-example** (``query_dim=d`` set; the harness sets it for ``wine`` / ``wdbc``
  because the tags declare ``query_dim_param="query_dim"``): each row is
  ``[q (d features), x (d features)]`` (split by :func:`ltr_bench.ranker.split_query_document`)
  and the rows of one qid share ``q``. Score ``-(q - x)^T W (q - x)``;
  ``phi(q, x) = -(q - x)(q - x)^T`` (paper Eq. 4).
* **Query-document data** (``query_dim=None``; OHSUMED, MQ2008, MSLR): there is no query
  point. Our adaptation (docs/decisions.md#mlr-ideal-candidate; after the L-GMML paper's "ideal
  candidate"): ``z`` = mean of the (scaled) training documents that carry the largest
  training label, score ``-(x - z)^T W (x - z)``, ``phi(q, x) = -(x - z)(x - z)^T``, and the
  same structural SVM over the training queries' candidate lists. ``z`` is fixed before
  training.

Tags: ``query_dim_param="query_dim"``, ``thread_param="n_threads"``, no ``seed_param`` (no
randomness: ``random_state`` is accepted and ignored), ``uses_eval_set=False``.
``fitted_info()``: rank of ``W``, non-zero columns, cutting-plane iterations, convergence,
final violation.

Scaling (``scaling``): ``"zscore"`` (default) subtracts the training mean and divides by the
training standard deviation of each feature (a constant feature is divided by 1), fitted on
the training rows' document block only and applied to both blocks and at predict time;
``"none"`` uses the features as given. ``W_`` lives in the scaled space; ``M_`` is the same
metric on unscaled inputs, ``diag(1/sd) W_ diag(1/sd)``.

Relevance is binary, label >= 1 (graded labels are collapsed; the MLR losses are binary).
Queries without a relevant or without an irrelevant candidate add no constraint.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from ltr_bench.model_state import load_fitted_state, save_fitted_state
from ltr_bench.predict_input import predict_matrix
from ltr_bench.ranker import (
    BaseRanker,
    RankerInputError,
    RankerTags,
    check_ranking_input,
    query_boundaries,
    split_query_document,
)
from ltr_bench.timing import thread_limit

from .mlr_oracles import LOSSES
from .mlr_solver import folded_row_scores, psd_factor, row_scores, train_mlr

__all__ = ["MLRRanker", "RMLRRanker", "knn_error", "knn_predict", "qbe_rows"]

_SCALINGS = ("zscore", "none")


class MLRRanker(BaseRanker):
    """Metric Learning to Rank: ``min tr(W) + C xi`` over PSD ``W`` (1-slack structural SVM).

    Parameters
    ----------
    loss : {"auc", "precision", "map", "mrr", "ndcg"}, default "auc"
        Ranking loss of the separation oracle (paper Section 4).
    k : int, default 10
        Cut-off of ``precision`` (P@k) and ``ndcg`` (NDCG@k); ignored by the others.
    C : float > 0, default 10.0
        Slack trade-off; larger C = weaker regularisation (larger ``tr(W)``).
    epsilon : float > 0, default 1e-3
        Stop when the new constraint's violation is within ``epsilon`` of the slack.
    max_iter : int >= 1, default 200
        Maximum number of cutting-plane iterations.
    query_dim : int or None, default None
        Width of the query block in query-by-example rows (the harness sets it); None selects
        the ideal-candidate adaptation for query-document data.
    scaling : {"zscore", "none"}, default "zscore"
        Feature scaling fitted on the training documents (module docstring).
    admm_max_iter : int >= 1, default 500;  admm_tol : float > 0, default 1e-4
        Inner ADMM limits per cutting-plane iteration (relative residual tolerance).
    n_threads : int >= 1, default 1
        BLAS threads during fit and predict. Matrices are small (d x d), so one thread is
        usually fastest and avoids oversubscription when folds run in parallel.
    random_state : int or None
        Accepted for the contract; training is deterministic (no random choices: ties in
        the oracles are broken by row order), so the same input always gives the same W.
    """

    _lam_fixed = 0.0
    #: ``ltr-bench tune`` search space (ltr_bench.tune.study.parse_spec)
    SEARCH_SPACE = {
        "C": {"low": 1e-2, "high": 1e3, "log": True},
        "loss": {"choices": ["auc", "ndcg", "map", "mrr"]},
    }

    def __init__(
        self,
        loss="auc",
        k=10,
        C=10.0,
        epsilon=1e-3,
        max_iter=200,
        query_dim=None,
        scaling="zscore",
        admm_max_iter=500,
        admm_tol=1e-4,
        n_threads=1,
        random_state=None,
    ):
        self.loss = loss
        self.k = k
        self.C = C
        self.epsilon = epsilon
        self.max_iter = max_iter
        self.query_dim = query_dim
        self.scaling = scaling
        self.admm_max_iter = admm_max_iter
        self.admm_tol = admm_tol
        self.n_threads = n_threads
        self.random_state = random_state

    def ranker_tags(self) -> RankerTags:
        # no randomness, so no seed parameter (random_state is accepted but unused); the
        # validation split is not used (no early stopping or model selection inside fit)
        return RankerTags(
            requires_qid_at_predict=False,
            uses_eval_set=False,
            deterministic=True,
            thread_param="n_threads",
            seed_param=None,
            query_dim_param="query_dim",
        )

    # ---------------------------------------------------------------- validation
    def _lam(self) -> float:
        return self._lam_fixed

    def _validate_params(self) -> None:
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {list(LOSSES)}, got {self.loss!r}")
        _check_int("k", self.k, 1)
        _check_pos("C", self.C)
        _check_pos("epsilon", self.epsilon)
        _check_int("max_iter", self.max_iter, 1)
        if self.query_dim is not None:
            _check_int("query_dim", self.query_dim, 1, allow_none=True)
        if self.scaling not in _SCALINGS:
            raise ValueError(f"scaling must be one of {list(_SCALINGS)}, got {self.scaling!r}")
        _check_int("admm_max_iter", self.admm_max_iter, 1)
        _check_pos("admm_tol", self.admm_tol)
        _check_int("n_threads", self.n_threads, 1)

    def _differences(self, X):
        Q, Xd = split_query_document(X, self.query_dim)
        Xd = (Xd - self.feature_mean_) / self.feature_scale_
        if Q is None:
            return Xd - self.z_
        return (Q - self.feature_mean_) / self.feature_scale_ - Xd

    # ---------------------------------------------------------------- fit / predict
    def fit(self, X, y, *, qid, eval_set=None):
        """Learn ``W_`` (and ``z_`` for query-document data); ``eval_set`` is not used."""
        self._validate_params()
        X, y, qid = check_ranking_input(X, y, qid)
        Q, Xd = split_query_document(X, self.query_dim)
        if X.shape[0] == 0:
            raise RankerInputError("X has no rows: cannot fit on an empty training set")
        if self.scaling == "zscore":
            mean = Xd.mean(axis=0)
            sd = Xd.std(axis=0)
            sd[sd <= 1e-12 * np.maximum(1.0, np.abs(mean))] = 1.0
        else:
            mean = np.zeros(Xd.shape[1])
            sd = np.ones(Xd.shape[1])
        self.feature_mean_ = mean
        self.feature_scale_ = sd
        if Q is None:
            Xs = (Xd - mean) / sd
            top = y.max()
            self.z_ = Xs[y == top].mean(axis=0)
        else:
            self.z_ = None
        self.n_features_in_ = X.shape[1]
        D = self._differences(X)
        bounds = query_boundaries(qid)
        with thread_limit(int(self.n_threads)):
            res = train_mlr(
                D,
                y >= 1,
                bounds,
                loss=self.loss,
                k=int(self.k),
                C=float(self.C),
                lam=float(self._lam()),
                epsilon=float(self.epsilon),
                max_iter=int(self.max_iter),
                admm_max_iter=int(self.admm_max_iter),
                admm_tol=float(self.admm_tol),
                name=type(self).__name__,
            )
        self.W_ = res.W
        self.M_ = res.W / np.outer(sd, sd)
        self.xi_ = res.xi
        self.objective_ = res.objective
        self.n_iter_ = res.n_iter
        self.converged_ = res.converged
        self.history_ = res.history
        if not res.converged:
            last = res.history[-1].get("violation") if res.history else None
            warnings.warn(
                f"{type(self).__name__}: stopped at max_iter={int(self.max_iter)} cutting "
                f"planes before the stopping rule fired"
                + (
                    f" (last violation {float(last):.3g}, epsilon {self.epsilon})"
                    if last is not None
                    else ""
                )
                + "; raise max_iter or epsilon",
                UserWarning,
                stacklevel=2,
            )
        return self

    def save_native(self, folder) -> dict:
        """``state.npz`` / ``state.json`` (:mod:`ltr_bench.model_state`): every fitted
        attribute (the metric ``M_``, its factor ``W_``, the standardisation)."""
        return save_fitted_state(self, folder)

    @classmethod
    def load_native(cls, folder, manifest):
        return load_fitted_state(cls, folder, manifest)

    def export_onnx(self, kit):
        """``predict`` as a graph: the standardised differences (``x - z`` or ``q - x``),
        then ``-||D L||^2`` with ``W_ = L L^T``."""
        self._check_fitted("W_")
        g = kit.Graph(self.n_features_in_)
        if self.query_dim is None:
            q, x = None, g.input
        else:
            q, x = kit.query_document_split(g, g.input, self.query_dim)
        d = kit.standardise(g, x, self.feature_mean_, self.feature_scale_)
        if q is None:
            d = g.op("Sub", d, g.const(self.z_, "z"))
        else:
            d = g.op("Sub", kit.standardise(g, q, self.feature_mean_, self.feature_scale_), d)
        return g.model(kit.negated_squared_norm(g, d, psd_factor(self.W_)))

    def predict(self, X, *, qid=None):
        """Scores ``-(q - x)^T W (q - x)`` or ``-(x - z)^T W (x - z)``, float64, row order."""
        self._check_fitted("W_")
        X, _ = predict_matrix(X, qid, n_features=self.n_features_in_)
        L, A, c = self._scoring_factors()
        with thread_limit(int(self.n_threads)):
            if A is None:
                return row_scores(self._differences(X), L)
            return folded_row_scores(X, A, c)

    def _scoring_factors(self):
        """``(L, A, c)``: the factor ``L L^T = W_`` and, for single-document rows, the
        standardisation and the reference point folded into it, ``x -> x A - c`` with
        ``A = L / scale`` (per row of ``L``) and ``c = (mean / scale + z) L`` (``A`` None
        for query-document rows). Computed once per fitted or loaded model (an
        eigendecomposition of ``W_``: milliseconds, more than scoring a query)."""
        parts = (self.W_, self.feature_mean_, self.feature_scale_, self.z_)
        cache = self.__dict__.get("_factor_cache")
        if cache is None or any(a is not b for a, b in zip(cache[0], parts)):
            L = psd_factor(self.W_)
            A = c = None
            if self.query_dim is None and self.z_ is not None:
                A = np.ascontiguousarray(L / np.asarray(self.feature_scale_)[:, None])
                c = (np.asarray(self.feature_mean_) / self.feature_scale_ + self.z_) @ L
            cache = self._factor_cache = (parts, (L, A, c))
        return cache[1]

    def fitted_info(self) -> dict[str, int | float | str]:
        """Size and convergence of the learned metric.

        ``rank_W``: numerical rank of ``W_`` (eigenvalues above ``1e-8`` times the largest;
        smaller ones change no score beyond rounding). ``n_features``: side ``d`` of ``W_``;
        ``n_nonzero_columns``: features ``W_`` uses (columns not exactly 0; R-MLR's group
        penalty zeroes whole columns, MLR rarely does). ``trace_W``, ``xi``, ``objective``:
        ``tr(W)``, the final slack and ``tr(W) + lam ||W||_{2,1} + C xi``. ``n_iter``:
        cutting-plane iterations; ``converged``: the stopping rule fired (not ``max_iter``);
        ``final_violation``: ``Delta_t - <W, Psi_t>`` of the last most-violated constraint
        (absent when no query had both a relevant and an irrelevant document).
        """
        self._check_fitted("W_")
        W = self.W_
        eig = np.linalg.eigvalsh((W + W.T) / 2.0)
        top = float(eig.max(initial=0.0))
        info: dict[str, int | float | str] = {
            "rank_W": int(np.count_nonzero(eig > 1e-8 * top)) if top > 0 else 0,
            "n_features": int(W.shape[0]),
            "n_nonzero_columns": int(np.count_nonzero(np.any(W != 0, axis=0))),
            "trace_W": float(np.trace(W)),
            "xi": float(self.xi_),
            "objective": float(self.objective_),
            "n_iter": int(self.n_iter_),
            "converged": bool(self.converged_),
        }
        if self.history_:
            info["final_violation"] = float(self.history_[-1]["violation"])
        return info


class RMLRRanker(MLRRanker):
    """Robust MLR: ``min tr(W) + lam * sum_j ||W[:, j]||_2 + C xi`` over PSD ``W``.

    The l2,1 group penalty removes whole features (rows and columns of ``W``); solved by the
    same cutting planes with the group soft-threshold block switched on in the ADMM.
    Parameters as :class:`MLRRanker`, plus ``lam`` (float >= 0, default 0.1).

    Scale of ``lam``: ``xi`` is the 1-slack of MLR's Algorithm 1, i.e. the violation of a
    constraint averaged over the training queries (each query's delta-psi is itself
    normalised by ``P * N``), exactly as in the reference R-MLR objective
    ``C xi + tr(W) + lam ||W||_{2,1}``. By the optimality conditions, column ``j`` is zero
    only when the column of ``C * sum_t alpha_t Psi_t`` (less the trace / PSD multipliers)
    has norm <= ``lam``, so the threshold grows with ``C``: what matters is ``lam / C``.
    Measured on z-scored Wine + 96 correlated noise dimensions (MAP; the setting of
    ``experiments/mlr_noise.toml``): with C = 10, lam = 3 keeps 107 of 109 features,
    lam = 10 keeps 25, lam = 30 keeps 12; the reference demo's C = 1e3, lam = 0.1
    (lam / C = 1e-4) removes none and is then just MLR. Choose ``C`` and ``lam / C``
    together on validation data (e.g. lam / C in {0.1, 0.3, 1, 3}).
    """

    #: ``ltr-bench tune`` search space (ltr_bench.tune.study.parse_spec): lam / C in the range
    #: the class docstring suggests, through lam itself
    SEARCH_SPACE = {
        "C": {"low": 1e-2, "high": 1e3, "log": True},
        "lam": {"low": 1e-3, "high": 1e2, "log": True},
        "loss": {"choices": ["auc", "ndcg", "map", "mrr"]},
    }

    def __init__(
        self,
        loss="auc",
        k=10,
        C=10.0,
        lam=0.1,
        epsilon=1e-3,
        max_iter=200,
        query_dim=None,
        scaling="zscore",
        admm_max_iter=500,
        admm_tol=1e-4,
        n_threads=1,
        random_state=None,
    ):
        super().__init__(
            loss=loss,
            k=k,
            C=C,
            epsilon=epsilon,
            max_iter=max_iter,
            query_dim=query_dim,
            scaling=scaling,
            admm_max_iter=admm_max_iter,
            admm_tol=admm_tol,
            n_threads=n_threads,
            random_state=random_state,
        )
        self.lam = lam

    def _lam(self) -> float:
        return float(self.lam)

    def _validate_params(self) -> None:
        super()._validate_params()
        if (
            not isinstance(self.lam, numbers.Real)
            or isinstance(self.lam, bool)
            or not np.isfinite(float(self.lam))
            or float(self.lam) < 0
        ):
            raise ValueError(f"lam must be a finite real number >= 0, got {self.lam!r}")


def _check_int(name, value, low, allow_none=False):
    if allow_none and value is None:
        return
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def _check_pos(name, value):
    if (
        not isinstance(value, numbers.Real)
        or isinstance(value, bool)
        or not np.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{name} must be a finite real number > 0, got {value!r}")


# -------------------------------------------------------------------- query-by-example helpers
def qbe_rows(X, classes):
    """Training rows for query-by-example: every point as a query over all the others.

    Returns ``(rows, y, qid)``: rows (n (n-1), 2 d) = ``[X[i], X[j]]`` for ``j != i``, grouped
    by query ``i`` (qid = i); y = 1 when ``classes[i] == classes[j]`` else 0.
    """
    X = np.asarray(X, dtype=np.float64)
    classes = np.asarray(classes)
    n = X.shape[0]
    qi, di = np.nonzero(~np.eye(n, dtype=bool))
    rows = np.concatenate([X[qi], X[di]], axis=1)
    return rows, (classes[qi] == classes[di]).astype(np.int64), qi.astype(np.int64)


def _neighbour_order(W, X_train, X_test, chunk=2048):
    """Training indices sorted by increasing (x - t)^T W (x - t), per test point (stable)."""
    L = psd_factor(np.asarray(W, dtype=np.float64))
    A = np.asarray(X_train, dtype=np.float64) @ L
    B = np.asarray(X_test, dtype=np.float64) @ L
    out = np.empty((B.shape[0], A.shape[0]), dtype=np.int64)
    for s in range(0, B.shape[0], chunk):
        diff = B[s : s + chunk, None, :] - A[None, :, :]
        dist = np.einsum("ijk,ijk->ij", diff, diff)
        out[s : s + chunk] = np.argsort(dist, axis=1, kind="stable")
    return out


def knn_predict(W, X_train, y_train, X_test, k, *, order=None):
    """k-nearest-neighbour labels under the metric W (distance (x - t)^T W (x - t)).

    Majority vote among the k nearest training points; a tie between classes goes to the
    tied class whose nearest member comes first (equal distances: lower training index).
    ``order``: precomputed :func:`_neighbour_order` (to try several k at once).
    """
    y_train = np.asarray(y_train)
    classes, yi = np.unique(y_train, return_inverse=True)
    if order is None:
        order = _neighbour_order(W, X_train, X_test)
    k = int(min(k, order.shape[1]))
    nb = yi[order[:, :k]]  # (n_test, k) class indices, nearest first
    counts = np.zeros((nb.shape[0], classes.size), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(nb.shape[0]), k), nb.ravel()), 1)
    best = counts == counts.max(axis=1, keepdims=True)
    ok = best[np.arange(nb.shape[0])[:, None], nb]  # neighbour's class is among the winners
    first = np.argmax(ok, axis=1)
    return classes[nb[np.arange(nb.shape[0]), first]]


def knn_error(W, X_train, y_train, X_test, y_test, k) -> float:
    """Fraction of test points misclassified by :func:`knn_predict` (MLR paper Table 2).

    W: (d, d) PSD metric in the space of the given features (for a fitted ranker with
    z-scoring use ``ranker.M_`` on raw features, or ``ranker.W_`` on scaled ones).
    """
    pred = knn_predict(W, X_train, y_train, X_test, k)
    return float(np.mean(pred != np.asarray(y_test)))

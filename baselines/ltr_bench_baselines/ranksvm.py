"""RankSVM: a linear SVM on within-query pair differences (Herbrich, Graepel & Obermayer 1999;
Joachims, KDD 2002). Registered as ``ranksvm``.

Model and objective. Features are standardised on the training split
(``sklearn.preprocessing.StandardScaler``: ``z = (x - mean) / sd``, a constant feature has
``sd`` taken as 1); the score is ``s(x) = w . z(x)`` (no bias: only differences matter). For
every *crucial pair* ``(i, j)`` of a training query -- two documents of the same query with
``y_i > y_j`` -- the SVM wants ``w . (z_i - z_j) >= 1``:

    min_w  (1/2) ||w||^2  +  C  sum_{(i, j) in P}  l(w . (z_i - z_j)),
    l(m) = max(0, 1 - m)^2   (loss="squared_hinge", default)   or   max(0, 1 - m)   ("hinge")

solved by scikit-learn's liblinear solver (``sklearn.svm.LinearSVC(fit_intercept=False)``)
on the pair differences as a two-class problem. ``"hinge"`` is Joachims' ranking SVM
exactly (liblinear's dual coordinate descent); ``"squared_hinge"`` is the L2-loss ranking SVM
solved in the primal by liblinear's trust-region Newton method (Chapelle & Keerthi,
"Efficient algorithms for ranking with SVMs", Information Retrieval 2010, train this primal
form for the same reason): with hundreds of thousands of pairs and 136 features the dual
solver needs minutes and often stops at ``max_iter`` unconverged (measured: 310 s and not
converged on 500k pairs of a 67k-row generated fold), the primal one converges in seconds.
Half the differences (every other pair) are negated and
labelled -1: for a hinge loss without intercept ``(d, +1)`` and ``(-d, -1)`` are the same
constraint, so this only gives liblinear its two classes and does not change the optimum.

Pairs and the bound for long lists. A query with ``n`` documents has up to ``n^2 / 2``
crucial pairs (a 120-document MSLR query about 5,000), so all pairs of a MSLR-WEB10K fold
(~25 million, 136 features) do not fit in memory. ``P`` is therefore every crucial pair when
there are at most ``max_pairs`` of them (OHSUMED's folds: ~300k); otherwise each query keeps
``min(N_q, c)`` of its ``N_q`` pairs, drawn uniformly without replacement (seeded by
``random_state``), with ``c`` the largest per-query cap that keeps the total within
``max_pairs`` (water filling: short lists keep all their pairs, long lists are cut to the
same number). Capping per query also keeps long lists from dominating the objective, which
with all pairs grows with the square of the list length. Queries whose labels are all equal
have no pairs: skipped, counted (``n_queries_skipped``) and warned about.

RankLib has no RankSVM; the LETOR baselines used SVMlight / SVMrank (L1 hinge) with all
pairs and ``C`` chosen on the validation split. Differences from those: the squared hinge by
default (``loss="hinge"`` gives theirs), the sampling bound above, and ``C``
is liblinear's (per pair, not divided by the number of queries as SVMrank's ``-c`` is), on
standardised features; ``C`` is a tuning parameter (``SEARCH_SPACE``), not chosen inside
``fit`` (``uses_eval_set`` is False).

Tags: ``seed_param="random_state"`` (pair sampling and liblinear's coordinate order), no
thread parameter (one thread), ``deterministic`` for a seed.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ltr_bench.model_state import (
    estimator_from_state,
    estimator_state,
    load_fitted_state,
    save_fitted_state,
)
from ltr_bench.predict_input import LinearScorer, fold_standardisation
from ltr_bench.progress import report_progress
from ltr_bench.ranker import BaseRanker, RankerTags, query_boundaries
from ltr_bench.timing import thread_limit

from .classical_common import (
    check_fit_input,
    check_int,
    check_real,
    parse_metric,
    per_query_metric,
    seed_of,
    varied_queries,
    warn_skipped,
)

__all__ = [
    "LETOR_C_GRID",
    "LOSSES",
    "LetorRankSVMRanker",
    "RankSVMRanker",
    "crucial_pairs",
    "pairs_per_query_cap",
]

#: the losses of ``loss``: liblinear's primal L2-loss SVM and its dual L1-loss (hinge) SVM
LOSSES = ("squared_hinge", "hinge")

#: ``ranksvm-letor``'s grid of ``C`` (decades, chosen on the validation split's MAP)
LETOR_C_GRID = (1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)


def pairs_per_query_cap(n_pairs: np.ndarray, max_pairs: int) -> int | None:
    """The largest ``c`` with ``sum(min(n_pairs, c)) <= max_pairs``, or None when every pair
    fits (``sum(n_pairs) <= max_pairs``). ``n_pairs`` (n_queries,) non-negative ints."""
    n_pairs = np.asarray(n_pairs, dtype=np.int64)
    if int(n_pairs.sum()) <= max_pairs:
        return None
    lo, hi = 0, int(n_pairs.max())  # sum(min(n, lo)) <= max_pairs < sum(min(n, hi))
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if int(np.minimum(n_pairs, mid).sum()) <= max_pairs:
            lo = mid
        else:
            hi = mid
    return lo


def crucial_pairs(y, bounds, *, max_pairs=None, rng=None):
    """``(hi, lo, n_available, cap)``: row indices of the sampled crucial pairs (``y[hi] >
    y[lo]``, same query) and what was sampled from.

    ``bounds`` query start offsets plus the end (:func:`ltr_bench.ranker.query_boundaries`).
    Every crucial pair when they number at most ``max_pairs`` (or ``max_pairs`` is None);
    otherwise ``min(N_q, cap)`` per query without replacement (``cap`` from
    :func:`pairs_per_query_cap`; ``rng`` a ``numpy.random.Generator``). Pairs are indexed
    without enumerating them: in each query sorted by label ascending, the document at
    sorted position ``p`` is the higher member of ``L_p`` pairs, one with each document
    before its label group, so pair number ``k`` maps to ``p`` by a search in ``cumsum(L)``.
    """
    y = np.asarray(y, dtype=np.int64)
    n = y.size
    sizes = np.diff(bounds)
    block = np.repeat(np.arange(sizes.size), sizes)
    order = np.lexsort((y, block))  # by query, then label ascending (stable)
    ys, bs = y[order], block[order]
    qstart = np.asarray(bounds[:-1])[bs]  # query start (sorted positions) of each position
    new_group = np.r_[True, (bs[1:] != bs[:-1]) | (ys[1:] != ys[:-1])] if n else np.zeros(0, bool)
    group_start = np.maximum.accumulate(np.where(new_group, np.arange(n), 0)) if n else order
    lower = (group_start - qstart).astype(np.int64)  # L_p: documents of lower label
    ends = np.cumsum(lower)
    n_q = np.bincount(bs, weights=lower, minlength=sizes.size).astype(np.int64)
    total = int(n_q.sum())
    cap = None if max_pairs is None else pairs_per_query_cap(n_q, max_pairs)
    if cap is None:
        k = np.arange(total, dtype=np.int64)
    else:
        offsets = np.r_[0, np.cumsum(n_q)[:-1]]
        parts = []
        for q in np.flatnonzero(n_q):  # a loop over queries (not documents): the draw
            m = int(n_q[q])
            pick = np.arange(m) if m <= cap else np.sort(rng.choice(m, size=cap, replace=False))
            parts.append(offsets[q] + pick)
        k = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    p = np.searchsorted(ends, k, side="right")
    partner = qstart[p] + (k - (ends[p] - lower[p]))
    return order[p], order[partner], total, cap


class RankSVMRanker(BaseRanker):
    """Linear ranking SVM on crucial-pair differences, liblinear (see the module).

    Parameters
    ----------
    C : float > 0, default 1.0
        Loss weight per pair (``LinearSVC(C=...)``); larger = weaker regularisation.
    loss : {"squared_hinge", "hinge"}, default "squared_hinge"
        L2-loss SVM (primal Newton) or Joachims' L1 hinge (dual coordinate descent).
    max_pairs : int >= 1, default 500_000
        Bound on the pairs used (module: water-filled per-query cap, uniform sampling).
        500k pairs x 136 features is ~0.5 GB of differences (liblinear holds a second copy).
    tol : float > 0, default 1e-4           liblinear's stopping tolerance
    max_iter : int >= 1, default 1000        liblinear's iterations (passes over the pairs)
    random_state : int >= 0 or None, default None
        Seed of the pair sampling and of liblinear's coordinate order.
    standardize : bool, default True
        z-score the features on the training split first; False uses them as given (LETOR's
        baselines ran on its ``QueryLevelNorm`` features, already in [0, 1] per query).
    C_grid : sequence of floats > 0, or None (default)
        Model selection as the LETOR baselines did it: one SVM per ``C`` of the grid (``C``
        itself is then unused), and the one with the best ``select_metric`` on ``eval_set``
        (the validation split, never test data) is kept; a tie keeps the smaller ``C``
        (stronger regularisation). Without ``eval_set``, ``C`` is used (with a warning);
        ``uses_eval_set`` follows ``C_grid``.
    select_metric : "map" (default) or "ndcg@k"
        The validation metric of ``C_grid`` (LETOR's baselines: MAP on validation).

    Attributes: ``coef_`` (n_features,) in the standardised space, ``intercept_`` (0.0),
    ``scaler_`` (None when ``standardize=False``), ``C_`` (the ``C`` used),
    ``validation_scores_`` (``{C: value}`` with ``C_grid``, else empty), ``n_pairs_``
    (used), ``n_pairs_available_``, ``pairs_cap_`` (per-query cap
    or None), ``n_queries_used_``, ``n_queries_skipped_``, ``n_iter_``, ``converged_``,
    ``n_features_in_``.
    """

    #: ``ltr-bench tune`` search space (ltr_bench.tune.study.parse_spec)
    SEARCH_SPACE: dict[str, dict[str, Any]] = {"C": {"low": 1e-6, "high": 1e1, "log": True}}

    def __init__(
        self,
        C=1.0,
        loss="squared_hinge",
        max_pairs=500_000,
        tol=1e-4,
        max_iter=1000,
        random_state=None,
        standardize=True,
        C_grid=None,
        select_metric="map",
    ):
        self.C = C
        self.loss = loss
        self.max_pairs = max_pairs
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.standardize = standardize
        self.C_grid = C_grid
        self.select_metric = select_metric

    def ranker_tags(self) -> RankerTags:
        return RankerTags(
            requires_qid_at_predict=False,
            uses_eval_set=self.C_grid is not None,
            deterministic=True,
            thread_param=None,
            seed_param="random_state",
        )

    def _validate_params(self) -> None:
        check_real("C", self.C, allow_equal=False)
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {list(LOSSES)}, got {self.loss!r}")
        check_int("max_pairs", self.max_pairs, 1)
        check_real("tol", self.tol, allow_equal=False)
        check_int("max_iter", self.max_iter, 1)
        seed_of(self.random_state)
        if not isinstance(self.standardize, (bool, np.bool_)):
            raise ValueError(f"standardize must be true or false, got {self.standardize!r}")
        self._grid()
        parse_metric(self.select_metric)

    def _grid(self) -> tuple[float, ...] | None:
        """``C_grid`` checked: None, or a non-empty tuple of finite floats > 0."""
        if self.C_grid is None:
            return None
        values = [self.C_grid] if isinstance(self.C_grid, (int, float)) else self.C_grid
        try:
            grid = tuple(check_real("C_grid", c, allow_equal=False) for c in values)
        except TypeError:
            raise ValueError(f"C_grid must be a list of numbers > 0, got {self.C_grid!r}") from None
        if not grid:
            raise ValueError("C_grid must hold at least one value of C (or be None)")
        return grid

    def fit(self, X, y, *, qid, eval_set=None):
        from sklearn.preprocessing import StandardScaler

        self._validate_params()
        X, y, qid, eval_set = check_fit_input(X, y, qid, eval_set)
        grid = self._grid()
        if grid is not None and eval_set is None:
            warnings.warn(
                f"ranksvm: C_grid chooses C on the validation split, but fit got no eval_set "
                f"(the dataset has no validation split): C={float(self.C):g} is used instead",
                UserWarning,
                stacklevel=2,
            )
            grid = None
        seed = seed_of(self.random_state)
        rng = np.random.default_rng(seed)
        with thread_limit(1):
            self.scaler_ = StandardScaler().fit(X) if self.standardize else None
            Z = self.scaler_.transform(X) if self.standardize else X
            bounds = query_boundaries(qid)
            varied = varied_queries(y, bounds)
            hi, lo, available, cap = crucial_pairs(
                y, bounds, max_pairs=int(self.max_pairs), rng=rng
            )
            report_progress(0, 1, f"ranksvm: {hi.size} pairs")
            D, sign = _pair_differences(Z, hi, lo)
            liblinear_seed = int(rng.integers(2**31 - 1))
            self.validation_scores_ = {}
            if grid is None:
                self.C_ = float(self.C)
                w, n_iter, converged = self._solve(D, sign, self.C_, liblinear_seed, X.shape[1])
            else:
                metric, _ = parse_metric(self.select_metric)
                Xv, yv, qv = eval_set
                Zv = self.scaler_.transform(Xv) if self.standardize else Xv
                best = None
                for i, c in enumerate(grid):
                    fit = self._solve(D, sign, c, liblinear_seed, X.shape[1])
                    value = float(np.mean(per_query_metric(metric, yv, Zv @ fit[0], qv)))
                    self.validation_scores_[c] = value
                    report_progress(i + 1, len(grid), f"ranksvm: C={c:g} vali {metric} {value:.4f}")
                    if best is None or value > best[0] or (value == best[0] and c < best[1]):
                        best = (value, c, fit)
                _, self.C_, (w, n_iter, converged) = best
            report_progress(1, 1, "ranksvm: done")
        self.coef_ = w
        self.intercept_ = 0.0
        self.n_pairs_ = int(hi.size)
        self.n_pairs_available_ = int(available)
        self.pairs_cap_ = cap
        self.n_queries_used_ = int(varied.sum())
        self.n_queries_skipped_ = int(varied.size - varied.sum())
        self.n_iter_ = n_iter
        self.converged_ = converged
        self.n_features_in_ = X.shape[1]
        warn_skipped("ranksvm", self.n_queries_skipped_, int(varied.size))
        return self

    def _solve(self, D, sign, C: float, seed: int, width: int) -> tuple[np.ndarray, int, bool]:
        """``(w, iterations, converged)`` of liblinear on the signed pair differences."""
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.svm import LinearSVC

        if D is None:
            return np.zeros(width, dtype=np.float64), 0, True
        svm = LinearSVC(
            C=float(C),
            loss=self.loss,
            dual=self.loss == "hinge",  # liblinear has no primal L1-loss solver
            fit_intercept=False,
            tol=float(self.tol),
            max_iter=int(self.max_iter),
            random_state=seed,
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            svm.fit(D, sign)
        converged = not any(issubclass(c.category, ConvergenceWarning) for c in caught)
        return svm.coef_.ravel().astype(np.float64), int(np.max(svm.n_iter_)), converged

    def save_native(self, folder) -> dict:
        """``state.npz`` / ``state.json`` (:mod:`ltr_bench.model_state`): the weight vector
        ``coef_``, the training standardisation's mean and scale, the fitting diagnostics."""
        scaler = None if self.scaler_ is None else estimator_state(self.scaler_)
        return save_fitted_state(self, folder, skip=("scaler_",), replace={"scaler_": scaler})

    @classmethod
    def load_native(cls, folder, manifest):
        from sklearn.preprocessing import StandardScaler

        def scaler(state):  # None: fitted with standardize=False
            return None if state is None else estimator_from_state(StandardScaler, state)

        return load_fitted_state(cls, folder, manifest, rebuild={"scaler_": scaler})

    def export_onnx(self, kit):
        """``predict`` as a graph: the training standardisation (when fitted with it), then
        ``. coef_``."""
        self._check_fitted("coef_")
        g = kit.Graph(self.n_features_in_)
        x = g.input
        if self.scaler_ is not None:
            x = kit.standardise(g, x, self.scaler_.mean_, self.scaler_.scale_)
        return g.model(kit.linear(g, x, self.coef_))

    def predict(self, X, *, qid=None):
        """``z(X) . coef_`` (``X . coef_`` when ``standardize=False``): float64 (n_docs,) in
        row order (``qid`` not needed)."""
        self._check_fitted("coef_")
        # the standardisation folded into the weights: no standardised copy of X (the sum
        # is rearranged, so a score may differ from z(X) . coef_ in its last bits)
        scorer = self.__dict__.get("_linear_scorer")
        if scorer is None or not scorer.of(self.coef_, self.scaler_):
            w, c = (
                (self.coef_, 0.0)
                if self.scaler_ is None
                else fold_standardisation(self.scaler_, self.coef_)
            )
            scorer = self._linear_scorer = LinearScorer(w, c, sources=(self.coef_, self.scaler_))
        with thread_limit(1):
            return scorer(X, qid, n_features=self.n_features_in_)

    def fitted_info(self) -> dict[str, int | float | str]:
        """Pairs used and available, the per-query cap (0: all pairs), queries used and
        skipped, liblinear iterations and convergence, non-zero weights."""
        self._check_fitted("coef_")
        return {
            "n_pairs": self.n_pairs_,
            "n_pairs_available": self.n_pairs_available_,
            "pairs_per_query_cap": 0 if self.pairs_cap_ is None else int(self.pairs_cap_),
            "n_queries_used": self.n_queries_used_,
            "n_queries_skipped": self.n_queries_skipped_,
            "n_iter": self.n_iter_,
            "converged": bool(self.converged_),
            "n_features": int(self.n_features_in_),
            "n_nonzero_coef": int(np.count_nonzero(self.coef_)),
            "C": float(self.C_),
        }


def _pair_differences(Z: np.ndarray, hi: np.ndarray, lo: np.ndarray):
    """``(D, sign)``: the crucial pairs' differences ``Z[hi] - Z[lo]``, every other one
    negated (liblinear needs two classes; the constraint is the same), and the labels; a
    single pair is mirrored. ``(None, None)`` when there is no pair."""
    if not hi.size:
        return None, None
    D = Z[hi] - Z[lo]
    sign = np.where(np.arange(hi.size) % 2 == 0, 1.0, -1.0)
    if hi.size == 1:
        D, sign = np.vstack([D, -D]), np.array([1.0, -1.0])
    D *= sign[:, None]
    return D, sign


class LetorRankSVMRanker(RankSVMRanker):
    """RankSVM as the LETOR 3.0 / 4.0 baselines ran it (``ranksvm-letor``): Joachims' L1
    hinge (``loss="hinge"``), the features as given (LETOR's baselines used its
    ``QueryLevelNorm`` version: run with ``--dataset-option query_norm=true`` on the
    ``Feature-min`` files), every crucial pair (up to ``max_pairs``), and ``C`` chosen from
    :data:`LETOR_C_GRID` by MAP on the validation split ("most baselines released in LETOR
    website use MAP on the validation set for model selection", the LETOR 3.0 baselines
    page). Only the defaults differ from :class:`RankSVMRanker`."""

    SEARCH_SPACE = {"select_metric": {"choices": ["map", "ndcg@10"]}}

    def __init__(
        self,
        C=1.0,
        loss="hinge",
        max_pairs=500_000,
        tol=1e-4,
        max_iter=1000,
        random_state=None,
        standardize=False,
        C_grid=LETOR_C_GRID,
        select_metric="map",
    ):
        super().__init__(
            C=C,
            loss=loss,
            max_pairs=max_pairs,
            tol=tol,
            max_iter=max_iter,
            random_state=random_state,
            standardize=standardize,
            C_grid=C_grid,
            select_metric=select_metric,
        )

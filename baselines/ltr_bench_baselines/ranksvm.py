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

import numpy as np

from ltr_bench.model_state import (
    estimator_from_state,
    estimator_state,
    load_fitted_state,
    save_fitted_state,
)
from ltr_bench.progress import report_progress
from ltr_bench.ranker import BaseRanker, RankerTags, check_ranking_input, query_boundaries
from ltr_bench.timing import thread_limit

from .classical_common import (
    check_fit_input,
    check_int,
    check_real,
    seed_of,
    varied_queries,
    warn_skipped,
)

__all__ = ["LOSSES", "RankSVMRanker", "crucial_pairs", "pairs_per_query_cap"]

#: the losses of ``loss``: liblinear's primal L2-loss SVM and its dual L1-loss (hinge) SVM
LOSSES = ("squared_hinge", "hinge")


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

    Attributes: ``coef_`` (n_features,) in the standardised space, ``intercept_`` (0.0),
    ``scaler_``, ``n_pairs_`` (used), ``n_pairs_available_``, ``pairs_cap_`` (per-query cap
    or None), ``n_queries_used_``, ``n_queries_skipped_``, ``n_iter_``, ``converged_``,
    ``n_features_in_``.
    """

    #: ``ltr-bench tune`` search space (ltr_bench.tune.study.parse_spec)
    SEARCH_SPACE = {"C": {"low": 1e-6, "high": 1e1, "log": True}}

    def __init__(
        self,
        C=1.0,
        loss="squared_hinge",
        max_pairs=500_000,
        tol=1e-4,
        max_iter=1000,
        random_state=None,
    ):
        self.C = C
        self.loss = loss
        self.max_pairs = max_pairs
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state

    def ranker_tags(self) -> RankerTags:
        return RankerTags(
            requires_qid_at_predict=False,
            uses_eval_set=False,
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

    def fit(self, X, y, *, qid, eval_set=None):
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import LinearSVC

        self._validate_params()
        X, y, qid, _ = check_fit_input(X, y, qid, eval_set)
        seed = seed_of(self.random_state)
        rng = np.random.default_rng(seed)
        with thread_limit(1):
            self.scaler_ = StandardScaler().fit(X)
            Z = self.scaler_.transform(X)
            bounds = query_boundaries(qid)
            varied = varied_queries(y, bounds)
            hi, lo, available, cap = crucial_pairs(
                y, bounds, max_pairs=int(self.max_pairs), rng=rng
            )
            report_progress(0, 1, f"ranksvm: {hi.size} pairs")
            w, n_iter, converged = np.zeros(X.shape[1]), 0, True
            if hi.size:
                D = Z[hi] - Z[lo]
                sign = np.where(np.arange(hi.size) % 2 == 0, 1.0, -1.0)
                if hi.size == 1:  # liblinear needs both classes: the same pair, mirrored
                    D, sign = np.vstack([D, -D]), np.array([1.0, -1.0])
                D *= sign[:, None]
                svm = LinearSVC(
                    C=float(self.C),
                    loss=self.loss,
                    dual=self.loss == "hinge",  # liblinear has no primal L1-loss solver
                    fit_intercept=False,
                    tol=float(self.tol),
                    max_iter=int(self.max_iter),
                    random_state=int(rng.integers(2**31 - 1)),
                )
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", ConvergenceWarning)
                    svm.fit(D, sign)
                converged = not any(issubclass(c.category, ConvergenceWarning) for c in caught)
                w, n_iter = svm.coef_.ravel().astype(np.float64), int(np.max(svm.n_iter_))
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

    def save_native(self, folder) -> dict:
        """``state.npz`` / ``state.json`` (:mod:`ltr_bench.model_state`): the weight vector
        ``coef_``, the training standardisation's mean and scale, the fitting diagnostics."""
        return save_fitted_state(
            self, folder, skip=("scaler_",), replace={"scaler_": estimator_state(self.scaler_)}
        )

    @classmethod
    def load_native(cls, folder, manifest):
        from sklearn.preprocessing import StandardScaler

        rebuild = {"scaler_": lambda state: estimator_from_state(StandardScaler, state)}
        return load_fitted_state(cls, folder, manifest, rebuild=rebuild)

    def predict(self, X, *, qid=None):
        """``z(X) . coef_``: float64 (n_docs,) in row order (``qid`` not needed)."""
        self._check_fitted("coef_")
        X, _, _ = check_ranking_input(
            X, None, qid, n_features=self.n_features_in_, require_qid=False
        )
        with thread_limit(1):
            return self.scaler_.transform(X) @ self.coef_

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
        }

"""RankBoost (Freund, Iyer, Schapire & Singer, JMLR 4, 2003) with threshold weak rankers, as
in RankLib. Registered as ``rankboost``.

Feedback and pair weights. The crucial pairs of a training query are its documents
``(i, j)`` with ``y_i > y_j`` (graded labels: every higher grade over every lower one; with
binary labels this is the paper's bipartite feedback). ``D_1`` is uniform over all crucial
pairs of the training split (as RankLib). After ``t`` rounds with the combined ranker
``H_t = sum_s alpha_s h_s``,

    D_{t+1}(i, j) = D_1(i, j) exp(H_t(j) - H_t(i)) / Z,
    L_t = sum_(i,j) D_1(i, j) exp(H_t(j) - H_t(i))

where ``L_t`` (``loss_history_``) is the exponential ranking loss RankBoost minimises; it
bounds the fraction of misordered crucial pairs and never increases (below).

Weak rankers. ``h(x) = 1`` if feature ``f`` of ``x`` is above ``theta``, else 0 (the paper's
Section 3.2 threshold rankers, no missing values). Candidate thresholds are RankLib's
(``-tc`` = ``n_thresholds``, default 10): per feature, ``theta_j = f_max - j (f_max - f_min) /
n_thresholds`` for ``j = 0 .. n_thresholds - 1`` over the training rows, plus ``f_min - 1e8``
(``h = 1`` everywhere). Each round picks the ``(f, theta)`` with the largest ``|r|``,

    r = sum_(i,j) D_t(i, j) (h(x_i) - h(x_j)) = sum_{x: h(x) = 1} pi(x),
    pi(x) = sum_{j: x over j} D_t(x, j) - sum_{i: i over x} D_t(i, x)        (the potential),

and weights it ``alpha = (1/2) ln((1 + r) / (1 - r))``, the paper's choice for ``{0, 1}``-valued
weak rankers: it minimises the bound ``Z_t <= ((1 + r)/2) e^-alpha + ((1 - r)/2) e^alpha =
sqrt(1 - r^2) <= 1`` on ``Z_t = L_t / L_{t-1}``, so ``L_t`` is non-increasing. ``|r|`` is
clipped at ``1 - 1e-12`` (a threshold that orders every weighted pair; alpha about 14).
Ties between candidates go to the lower feature index, then the higher threshold.

Efficiency (no pair is enumerated): ``D_t(i, j) = c exp(-H(i)) exp(H(j))`` factorises, so
``pi(x) = c [exp(-H(x)) B_<(x) - exp(H(x)) A_>(x)]`` with ``B_<(x)`` the sum of ``exp(H)`` over the
query's documents of lower label and ``A_>(x)`` the sum of ``exp(-H)`` over those of higher
label: cumulative sums over each query sorted by label (``H`` shifted per query by the
midpoint of its range, which cancels; exponents clipped at +-700). ``r`` for every
threshold of a feature is a suffix sum of one weighted ``bincount`` of the rows' threshold
bins: a round costs ``O(n_docs * n_features)``.

Validation (as RankLib with ``-validate``). With ``eval_set`` and ``use_validation=True`` the
model keeps the rounds ``1 .. t*`` where ``t*`` maximises ``metric`` (default NDCG@10, ties
averaged) on the validation split (the earliest on ties); otherwise every round is kept.

Differences from RankLib, and why: ``|r|`` instead of ``r`` (the paper's rule; RankLib only
takes positively correlated thresholds, which makes a feature that ranks backwards useless);
``alpha`` from the clipped ``r`` (RankLib divides by ``1 - r = 0`` for a perfect threshold); the
pair weights are never materialised (RankLib stores ``n^2`` weights per query, too large for
MSLR); ties in validation scores are averaged over their orderings (the project's
convention; RankLib keeps the file order). Queries with all labels equal have no crucial
pairs: skipped and counted. No randomness (no ``seed_param``); one thread.
"""

from __future__ import annotations

import numpy as np

from ltr_bench.model_state import load_fitted_state, save_fitted_state
from ltr_bench.predict_input import predict_matrix
from ltr_bench.progress import report_intermediate, report_progress
from ltr_bench.ranker import BaseRanker, RankerTags, query_boundaries
from ltr_bench.timing import thread_limit

from .classical_common import (
    check_fit_input,
    check_int,
    kept_rows,
    parse_metric,
    per_query_metric,
    varied_queries,
    warn_skipped,
)

__all__ = ["RankBoostRanker", "candidate_thresholds", "pair_potentials"]

_R_MAX = 1.0 - 1e-12
_EXP_CLIP = 700.0


def candidate_thresholds(X: np.ndarray, n_thresholds: int) -> list[np.ndarray]:
    """RankLib's candidate thresholds of every feature, each ascending and distinct:
    ``f_max - j (f_max - f_min) / n`` (``j = 0 .. n - 1``) and ``f_min - 1e8``."""
    fmax, fmin = X.max(axis=0), X.min(axis=0)
    step = np.abs(fmax - fmin) / n_thresholds
    grid = fmax[None, :] - np.arange(n_thresholds)[:, None] * step[None, :]
    grid = np.vstack([grid, fmin[None, :] - 1e8])
    return [np.unique(grid[:, f]) for f in range(X.shape[1])]


class _LabelLayout:
    """Each kept query's rows sorted by label ascending, with the label-group boundaries."""

    def __init__(self, y: np.ndarray, bounds: np.ndarray):
        sizes = np.diff(bounds)
        self.block = np.repeat(np.arange(sizes.size), sizes)
        self.order = np.lexsort((y, self.block))
        ys, bs = y[self.order], self.block[self.order]
        n = y.size
        self.qstart = bounds[:-1][bs]
        self.qend = bounds[1:][bs]
        first = np.r_[True, (bs[1:] != bs[:-1]) | (ys[1:] != ys[:-1])]
        last = np.r_[first[1:], True]
        pos = np.arange(n)
        self.group_start = np.maximum.accumulate(np.where(first, pos, 0))
        self.group_end = np.minimum.accumulate(np.where(last, pos, n)[::-1])[::-1] + 1
        self.n_queries = sizes.size
        self.starts = np.asarray(bounds[:-1])  # query starts, the same in sorted order


def pair_potentials(H: np.ndarray, layout: _LabelLayout) -> tuple[np.ndarray, float]:
    """``(pi, W)``: the potential of every row under ``D_t(i, j) = exp(H_j - H_i) / W`` over
    the crucial pairs, and ``W = sum_(i,j) exp(H_j - H_i)`` (the unnormalised loss).

    ``H`` (n,) current scores of the rows, in row order; ``pi`` in row order."""
    o = layout.order
    h = H[o]
    # layout.block is sorted already (the order sorts by query first)
    mid = ((np.minimum.reduceat(h, layout.starts) + np.maximum.reduceat(h, layout.starts)) / 2.0)[
        layout.block
    ]
    a = np.exp(np.clip(-(h - mid), -_EXP_CLIP, _EXP_CLIP))  # exp(-H), shifted
    b = np.exp(np.clip(h - mid, -_EXP_CLIP, _EXP_CLIP))  # exp(H), shifted
    ca, cb = np.r_[0.0, np.cumsum(a)], np.r_[0.0, np.cumsum(b)]
    b_lower = cb[layout.group_start] - cb[layout.qstart]  # exp(H) of lower labels
    a_higher = ca[layout.qend] - ca[layout.group_end]  # exp(-H) of higher labels
    W = float(a @ b_lower)
    pi_sorted = (a * b_lower - b * a_higher) / W if W > 0 else np.zeros_like(h)
    pi = np.empty_like(pi_sorted)
    pi[o] = pi_sorted
    return pi, W


#: rows scored at once by :func:`threshold_sums` (a block's gathered columns, rows x rounds
#: float64, stay in cache: 2,048 x 300 rounds is 4.9 MB)
_BLOCK_ROWS = 2048


def threshold_sums(X, features, thresholds, alphas) -> np.ndarray:
    """``s_i = sum_t alpha_t [X[i, f_t] > theta_t]`` summed in round order (``t = 1..T``,
    left to right, as a loop over the rounds adds them), float64 (n_docs,).

    Computed in blocks of rows: the block's columns ``f_1..f_T`` are gathered at once (rows
    stay in cache, where a loop over the rounds reads a strided column of the whole ``X``
    per round) and the products summed with ``cumsum`` along the rounds, which adds them in
    the loop's order, so the scores are the loop's to the bit.
    """
    n = X.shape[0]
    features = np.asarray(features, dtype=np.intp)
    thresholds = np.asarray(thresholds, dtype=np.float64)
    alphas = np.asarray(alphas, dtype=np.float64)
    if features.size == 0:
        return np.zeros(n)
    out = np.empty(n)
    for a in range(0, n, _BLOCK_ROWS):
        block = X[a : a + _BLOCK_ROWS].take(features, axis=1)
        terms = alphas * (block > thresholds)
        out[a : a + _BLOCK_ROWS] = np.cumsum(terms, axis=1)[:, -1]
    return out


class RankBoostRanker(BaseRanker):
    """RankBoost with threshold weak rankers (see the module for the algorithm).

    Parameters
    ----------
    rounds : int >= 1, default 300          boosting rounds (RankLib ``-round``)
    n_thresholds : int >= 1, default 10     candidate thresholds per feature (RankLib ``-tc``)
    use_validation : bool, default True     keep the best prefix of rounds on ``eval_set``
    metric : str, default "ndcg@10"         what chooses that prefix: ``ndcg@k`` or ``map``

    Attributes: ``features_``, ``thresholds_``, ``alphas_`` (the kept rounds),
    ``loss_history_`` (``L_t`` after each round run, ``L_0 = 1``), ``rounds_run_``,
    ``best_round_``, ``validation_history_`` (metric per round, empty without validation),
    ``n_queries_used_``, ``n_queries_skipped_``, ``n_features_in_``.
    """

    SEARCH_SPACE = {"rounds": {"low": 50, "high": 1000, "log": True}}

    def __init__(self, rounds=300, n_thresholds=10, use_validation=True, metric="ndcg@10"):
        self.rounds = rounds
        self.n_thresholds = n_thresholds
        self.use_validation = use_validation
        self.metric = metric

    def ranker_tags(self) -> RankerTags:
        return RankerTags(
            requires_qid_at_predict=False,
            uses_eval_set=bool(self.use_validation),
            deterministic=True,
        )

    def _validate_params(self) -> None:
        check_int("rounds", self.rounds, 1)
        check_int("n_thresholds", self.n_thresholds, 1)
        if not isinstance(self.use_validation, (bool, np.bool_)):
            raise ValueError(f"use_validation must be True or False, got {self.use_validation!r}")
        parse_metric(self.metric)

    def fit(self, X, y, *, qid, eval_set=None):
        self._validate_params()
        metric, _ = parse_metric(self.metric)
        X, y, qid, eval_set = check_fit_input(X, y, qid, eval_set)
        rounds = int(self.rounds)
        with thread_limit(1):
            bounds = query_boundaries(qid)
            varied = varied_queries(y, bounds)
            rows = kept_rows(bounds, varied)
            yk = y[rows]
            kb = np.r_[0, np.cumsum(np.diff(bounds)[varied])]
            layout = _LabelLayout(yk, kb)
            grids = candidate_thresholds(X, int(self.n_thresholds))
            # bin of a row: code >= m  <=>  x > grid[m - 1] (grid ascending); one column per
            # feature, contiguous for bincount
            wide = max(g.size for g in grids) >= 255
            codes = np.empty((X.shape[1], rows.size), dtype=np.int32 if wide else np.uint8)
            for f, grid in enumerate(grids):
                codes[f] = np.searchsorted(grid, X[rows, f], side="left")
            validate = eval_set is not None and bool(self.use_validation)
            H = np.zeros(rows.size)
            Hv = np.zeros(eval_set[1].size) if validate else None
            feats, thetas, alphas, losses, vhist = [], [], [], [1.0], []
            pi, W0 = pair_potentials(H, layout) if rows.size else (H, 0.0)
            W = W0
            for t in range(rounds):
                if W <= 0:  # no crucial pair left with weight (or none at all)
                    break
                best_r, best_f, best_m = 0.0, -1, -1
                for f, grid in enumerate(grids):
                    sums = np.bincount(codes[f], weights=pi, minlength=grid.size + 1)
                    r = np.cumsum(sums[::-1])[::-1][1:]  # r[m]: rows above grid[m]
                    m = r.size - 1 - int(np.argmax(np.abs(r[::-1])))  # ties: higher threshold
                    if abs(r[m]) > abs(best_r):
                        best_r, best_f, best_m = float(r[m]), f, m
                if best_f < 0:  # no threshold separates any weighted pair
                    break
                r = float(np.clip(best_r, -_R_MAX, _R_MAX))
                alpha = 0.5 * np.log((1.0 + r) / (1.0 - r))
                theta = float(grids[best_f][best_m])
                feats.append(best_f)
                thetas.append(theta)
                alphas.append(alpha)
                H += alpha * (X[rows, best_f] > theta)
                pi, W = pair_potentials(H, layout)
                losses.append(W / W0)
                if validate:
                    Hv += alpha * (eval_set[0][:, best_f] > theta)
                    value = float(np.mean(per_query_metric(metric, eval_set[1], Hv, eval_set[2])))
                    vhist.append(value)
                    report_intermediate(t + 1, value)
                report_progress(t + 1, rounds, f"rankboost: round {t + 1}")
        n_run = len(feats)
        best = int(np.argmax(vhist)) + 1 if vhist else n_run
        self.features_ = np.asarray(feats[:best], dtype=np.int64)
        self.thresholds_ = np.asarray(thetas[:best], dtype=np.float64)
        self.alphas_ = np.asarray(alphas[:best], dtype=np.float64)
        self.loss_history_ = np.asarray(losses, dtype=np.float64)
        self.rounds_run_ = n_run
        self.best_round_ = best
        self.validation_history_ = np.asarray(vhist, dtype=np.float64)
        self.n_queries_used_ = int(varied.sum())
        self.n_queries_skipped_ = int(varied.size - varied.sum())
        self.n_features_in_ = X.shape[1]
        warn_skipped("rankboost", self.n_queries_skipped_, int(varied.size))
        return self

    def save_native(self, folder) -> dict:
        """``state.npz`` / ``state.json`` (:mod:`ltr_bench.model_state`): every fitted
        attribute (the weak rankers' features, thresholds and weights)."""
        return save_fitted_state(self, folder)

    @classmethod
    def load_native(cls, folder, manifest):
        return load_fitted_state(cls, folder, manifest)

    def export_onnx(self, kit):
        """``predict`` as a graph: ``sum_t alpha_t [x_{f_t} > theta_t]``."""
        self._check_fitted("alphas_")
        g = kit.Graph(self.n_features_in_)
        s = kit.threshold_sum(g, g.input, self.features_, self.thresholds_, self.alphas_)
        return g.model(s)

    def predict(self, X, *, qid=None):
        """``sum_t alpha_t [x_{f_t} > theta_t]``: float64 (n_docs,) in row order."""
        self._check_fitted("alphas_")
        X, _ = predict_matrix(X, qid, n_features=self.n_features_in_)
        return threshold_sums(X, self.features_, self.thresholds_, self.alphas_)

    def fitted_info(self) -> dict[str, int | float | str]:
        """Rounds run and kept, the final training loss ``L_t`` (exponential pair loss,
        ``L_0 = 1``), the best validation value, features used, queries used and skipped."""
        self._check_fitted("alphas_")
        info: dict[str, int | float | str] = {
            "rounds_run": int(self.rounds_run_),
            "best_round": int(self.best_round_),
            "train_loss": float(self.loss_history_[-1]),
            "n_features_used": int(np.unique(self.features_).size),
            "n_queries_used": self.n_queries_used_,
            "n_queries_skipped": self.n_queries_skipped_,
        }
        if self.validation_history_.size:
            info["validation_metric"] = float(self.validation_history_[self.best_round_ - 1])
        return info

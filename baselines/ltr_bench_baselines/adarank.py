"""AdaRank (Xu & Li, SIGIR 2007): boosting over single-feature weak rankers that optimises an
IR metric directly. Registered as ``adarank``.

Algorithm (the paper's, with ``E(q, f)`` the per-query value of ``metric`` -- ``ndcg@k`` or
``map`` -- of ranking query ``q``'s documents by ``f``; ties averaged, the project's
convention). ``P_1(q) = 1 / |Q|`` over the training queries ``Q``. For ``t = 1 .. rounds``:

1. weak ranker: the single feature ``x_k`` maximising ``sum_q P_t(q) E(q, x_k)`` (ties: the
   lower feature index). ``E(q, x_k)`` does not depend on ``t``, so it is computed once for
   every feature (``n_features`` evaluations) and each round is a matrix-vector product;
2. ``alpha_t = (1/2) ln( sum_q P_t(q) (1 + E(q, x_k)) / sum_q P_t(q) (1 - E(q, x_k)) )``
   (the denominator is floored at 1e-12: a feature that ranks every weighted query
   perfectly);
3. ``f_t = f_{t-1} + alpha_t x_k`` -- a linear model on the raw features, so ``coef_`` holds
   the summed ``alpha`` of each feature;
4. ``P_{t+1}(q) = exp(-E(q, f_t)) / sum_q' exp(-E(q', f_t))`` (the paper's update; queries
   that ``f_t`` ranks badly gain weight).

Stopping. The paper runs ``rounds`` rounds. RankLib adds three rules, kept here with its
defaults because the LETOR AdaRank baselines were produced with the same kind of safeguards:

- tolerance (``tolerance=0.002``): when the training metric of ``f_t`` falls below that of
  ``f_{t-1}`` by ``tolerance`` or more, round ``t`` is dropped and training stops;
- enqueue (``enqueue=True``): a feature chosen twice in a row is "too strong": the previous
  round is rolled back (its ``alpha`` and the weights ``P`` before it restored) and the
  feature is set aside in a queue; when the main loop ends, each queued feature (last queued
  first) is put back and training continues without the enqueue rule, up to ``rounds``
  rounds in all (rolled-back rounds count);
- consecutive selection (``max_consecutive=5``, active after the enqueue phase): a feature
  chosen ``max_consecutive`` times in a row without the training metric changing is removed
  from the pool until the metric changes again.
Without further candidates (every feature queued or removed) training stops.

Validation (RankLib with ``-validate``): with ``eval_set`` and ``use_validation=True`` the
model is the ``f_t`` with the best validation ``metric`` seen (the earliest on ties; a
rollback forgets the best, as in RankLib); otherwise the last ``f_t``.

Differences from RankLib, and why: the weight update is the paper's
``exp(-E(q, f_t))``, normalised (RankLib multiplies the previous weights by
``exp(-alpha_t E(q, f_t))`` and divides by a sum that omits them, so its ``P`` is not a
distribution); ties in a ranking are averaged over their orderings (RankLib keeps the file
order, which lets a constant feature score by the order of the file); ``E`` comes from
:mod:`ltr_bench.evaluation.metrics` (empty queries are never used: see below). Training
queries whose labels are all equal have the same metric under every ranking: skipped and
counted. Features are used as given: run on normalised features (LETOR's
``QueryLevelNorm``/``Feature-min`` files) as RankLib users do, since ``f_t`` adds raw feature
values. No randomness (no ``seed_param``); one thread.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr_bench.model_state import load_fitted_state, save_fitted_state
from ltr_bench.predict_input import LinearScorer
from ltr_bench.progress import report_intermediate, report_progress
from ltr_bench.ranker import BaseRanker, RankerTags, query_boundaries
from ltr_bench.timing import thread_limit

from .classical_common import (
    check_fit_input,
    check_int,
    check_real,
    kept_rows,
    parse_metric,
    per_query_metric,
    varied_queries,
    warn_skipped,
)

__all__ = ["AdaRankRanker", "weak_ranker_table"]

_DENOM_FLOOR = 1e-12


def weak_ranker_table(metric: str, X: np.ndarray, y: np.ndarray, qid: np.ndarray) -> np.ndarray:
    """``E`` (n_queries, n_features): the per-query ``metric`` of ranking by each feature."""
    return np.column_stack([per_query_metric(metric, y, X[:, f], qid) for f in range(X.shape[1])])


class _State:
    """The boosting state that a rollback restores."""

    def __init__(self, n_features: int, n_queries: int):
        self.w = np.zeros(n_features)
        self.P = np.full(n_queries, 1.0 / n_queries)
        self.score = -1.0  # training metric of the current f (RankLib starts below any value)
        self.n_rounds = 0

    def copy(self):
        other = _State.__new__(_State)
        other.w, other.P = self.w.copy(), self.P.copy()
        other.score, other.n_rounds = self.score, self.n_rounds
        return other


class AdaRankRanker(BaseRanker):
    """AdaRank with single-feature weak rankers (see the module for the algorithm).

    Parameters
    ----------
    metric : "ndcg@k" (k >= 1) or "map", default "ndcg@10"
        The metric ``E`` optimised (the LETOR tables' AdaRank-NDCG and AdaRank-MAP).
    rounds : int >= 1, default 500          boosting rounds (RankLib ``-round``)
    tolerance : float >= 0, default 0.002   RankLib's drop tolerance (``-tolerance``)
    enqueue : bool, default True            RankLib's enqueue rule (``-noeq`` turns it off)
    max_consecutive : int >= 1, default 5   RankLib's ``-max`` consecutive selections
    use_validation : bool, default True     keep the best ``f_t`` on ``eval_set``

    Attributes: ``coef_`` (n_features,) the linear model on raw features, ``train_metric_``
    (training metric of the model kept), ``rounds_run_`` (rounds including rolled-back ones),
    ``n_weak_rankers_`` (rounds in the kept model), ``stop_reason_``, ``trace_`` (one
    ``(feature, event)`` per round run: ``"added"``, ``"rollback"``, ``"dropped"``, plus
    ``"requeued"`` when a queued feature is put back),
    ``validation_metric_`` (nan without validation), ``n_queries_used_``,
    ``n_queries_skipped_``, ``n_features_in_``.
    """

    SEARCH_SPACE = {"metric": {"choices": ["ndcg@10", "map"]}}

    def __init__(
        self,
        metric="ndcg@10",
        rounds=500,
        tolerance=0.002,
        enqueue=True,
        max_consecutive=5,
        use_validation=True,
    ):
        self.metric = metric
        self.rounds = rounds
        self.tolerance = tolerance
        self.enqueue = enqueue
        self.max_consecutive = max_consecutive
        self.use_validation = use_validation

    def ranker_tags(self) -> RankerTags:
        return RankerTags(
            requires_qid_at_predict=False,
            uses_eval_set=bool(self.use_validation),
            deterministic=True,
        )

    def _validate_params(self) -> None:
        parse_metric(self.metric)
        check_int("rounds", self.rounds, 1)
        check_real("tolerance", self.tolerance)
        check_int("max_consecutive", self.max_consecutive, 1)
        for name in ("enqueue", "use_validation"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")

    def fit(self, X, y, *, qid, eval_set=None):
        self._validate_params()
        metric, _ = parse_metric(self.metric)
        X, y, qid, eval_set = check_fit_input(X, y, qid, eval_set)
        with thread_limit(1):
            bounds = query_boundaries(qid)
            varied = varied_queries(y, bounds)
            rows = kept_rows(bounds, varied)
            self._run(metric, X, y, qid, rows, eval_set)
        self.n_queries_used_ = int(varied.sum())
        self.n_queries_skipped_ = int(varied.size - varied.sum())
        self.n_features_in_ = X.shape[1]
        warn_skipped("adarank", self.n_queries_skipped_, int(varied.size))
        return self

    def _run(self, metric, X, y, qid, rows, eval_set) -> None:
        n_features = X.shape[1]
        self.coef_ = np.zeros(n_features)
        self.train_metric_ = float("nan")
        self.validation_metric_ = float("nan")
        self.rounds_run_ = 0
        self.n_weak_rankers_ = 0
        self.stop_reason_ = "no training query with label differences"
        self.trace_ = []
        if rows.size == 0:
            return
        Xk = X if rows.size == X.shape[0] else X[rows]
        yk, qk = y[rows], qid[rows]
        E = weak_ranker_table(metric, Xk, yk, qk)
        validate = eval_set is not None and bool(self.use_validation)
        tol, rounds = float(self.tolerance), int(self.rounds)
        state = _State(n_features, E.shape[0])
        best: dict[str, Any] = {"value": -np.inf, "state": None}

        def train_values(w):
            return per_query_metric(metric, yk, Xk @ w, qk)

        def phase(t: int, with_enqueue: bool, queue: list, last: dict) -> tuple[int, str]:
            removed: set[int] = set()
            consecutive = 0
            backup = state.copy()
            while t < rounds:
                t += 1
                report_progress(t, rounds, f"adarank: round {t}")
                gain = state.P @ E
                banned = set(queue) | removed
                if banned:
                    gain[list(banned)] = -np.inf
                if not np.isfinite(gain).any():
                    return t - 1, "no candidate feature left"
                k = int(np.argmax(gain))
                if with_enqueue:
                    if k == last["feature"]:  # twice in a row: roll back, set the feature aside
                        trace.append((k, "rollback"))
                        queue.append(k)
                        state.__dict__.update(backup.copy().__dict__)
                        best["value"], best["state"] = -np.inf, None
                        last["feature"] = -1
                        continue
                    last["feature"] = k
                    backup = state.copy()
                Pk = state.P
                num = float(Pk @ (1.0 + E[:, k]))
                den = max(float(Pk @ (1.0 - E[:, k])), _DENOM_FLOOR)
                alpha = 0.5 * np.log(num / den)
                w = state.w.copy()
                w[k] += alpha
                values = train_values(w)
                score = float(values.mean())
                if score <= state.score - tol:  # RankLib: dropped by tolerance or more
                    trace.append((k, "dropped"))
                    return t, "training metric dropped by tolerance"
                if not with_enqueue:
                    if score != state.score:
                        consecutive, removed = 0, set()
                    elif k == last["feature"]:
                        consecutive += 1
                        if consecutive == int(self.max_consecutive):
                            consecutive = 0
                            removed.add(k)
                    else:
                        consecutive, removed = 0, set()
                    last["feature"] = k
                trace.append((k, "added"))
                state.w, state.score, state.n_rounds = w, score, state.n_rounds + 1
                e = np.exp(-values)
                state.P = e / e.sum()
                if validate:
                    Xv, yv, qv = eval_set
                    value = float(np.mean(per_query_metric(metric, yv, Xv @ w, qv)))
                    report_intermediate(t, value)
                    if value > best["value"]:
                        best["value"], best["state"] = value, state.copy()
            return t, "rounds"

        last = {"feature": -1}
        queue: list[int] = []
        trace: list[tuple[int, str]] = []
        t, reason = phase(0, bool(self.enqueue), queue, last)
        while queue:
            trace.append((queue.pop(), "requeued"))
            t, reason = phase(t, False, queue, last)
        self.trace_ = trace
        final = best["state"] if validate and best["state"] is not None else state
        self.coef_ = final.w
        self.train_metric_ = float(final.score) if final.n_rounds else float("nan")
        if validate and best["state"] is not None:
            self.validation_metric_ = float(best["value"])
        self.rounds_run_ = int(t)
        self.n_weak_rankers_ = int(final.n_rounds)
        self.stop_reason_ = reason

    def save_native(self, folder) -> dict:
        """``state.npz`` / ``state.json`` (:mod:`ltr_bench.model_state`): every fitted
        attribute (the weight vector ``coef_`` and the training trace)."""
        return save_fitted_state(self, folder)

    @classmethod
    def load_native(cls, folder, manifest):
        return load_fitted_state(cls, folder, manifest)

    def export_onnx(self, kit):
        """``predict`` as a graph: ``X @ coef_``."""
        self._check_fitted("coef_")
        g = kit.Graph(self.n_features_in_)
        return g.model(kit.linear(g, g.input, self.coef_))

    def predict(self, X, *, qid=None):
        """``X @ coef_``: float64 (n_docs,) in row order."""
        self._check_fitted("coef_")
        scorer = self.__dict__.get("_linear_scorer")
        if scorer is None or not scorer.of(self.coef_):  # made once per fitted model
            scorer = self._linear_scorer = LinearScorer(self.coef_, sources=(self.coef_,))
        with thread_limit(1):
            return scorer(X, qid, n_features=self.n_features_in_)

    def fitted_info(self) -> dict[str, int | float | str]:
        """Rounds run, weak rankers in the model, why training stopped, the training and
        validation metric of the model, features with a non-zero weight, queries used and
        skipped."""
        self._check_fitted("coef_")
        info: dict[str, int | float | str] = {
            "rounds_run": self.rounds_run_,
            "n_weak_rankers": self.n_weak_rankers_,
            "stop_reason": self.stop_reason_,
            "n_features_used": int(np.count_nonzero(self.coef_)),
            "n_queries_used": self.n_queries_used_,
            "n_queries_skipped": self.n_queries_skipped_,
        }
        if np.isfinite(self.train_metric_):
            info["train_metric"] = float(self.train_metric_)
        if np.isfinite(self.validation_metric_):
            info["validation_metric"] = float(self.validation_metric_)
        return info

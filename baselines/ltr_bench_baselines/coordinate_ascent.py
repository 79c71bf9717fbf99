"""Coordinate Ascent (Metzler & Croft, Information Retrieval 10(3), 2007): a linear model whose
weights are optimised one at a time by a line search on the training metric (NDCG@10 by
default, as RankLib's ``-ranker 4 -metric2t NDCG@10``). Registered as ``coordinate-ascent``.

Model: ``s(x) = w . x`` on the features as given (RankLib uses them raw; LETOR's
``QueryLevelNorm``/``Feature-min`` files are already normalised per query). Only the
direction of ``w`` matters, so ``w`` is kept at unit L1 norm.

Algorithm (RankLib's, with its defaults). ``restarts`` times: start from ``w = 1/n_features``
(every restart starts there, as in RankLib; restarts differ by the order in which features
are visited, drawn from ``random_state``). Repeat passes: visit every feature ``f`` in a fresh
random order and line-search its weight ``w_f``:

- directions ``+1``, then ``-1``, then ``0`` (the feature removed: ``w_f = 0``), stopping at the
  first direction that improves the training metric;
- in a direction ``d``: ``max_steps`` (default 25) trial weights ``w_f + d * step * (2^j - 1)``,
  ``j = 1 .. max_steps`` (the step doubles: RankLib's ``stepScale = 2``), with ``step = 0.001``,
  or ``step_base * |w_f|`` (default 0.05) when ``0.001 > |w_f| / 2``;
- the best trial (the smallest step among equal values) replaces ``w_f`` if it is strictly
  better than the best so far; ``w`` is then renormalised to unit L1 norm.

A pass that improves the training metric by less than ``tolerance`` (default 0.001) ends the
restart, and so do ``n_features - 1`` consecutive features without improvement. The model is
the restart with the best training metric, or, with ``eval_set`` and ``use_validation=True``,
the restart with the best validation metric (RankLib with ``-validate``).

Line search cost. Every trial weight of a direction is evaluated at once: the trial scores
``s + delta_j x_f`` (``max_steps`` columns) are laid out in per-query rows padded to a few
width buckets (queries sorted by length, so padding stays small; the padded feature columns
are built once per fit), and NDCG@k is the DCG of each row's top ``k`` over the ideal DCG.
The top ``k`` in order comes from one vectorised float sort per row (:meth:`TopKNDCG.line`):
the low bits of every score are overwritten by a code of its document's gain, so the sorted
row carries the gains along. This is exact by construction: overwriting the low ``b`` bits
keeps a score inside its block of ``2^b`` adjacent floats, and blocks are disjoint intervals
ordered as the floats, so scores in different blocks keep their order; a row whose top
``k + 1`` holds two scores of one block (a tie, or scores within ``2^b`` units in the last
place) is evaluated again from the unmodified scores (:func:`_dcg`). The line search and
the starting value add the per-query NDCG in one fixed order, so a trial that leaves every
query's DCG unchanged gets exactly the current value and is not "strictly better" (an
earlier version added pruned and unpruned queries separately and could accept such a trial
on a rounding difference of 1e-16).
This is NDCG@k as :mod:`ltr_bench.evaluation.metrics` defines it (gain ``2^rel - 1``,
discount ``1 / log2(rank + 1)``) except for ties, which the line search breaks arbitrarily
(RankLib breaks them by row order) instead of averaging them; on continuous scores there are
none, and the tests check the two agree on tie-free data. The training and validation
values reported (``train_metric_``, ``validation_metric_``) come from the project's metrics.

Differences from RankLib, and why: the ``-1`` direction keeps its sign when
``step_base * |w_f|`` is used (RankLib's step loses it, so both directions try the same
weights); the stopping test compares each pass with the previous one (RankLib compares with
the start of the restart, so a restart that gained ``tolerance`` once runs until
``n_features - 1`` consecutive failures); no regularisation (RankLib's ``-reg`` is off by
default). Queries with all labels equal score the same under every ``w``: skipped and
counted. One thread.
"""

from __future__ import annotations

import numpy as np

from ltr_bench.model_state import load_fitted_state, save_fitted_state
from ltr_bench.predict_input import LinearScorer
from ltr_bench.progress import report_progress
from ltr_bench.ranker import BaseRanker, RankerTags, query_boundaries
from ltr_bench.timing import thread_limit

from .classical_common import (
    check_fit_input,
    check_int,
    check_real,
    kept_rows,
    parse_metric,
    per_query_metric,
    seed_of,
    varied_queries,
    warn_skipped,
)

__all__ = ["CoordinateAscentRanker", "TopKNDCG"]

_SMALL_STEP = 0.001  # RankLib's first step
_STEP_SCALE = 2.0  # RankLib's stepScale
_BUCKET_RATIO = 1.25  # a bucket's widest query is at most this times its narrowest
_CHUNK = 1 << 18  # trial scores sorted per block in TopKNDCG.line (2 MiB: stays in cache)


class TopKNDCG:
    """Mean NDCG@k over queries of many score vectors at once (see the module).

    ``y`` (n,) labels of rows grouped by query (``bounds`` from
    :func:`ltr_bench.ranker.query_boundaries`); every query must hold a document of label
    >= 1 (the callers skip the others). Scores live in a *padded layout* of ``n_padded``
    entries: queries sorted by length and cut into buckets, each bucket a ``(queries, width)``
    block stored row-major, padding positions scored ``-inf`` (:meth:`pad`). :meth:`mean`
    takes padded scores ``(n_candidates, n_padded)`` and returns ``(n_candidates,)``; both it
    and :meth:`line` add per-query NDCG bucket by bucket in the same order, so equal rankings
    give bit-identical means (an unchanged ranking never looks like an improvement).
    """

    def __init__(self, y: np.ndarray, bounds: np.ndarray, k: int):
        sizes = np.diff(bounds)
        self.k = int(k)
        self.n = int(y.size)
        self.n_queries = int(sizes.size)
        order = np.argsort(sizes, kind="stable")
        gains = np.r_[np.exp2(y.astype(np.float64)) - 1.0, 0.0]  # index n: padding, gain 0
        # gain codes for the sort of :meth:`line`: code c has gain gain_of_code[c]; gain 0
        # (the padding's) gets code 0, so a padded -inf keeps its bits (other codes: NaN)
        uniq, inverse = np.unique(gains, return_inverse=True)
        perm = np.arange(uniq.size)
        zero = int(np.searchsorted(uniq, 0.0))
        perm[[0, zero]] = perm[[zero, 0]]  # a swap: its own inverse
        self.gain_of_code = uniq[perm]
        codes = perm[inverse.ravel()].astype(np.int64)
        self.code_bits = max(1, int(np.ceil(np.log2(self.gain_of_code.size))))
        self.buckets = []  # (offset, queries, width, gains, kk, discounts, ideal DCG, codes)
        parts = []
        offset, i = 0, 0
        while i < order.size:
            j = i
            while j + 1 < order.size and sizes[order[j + 1]] <= _BUCKET_RATIO * sizes[order[i]]:
                j += 1
            qs = order[i : j + 1]
            width = int(sizes[qs].max())
            col = np.arange(width)
            idx = np.where(col[None, :] < sizes[qs][:, None], bounds[qs][:, None] + col, self.n)
            g = gains[idx]
            kk = min(self.k, width)
            disc = 1.0 / np.log2(np.arange(2, kk + 2))
            ideal = _ordered_dcg(-np.sort(-g, axis=1)[:, :kk], disc)
            self.buckets.append((offset, qs.size, width, g, kk, disc, ideal, codes[idx]))
            parts.append(idx.ravel())
            offset += idx.size
            i = j + 1
        self.index = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        self.n_padded = int(self.index.size)
        self._work = np.zeros(0)  # scratch for :meth:`line`, grown on demand and reused

    def pad(self, v: np.ndarray, fill: float) -> np.ndarray:
        """``v`` (n,) in the padded layout, ``fill`` at the padding positions."""
        return np.r_[v, fill][self.index]

    def mean(self, S: np.ndarray) -> np.ndarray:
        S = np.atleast_2d(S)
        C = S.shape[0]
        total = np.zeros(C)
        for offset, nb, width, g, kk, disc, ideal, _ in self.buckets:
            sb = S[:, offset : offset + nb * width].reshape(C, nb, width)
            total += (_dcg(sb, g, kk, disc) / ideal).sum(axis=1)
        return total / self.n_queries

    def line(self, s: np.ndarray, x: np.ndarray, deltas: np.ndarray) -> np.ndarray:
        """``mean(s + deltas[:, None] * x)`` for padded ``s`` (padding ``-inf``) and ``x``
        (padding 0) and trial steps ``deltas``, by sorting gain-coded scores.

        Per bucket, ``S = deltas x + s`` (the same floats as ``s + delta x``) is viewed as
        int64 and its low ``b = code_bits`` bits are replaced by the document's gain code;
        every row is sorted as floats and the DCG read off the codes of its last ``kk``
        entries. Exactness: the ``2^b`` floats sharing a score's high bits form an interval
        of adjacent floats (one sign, one exponent), intervals of different blocks do not
        overlap, so two scores of different blocks sort as their unmodified values do. When
        the top ``kk + 1`` of a sorted row holds no two entries of one block, its top ``kk``
        is that of the unmodified scores, in order, with no tie; otherwise (a tie or a near
        tie) the row is evaluated again by :func:`_dcg` from the unmodified scores.
        Padding (``-inf``, code of gain 0) keeps its value: ``-inf`` has zero low bits.
        """
        deltas = np.asarray(deltas, dtype=np.float64)
        C = deltas.size
        total = np.zeros(C)
        for offset, nb, width, g, kk, disc, ideal, codes in self.buckets:
            sb = s[offset : offset + nb * width].reshape(nb, width)
            xb = x[offset : offset + nb * width].reshape(nb, width)
            dcg = np.empty((C, nb))
            step = max(1, _CHUNK // (C * width))  # queries per chunk: the scratch stays cached
            for a in range(0, nb, step):
                q = slice(a, min(a + step, nb))
                dcg[:, q] = self._coded_dcg(sb[q], xb[q], codes[q], g[q], kk, disc, deltas)
            total += (dcg / ideal).sum(axis=1)
        return total / self.n_queries

    def _coded_dcg(self, sb, xb, codes, g, kk, disc, deltas) -> np.ndarray:
        """DCG@kk (C, rows) of ``sb + deltas x`` for one block of rows (see :meth:`line`)."""
        C, (nb, width) = deltas.size, sb.shape
        low = np.int64((1 << self.code_bits) - 1)
        if self._work.size < C * nb * width:
            self._work = np.empty(C * nb * width)
        S = self._work[: C * nb * width].reshape(C, nb, width)
        np.multiply(deltas[:, None, None], xb[None], out=S)
        S += sb
        bits = S.view(np.int64)
        bits &= ~low
        bits |= codes
        S.sort(axis=2)
        tail = bits[:, :, max(width - kk - 1, 0) :]  # top kk + 1 (all when shorter)
        same_block = ((tail[:, :, 1:] ^ tail[:, :, :-1]) & ~low) == 0
        top = tail[:, :, ::-1][:, :, :kk] & low  # codes of the top kk, best first
        dcg = _ordered_dcg(self.gain_of_code[top], disc)
        redo_c, redo_q = np.nonzero(same_block.any(axis=2))
        if redo_c.size:
            exact = sb[redo_q] + deltas[redo_c][:, None] * xb[redo_q]
            dcg[redo_c, redo_q] = _dcg(exact[None], g[redo_q], kk, disc)[0]
        return dcg


def _ordered_dcg(gains: np.ndarray, disc: np.ndarray) -> np.ndarray:
    """``sum_r gains[..., r] * disc[r]`` added in rank order (one fixed order for every
    caller, so the same ranking always gives the same float)."""
    out = gains[..., 0] * disc[0]
    for r in range(1, gains.shape[-1]):
        out += gains[..., r] * disc[r]
    return out


def _dcg(S: np.ndarray, g: np.ndarray, kk: int, disc: np.ndarray) -> np.ndarray:
    """DCG@kk (C, rows) of scores ``S`` (C, rows, width) with gains ``g`` (rows, width);
    ties in an arbitrary order (``np.argpartition``, then a stable sort of the top kk)."""
    width = S.shape[2]
    if kk < width:
        top = np.argpartition(S, width - kk, axis=2)[:, :, width - kk :]
        ts = np.take_along_axis(S, top, axis=2)
        tg = g[np.arange(S.shape[1])[:, None], top]  # (C, rows, kk) gains of the top kk
    else:
        ts, tg = S, np.broadcast_to(g, S.shape)
    rank = np.argsort(-ts, axis=2, kind="stable")
    return _ordered_dcg(np.take_along_axis(tg, rank, axis=2), disc)


class CoordinateAscentRanker(BaseRanker):
    """Coordinate Ascent on NDCG@k (see the module for the algorithm and RankLib defaults).

    Parameters
    ----------
    metric : "ndcg@k", default "ndcg@10"     the training metric (k >= 1)
    restarts : int >= 1, default 5           RankLib ``-r``
    max_steps : int >= 1, default 25         trial steps per direction (RankLib ``-i``)
    step_base : float > 0, default 0.05      relative first step for larger weights
    tolerance : float >= 0, default 0.001    RankLib ``-tolerance`` (per pass here)
    use_validation : bool, default True      choose the restart on ``eval_set``
    random_state : int >= 0 or None          seed of the feature orders

    Attributes: ``coef_`` (n_features,) unit L1 norm, ``train_metric_`` (project metric),
    ``validation_metric_`` (nan without validation), ``restart_scores_`` (line-search
    training metric at the end of each restart), ``trace_`` (per restart: the line-search
    training metric at the start and after each accepted weight change), ``n_passes_``,
    ``best_restart_``,
    ``n_queries_used_``, ``n_queries_skipped_``, ``n_features_in_``.
    """

    SEARCH_SPACE = {"tolerance": {"low": 1e-4, "high": 1e-2, "log": True}}

    def __init__(
        self,
        metric="ndcg@10",
        restarts=5,
        max_steps=25,
        step_base=0.05,
        tolerance=0.001,
        use_validation=True,
        random_state=None,
    ):
        self.metric = metric
        self.restarts = restarts
        self.max_steps = max_steps
        self.step_base = step_base
        self.tolerance = tolerance
        self.use_validation = use_validation
        self.random_state = random_state

    def ranker_tags(self) -> RankerTags:
        return RankerTags(
            requires_qid_at_predict=False,
            uses_eval_set=bool(self.use_validation),
            deterministic=True,
            seed_param="random_state",
        )

    def _k(self) -> int:
        name, _ = parse_metric(self.metric)
        if not name.startswith("ndcg@"):
            raise ValueError(
                f"metric must be ndcg@k for coordinate-ascent (k a positive integer, e.g. "
                f"'ndcg@10'), got {self.metric!r}"
            )
        return int(name.split("@")[1])

    def _validate_params(self) -> None:
        self._k()
        check_int("restarts", self.restarts, 1)
        check_int("max_steps", self.max_steps, 1)
        check_real("step_base", self.step_base, allow_equal=False)
        check_real("tolerance", self.tolerance)
        if not isinstance(self.use_validation, (bool, np.bool_)):
            raise ValueError(f"use_validation must be True or False, got {self.use_validation!r}")
        seed_of(self.random_state)

    def fit(self, X, y, *, qid, eval_set=None):
        self._validate_params()
        k = self._k()
        X, y, qid, eval_set = check_fit_input(X, y, qid, eval_set)
        rng = np.random.default_rng(seed_of(self.random_state))
        n_features = X.shape[1]
        self.trace_ = []
        with thread_limit(1):
            bounds = query_boundaries(qid)
            varied = varied_queries(y, bounds)
            rows = kept_rows(bounds, varied)
            validate = eval_set is not None and bool(self.use_validation)
            w_best, best_value, scores, passes, best_r = None, -np.inf, [], 0, 0
            if rows.size:
                Xk = X if rows.size == X.shape[0] else X[rows]
                kb = np.r_[0, np.cumsum(np.diff(bounds)[varied])]
                ndcg = TopKNDCG(y[rows], kb, k)
                # every feature in the padded layout, built once (a row per feature)
                Xp = np.empty((n_features, ndcg.n_padded))
                for f in range(n_features):
                    Xp[f] = ndcg.pad(Xk[:, f], 0.0)
                for r in range(int(self.restarts)):
                    w, score, n_pass = self._restart(Xk, Xp, ndcg, rng, r)
                    scores.append(score)
                    passes += n_pass
                    if validate:
                        Xv, yv, qv = eval_set
                        value = float(per_query_metric(f"ndcg@{k}", yv, Xv @ w, qv).mean())
                    else:
                        value = score
                    if value > best_value:
                        w_best, best_value, best_r = w, value, r
            if w_best is None:
                w_best = np.full(n_features, 1.0 / n_features)
            self.coef_ = w_best
            self.train_metric_ = (
                float(per_query_metric(f"ndcg@{k}", y[rows], X[rows] @ w_best, qid[rows]).mean())
                if rows.size
                else float("nan")
            )
        self.validation_metric_ = best_value if validate and rows.size else float("nan")
        self.restart_scores_ = np.asarray(scores, dtype=np.float64)
        self.n_passes_ = passes
        self.best_restart_ = best_r
        self.n_queries_used_ = int(varied.sum())
        self.n_queries_skipped_ = int(varied.size - varied.sum())
        self.n_features_in_ = n_features
        warn_skipped("coordinate-ascent", self.n_queries_skipped_, int(varied.size))
        return self

    def _trials(self, orig: float, direction: int) -> np.ndarray:
        """The total changes of ``w_f`` tried in one direction (0: remove the feature)."""
        if direction == 0:
            return np.array([-orig])
        step = _SMALL_STEP * direction
        if orig != 0.0 and abs(step) > 0.5 * abs(orig):
            step = direction * float(self.step_base) * abs(orig)
        j = np.arange(1, int(self.max_steps) + 1)
        return step * (_STEP_SCALE**j - 1.0) / (_STEP_SCALE - 1.0)

    def _restart(self, X, Xp, ndcg: TopKNDCG, rng, r: int):
        n_features = X.shape[1]
        w = np.full(n_features, 1.0 / n_features)
        s = ndcg.pad(X @ w, -np.inf)
        best = float(ndcg.mean(s[None, :])[0])
        trace = [best]
        fails, n_pass, tol = 0, 0, float(self.tolerance)
        restarts = int(self.restarts)
        while (n_features > 1 and fails < n_features - 1) or (n_features == 1 and fails == 0):
            n_pass += 1
            pass_start = best
            for f in rng.permutation(n_features):
                orig = float(w[f])
                x = Xp[f]
                chosen = None
                for direction in (1, -1, 0):
                    deltas = self._trials(orig, direction)
                    values = ndcg.line(s, x, deltas)
                    j = int(np.argmax(values))
                    if values[j] > best:
                        best, chosen = float(values[j]), float(deltas[j])
                        break
                if chosen is None:
                    fails += 1
                    if n_features > 1 and fails >= n_features - 1:
                        break
                    continue
                fails = 0
                trace.append(best)
                w[f] = orig + chosen
                s += chosen * x
                norm = float(np.abs(w).sum())
                if norm > 0:
                    w /= norm
                    s /= norm
            report_progress(r + 1, restarts, f"coordinate-ascent: restart {r + 1}, pass {n_pass}")
            if best - pass_start < tol:
                break
        self.trace_.append(np.asarray(trace))
        return w, best, n_pass

    def save_native(self, folder) -> dict:
        """``state.npz`` / ``state.json`` (:mod:`ltr_bench.model_state`): every fitted
        attribute (the weight vector ``coef_`` and the restarts' scores)."""
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
        """Training and validation NDCG of the model, the restart chosen, passes in all,
        non-zero weights, queries used and skipped."""
        self._check_fitted("coef_")
        info: dict[str, int | float | str] = {
            "best_restart": int(self.best_restart_),
            "n_passes": int(self.n_passes_),
            "n_nonzero_coef": int(np.count_nonzero(self.coef_)),
            "n_queries_used": self.n_queries_used_,
            "n_queries_skipped": self.n_queries_skipped_,
        }
        if np.isfinite(self.train_metric_):
            info["train_metric"] = float(self.train_metric_)
        if np.isfinite(self.validation_metric_):
            info["validation_metric"] = float(self.validation_metric_)
        return info

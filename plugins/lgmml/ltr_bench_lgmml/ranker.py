"""``LGMMLRanker``: L-GMML (Su, King, Lyu, SIGIR 2017) as an ltr-bench ranker.

Pipeline (``fit``): scale features (fitted on the training split) -> m local GMML metrics from
sampled similar / dissimilar pairs of training queries, each with its anchor (the positive
document whose distance ranking has the best NDCG) -> WARP learning of the weights Phi ->
``predict`` scores ``f(p) = sign * sum_r Phi_r h_r(p)`` (Eq. 13 and variants, see
:mod:`ltr_bench_lgmml.scoring`). Higher score = more relevant.

Parameters (paper value in brackets; "-" when the paper does not say). Defaults were chosen
on VALIDATION splits only, never on test, by ``python -m experiments.lgmml_defaults``
(OHSUMED 5 folds, LightGBM's lambdarank example with a seeded 75/25 split of its training
queries, ``synthetic``, and MSLR-shaped ``synthetic`` with 136 log-normal features): the
configuration with the best mean ratio of validation NDCG@10 to a ridge regression on the
same split, over 16 combinations of lambda form/value, scaling and score form (m = 50,
WARP), the top 3 re-scored with 3 seeds, then the sampling caps. The winner is the paper's
own scoring -- Eq. 12 distance, Eq. 13 score, l2 scaling, t = 1/2 -- with lambda relative to
the pair scatter (``reg_scale="relative"``, 0.1) and 5 + 5 documents per metric: validation
NDCG@10 0.287 / 0.593 / 0.622 / 0.409 on the four datasets (3 seeds), against 0.271 / 0.655 /
0.477 / 0.251 for the previous defaults (absolute lambda, "rising", Mahalanobis, 10 + 20;
1 seed), ridge 0.421 / 0.729 / 0.694 / 0.503 and the label-free ||x||^2 far-first reference
0.400 / 0.707 / 0.381 / 0.247: on OHSUMED and the LightGBM example the defaults do NOT beat
the label-free reference. Eq. 13 ranks closer documents first while delta < 1, which holds
for about 98% of validation distances with l2 scaling (OHSUMED fold 1 and MSLR-shaped data);
it is not scale-free, so ``scaling="none"`` loses (mean ratio 0.573 against 0.768).
``fitted_info()`` records, with every run, whether the local metrics and anchors add
anything (anisotropy, top-anchor share, learned vs uniform weights, the label-free
reference on validation; :mod:`ltr_bench_lgmml.diagnostics`).

n_metrics : int, default 50
    m, the number of local metrics [500 on MSLR / Yahoo!; tuned per dataset in Fig. 3];
    m = 100 scored a mean ratio to ridge of 0.791 against 0.768 on validation (3 seeds,
    within seed noise; kept 50, the stage-2 winner, for half the cost).
n_iter : int or None, default None
    T, WARP iterations; None = 100 x number of training queries [-].
step_size : float or "authors", default 0.05
    mu, the WARP step [-]; "authors" = 1 / (1 + exp(t / (100 n_queries))) (authors' code).
margin : float, default 0.01
    zeta, the hinge margin [tried 0.01..1; authors' code 0.001].
initial_weight : float, default 1.0
    Phi(1) [tried 0.1..10; authors' code 1].
t : float in [0, 1], default 0.5
    geodesic parameter of GMML [0.5, Eq. 9; authors' code 1.0].
reg_lambda : float > 0, default 0.1
    lambda, GMML regulariser [-; authors' code 0.1, absolute]; see ``reg_scale``.
reg_scale : "relative" | "absolute", default "relative"
    "absolute": lambda = ``reg_lambda`` (Eq. 4-5 as written). "relative": lambda =
    ``reg_lambda * (tr A + tr B) / (2 d)`` per local metric, A and B its similar / dissimilar
    pair scatter sums: a fraction of the mean scatter eigenvalue per dimension, so the same
    value works for l2-scaled, z-scored and raw features (with l2 scaling, an absolute 0.1
    swamps the tiny scatter and every metric is nearly Euclidean; median max/min eigenvalue
    ratio 1.9 against 12.5 relative, in the defaults search). Our extension.
distance : "paper" | "mahalanobis", default "paper"
    delta_r = ||M_r x|| (Eq. 12, "paper") or sqrt(x^T M_r x) (authors' code) [paper:
    "paper"].
score_form : "rising" | "auto" | "eq13" | "positive", default "eq13"
    "eq13" = Eq. 13 literally; "rising" keeps every distance on the rising side of
    d exp(-d) by dividing it by a training quantile and clipping at 1; "positive" = +Phi.g
    (what the authors' code ranks by) [paper: "eq13"]. "auto" = "positive" for ordinary
    LETOR rows (best on OHSUMED validation, see above) and "rising" in query-by-example
    mode (``query_dim`` set), where Section 4.4 ranks documents by closeness to the query
    and no validation data argued otherwise; the form used is ``score_form_``.
    Caution: with "l2" scaling the local distances are all below 1 (measured on OHSUMED
    and on synthetic data), where +g *rises* with distance, so "positive" ranks documents
    far from the anchors first (WARP only chooses how much each metric counts). That is
    the opposite of the direction the paper states; it won on OHSUMED validation, and it
    loses to a constant scorer on data where relevant documents cluster near the anchors
    (the synthetic data of ``tests/test_ranker.py``), where "rising" works.
distance_quantile : float in (0, 1], default 0.99
    the quantile s_r of training distances used by "rising".
weight_strategy : "global" | "mean" | "uniform", default "global"
    Phi for an unseen query: one Phi trained by WARP over all training queries, the mean of
    per-query Phi_q, or all ones (authors' code) [paper: not stated]. Validation NDCG@10
    with the other defaults (same script, 5 folds x 5 seeds): global 0.3655, mean 0.3465,
    uniform 0.2683 (measured for the previous defaults; for the current ones see the README).
weight_method : "warp" | "listnet", default "warp"
    how Phi is learned: WARP (Section 3.3, the paper) or ListNet on the weights, L-BFGS-B
    under Phi >= 0 (**our extension, not the paper**: :mod:`ltr_bench_lgmml.listwise`;
    only with weight_strategy "global").
scaling : "l2" | "zscore" | "none", default "l2"
    per-feature scaling fitted on the training split ["l2", Section 4.5].
queries_per_metric : int, default 1
    training queries sampled per local metric [-; authors' code 1].
max_positives, max_negatives : int or None, default 5, 5
    caps on the documents sampled per query for a metric's pairs: all pairs of distinct
    positives are similar, all positive x negative pairs dissimilar [-; authors cap pairs].
    They bound each metric's rank (<= max_positives + max_negatives - 1) and so the exact
    scoring cost; chosen on validation (stage 4 of ``experiments.lgmml_defaults``: mean
    ratio to ridge 0.801 for 5/5, 0.771 for 4/4, 0.768 for the earlier 10/20; 3 seeds).
highly_relevant : "upper_half" | "top" | int, default "upper_half"
    which documents are highly relevant: labels >= the median of the query's distinct labels
    (and >= 1, the authors' code), the query's top label, or labels >= the int.
negatives : "zero" | "lower", default "zero"
    negatives for pairs and WARP: label 0 (Section 3.4) or any label below highly relevant.
max_rank : int or None, default None
    keep only the ``max_rank`` largest-|eigenvalue| low-rank components of each metric
    (faster scoring, an approximation whose NDCG effect must be measured); None = exact.
anchor_k : int, default 10
    k of the NDCG@k that chooses anchors [paper: "NDCG"].
dtype : "float32" | "float64", default "float32"
    precision of the low-rank distance term (the isotropic term is always float64).
memory_mb : int, default 1024
    budget for WARP's cached features and scoring chunks.
query_dim : int or None, default None
    query-by-example rows [query (query_dim), document (query_dim)]; the anchor is then the
    row's query point (Section 4.4).
random_state : int or None
    seeds every random choice (query sampling, pair sampling, WARP).
n_threads : int >= 1 or None, default None
    the threads of every stage: the pool fitting the m local metrics (each worker with
    single-threaded BLAS) and the BLAS limit (threadpoolctl) of scaling, WARP / ListNet and
    scoring. None: a pool of every CPU of ``os.sched_getaffinity`` and the BLAS library's
    own default. ``RankerTags.thread_param``, so the harness sets it from ``--threads`` and
    it is not part of a configuration's key. The model is bit-identical for every value
    (docs/decisions.md#lgmml-parallel-local-metrics).
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike

from ltr_bench.predict_input import predict_matrix
from ltr_bench.progress import report_progress
from ltr_bench.ranker import (
    EvalSet,
    RankerTags,
    check_ranking_input,
    query_boundaries,
    split_query_document,
)
from ltr_bench.timing import thread_limit

from .diagnostics import metric_spectra, model_summary, validation_diagnostics
from .listwise import train_listnet
from .local_metrics import QuerySets, fit_local_metrics, resolve_n_threads
from .persistence import SavedLGMML
from .preprocessing import SCALINGS, FeatureScaler
from .scoring import SCORE_CHUNK_ROWS, SCORE_FORMS, MetricBank, Reduce, score_rows
from .warp import train_warp

__all__ = ["LGMMLRanker"]

_CHUNK_BYTES = 64 << 20  # working set of one scoring chunk: large enough for BLAS-3 speed


class LGMMLRanker(SavedLGMML):
    """L-GMML learning to rank. See the module docstring for every parameter.

    Fitted attributes: ``score_form_`` (the form used), ``scaler_`` (FeatureScaler),
    ``metric_bank_`` (MetricBank: metrics, anchors), ``anchor_ndcg_`` (m,), ``weights_`` (m,)
    the Phi used for unseen queries, ``query_weights_`` ((n_train_queries, m) in "mean" mode,
    else None), ``warp_collapsed_`` (WARP zeroed every weight and uniform weights were used
    instead, with a warning), ``n_iter_``, ``n_features_in_``; for :meth:`fitted_info`:
    ``metric_eig_ratio_`` and ``metric_reg_lambda_`` (m,) and ``diagnostics_`` (dict), see
    :mod:`ltr_bench_lgmml.diagnostics`.
    """

    contract_version = 1  # the ltr_bench.ranker.CONTRACT_VERSION this plugin is built for

    #: ``ltr-bench tune`` search space (ltr_bench.tune.study.parse_spec). Values are sampled
    #: independently, so no "mean" weight_strategy: listnet + mean is rejected (a wasted
    #: trial), and mean trailed global on OHSUMED validation (#lgmml-unseen-queries).
    #: reg_scale stays "relative": this reg_lambda range is a fraction of the pair scatter;
    #: a useful absolute lambda depends on the scaling (tiny l2-scaled pair differences).
    SEARCH_SPACE = {
        "score_form": {"choices": ["rising", "positive", "eq13"]},
        "weight_strategy": {"choices": ["global", "uniform"]},
        "weight_method": {"choices": ["warp", "listnet"]},
        "scaling": {"choices": ["l2", "zscore"]},
        "n_metrics": {"low": 10, "high": 100, "log": True},
        "step_size": {"low": 0.005, "high": 0.5, "log": True},
        "reg_lambda": {"low": 0.01, "high": 10.0, "log": True},
    }

    def __init__(
        self,
        n_metrics: int = 50,
        n_iter: int | None = None,
        step_size: float | str = 0.05,
        margin: float = 0.01,
        initial_weight: float = 1.0,
        t: float = 0.5,
        reg_lambda: float = 0.1,
        reg_scale: str = "relative",
        distance: str = "paper",
        score_form: str = "eq13",
        distance_quantile: float = 0.99,
        weight_strategy: str = "global",
        weight_method: str = "warp",
        scaling: str = "l2",
        queries_per_metric: int = 1,
        max_positives: int | None = 5,
        max_negatives: int | None = 5,
        highly_relevant: str | int = "upper_half",
        negatives: str = "zero",
        max_rank: int | None = None,
        anchor_k: int = 10,
        dtype: str = "float32",
        memory_mb: int = 1024,
        query_dim: int | None = None,
        random_state: int | None = None,
        n_threads: int | None = None,
    ) -> None:
        self.n_metrics = n_metrics
        self.n_iter = n_iter
        self.step_size = step_size
        self.margin = margin
        self.initial_weight = initial_weight
        self.t = t
        self.reg_lambda = reg_lambda
        self.reg_scale = reg_scale
        self.distance = distance
        self.score_form = score_form
        self.distance_quantile = distance_quantile
        self.weight_strategy = weight_strategy
        self.weight_method = weight_method
        self.scaling = scaling
        self.queries_per_metric = queries_per_metric
        self.max_positives = max_positives
        self.max_negatives = max_negatives
        self.highly_relevant = highly_relevant
        self.negatives = negatives
        self.max_rank = max_rank
        self.anchor_k = anchor_k
        self.dtype = dtype
        self.memory_mb = memory_mb
        self.query_dim = query_dim
        self.random_state = random_state
        self.n_threads = n_threads

    def ranker_tags(self) -> RankerTags:
        return RankerTags(
            requires_qid_at_predict=False,
            uses_eval_set=False,
            deterministic=True,
            thread_param="n_threads",
            seed_param="random_state",
            query_dim_param="query_dim",
        )

    # ------------------------------------------------------------------ validation
    def _validate_params(self) -> None:
        def choice(name: str, allowed: Iterable[str]) -> None:
            v = getattr(self, name)
            if not isinstance(v, str) or v not in allowed:
                raise ValueError(f"{name} must be one of {list(allowed)}, got {v!r}")

        def integer(name: str, low: int, none_ok: bool = False) -> None:
            v = getattr(self, name)
            if v is None and none_ok:
                return
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or int(v) < low:
                extra = " or None" if none_ok else ""
                raise ValueError(f"{name} must be an integer >= {low}{extra}, got {v!r}")

        def real(
            name: str, low: float, high: float, low_open: bool = False, high_open: bool = False
        ) -> None:
            v = getattr(self, name)
            ok = isinstance(v, numbers.Real) and not isinstance(v, bool) and np.isfinite(float(v))
            if ok:
                ok = (v > low if low_open else v >= low) and (v < high if high_open else v <= high)
            if not ok:
                lb = "(" if low_open else "["
                rb = ")" if high_open else "]"
                raise ValueError(f"{name} must be a number in {lb}{low}, {high}{rb}, got {v!r}")

        integer("n_metrics", 1)
        integer("n_iter", 0, none_ok=True)
        if self.step_size != "authors":
            real("step_size", 0, np.inf, low_open=True, high_open=True)
        real("margin", 0, np.inf, high_open=True)
        real("initial_weight", 0, np.inf, high_open=True)
        real("t", 0, 1)
        real("reg_lambda", 0, np.inf, low_open=True, high_open=True)
        choice("distance", ("paper", "mahalanobis"))
        choice("score_form", ("auto",) + tuple(SCORE_FORMS))
        real("distance_quantile", 0, 1, low_open=True)
        choice("weight_strategy", ("global", "mean", "uniform"))
        choice("reg_scale", ("relative", "absolute"))
        choice("weight_method", ("warp", "listnet"))
        if self.weight_method == "listnet" and self.weight_strategy == "mean":
            raise ValueError(
                "weight_method='listnet' learns one Phi for all queries: use "
                "weight_strategy='global' (or 'uniform'), not 'mean'"
            )
        choice("scaling", SCALINGS)
        integer("queries_per_metric", 1)
        integer("max_positives", 1, none_ok=True)
        integer("max_negatives", 1, none_ok=True)
        hr = self.highly_relevant
        if not (
            (isinstance(hr, str) and hr in ("upper_half", "top"))
            or (isinstance(hr, numbers.Integral) and not isinstance(hr, bool) and int(hr) >= 1)
        ):
            raise ValueError(
                "highly_relevant must be one of ['upper_half', 'top'] or an "
                f"integer label >= 1, got {hr!r}"
            )
        choice("negatives", ("zero", "lower"))
        integer("max_rank", 1, none_ok=True)
        integer("anchor_k", 1)
        choice("dtype", ("float32", "float64"))
        integer("memory_mb", 1)
        integer("query_dim", 1, none_ok=True)
        integer("n_threads", 1, none_ok=True)
        rs = self.random_state
        if rs is not None and (
            isinstance(rs, bool) or not isinstance(rs, numbers.Integral) or int(rs) < 0
        ):
            raise ValueError(f"random_state must be a non-negative integer or None, got {rs!r}")

    # ------------------------------------------------------------------ fit
    def fit(
        self, X: ArrayLike, y: ArrayLike, *, qid: ArrayLike, eval_set: EvalSet | None = None
    ) -> LGMMLRanker:
        self._validate_params()
        X, y, qid = check_ranking_input(X, y, qid)
        if X.shape[0] == 0:
            raise ValueError("cannot fit on an empty training set (X has 0 rows)")
        Xq, Xd = split_query_document(X, self.query_dim)
        dtype = np.float32 if self.dtype == "float32" else np.float64
        bounds = query_boundaries(qid)
        rng = np.random.default_rng(self.random_state)
        with thread_limit(None if self.n_threads is None else int(self.n_threads)):
            scaler = FeatureScaler.fit(Xd, self.scaling)

            def rows(idx: np.ndarray) -> np.ndarray:
                return scaler.transform(Xd[idx])

            def query_points(qi: int) -> np.ndarray:
                assert Xq is not None  # passed only on query-by-example data
                return np.asarray(scaler.transform(Xq[bounds[qi] : bounds[qi] + 1])[0])

            sets = QuerySets(y, bounds, self.highly_relevant, self.negatives)
            n_iter = (100 * sets.n_queries) if self.n_iter is None else int(self.n_iter)
            needs_warp = self.weight_strategy != "uniform" and n_iter > 0
            total = self.n_metrics + (n_iter if needs_warp else 0)

            metrics, anchors, ndcgs = fit_local_metrics(
                rng=rng,
                y=y,
                sets=sets,
                rows=rows,
                query_points=query_points if Xq is not None else None,
                n_metrics=self.n_metrics,
                queries_per_metric=self.queries_per_metric,
                max_positives=self.max_positives,
                max_negatives=self.max_negatives,
                reg_lambda=float(self.reg_lambda),
                t=float(self.t),
                distance=self.distance,
                anchor_k=self.anchor_k,
                reg_scale=self.reg_scale,
                progress=lambda d, tot: report_progress(d, total, "local metrics"),
                n_threads=self.n_threads,
            )
            score_form = self.score_form
            if score_form == "auto":
                score_form = "rising" if Xq is not None else "positive"
            bank = MetricBank.from_metrics(metrics, anchors, score_form, max_rank=self.max_rank)
            self.metric_bank_ = bank
            self.scaler_ = scaler
            if score_form == "rising":
                sample = np.sort(
                    rng.choice(X.shape[0], size=min(X.shape[0], 20_000), replace=False)
                )
                Xs = scaler.transform(Xd[sample])
                Qs = scaler.transform(Xq[sample]) if Xq is not None else None
                bank.fit_dist_scale(Xs, Qs, float(self.distance_quantile), dtype=dtype)

            def features(idx: np.ndarray) -> np.ndarray:
                out = np.empty((idx.size, bank.n_metrics))
                step = self._chunk_rows(bank)
                for a in range(0, idx.size, step):
                    part = idx[a : a + step]
                    Q = scaler.transform(Xq[part]) if Xq is not None else None
                    out[a : a + step] = bank.features(scaler.transform(Xd[part]), Q, dtype=dtype)
                return out

            query_weights = None
            self.listnet_info_ = None
            if needs_warp and self.weight_method == "listnet":
                # ListNet's loss and gradient are sums over every training row
                # (target @ logsoft, H.T @ r): multi-threaded BLAS splits those sums by thread
                # count, which changed Phi in the last bits between n_threads=1 and 2 (200k
                # rows, m = 50). One BLAS thread keeps the model bit-identical for every
                # n_threads, and cost nothing there (whole fit with n_threads=2: 2.4 s with
                # two BLAS threads in ListNet, 1.5 s with one; one run each, shared 2 cores).
                with thread_limit(1):
                    weights, self.listnet_info_ = train_listnet(
                        rng=rng,
                        y=y,
                        bounds=bounds,
                        features=features,
                        n_metrics=bank.n_metrics,
                        initial_weight=float(self.initial_weight),
                        sign=bank.sign,
                        cache_bytes=int(self.memory_mb) << 20,
                    )
            elif needs_warp:
                mode = "global" if self.weight_strategy == "global" else "per_query"
                phi = train_warp(
                    rng=rng,
                    sets=sets,
                    features=features,
                    n_metrics=bank.n_metrics,
                    n_iter=n_iter,
                    mode=mode,
                    initial_weight=float(self.initial_weight),
                    step_size=self.step_size,
                    margin=float(self.margin),
                    sign=bank.sign,
                    cache_bytes=int(self.memory_mb) << 20,
                    progress=lambda d, tot: report_progress(self.n_metrics + d, total, "WARP"),
                )
                if mode == "global":
                    weights = phi
                else:
                    query_weights = phi
                    used = sets.eligible if sets.eligible.size else np.arange(sets.n_queries)
                    weights = phi[used].mean(axis=0)
            else:
                weights = np.full(bank.n_metrics, 1.0)
        weights = np.asarray(weights, dtype=np.float64)
        # WARP's projection onto >= 0 can zero every weight (seen on gauss-100 with m = 100):
        # the score would then be constant, so fall back to the authors' uniform weights and
        # say so instead of silently ranking at random.
        self.warp_collapsed_ = bool(needs_warp and not np.any(weights > 0))
        if self.warp_collapsed_:
            warnings.warn(
                "LGMMLRanker: WARP drove every weight to 0 (a constant scorer); using uniform "
                "weights (initial_weight) instead. Try a smaller step_size or margin, another "
                "random_state, or weight_strategy='uniform'.",
                RuntimeWarning,
                stacklevel=2,
            )
            weights = np.full(bank.n_metrics, float(self.initial_weight))
        self.score_form_ = score_form
        self.anchor_ndcg_ = ndcgs
        self.weights_ = weights
        self.query_weights_ = query_weights
        self.n_iter_ = n_iter if needs_warp else 0
        self.n_features_in_ = X.shape[1]
        self.metric_eig_ratio_, self.metric_reg_lambda_ = metric_spectra(metrics, self.distance)
        self.diagnostics_ = validation_diagnostics(self, eval_set, X, bounds)
        return self

    def fitted_info(self) -> dict[str, int | float | str]:
        """Size and diagnostics of the fitted model (JSON scalars; NaN/inf left out), every
        key defined in :mod:`ltr_bench_lgmml.diagnostics`: the model summary (``n_metrics``,
        ``total_rank``, ``metric_eig_ratio_median``, ``reg_lambda_abs_median``, the options
        used, ``n_nonzero_weights``, ``warp_collapsed``, ...), ``top_anchor_r2`` /
        ``top5_anchor_r2`` (on the first ~20k documents of the validation split when ``fit``
        had ``eval_set``, else of the training split) and, with ``eval_set`` only,
        ``vali_ndcg10`` and its label-free and uniform-weight references (``vali_*``)."""
        self._check_fitted("metric_bank_", "weights_")
        info = model_summary(self)
        info.update(getattr(self, "diagnostics_", {}) or {})
        return {k: v for k, v in info.items() if not (isinstance(v, float) and not np.isfinite(v))}

    def _chunk_rows(self, bank: MetricBank) -> int:
        return int(max(64, _CHUNK_BYTES // bank.bytes_per_row()))

    # ------------------------------------------------------------------ predict

    def _score_rows(
        self, X: ArrayLike, qid: ArrayLike | None, out: np.ndarray, reduce: Reduce
    ) -> np.ndarray:
        """``out[rows] = reduce(h(p) of rows)`` (:func:`~.scoring.score_rows`)."""
        self._check_fitted("metric_bank_", "weights_", "scaler_")
        X, _ = predict_matrix(X, qid, n_features=self.n_features_in_)
        Xq, Xd = split_query_document(X, self.query_dim)
        bank = self.metric_bank_
        step = min(self._chunk_rows(bank), SCORE_CHUNK_ROWS)
        dtype = np.float32 if self.dtype == "float32" else np.float64
        n_workers = resolve_n_threads(self.n_threads)
        return score_rows(bank, self.scaler_, Xq, Xd, out, reduce, dtype, step, n_workers)

    def decision_features(self, X: ArrayLike) -> np.ndarray:
        """h(p) (n, m): the per-metric terms of the score, ``score = sign * h @ weights_``."""
        self._check_fitted("metric_bank_")
        out = np.empty((np.shape(X)[0], self.metric_bank_.n_metrics))
        return self._score_rows(X, None, out, lambda h: h)

    def predict(self, X: ArrayLike, *, qid: ArrayLike | None = None) -> np.ndarray:
        """Scores (n_docs,) float64, input row order; ``qid`` is accepted and not needed.
        The same numbers for any ``n_threads`` (fixed chunks, one-thread BLAS per chunk)."""
        self._check_fitted("metric_bank_", "weights_")
        w = self.metric_bank_.sign * self.weights_
        out = np.empty(np.shape(X)[0] if np.ndim(X) >= 1 else 0, dtype=np.float64)
        return self._score_rows(X, qid, out, lambda h: h @ w)

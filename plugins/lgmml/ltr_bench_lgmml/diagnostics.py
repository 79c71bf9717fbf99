"""Diagnostics of a fitted ``LGMMLRanker``: do the local metrics, anchors and weights add anything?

What :meth:`LGMMLRanker.fitted_info` reports (JSON scalars), computed here from the fitted
ranker. Conventions: the score is ``f(p) = sign * sum_r Phi_r h_r(p)`` (see
:mod:`ltr_bench_lgmml.scoring`), ``w = sign * Phi`` and ``c_r(p) = w_r h_r(p)`` its r-th term;
"within-query" means centred on the mean of the document's query. Nothing here draws random
numbers, so a model fitted with or without ``eval_set`` is the same.

Model summary (:func:`model_summary`):

- ``n_metrics`` m; ``total_rank`` K, the low-rank columns scored (sum of the metrics' ranks);
  ``mean_rank`` = K / m;
- ``metric_eig_ratio_median`` / ``_max``: for each local metric, the max / min eigenvalue of
  M over all d dimensions (1 = a multiple of the identity: the metric adds nothing to the
  Euclidean distance), median / max over the m metrics. The metric is M itself: with
  ``distance="paper"`` the fitted quadratic form is Q = M^2 (delta = ||M x||), so the
  ratio of Q is square-rooted (:func:`metric_spectra`);
- ``reg_lambda_abs_median``: the absolute lambda used (it differs from ``reg_lambda`` with
  ``reg_scale="relative"``), median over the metrics;
- ``weight_method`` ("uniform" when ``weight_strategy="uniform"``: nothing was learned),
  ``weight_strategy``, ``score_form`` (the form used, after "auto"), ``scaling``,
  ``reg_scale``, ``n_nonzero_weights`` (of Phi), ``warp_collapsed``.

Score structure (:func:`score_structure`), on the first whole queries of the validation split
(of the training split without one), up to about :data:`_STRUCTURE_DOCS` documents:

- ``top_anchor_r2`` = max_r cov(f, c_r)^2 / (var(f) var(c_r)), the share of the
  within-query score variance that one local-metric term explains alone (R^2 of f on c_r);
- ``top5_anchor_r2`` = 1 - ||f - C b||^2 / ||f||^2, C the 5 largest-variance terms and b
  their least-squares coefficients: the share they explain jointly.

Both are left out when the score is constant within every query (var(f) = 0).

Validation (:func:`validation_diagnostics`, with ``eval_set`` only; never the test split):
NDCG@10 with queries without a relevant document counting 0, on the whole split:

- ``vali_ndcg10`` (the model), ``vali_ndcg10_uniform_weights`` (same metrics and anchors,
  Phi = 1), ``vali_gain_learned_over_uniform`` (their difference);
- the label-free references ``vali_ndcg10_ref_norm_far_first`` / ``_near_first``: ranking by
  ||x||^2 of the scaled features descending / ascending (in query-by-example mode
  ||x_doc - x_query||^2), the distance structure with no labels;
  ``vali_gain_over_norm_reference`` = vali_ndcg10 minus the better reference.

Memory stays bounded at any size: validation scores are computed chunk by chunk like
``predict``; only the score-structure shares hold every term h_r of a document, hence their
document cap (n x m x 8 bytes for the whole MSLR-WEB30K validation split with m = 500 would be
3 GB per copy).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ltr_bench.ranker import check_ranking_input, query_boundaries, split_query_document

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from .gmml import LowRankQuadratic
    from .scoring import MetricBank


class FittedLGMML(Protocol):
    """What the diagnostics read of a fitted ``LGMMLRanker`` (the ranker imports this module,
    so the diagnostics name the attributes they need instead of importing the ranker)."""

    metric_bank_: MetricBank
    weights_: np.ndarray
    metric_eig_ratio_: np.ndarray
    metric_reg_lambda_: np.ndarray
    score_form_: str
    warp_collapsed_: bool
    weight_method: str
    weight_strategy: str
    scaling: str
    reg_scale: str
    n_features_in_: int
    query_dim: int | None
    scaler_: Any

    def decision_features(self, X: np.ndarray) -> np.ndarray: ...
    def _feature_chunks(self, X: np.ndarray) -> tuple[int, Any]: ...
    def _chunk_rows(self, bank: MetricBank) -> int: ...
    def _score_rows(
        self,
        X: np.ndarray,
        qid: np.ndarray | None,
        out: np.ndarray,
        reduce: Callable[[np.ndarray], np.ndarray],
    ) -> np.ndarray: ...


__all__ = ["metric_spectra", "model_summary", "score_structure", "validation_diagnostics"]

#: documents (whole queries) the score-structure diagnostics look at (see score_structure)
_STRUCTURE_DOCS = 20_000


def metric_spectra(metrics: list[LowRankQuadratic], distance: str) -> tuple[np.ndarray, np.ndarray]:
    """``(eig_ratio, reg_lambda)``, both (m,): each metric's max/min eigenvalue ratio of M and
    the absolute lambda it was fitted with. ``distance="paper"`` stores Q = M^2, whose ratio
    is the square of M's; ``"mahalanobis"`` stores M itself."""
    if distance not in ("paper", "mahalanobis"):
        raise ValueError(f"distance must be one of ['paper', 'mahalanobis'], got {distance!r}")
    power = 0.5 if distance == "paper" else 1.0
    eig_ratio = np.array([q.eig_ratio() ** power for q in metrics])
    reg_lambda = np.array([q.reg_lambda for q in metrics])
    return eig_ratio, reg_lambda


def model_summary(ranker: FittedLGMML) -> dict:
    """The model-summary entries of the module docstring, from a fitted ranker (needs
    ``metric_bank_``, ``weights_``, ``metric_eig_ratio_``, ``metric_reg_lambda_``,
    ``score_form_``, ``warp_collapsed_``). Values may be NaN/inf; ``fitted_info`` drops those."""
    bank = ranker.metric_bank_
    K = int(bank.V.shape[1])
    return {
        "n_metrics": int(bank.n_metrics),
        "total_rank": K,
        "mean_rank": K / bank.n_metrics,
        "metric_eig_ratio_median": float(np.median(ranker.metric_eig_ratio_)),
        "metric_eig_ratio_max": float(np.max(ranker.metric_eig_ratio_)),
        "reg_lambda_abs_median": float(np.nanmedian(ranker.metric_reg_lambda_)),
        "weight_method": str(
            ranker.weight_method if ranker.weight_strategy != "uniform" else "uniform"
        ),
        "weight_strategy": str(ranker.weight_strategy),
        "score_form": str(ranker.score_form_),
        "scaling": str(ranker.scaling),
        "reg_scale": str(ranker.reg_scale),
        "n_nonzero_weights": int(np.count_nonzero(ranker.weights_)),
        "warp_collapsed": bool(ranker.warp_collapsed_),
    }


def score_structure(ranker: FittedLGMML, X: np.ndarray, bounds: np.ndarray) -> dict:
    """``top_anchor_r2`` and ``top5_anchor_r2`` (module docstring) of the fitted ``ranker``
    on the first whole queries of X (n, n_features), query ``bounds`` (n_queries + 1,) as
    :func:`ltr_bench.ranker.query_boundaries` returns them, up to about
    :data:`_STRUCTURE_DOCS` documents (always at least one query). Empty dict when the score
    is constant within every query looked at."""
    out: dict = {}
    last = int(np.searchsorted(bounds, _STRUCTURE_DOCS, side="right"))
    qs = bounds[: max(last, 2)]
    H = ranker.decision_features(X[: qs[-1]])
    w = ranker.metric_bank_.sign * ranker.weights_
    f = H @ w
    contrib = H * w[None, :]
    seg = np.repeat(np.arange(qs.size - 1), np.diff(qs))
    # centre on the query means: only the order within a query matters to a ranking
    fc = f - (np.add.reduceat(f, qs[:-1]) / np.diff(qs))[seg]
    cc = contrib - (np.add.reduceat(contrib, qs[:-1], axis=0) / np.diff(qs)[:, None])[seg]
    ff = float(fc @ fc)
    if ff > 0:
        var = np.einsum("ij,ij->j", cc, cc)
        cov = fc @ cc
        with np.errstate(invalid="ignore", divide="ignore"):
            r2 = np.where(var > 0, cov**2 / (var * ff), 0.0)
        out["top_anchor_r2"] = float(np.max(r2))
        top = np.argsort(-var)[:5]
        coef, *_ = np.linalg.lstsq(cc[:, top], fc, rcond=None)
        resid = fc - cc[:, top] @ coef
        out["top5_anchor_r2"] = float(1.0 - (resid @ resid) / ff)
    return out


def validation_diagnostics(
    ranker: FittedLGMML, eval_set, X_train: np.ndarray, train_bounds: np.ndarray
) -> dict:
    """Every diagnostic that depends on data (module docstring), for a fitted ``ranker``:
    the score structure on ``eval_set = (X, y, qid)`` -- or on the training rows ``X_train``
    with query bounds ``train_bounds`` when ``eval_set`` is None -- and, with ``eval_set``
    only, the validation NDCG@10 entries. ``fit`` stores the result as ``diagnostics_``."""
    from ltr_bench.evaluation.metrics import evaluate  # the metrics stack is only needed here

    if eval_set is not None:
        Xv, yv, qv = check_ranking_input(*eval_set, n_features=ranker.n_features_in_)
        qb = query_boundaries(qv)
    else:
        Xv, yv, qv, qb = X_train, None, None, train_bounds
    out = score_structure(ranker, Xv, qb)
    if yv is None:
        return out
    bank = ranker.metric_bank_
    w = bank.sign * ranker.weights_
    # One pass over h(p) for both weightings: computing h is the expensive part.
    uniform = bank.sign * np.ones_like(w)
    both = ranker._score_rows(  # the chunks, kernels and threads of predict
        Xv, None, np.empty((len(Xv), 2)), lambda h: np.stack([h @ w, h @ uniform], axis=1)
    )
    n, f, f_uniform = len(Xv), both[:, 0], both[:, 1]
    Xvq, Xvd = split_query_document(Xv, ranker.query_dim)
    norm2 = np.empty(n)
    step = ranker._chunk_rows(bank)
    for a in range(0, n, step):
        Xs = ranker.scaler_.transform(Xvd[a : a + step])
        if Xvq is not None:  # query-by-example: Euclidean distance to the row's query
            Xs -= ranker.scaler_.transform(Xvq[a : a + step])
        norm2[a : a + step] = np.einsum("ij,ij->i", Xs, Xs)

    def ndcg(scores):
        return float(evaluate(yv, scores, qv, ("ndcg@10",), empty_query=0.0)["ndcg@10"])

    out["vali_ndcg10"] = ndcg(f)
    out["vali_ndcg10_uniform_weights"] = ndcg(f_uniform)
    out["vali_gain_learned_over_uniform"] = out["vali_ndcg10"] - out["vali_ndcg10_uniform_weights"]
    out["vali_ndcg10_ref_norm_far_first"] = ndcg(norm2)
    out["vali_ndcg10_ref_norm_near_first"] = ndcg(-norm2)
    out["vali_gain_over_norm_reference"] = out["vali_ndcg10"] - max(
        out["vali_ndcg10_ref_norm_far_first"], out["vali_ndcg10_ref_norm_near_first"]
    )
    return out

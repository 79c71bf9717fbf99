"""L-GMML's ONNX export: :meth:`LGMMLRanker.predict` as a graph of the kit's operations.

Per document ``p`` (features scaled, ``(x - shift) / scale``) and local metric ``r``
(:mod:`.scoring`)::

    iso_r  = alpha_r max(||p - a_r||^2, 0)        (query-dependent: alpha_r ||p - q||^2)
    low_r  = sum_j sign(g_j) ([p, 1] . w_j)^2     over metric r's columns w_j of the scoring
                                                  layout (sqrt|g_j| (v_j . p - v_j . a_r))
    delta_r = sqrt(max(iso_r + low_r, 0)), divided by s_r and capped at 1 for "rising"
    score   = sign * sum_r Phi_r delta_r exp(-delta_r)

The low-rank product and the per-metric signed sum (one product with a (columns x metrics)
matrix of the columns' signs) run in the ranker's ``dtype`` (float32 by default, as
``predict`` does), everything else in double. Memory: a call holds ``N x K`` numbers of
that dtype (``K`` the columns of all metrics, thousands at the defaults), where ``predict``
works in blocks of 4,096 rows: give the graph blocks of rows (a query, a page of results),
not a whole test split at once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["export_lgmml"]


def _column_signs(bank, dtype) -> np.ndarray:
    """(K', m): +-1 where column j of the scoring layout ``W`` belongs to metric r."""
    W, run_starts, run_sign, metric_runs, _aa, padded = bank._prepared(dtype)
    m = bank.n_metrics
    S = np.zeros((W.shape[1], m))
    if padded:
        for r in range(m):
            S[r * padded : (r + 1) * padded, r] = run_sign[r]
        return S
    cols = np.arange(W.shape[1])
    run = np.searchsorted(run_starts, cols, side="right") - 1
    metric = np.searchsorted(metric_runs, run, side="right") - 1
    S[cols, metric] = np.asarray(run_sign, np.float64)[run] if run_sign.size else 1.0
    return S


def export_lgmml(ranker: Any, kit: Any) -> Any:
    """The ``onnx.ModelProto`` of the fitted L-GMML ``ranker`` (see the module)."""
    bank = ranker.metric_bank_
    dtype = np.float32 if ranker.dtype == "float32" else np.float64
    W, *_rest, aa, _padded = bank._prepared(dtype)
    g = kit.Graph(ranker.n_features_in_)
    x = g.input
    q = None
    if ranker.query_dim is not None:
        q, x = kit.query_document_split(g, x, ranker.query_dim)
        q = kit.standardise(g, q, ranker.scaler_.shift, ranker.scaler_.scale)
    p = kit.standardise(g, x, ranker.scaler_.shift, ranker.scaler_.scale)
    alpha = g.const(bank.alpha[None, :], "alpha")
    if bank.anchors is None:
        if q is None:
            raise kit.ExportRefused("query-dependent L-GMML needs query-by-example rows")
        p = g.op("Sub", p, q)
        norm = g.op("ReduceSum", g.op("Mul", p, p), g.const([1], "axes", np.int64), keepdims=1)
        iso = g.op("Mul", norm, alpha)
    else:
        norm = g.op("ReduceSum", g.op("Mul", p, p), g.const([1], "axes", np.int64), keepdims=1)
        cross = g.op("MatMul", p, g.const(-2.0 * bank.anchors.T, "anchors"))
        iso = g.op("Add", g.op("Add", cross, norm), g.const(aa[None, :], "aa"))
        iso = g.op("Mul", g.op("Max", iso, g.const(0.0, "zero")), alpha)
    # [p, 1] @ W in the ranker's dtype, squared, then the signed sum per metric in double
    lowp = g.op("MatMul", g.cast(p, dtype), g.const(W[:-1], "W", dtype))
    lowp = g.op("Add", lowp, g.const(W[-1], "offset", dtype))
    # the signed sum per metric in the same dtype, as predict's einsum / reduceat, then double
    signs = g.const(_column_signs(bank, dtype), "signs", dtype)
    low = g.cast(g.op("MatMul", g.op("Mul", lowp, lowp), signs), np.float64)
    sq = g.op("Max", g.op("Add", iso, low), g.const(0.0, "zero"))
    delta = g.op("Sqrt", sq)
    if bank.score_form == "rising":
        delta = g.op("Div", delta, g.const(bank.dist_scale[None, :], "dist_scale"))
        delta = g.op("Min", delta, g.const(1.0, "one"))
    h = g.op("Mul", delta, g.op("Exp", g.op("Neg", delta)))
    return g.model(kit.linear(g, h, bank.sign * np.asarray(ranker.weights_, np.float64)))

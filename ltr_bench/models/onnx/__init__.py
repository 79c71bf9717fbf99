"""Exporting a kept model to ONNX, proven by ONNX Runtime (``ltr-bench export``).

The ranker-specific part is the contract's optional hook ``export_onnx(kit)``
(:class:`ltr_bench.ranker.BaseRanker`, declared as ``save_native`` is; :func:`ltr_bench.ranker.
can_export`), written beside each ranker; it receives :mod:`.kit`, the shared builders (one
per ranker family: linear scorers, threshold sums, quadratic forms, LightGBM / XGBoost /
CatBoost trees). :mod:`.export` adds the manifest's preprocessing and the metadata and writes
the file atomically; :mod:`.check` compares ONNX Runtime's scores with the native ones.
Nothing here unpickles anything; ``onnx`` and ``onnxruntime`` are imported only when used
(the ``onnx`` extra: ``pip install 'ltr-bench[onnx]'``).

Public API::

    onnx_model(loaded_model) -> onnx.ModelProto      # the graph, metadata included
    write_onnx(graph, path) -> Path                  # atomic
    onnx_session(model_bytes, threads=1)             # an ONNX Runtime session
    onnx_scores(model_or_session, X, qid, one_query=...)  # ONNX Runtime's scores
    input_contract(loaded_model) -> "rows" | "one query"
    kit                                              # what export_onnx(kit) receives
    OnnxScorer, check_export, compare_scores, ScoreComparison, ExportCheck
    compare_missing(ranker, graph_bytes, X), missing_rows(X)   # the proof on rows with NaN
    SCORE_BOUND, METRIC_TOLERANCE, ExportError
"""

from ltr_bench.models.onnx import kit
from ltr_bench.models.onnx.check import (
    METRIC_TOLERANCE,
    ExportCheck,
    OnnxScorer,
    ScoreComparison,
    check_export,
    compare_missing,
    compare_scores,
    missing_rows,
)
from ltr_bench.models.onnx.export import (
    ONE_QUERY,
    ROWS,
    SCORE_BOUND,
    ExportError,
    check_signature,
    input_contract,
    onnx_model,
    onnx_scores,
    onnx_session,
    write_onnx,
)

__all__ = [
    "METRIC_TOLERANCE",
    "ONE_QUERY",
    "ROWS",
    "SCORE_BOUND",
    "ExportCheck",
    "ExportError",
    "OnnxScorer",
    "ScoreComparison",
    "check_export",
    "check_signature",
    "compare_missing",
    "compare_scores",
    "input_contract",
    "kit",
    "missing_rows",
    "onnx_model",
    "onnx_scores",
    "onnx_session",
    "write_onnx",
]

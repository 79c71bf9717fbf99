"""The conformance check of the optional ONNX export hook (``export_onnx``), kept apart from
:mod:`.checks` because it runs ONNX Runtime (the ``onnx`` extra)."""

from __future__ import annotations

import numpy as np

from ltr_bench.testing.checks import Context


def check_export(ctx: Context) -> None:
    """When the ranker declares ``export_onnx`` (:func:`ltr_bench.ranker.can_export`): the
    fitted clone's graph has the contract's signature (``X`` double ``[N, n_features]`` ->
    ``score`` double ``[N]``), and ONNX Runtime's scores of the test rows (one query per
    call when ``requires_qid_at_predict``) equal ``predict``'s within
    ``SCORE_BOUND * max(1, |score|)``, with no pair farther apart than that ordered
    differently (:func:`ltr_bench.models.onnx.compare_scores`). A ranker whose fitted model
    has ``missing_scores`` (the library's scores of rows with NaN) is also compared on test
    rows with NaN (:func:`ltr_bench.models.onnx.compare_missing`)."""
    import importlib.util

    missing = [m for m in ("onnx", "onnxruntime") if importlib.util.find_spec(m) is None]
    assert not missing, (
        f"the ranker declares export_onnx(), but {' and '.join(missing)} is not installed "
        "to check it: pip install 'ltr-bench[onnx]'"
    )
    import ltr_bench.models.onnx as api

    fitted = ctx.fitted()
    n = int(ctx.X.shape[1])
    graph = fitted.export_onnx(api.kit)
    api.check_signature(graph, type(fitted).__name__, n)
    X, qid = ctx.X_test, ctx.qid_test
    native = np.asarray(fitted.predict(X, qid=qid), dtype=np.float64)
    one_query = bool(ctx.tags.requires_qid_at_predict)
    scores = api.onnx_scores(graph.SerializeToString(), X, qid, one_query=one_query)
    result = api.compare_scores(native, scores, qid, api.SCORE_BOUND)
    assert result.holds, f"ONNX Runtime's scores differ from predict's: {result.text()}"
    if not one_query:
        nan_check = api.compare_missing(fitted, graph.SerializeToString(), X)
        assert nan_check is None or nan_check.holds, (
            f"on rows with NaN, ONNX Runtime's scores differ from the library's: {nan_check.text()}"
        )

"""A kept model as one ONNX file: the ranker's graph, the manifest's preprocessing, metadata.

The file's graph (opsets in :mod:`.graph`)::

    input  "X"      tensor(double) [N, n_features]   raw features, as in the data file
    output "score"  tensor(double) [N]               higher = more relevant, row order

Input contract (metadata ``ltr_bench.input``):

* ``"rows"``: any rows, of any queries, in any number: each row's score depends on the row
  alone (every ranker without ``query_norm`` whose tags do not say
  ``requires_qid_at_predict``).
* ``"one query"``: ``X`` holds the rows of ONE query (all of them, in any order) per call:
  the model was fitted on ``query_norm`` features (each query's features min-max scaled,
  LETOR ``QueryLevelNorm``, :func:`ltr_bench.data.normalise.query_level_norm`: the graph does
  it, over the rows it is given) or its scores depend on the other documents of the list
  (``neural``'s ``transformer``: self-attention).

Metadata (``metadata_props``, strings): ``ltr_bench.ranker`` (registered name),
``ltr_bench.ranker_distribution`` and ``ltr_bench.ranker_version`` (who registers the ranker,
at saving), ``ltr_bench.version`` (the exporting ltr-bench), ``ltr_bench.n_features``,
``ltr_bench.data_fingerprint`` (JSON: the fold the model was fitted on, or ``null``),
``ltr_bench.preprocessing`` (JSON: the manifest's), ``ltr_bench.input`` (above),
``ltr_bench.score_bound`` (:data:`SCORE_BOUND`, what ``ltr-bench export --check`` and the
tests prove), ``ltr_bench.created`` (the model's saving time) and ``ltr_bench.nan`` (what the
graph does with NaN in ``X``: the tree ensembles follow their library, e.g.
:data:`~ltr_bench.models.onnx.kit.NAN_LIGHTGBM`; :data:`NAN_UNDEFINED` otherwise).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ltr_bench.errors import LtrBenchError
from ltr_bench.ranker import can_export, tags_of

__all__ = [
    "ONE_QUERY",
    "ROWS",
    "SCORE_BOUND",
    "ExportError",
    "check_signature",
    "input_contract",
    "onnx_model",
    "onnx_scores",
    "onnx_session",
    "query_norm",
    "write_onnx",
]

#: ONNX Runtime's score of a row may differ from the native one by at most
#: ``SCORE_BOUND * max(1, |native score|)``
SCORE_BOUND = 1e-5
ROWS, ONE_QUERY = "rows", "one query"
#: metadata ``ltr_bench.nan`` of a graph whose builders follow no library's rule for NaN
NAN_UNDEFINED = (
    "not defined: NaN enters the arithmetic as any value does (a linear score becomes NaN); "
    "ltr-bench predict refuses rows with NaN"
)


class ExportError(LtrBenchError):
    """A model cannot be exported (its ranker has no export, its converter refuses the
    fitted model, or ONNX is not installed); ``str(err)`` says why. Exit code 1."""


def input_contract(model) -> str:
    """``"one query"`` or ``"rows"`` for the :class:`~ltr_bench.models.LoadedModel` (see the
    module): one query per call when the graph normalises per query or the ranker needs the
    list (its tags' ``requires_qid_at_predict``)."""
    if model.preprocessing["query_norm"] or tags_of(model.ranker).requires_qid_at_predict:
        return ONE_QUERY
    return ROWS


def _require_onnx() -> None:
    import importlib.util

    missing = [m for m in ("onnx", "onnxruntime") if importlib.util.find_spec(m) is None]
    if missing:
        raise ExportError(
            f"exporting to ONNX needs {' and '.join(missing)}, which is not installed: "
            "pip install 'ltr-bench[onnx]'"
        )


def query_norm(g, x: str, opset: int) -> str:
    """LETOR ``QueryLevelNorm`` over the rows of ``x`` (one query):
    ``(x - min) / (max - min)`` per column, 0 where the column is constant; the operations
    of :func:`ltr_bench.data.normalise.query_level_norm`, in double. ``opset``: the default
    domain's version of the finished graph (ReduceMin's axes became an input in 18)."""
    if opset >= 18:
        axes = g.const([0], "axes", np.int64)
        lo = g.op("ReduceMin", x, axes, keepdims=1)
        hi = g.op("ReduceMax", x, axes, keepdims=1)
    else:
        lo = g.op("ReduceMin", x, axes=[0], keepdims=1)
        hi = g.op("ReduceMax", x, axes=[0], keepdims=1)
    span = g.op("Sub", hi, lo)
    ratio = g.op("Div", g.op("Sub", x, lo), span)
    varies = g.op("Greater", span, g.const(0.0, "zero"))
    return g.op("Where", varies, ratio, g.const(0.0, "zero"))


def onnx_model(model) -> Any:
    """The ``onnx.ModelProto`` of the :class:`~ltr_bench.models.LoadedModel` ``model``: the
    ranker's ``export_onnx`` graph behind the manifest's preprocessing, with the metadata of
    the module docstring. Raises :class:`ExportError` naming the ranker and the reason."""
    _require_onnx()
    from ltr_bench.models.onnx import kit
    from ltr_bench.models.onnx.graph import INPUT, NAN_KEY, OPSET, Graph

    name = model.manifest["ranker"]
    ranker = model.ranker
    if not can_export(ranker):
        raise ExportError(
            f"the {name!r} model cannot be exported to ONNX: its ranker "
            f"({type(ranker).__name__}) does not implement export_onnx() (the plugin guide, "
            "'Export to ONNX', says how a plugin adds it)"
        )
    try:
        graph = ranker.export_onnx(kit)
    except ImportError as exc:  # a converter's library (onnxmltools, onnxscript) is missing
        why = (
            str(exc)
            if exc.name is None
            else (f"{exc.name} is not installed: pip install 'ltr-bench[onnx]'")
        )
        raise ExportError(f"the {name!r} model cannot be exported to ONNX: {why}") from None
    except (kit.ExportRefused, NotImplementedError) as exc:
        raise ExportError(f"the {name!r} model cannot be exported to ONNX: {exc}") from None
    check_signature(graph, name, model.n_features)
    nan = {p.key: p.value for p in graph.metadata_props}.get(NAN_KEY, NAN_UNDEFINED)
    n = int(graph.graph.input[0].type.tensor_type.shape.dim[1].dim_value)
    if model.preprocessing["query_norm"]:
        g = Graph(n, name=f"ltr_bench_{name}")
        opset = max(
            [OPSET] + [o.version for o in graph.opset_import if o.domain in ("", "ai.onnx")]
        )
        (score,) = g.embed(graph, {INPUT: query_norm(g, g.input, opset)})
        graph = g.model(score)
    graph.graph.name = f"ltr_bench_{name}"
    _metadata(graph, model, n, nan)
    return graph


def check_signature(graph, name: str, n_features: int | None) -> None:
    """The ranker's graph has the contract's input and output (names, types, widths)."""
    from onnx import ModelProto, TensorProto

    from ltr_bench.models.onnx.graph import INPUT, OUTPUT

    def bad(what: str) -> ExportError:
        return ExportError(f"ranker {name!r}: export_onnx() returned {what}")

    if not isinstance(graph, ModelProto):
        raise bad(f"a {type(graph).__name__}, not an onnx.ModelProto")
    ins, outs = graph.graph.input, graph.graph.output
    if [i.name for i in ins] != [INPUT] or [o.name for o in outs] != [OUTPUT]:
        raise bad(
            f"inputs {[i.name for i in ins]} and outputs {[o.name for o in outs]}; "
            f"expected [{INPUT!r}] and [{OUTPUT!r}]"
        )
    t_in, t_out = ins[0].type.tensor_type, outs[0].type.tensor_type
    if t_in.elem_type != TensorProto.DOUBLE or t_out.elem_type != TensorProto.DOUBLE:
        raise bad("an input or output that is not tensor(double)")
    dims = t_in.shape.dim
    if len(dims) != 2 or (n_features is not None and dims[1].dim_value != n_features):
        raise bad(
            f"an input of shape {[d.dim_value or d.dim_param for d in dims]}, not [N, {n_features}]"
        )


def _metadata(graph, model, n_features: int, nan: str) -> None:
    from onnx import helper

    from ltr_bench.models.onnx.graph import NAN_KEY
    from ltr_bench.registry import installed_version

    m = model.manifest
    props = {
        "ltr_bench.ranker": m["ranker"],
        "ltr_bench.ranker_distribution": str(m.get("distribution", "")),
        "ltr_bench.ranker_version": str(m.get("distribution_version", "")),
        "ltr_bench.version": installed_version("ltr-bench") or "?",
        "ltr_bench.n_features": str(n_features),
        "ltr_bench.data_fingerprint": json.dumps(m.get("data_fingerprint"), sort_keys=True),
        "ltr_bench.preprocessing": json.dumps(m["preprocessing"], sort_keys=True),
        "ltr_bench.input": input_contract(model),
        "ltr_bench.score_bound": repr(SCORE_BOUND),
        "ltr_bench.created": str(m.get("created", "")),
        NAN_KEY: nan,
    }
    helper.set_model_props(graph, props)
    graph.producer_name = "ltr-bench"
    graph.producer_version = props["ltr_bench.version"]
    graph.doc_string = (
        f"ltr-bench {m['ranker']} ranker: input X double [N, {n_features}] "
        f"({props['ltr_bench.input']} per call), output score double [N]"
    )


def write_onnx(graph, output) -> Path:
    """Write ``graph`` to ``output`` atomically (temporary sibling, fsync, rename), removing
    the temporary files a killed export of the same file left (:func:`.write.write_locked`);
    returns the path. ``OSError`` as is."""
    from ltr_bench.models.onnx.write import write_locked

    return write_locked(Path(output), graph.SerializeToString())


def onnx_session(model_bytes: bytes, threads: int = 1):
    """An ONNX Runtime session (CPU) of the exported model ``model_bytes`` with ``threads``
    intra-op threads."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = int(threads)
    options.inter_op_num_threads = 1
    return ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])


def onnx_scores(model, X, qid=None, *, one_query: bool, threads: int = 1) -> np.ndarray:
    """ONNX Runtime's scores (float64, row order) of the rows ``X`` with ``model`` (the
    exported file's bytes, or a session from :func:`onnx_session`); ``one_query``: call it
    once per query block of ``qid`` (the input contract ``"one query"``), else once for all
    rows. ``threads``: ONNX Runtime's intra-op threads (when ``model`` is bytes)."""
    from ltr_bench.ranker import query_boundaries

    session = onnx_session(model, threads) if isinstance(model, bytes) else model
    X = np.ascontiguousarray(X, dtype=np.float64)
    if not one_query:
        return np.asarray(session.run(None, {"X": X})[0], dtype=np.float64)
    if qid is None:
        raise ValueError("a model whose input is one query per call needs qid")
    bounds = query_boundaries(np.asarray(qid))
    out = np.empty(X.shape[0], dtype=np.float64)
    for a, b in zip(bounds[:-1], bounds[1:]):
        out[a:b] = session.run(None, {"X": X[a:b]})[0]
    return out

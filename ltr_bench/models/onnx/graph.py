"""An ONNX scoring graph under construction: :class:`Graph`.

Every exported ranker's graph has one signature (the contract's ``export_onnx``): input
``"X"``, ``tensor(double)`` of shape ``[N, n_features]``, and output ``"score"``,
``tensor(double)`` of shape ``[N]``. ``Graph`` holds the nodes and constants added so far,
gives every tensor a unique name, can take in a graph made by a converter
(:meth:`Graph.embed`: onnxmltools, CatBoost's own export, ``torch.onnx``) and ends in
:meth:`Graph.model`, which reshapes and casts the score tensor to that output.

Opsets: the default domain at :data:`OPSET` and ``ai.onnx.ml`` at :data:`ML_OPSET` (the
tree ensembles' version with double thresholds), or higher when an embedded graph needs it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["ML_OPSET", "NAN_KEY", "OPSET", "Graph"]

#: the default domain's opset of the graphs built here (ONNX Runtime 1.14 and later run it)
OPSET = 17
#: ``ai.onnx.ml``'s: version 3 gives ``TreeEnsembleRegressor`` double thresholds and leaves
ML_OPSET = 3
#: the graph's input and output names (the contract's ``export_onnx``)
INPUT, OUTPUT = "X", "score"
#: the metadata key saying what the graph does with NaN (:attr:`Graph.nan`)
NAN_KEY = "ltr_bench.nan"


class Graph:
    """Nodes and constants of a graph from ``"X"`` (double ``[N, n_features]``) to a score.

    ``op(op_type, *inputs, **attributes)`` adds a node and returns its output's name;
    ``const(array)`` adds a constant (float64 unless ``dtype`` says otherwise). Names are
    made unique from the hints given."""

    def __init__(self, n_features: int, *, name: str = "ltr_bench_ranker") -> None:
        self.n_features = int(n_features)
        self.name = name
        self.input = INPUT
        self._nodes: list[Any] = []
        self._inits: list[Any] = []
        self._used = {INPUT, OUTPUT}
        self.opsets = {"": OPSET, "ai.onnx.ml": ML_OPSET}
        self.ir_version = 9  # what ONNX Runtime 1.15 and later read
        #: what the graph does with NaN in ``X``, when a builder follows a library's rule
        #: (the tree ensembles): the finished model's metadata ``ltr_bench.nan``
        self.nan: str | None = None

    # ------------------------------------------------------------------ building blocks
    def unique(self, hint: str) -> str:
        """A tensor or node name not used yet, made from ``hint``."""
        base = "".join(c if c.isalnum() or c in "_." else "_" for c in hint) or "t"
        name, k = base, 1
        while name in self._used:
            k += 1
            name = f"{base}_{k}"
        self._used.add(name)
        return name

    def const(self, value, hint: str = "const", dtype=np.float64) -> str:
        """A constant tensor holding ``value`` (as an array of ``dtype``)."""
        from onnx import numpy_helper

        name = self.unique(hint)
        self._inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(
        self, op_type: str, *inputs: str, domain: str = "", out: str | None = None, **attrs
    ) -> str:
        """Add node ``op_type(*inputs)`` with ``attrs``; returns its (single) output's name
        (``out`` if given, else a new one)."""
        from onnx import helper

        output = out if out is not None else self.unique(op_type.lower())
        node = helper.make_node(
            op_type,
            list(inputs),
            [output],
            name=self.unique(f"n_{op_type}"),
            domain=domain,
            **attrs,
        )
        self._nodes.append(node)
        return output

    def cast(self, x: str, dtype) -> str:
        """``x`` cast to ``dtype`` (``np.float32`` or ``np.float64``)."""
        from onnx import TensorProto

        to = TensorProto.FLOAT if np.dtype(dtype) == np.float32 else TensorProto.DOUBLE
        return self.op("Cast", x, to=to)

    def columns(self, x: str, index) -> str:
        """The columns ``index`` (int sequence) of the 2-D tensor ``x``."""
        return self.op("Gather", x, self.const(index, "columns", np.int64), axis=1)

    def column_range(self, x: str, start: int, stop: int) -> str:
        """Columns ``start:stop`` of the 2-D tensor ``x``."""
        return self.op(
            "Slice",
            x,
            self.const([start], "start", np.int64),
            self.const([stop], "stop", np.int64),
            self.const([1], "axis", np.int64),
        )

    def row_sum(self, x: str) -> str:
        """The sum over axis 1 of ``x`` ``[N, k]``: ``[N]``."""
        return self.op("ReduceSum", x, self.const([1], "axes", np.int64), keepdims=0)

    # ------------------------------------------------------------------ other graphs
    def embed(self, model, feeds: dict[str, str]) -> list[str]:
        """Take in the graph of ``model`` (an ``onnx.ModelProto`` made by a converter): its
        inputs are fed by the tensors ``feeds`` names (``{its input: our tensor}``), its
        names are prefixed so that they cannot clash. Returns our names of its outputs."""
        from onnx import compose

        prefix = self.unique("sub") + "_"
        model = compose.add_prefix(model, prefix)
        graph = model.graph
        renames = {}
        for inp in graph.input:
            original = inp.name[len(prefix) :]
            if original not in feeds:
                raise ValueError(f"embedded graph input {original!r} is not fed")
            renames[inp.name] = feeds[original]
        for node in graph.node:
            node.input[:] = [renames.get(i, i) for i in node.input]
            self._nodes.append(node)
            self._used.update(node.output)
        for init in graph.initializer:
            self._inits.append(init)
            self._used.add(init.name)
        self.ir_version = max(self.ir_version, model.ir_version)
        for opset in model.opset_import:
            domain = opset.domain or ""
            self.opsets[domain] = max(self.opsets.get(domain, 0), opset.version)
        return [o.name for o in graph.output]

    # ------------------------------------------------------------------ the end
    def model(self, score: str, *, doc: str = "") -> Any:
        """The finished ``onnx.ModelProto``: ``score`` reshaped to ``[N]`` and cast to double
        as the output ``"score"``; checked by ``onnx.checker`` (full check, shapes inferred)."""
        import onnx
        from onnx import TensorProto, helper

        flat = self.op("Reshape", score, self.const([-1], "flat", np.int64))
        self.op("Cast", flat, to=TensorProto.DOUBLE, out=OUTPUT)
        graph = helper.make_graph(
            self._nodes,
            self.name,
            [helper.make_tensor_value_info(INPUT, TensorProto.DOUBLE, ["N", self.n_features])],
            [helper.make_tensor_value_info(OUTPUT, TensorProto.DOUBLE, ["N"])],
            initializer=self._inits,
            doc_string=doc,
        )
        opsets = [helper.make_opsetid(d, v) for d, v in sorted(self.opsets.items())]
        model = helper.make_model(graph, opset_imports=opsets, producer_name="ltr-bench")
        # the oldest IR version that holds every part (helper's default may be newer)
        model.ir_version = self.ir_version
        if self.nan is not None:
            helper.set_model_props(model, {NAN_KEY: self.nan})
        onnx.checker.check_model(model, full_check=True)
        return model

"""``neural``'s ONNX export: the scorer with the feature transform and the standardisation in
front, through ``torch.onnx.export``.

Two exporters, each where it is right (both checked by the tests on lists of other lengths
than the example's):

* per-document scorers (``linear``, ``quadratic``, ``bilinear``, ``distance``, ``mlp``): the
  TorchScript exporter (``dynamo=False``; about 0.2 s). It is deprecated in torch 2.13 (the
  plugin pins torch), but the graphs it makes of these modules take any number of rows.
* listwise scorers (``transformer``): the ``torch.export``-based exporter (``dynamo=True``,
  which needs ``onnxscript``: the ``onnx`` extra of ltr-bench-neural; several seconds). The
  TorchScript one records the list length of its example in attention's reshapes
  (``nn.MultiheadAttention``): a graph traced on 5 documents fails on 3, or, with a padding
  mask, does not export at all.

The graph is :meth:`NeuralRanker.predict` for one list: ``transform(X)`` (``log1p``:
``sign(x) log(1 + |x|)``), ``(. - feature_mean_) / feature_scale_``, the scorer on the rows as
one list (all documents real), the sum over a multi-output's last axis; in the model's
dtype (float64 after ``fit``). Per-document scorers score any rows; a listwise scorer must
get one query's rows per call, which its tags say (``requires_qid_at_predict``).
"""

from __future__ import annotations

import copy
import logging
import warnings
from typing import Any

import numpy as np

__all__ = ["export_neural"]


def export_neural(ranker: Any, n_features: int) -> Any:
    """The ``onnx.ModelProto`` of the fitted ``ranker`` (input ``X`` double ``[N,
    n_features]``, output ``score`` double ``[N]``), by the exporter its scorer needs (see
    the module)."""
    import importlib.util

    from ltr_bench_neural.scorers import SCORERS

    work = getattr(ranker, "effective_", None) or ranker
    dynamo = SCORERS[work.scorer].listwise
    if dynamo and importlib.util.find_spec("onnxscript") is None:
        raise ImportError(
            "exporting a listwise neural scorer needs onnxscript (torch.export's ONNX exporter "
            "uses it): pip install 'ltr-bench-neural[onnx]'"
        )
    import torch

    from ltr_bench_neural.scorers._blocks import ranking_scores

    model = copy.deepcopy(ranker.model_).to("cpu").eval()
    param = next(model.parameters(), None)
    dtype = param.dtype if param is not None else torch.float64
    log1p = work.feature_transform == "log1p"

    mean = torch.as_tensor(np.asarray(ranker.feature_mean_, dtype=np.float64))
    scale = torch.as_tensor(np.asarray(ranker.feature_scale_, dtype=np.float64))

    class Scoring(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scorer = model

        def forward(self, X: torch.Tensor) -> torch.Tensor:
            if log1p:
                X = torch.sign(X) * torch.log1p(torch.abs(X))
            Xs = ((X - mean) / scale).to(dtype)[None]
            mask = torch.ones(Xs.shape[:2], dtype=torch.bool)
            return ranking_scores(self.scorer(Xs, mask))[0].to(torch.float64)

    example = torch.zeros((5, n_features), dtype=torch.float64)
    if not dynamo:
        import tempfile
        from pathlib import Path

        import onnx

        with tempfile.TemporaryDirectory(prefix="ltr-bench-neural-") as tmp:
            path = Path(tmp) / "scorer.onnx"
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")  # the exporter's notice of its deprecation
                torch.onnx.export(
                    Scoring().eval(),
                    (example,),
                    str(path),
                    dynamo=False,
                    input_names=["X"],
                    output_names=["score"],
                    dynamic_axes={"X": {0: "N"}, "score": {0: "N"}},
                    opset_version=17,
                )
            return onnx.load(str(path))
    n = torch.export.Dim("N", min=1)
    quiet = logging.getLogger("torch.onnx")  # its notes on optional torchvision operators
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # the exporter's notes on its own internals
            program = torch.onnx.export(
                Scoring().eval(),
                (example,),
                dynamo=True,
                input_names=["X"],
                output_names=["score"],
                dynamic_shapes=({0: n},),
                verbose=False,
                optimize=False,
            )
    finally:
        quiet.setLevel(level)
    assert program is not None  # dynamo=True always returns the program
    return program.model_proto

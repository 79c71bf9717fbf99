"""Why ``lightgbm_trees`` builds LightGBM's graph itself: onnxmltools' LightGBM converter
(thresholds stored as float32) against LightGBM, with float32 and with double inputs.

    python benchmarks/probe_onnxmltools_lightgbm.py [--dataset lightgbm-example] [--trees 200]

A ``lambdarank`` booster (31 leaves) fitted on fold 1's training split, relabelled as
regression (a ranking score is the raw sum of the trees) and converted by onnxmltools; its
scores of the test split by ONNX Runtime are compared with LightGBM's: the largest
``|onnx - native| / max(1, |native|)`` and the documents that change place, for float32
inputs and for double inputs; then the same for ltr-bench's own export.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="lightgbm-example")
    parser.add_argument("--trees", type=int, default=200)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    import lightgbm as lgb
    import onnxmltools
    import onnxruntime as ort
    from onnxmltools.convert.common.data_types import DoubleTensorType, FloatTensorType

    from ltr_bench.data import load_fold
    from ltr_bench.models.onnx import SCORE_BOUND, compare_scores, kit, onnx_scores
    from ltr_bench.registry import make_ranker

    fold = load_fold(args.dataset, 1, seed=0)
    tr, te = fold.train, fold.test
    params = {"n_estimators": args.trees, "early_stopping_rounds": None, "n_jobs": 1}
    ranker = make_ranker("lightgbm", params).fit(tr.X, tr.y, qid=tr.qid)
    native = ranker.predict(te.X)
    text = ranker.booster_.model_to_string().replace("objective=lambdarank", "objective=regression")
    booster = lgb.Booster(model_str=text)
    n = tr.X.shape[1]
    print(
        f"{args.dataset} fold 1: {args.trees} trees, test {te.X.shape[0]} rows; onnxmltools "
        f"{onnxmltools.__version__}, onnxruntime {ort.__version__}"
    )
    for label, kind, dtype in (
        ("float32", FloatTensorType, np.float32),
        ("double", DoubleTensorType, np.float64),
    ):
        model = onnxmltools.convert_lightgbm(
            booster, initial_types=[("X", kind([None, n]))], target_opset=15, zipmap=False
        )
        session = ort.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        scores = session.run(None, {"X": te.X.astype(dtype)})[0].ravel()
        result = compare_scores(native, scores, te.qid, SCORE_BOUND)
        print(f"onnxmltools, {label} inputs: {result.text()}")
    own = onnx_scores(ranker.export_onnx(kit).SerializeToString(), te.X, one_query=False)
    print(f"ltr-bench export: {compare_scores(native, own, te.qid, SCORE_BOUND).text()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

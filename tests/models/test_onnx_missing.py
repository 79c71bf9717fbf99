"""Exported tree ensembles score missing values (NaN) as their library does.

LightGBM decides per split (``missing_type`` None / Zero / NaN and ``default_left``): a
model trained without NaN scores NaN as 0, one trained with NaN sends it to the learned
default branch, one with ``zero_as_missing`` treats 0 and NaN alike. XGBoost and CatBoost
graphs are checked against their libraries too; the export proof (``check_export``) and the
graph's metadata (``ltr_bench.nan``) say so.
"""

from __future__ import annotations

import numpy as np
import pytest
from ltrb_model_params import SPEED

from ltr_bench.models import load_model, save_model
from ltr_bench.models.onnx import (
    OnnxScorer,
    check_export,
    compare_missing,
    kit,
    missing_rows,
    onnx_model,
    onnx_scores,
)
from ltr_bench.models.onnx.export import NAN_UNDEFINED
from ltr_bench.models.predict import DataSpec
from ltr_bench.registry import make_ranker
from ltr_bench.testing.data import make_check_data

pytest.importorskip("onnxruntime")
lgb = pytest.importorskip("lightgbm")

N_FEATURES = 6


def _train_lightgbm(with_nan: bool, **params):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, N_FEATURES))
    X[rng.random(X.shape) < 0.3] = 0.0
    y = X[:, 0] + X[:, 1] * X[:, 2] + np.where(X[:, 3] == 0, 1.0, 0.0)
    if with_nan:
        X[rng.random(X.shape) < 0.25] = np.nan
    params = {"objective": "regression", "verbose": -1, "num_leaves": 15, **params}
    return lgb.train(params, lgb.Dataset(X, y), num_boost_round=30)


def _rows_with_missing(seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, N_FEATURES))
    X[rng.random(X.shape) < 0.2] = 0.0
    X[rng.random(X.shape) < 0.25] = np.nan
    X[:3] = np.nan  # whole rows missing
    X[3:6] = 0.0
    X[6, :] = 1e-36  # in LightGBM's zero band
    return X


@pytest.mark.parametrize(
    ("with_nan", "params", "missing_type"),
    [
        (False, {}, "None"),
        (True, {}, "NaN"),
        (False, {"zero_as_missing": True}, "Zero"),
    ],
    ids=["trained-without-nan", "trained-with-nan", "zero-as-missing"],
)
def test_lightgbm_graph_scores_nan_as_lightgbm_does(with_nan, params, missing_type):
    booster = _train_lightgbm(with_nan, **params)
    dump = booster.dump_model()
    kinds = set()
    stack = [t["tree_structure"] for t in dump["tree_info"]]
    while stack:
        node = stack.pop()
        if "split_feature" in node:
            kinds.add(node["missing_type"])
            stack += [node["left_child"], node["right_child"]]
    assert missing_type in kinds  # the case this test is about is in the model
    g = kit.Graph(N_FEATURES)
    graph = g.model(kit.lightgbm_trees(g, g.input, booster, None))
    X = _rows_with_missing()
    native = booster.predict(X, raw_score=True)
    ort = onnx_scores(graph.SerializeToString(), X, one_query=False)
    # NaN is 0 to LightGBM without NaN in training or with zeros as missing; else its own
    assert (native[0] == native[3]) == (missing_type != "NaN")
    np.testing.assert_allclose(ort, native, rtol=0, atol=1e-6)
    meta = {p.key: p.value for p in graph.metadata_props}
    assert meta["ltr_bench.nan"] == kit.NAN_LIGHTGBM


TREES = ["lightgbm", "xgboost-gbrt", "xgboost-lambdamart", "catboost"]


@pytest.mark.parametrize("name", TREES)
def test_every_tree_ranker_graph_agrees_with_its_library_on_nan(tmp_path, name):
    X, y, qid = make_check_data(0, n_queries=25, n_features=N_FEATURES, max_docs=25)
    ranker = make_ranker(name, dict(SPEED.get(name, {}))).fit(X, y, qid=qid)
    model = load_model(save_model(ranker, tmp_path / "m", ranker_name=name))
    graph = onnx_model(model)
    X_test, _, _ = make_check_data(1, n_queries=25, n_features=N_FEATURES, max_docs=25)
    result = compare_missing(model.ranker, graph.SerializeToString(), X_test)
    assert result is not None and result.holds, result
    rows = missing_rows(X_test)
    assert np.isnan(rows).any(axis=0).all()  # every feature missing somewhere
    scores = model.ranker.missing_scores(rows)
    assert np.isfinite(scores).all() and np.ptp(scores) > 0
    meta = {p.key: p.value for p in graph.metadata_props}
    assert meta["ltr_bench.nan"].startswith("as ")


def test_the_export_proof_includes_rows_with_nan(tmp_path):
    X, y, qid = make_check_data(0, n_queries=25, n_features=N_FEATURES, max_docs=25)
    ranker = make_ranker("lightgbm", dict(SPEED["lightgbm"])).fit(X, y, qid=qid)
    model = load_model(save_model(ranker, tmp_path / "m", ranker_name="lightgbm"))
    data = tmp_path / "held.txt"
    X_test, y_test, qid_test = make_check_data(1, n_queries=25, n_features=N_FEATURES, max_docs=25)
    data.write_text(
        "".join(
            f"{int(t)} qid:{int(q)} " + " ".join(f"{j}:{v!r}" for j, v in enumerate(r, 1)) + "\n"
            for r, t, q in zip(X_test.tolist(), y_test, qid_test)
        )
    )
    scorer = OnnxScorer(onnx_model(model).SerializeToString(), model.manifest, model.folder, False)
    check = check_export(model, scorer, DataSpec(path=data))
    assert check.missing is not None and check.missing.n_rows > 1, check.text()
    assert check.holds and "with NaN" in check.text()


def test_a_graph_without_a_rule_for_nan_says_so(tmp_path):
    X, y, qid = make_check_data(0, n_queries=10, n_features=N_FEATURES, max_docs=10)
    ranker = make_ranker("ridge", {}).fit(X, y, qid=qid)
    model = load_model(save_model(ranker, tmp_path / "m", ranker_name="ridge"))
    meta = {p.key: p.value for p in onnx_model(model).metadata_props}
    assert meta["ltr_bench.nan"] == NAN_UNDEFINED

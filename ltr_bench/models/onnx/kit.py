"""The builders a ranker's ``export_onnx(kit)`` receives (the contract hook): this module.

Each takes a :class:`~ltr_bench.models.onnx.graph.Graph` and tensor names and returns the
name of what it computed, so a ranker composes its ``predict`` from them, e.g. ridge::

    g = kit.Graph(n_features)
    z = kit.standardise(g, g.input, mean, scale)
    return g.model(kit.linear(g, z, coef, intercept))

Every operation is the one ``predict`` does, in double precision, so the graph differs from
the native scores only by the order of floating-point sums (a few units in the last place)
-- except where the native library itself computes in single precision (XGBoost and
CatBoost read features as float32: their graphs cast ``X`` to float32 first, as the
libraries do) and the tree ensembles' output (``TreeEnsembleRegressor``, ``ai.onnx.ml``
opset 3, returns float32: a relative difference of at most about 6e-8).

Trees: :func:`lightgbm_trees` builds the ensemble from LightGBM's own dump with double
thresholds (onnxmltools 1.16 stores LightGBM thresholds as float32, which compared with
double inputs sends rows down the wrong branch: scores off by up to 1 % on the
``lightgbm-example`` data); :func:`xgboost_trees` uses onnxmltools, with a ranking objective
relabelled as regression (a ranker's score is the raw sum of the trees; onnxmltools turns
``rank:*`` boosters into classifiers); :func:`catboost_trees` CatBoost's own ONNX export.
"""

from __future__ import annotations

import json

import numpy as np

from ltr_bench.models.onnx.graph import Graph

__all__ = [
    "Graph",
    "catboost_trees",
    "lightgbm_trees",
    "linear",
    "negated_squared_norm",
    "query_document_abs_diff",
    "query_document_split",
    "standardise",
    "threshold_sum",
    "xgboost_trees",
    "zeros",
]


class ExportRefused(ValueError):
    """The fitted model uses something its converter cannot express (the message says
    what); ``ltr-bench export`` reports it as a refusal, exit 1."""


# ---------------------------------------------------------------------- row-wise algebra


def standardise(g: Graph, x: str, mean, scale) -> str:
    """``(x - mean) / scale`` column-wise (scikit-learn's ``StandardScaler.transform``);
    ``mean`` None skips the shift."""
    if mean is not None:
        x = g.op("Sub", x, g.const(np.asarray(mean, np.float64), "mean"))
    return g.op("Div", x, g.const(np.asarray(scale, np.float64), "scale"))


def zeros(g: Graph, x: str) -> str:
    """0 for every row of the 2-D ``x`` (a model that learned nothing), ``[N]``."""
    return g.op("Mul", g.row_sum(x), g.const(0.0, "zero"))


def linear(g: Graph, x: str, coef, intercept: float | None = None) -> str:
    """``x @ coef (+ intercept)``: ``[N]`` from ``x`` ``[N, d]`` and ``coef`` ``(d,)``."""
    s = g.op("MatMul", x, g.const(np.asarray(coef, np.float64), "coef"))
    if intercept is not None:
        s = g.op("Add", s, g.const(float(intercept), "intercept"))
    return s


def negated_squared_norm(g: Graph, x: str, L) -> str:
    """``-||x L||^2`` per row (a quadratic form ``-x^T W x`` with ``W = L L^T``), ``[N]``;
    ``L`` ``(d, r)``; zero columns (``r = 0``) give 0."""
    L = np.asarray(L, np.float64)
    if L.shape[1] == 0:
        return zeros(g, x)
    p = g.op("MatMul", x, g.const(L, "factor"))
    return g.op("Neg", g.row_sum(g.op("Mul", p, p)))


def query_document_split(g: Graph, x: str, query_dim: int) -> tuple[str, str]:
    """``(Q, D)``: the query and document blocks of query-by-example rows ``[q, d]``
    (:func:`ltr_bench.ranker.split_query_document`)."""
    return g.column_range(x, 0, query_dim), g.column_range(x, query_dim, 2 * query_dim)


def query_document_abs_diff(g: Graph, x: str, query_dim: int | None) -> str:
    """The trees' input on query-by-example rows: ``[q, d, |q - d|]``; ``x`` itself when
    ``query_dim`` is None."""
    if query_dim is None:
        return x
    q, d = query_document_split(g, x, query_dim)
    return g.op("Concat", x, g.op("Abs", g.op("Sub", q, d)), axis=1)


def threshold_sum(g: Graph, x: str, features, thresholds, weights) -> str:
    """``sum_t weights_t [x_{features_t} > thresholds_t]`` per row (RankBoost's weak
    rankers), ``[N]``; no terms give 0."""
    if len(weights) == 0:
        return zeros(g, x)
    cols = g.columns(x, np.asarray(features, np.int64))
    above = g.op("Greater", cols, g.const(np.asarray(thresholds, np.float64), "theta"))
    return g.op("MatMul", g.cast(above, np.float64), g.const(np.asarray(weights), "alpha"))


# ---------------------------------------------------------------------- tree ensembles


def _tree_ensemble(g: Graph, x: str, attrs: dict) -> str:
    """A ``TreeEnsembleRegressor`` (``ai.onnx.ml`` 3, double thresholds and leaf values)
    on ``x`` (double): ``[N, 1]`` float32 sums of the trees."""
    from onnx import numpy_helper

    attrs = dict(attrs)
    for key in ("nodes_values", "target_weights"):
        arr = np.asarray(attrs.pop(key), np.float64)
        attrs[f"{key}_as_tensor"] = numpy_helper.from_array(arr, key)
    return g.op(
        "TreeEnsembleRegressor",
        x,
        domain="ai.onnx.ml",
        n_targets=1,
        aggregate_function="SUM",
        post_transform="NONE",
        **attrs,
    )


#: LightGBM's zero band: ``|x| <= 1e-35`` (its ``kZeroThreshold``, a float) is zero when a
#: split treats zeros as missing (``missing_type`` ``"Zero"``)
LIGHTGBM_ZERO = float(np.float32(1e-35))

#: what the graphs do with NaN (metadata ``ltr_bench.nan``), by tree library
NAN_LIGHTGBM = (
    "as LightGBM: per split, missing_type None scores NaN as 0; NaN takes the split's "
    "default branch (default_left); Zero sends 0 (|x| <= 1e-35) and NaN to the default branch"
)
NAN_XGBOOST = "as XGBoost: NaN takes each split's default branch"
NAN_CATBOOST = "as CatBoost: NaN as the model's nan_mode says (Min: below every value)"


def lightgbm_trees(g: Graph, x: str, booster, num_iteration: int | None) -> str:
    """The sum of the first ``num_iteration`` rounds' trees of the ``lightgbm.Booster``
    (all when None) on ``x`` (double): LightGBM's ``predict(raw_score=True)``. Split rule
    ``x <= threshold`` on doubles, exactly LightGBM's, and missing values as LightGBM
    treats them per split (its ``Tree::NumericalDecision``), from the dump's
    ``missing_type`` and ``default_left``:

    * ``None``: NaN is scored as 0, so it goes left iff ``0 <= threshold``;
    * ``NaN``: NaN goes to the default branch (left iff ``default_left``);
    * ``Zero`` (``zero_as_missing``): NaN and zeros (``|x| <= 1e-35``) go to the default
      branch. ``TreeEnsembleRegressor`` can send only NaN elsewhere, so such a split reads a
      copy of its feature with the zero band replaced by NaN (columns appended to ``x``).

    Sets ``g.nan`` (:data:`NAN_LIGHTGBM`). Refused (:class:`ExportRefused`): categorical
    splits, linear trees, more than one tree per round."""
    dump = booster.dump_model(num_iteration=num_iteration)
    if int(dump.get("num_tree_per_iteration", 1)) != 1:
        raise ExportRefused("LightGBM models with several trees per round are not exported")
    cols: dict[str, list] = {
        k: []
        for k in (
            "nodes_treeids",
            "nodes_nodeids",
            "nodes_featureids",
            "nodes_values",
            "nodes_modes",
            "nodes_truenodeids",
            "nodes_falsenodeids",
            "nodes_missing_value_tracks_true",
            "target_treeids",
            "target_nodeids",
            "target_ids",
            "target_weights",
        )
    }
    zero_columns: dict[int, int] = {}  # feature -> its zero-as-NaN copy's column
    width = int(dump["max_feature_idx"]) + 1
    for tree_id, tree in enumerate(dump["tree_info"]):
        _lightgbm_tree(tree["tree_structure"], tree_id, cols, zero_columns, width)
    g.nan = NAN_LIGHTGBM
    if not cols["nodes_treeids"]:  # no trees: a graph that scores 0
        return zeros(g, x)
    if zero_columns:
        x = _zero_as_nan(g, x, list(zero_columns))
    return _tree_ensemble(g, x, cols)


def _zero_as_nan(g: Graph, x: str, features: list[int]) -> str:
    """``x`` with the columns ``features`` appended once more, their zero band
    (``|v| <= LIGHTGBM_ZERO``) and NaN as NaN: ``[N, d + len(features)]``."""
    copy = g.columns(x, np.asarray(features, np.int64))
    small = g.op("LessOrEqual", g.op("Abs", copy), g.const(LIGHTGBM_ZERO, "zero_band"))
    missing = g.op("Or", small, g.op("IsNaN", copy))
    copy = g.op("Where", missing, g.const(np.nan, "nan"), copy)
    return g.op("Concat", x, copy, axis=1)


def _lightgbm_tree(
    root: dict, tree_id: int, cols: dict, zero_columns: dict[int, int], width: int
) -> None:
    """Append the nodes of one dumped LightGBM tree (pre-order ids) to ``cols``; a split
    with ``missing_type`` Zero reads the column ``zero_columns`` gives its feature (added
    there, after the ``width`` input columns, on first use)."""
    stack = [(root, 0)]
    next_id = 1
    pending: list[tuple[dict, int]] = []
    while stack:
        node, node_id = stack.pop()
        pending.append((node, node_id))
        if "leaf_value" in node or "split_feature" not in node:
            continue
        left, right = next_id, next_id + 1
        next_id += 2
        node["_ids"] = (left, right)
        stack.append((node["right_child"], right))
        stack.append((node["left_child"], left))
    for node, node_id in sorted(pending, key=lambda item: item[1]):
        cols["nodes_treeids"].append(tree_id)
        cols["nodes_nodeids"].append(node_id)
        if "split_feature" not in node:  # a leaf (a tree without splits is one leaf)
            if "leaf_coeff" in node:
                raise ExportRefused("LightGBM linear trees (linear_tree) are not exported")
            cols["nodes_featureids"].append(0)
            cols["nodes_values"].append(0.0)
            cols["nodes_modes"].append("LEAF")
            cols["nodes_truenodeids"].append(0)
            cols["nodes_falsenodeids"].append(0)
            cols["nodes_missing_value_tracks_true"].append(0)
            cols["target_treeids"].append(tree_id)
            cols["target_nodeids"].append(node_id)
            cols["target_ids"].append(0)
            cols["target_weights"].append(float(node.get("leaf_value", 0.0)))
            continue
        if node.get("decision_type") != "<=":
            raise ExportRefused(
                f"LightGBM split {node.get('decision_type')!r} (categorical) is not exported"
            )
        missing = node.get("missing_type", "None")
        if missing not in ("None", "NaN", "Zero"):
            raise ExportRefused(f"LightGBM split missing_type {missing!r} is not exported")
        feature, threshold = int(node["split_feature"]), float(node["threshold"])
        if missing == "None":  # LightGBM scores NaN as 0 here
            nan_left = 0.0 <= threshold
        else:
            nan_left = bool(node.get("default_left"))
        if missing == "Zero":
            feature = zero_columns.setdefault(feature, width + len(zero_columns))
        left, right = node["_ids"]
        cols["nodes_featureids"].append(feature)
        cols["nodes_values"].append(threshold)
        cols["nodes_modes"].append("BRANCH_LEQ")
        cols["nodes_truenodeids"].append(left)
        cols["nodes_falsenodeids"].append(right)
        cols["nodes_missing_value_tracks_true"].append(int(nan_left))


def xgboost_trees(g: Graph, x: str, booster, n_rounds: int | None) -> str:
    """The margin (base score plus the trees) of the first ``n_rounds`` rounds of the
    ``xgboost.Booster`` (all when None) on ``x`` cast to float32, as XGBoost reads its
    input; converted by onnxmltools with the objective relabelled as squared error."""
    import xgboost as xgb
    from onnxmltools import convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType

    model = json.loads(bytes(booster.save_raw("json")))
    learner = model["learner"]
    if int(learner["learner_model_param"].get("num_target", "1")) != 1:
        raise ExportRefused("XGBoost models with several targets are not exported")
    learner["objective"] = {"name": "reg:squarederror", "reg_loss_param": {"scale_pos_weight": "1"}}
    relabelled = xgb.Booster(model_file=bytearray(json.dumps(model).encode()))
    if n_rounds is not None:
        relabelled = relabelled[: int(n_rounds)]
    n_features = int(relabelled.num_features())
    converted = convert_xgboost(
        relabelled, initial_types=[("features", FloatTensorType([None, n_features]))]
    )
    (out,) = g.embed(converted, {"features": g.cast(x, np.float32)})
    g.nan = NAN_XGBOOST
    return out


def catboost_trees(g: Graph, x: str, model) -> str:
    """The raw score of the fitted ``catboost`` model on ``x`` cast to float32 (CatBoost
    reads features as float32), from CatBoost's own ONNX export."""
    import tempfile
    from pathlib import Path

    import onnx

    with tempfile.TemporaryDirectory(prefix="ltr-bench-catboost-") as tmp:
        path = Path(tmp) / "model.onnx"
        model.save_model(str(path), format="onnx")
        converted = onnx.load(str(path))
    name = converted.graph.input[0].name
    outputs = g.embed(converted, {name: g.cast(x, np.float32)})
    g.nan = NAN_CATBOOST
    return outputs[0]

"""Every registered ranker exports to ONNX, and ONNX Runtime scores as the native model.

The cases come from ``ltr-bench rankers`` (a new plugin is covered without a test of its own),
plus the variants whose graphs differ: every ``neural`` scorer and the feature transform,
the query-by-example forms of the trees, the linear rankers, MLR and L-GMML, and models
fitted on ``query_norm`` features (one query per call). Each model is fitted on small
generated data, saved and loaded back (the export reads the folder, as ``ltr-bench export``
does), exported, and scored on held rows: every score within ``SCORE_BOUND * max(1,
|native|)`` and no pair farther apart than that ordered differently; and the metrics
``predict`` gives on a LETOR file of those rows equal with the native model and with ONNX
Runtime to ``METRIC_TOLERANCE`` (1e-6).
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from ltrb_model_params import SPEED
from ltrb_processes import close_dask_rankers_clusters

from ltr_bench.models import load_model, save_model
from ltr_bench.models.onnx import (
    ONE_QUERY,
    SCORE_BOUND,
    ExportError,
    OnnxScorer,
    check_export,
    compare_scores,
    input_contract,
    onnx_model,
    onnx_scores,
)
from ltr_bench.models.predict import DataSpec
from ltr_bench.registry import list_rankers, make_ranker
from ltr_bench.testing.data import make_check_data, make_query_by_example

pytest.importorskip("onnxruntime")

RANKERS = [entry.name for entry in list_rankers()]

#: slow to fit (a Dask cluster) or to export (torch.export traces the module)
SLOW = {"lightgbm-dask", "xgboost-dask", "neural-transformer"}

#: (id, ranker, params, query-by-example rows, query_norm)
VARIANTS = [
    ("neural-quadratic", "neural", {"scorer": "quadratic", "rho": 0.0, "epochs": 3}, False, False),
    ("neural-mlp", "neural", {"scorer": "mlp", "width": 8, "depth": 2, "epochs": 3}, False, False),
    (
        "neural-transformer",
        "neural",
        {"scorer": "transformer", "width": 8, "epochs": 2},
        False,
        False,
    ),
    ("neural-log1p-query-norm", "neural", {"feature_transform": "log1p", "epochs": 3}, False, True),
    (
        "neural-bilinear-qbe",
        "neural",
        {"scorer": "bilinear", "query_dim": 3, "epochs": 3},
        True,
        False,
    ),
    (
        "neural-distance-qbe",
        "neural",
        {"scorer": "distance", "query_dim": 3, "epochs": 3},
        True,
        False,
    ),
    ("lgmml-qbe", "lgmml", {"n_metrics": 6, "n_iter": 100, "query_dim": 3}, True, False),
    (
        "lgmml-eq13-float64",
        "lgmml",
        {"n_metrics": 6, "n_iter": 100, "score_form": "eq13", "dtype": "float64"},
        False,
        False,
    ),
    ("lightgbm-qbe", "lightgbm", {**SPEED["lightgbm"], "query_dim": 3}, True, False),
    (
        "xgboost-lambdamart-qbe",
        "xgboost-lambdamart",
        {**SPEED["xgboost-lambdamart"], "query_dim": 3},
        True,
        False,
    ),
    ("catboost-qbe", "catboost", {**SPEED["catboost"], "query_dim": 3}, True, False),
    ("ridge-qbe", "ridge", {"query_dim": 3}, True, False),
    ("mlr-qbe", "mlr", {**SPEED["mlr"], "query_dim": 3}, True, False),
    ("lightgbm-query-norm", "lightgbm", SPEED["lightgbm"], False, True),
    ("ridge-query-norm", "ridge", {}, False, True),
]

#: the Dask rankers train on a one-worker cluster here: its second worker process cost about
#: 14 s of CPU a file (measured); training across two workers, and exporting what they
#: trained, is tested in tests/baselines/test_dask_gbdt.py
ONE_WORKER = {"n_workers": 1}


def _case(name: str):
    dask = name.endswith("-dask")
    return pytest.param(
        name,
        {**SPEED.get(name, {}), **(ONE_WORKER if dask else {})},
        False,
        False,
        id=name,
        marks=[pytest.mark.slow] if name in SLOW else [],
    )


# the Dask rankers last and together: their cluster, started by the first, is not left idle
# (a worker process takes CPU) while the other cases run
CASES = (
    [_case(name) for name in RANKERS if not name.endswith("-dask")]
    + [
        pytest.param(
            name, params, qbe, qn, id=case, marks=[pytest.mark.slow] if name == "neural" else []
        )
        for case, name, params, qbe, qn in VARIANTS
    ]
    + [_case(name) for name in RANKERS if name.endswith("-dask")]
)


LAST_DASK = next((p.id for p in reversed(CASES) if p.id.endswith("-dask")), None)


@pytest.fixture
def _dask_cluster_closed_after_its_last_case(request):
    """Closes the Dask rankers' cluster after the last Dask case: the module's other tests
    come after it, and its idle worker process would take CPU until the module ends."""
    yield
    if request.node.callspec.id == LAST_DASK:
        close_dask_rankers_clusters()


def _data(qbe: bool, seed: int):
    if qbe:
        return make_query_by_example(seed, 20, 3)
    return make_check_data(seed, n_queries=25, n_features=6, max_docs=25)


def _letor(path, X, y, qid):
    lines = [
        f"{int(label)} qid:{int(q)} " + " ".join(f"{j}:{float(v)!r}" for j, v in enumerate(row, 1))
        for row, label, q in zip(X, y, qid)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _fit_save_load(tmp_path, name, params, qbe, query_norm):
    from ltr_bench.data.normalise import query_level_norm

    X, y, qid = _data(qbe, 0)
    if query_norm:
        X = query_level_norm(X, qid)
    ranker = make_ranker(name, dict(params)).fit(X, y, qid=qid)
    folder = save_model(
        ranker,
        tmp_path / "model",
        ranker_name=name,
        preprocessing={"query_norm": query_norm},
        data_fingerprint={"train": "abc123"},
    )
    return load_model(folder)


@pytest.mark.parametrize(("name", "params", "qbe", "query_norm"), CASES)
@pytest.mark.usefixtures("_dask_cluster_closed_after_its_last_case")
def test_every_ranker_exports_and_onnx_runtime_scores_as_the_native_model(
    tmp_path, name, params, qbe, query_norm
):
    model = _fit_save_load(tmp_path, name, params, qbe, query_norm)
    graph = onnx_model(model)
    X_test, y_test, qid_test = _data(qbe, 1)  # held rows, never seen in fit
    native = model.predict(X_test, qid_test)
    one_query = input_contract(model) == ONE_QUERY
    assert one_query == (query_norm or bool(model.ranker.ranker_tags().requires_qid_at_predict))
    ort = onnx_scores(graph.SerializeToString(), X_test, qid_test, one_query=one_query)
    result = compare_scores(native, ort, qid_test, SCORE_BOUND)
    assert result.holds, result.text()
    assert np.ptp(native) > 0, "a constant model proves nothing"
    # the metrics predict prints, from a LETOR file of the held rows, native and ONNX
    data = _letor(tmp_path / "held.txt", X_test, y_test, qid_test)
    scorer = OnnxScorer(graph.SerializeToString(), model.manifest, model.folder, one_query)
    check = check_export(model, scorer, DataSpec(path=data))
    assert check.holds and check.metric_diff is not None, check.text()
    meta = {p.key: p.value for p in graph.metadata_props}
    assert meta["ltr_bench.ranker"] == name
    assert meta["ltr_bench.n_features"] == str(X_test.shape[1])
    assert meta["ltr_bench.data_fingerprint"] == '{"train": "abc123"}'
    assert meta["ltr_bench.ranker_version"] == model.manifest["distribution_version"]
    assert meta["ltr_bench.input"] == input_contract(model)


def test_lightgbm_thresholds_closer_than_float32_resolution_are_kept(tmp_path):
    # feature values 1 + k * 1e-9 are one float32 number: a float32 threshold (onnxmltools'
    # LightGBM converter) would send them all down one branch
    rng = np.random.default_rng(0)
    n = 400
    x = 1.0 + rng.integers(0, 50, n) * 1e-9
    X = np.c_[x, rng.standard_normal(n)]
    y = (x > 1.0 + 25e-9).astype(np.int64) * 3
    qid = np.repeat(np.arange(n // 20), 20)
    ranker = make_ranker("lightgbm", {"n_estimators": 5, "min_data_in_leaf": 1}).fit(X, y, qid=qid)
    assert np.unique(np.float32(x)).size == 1 and np.ptp(ranker.predict(X)) > 0.1
    model = load_model(save_model(ranker, tmp_path / "m", ranker_name="lightgbm"))
    ort = onnx_scores(onnx_model(model).SerializeToString(), X, qid, one_query=False)
    result = compare_scores(model.predict(X, qid), ort, qid, SCORE_BOUND)
    assert result.holds, result.text()


def test_the_export_unpickles_nothing(tmp_path, monkeypatch):
    models = [
        _fit_save_load(tmp_path / name, name, SPEED.get(name, {}), False, False)
        for name in ("lightgbm", "xgboost-lambdamart", "catboost", "ridge", "lgmml")
    ]

    def refuse(*args, **kwargs):
        raise AssertionError("the export unpickled something")

    for attr in ("load", "loads", "Unpickler"):
        monkeypatch.setattr(pickle, attr, refuse)
    for model in models:
        onnx_model(model)


def test_a_ranker_without_the_hook_is_refused_with_the_reason():
    from ltr_bench.models import LoadedModel
    from ltr_bench.ranker import BaseRanker, can_export

    class NoExport(BaseRanker):
        def fit(self, X, y, *, qid, eval_set=None):
            return self

    assert not can_export(NoExport) and can_export(make_ranker("ridge"))
    model = LoadedModel(
        ranker=NoExport(),
        manifest={"ranker": "third-party", "preprocessing": {"query_norm": False}},
        folder=None,
    )
    with pytest.raises(ExportError, match="does not implement export_onnx"):
        onnx_model(model)


@pytest.mark.parametrize("name", ["lightgbm", "xgboost-gbrt", "catboost", "rankboost", "ridge"])
def test_a_model_fitted_on_constant_labels_exports_its_constant_scores(tmp_path, name):
    X, _, qid = _data(False, 0)
    y = np.zeros(qid.size, dtype=np.int64)
    ranker = make_ranker(name, dict(SPEED.get(name, {}))).fit(X, y, qid=qid)
    model = load_model(save_model(ranker, tmp_path / "m", ranker_name=name))
    X_test, _, qid_test = _data(False, 1)
    native = model.predict(X_test, qid_test)
    ort = onnx_scores(onnx_model(model).SerializeToString(), X_test, qid_test, one_query=False)
    result = compare_scores(native, ort, qid_test, SCORE_BOUND)
    assert result.holds, result.text()

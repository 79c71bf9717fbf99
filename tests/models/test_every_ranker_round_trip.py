"""Every registered ranker can be saved and loaded back in a fresh process, scoring bit for bit.

The cases are discovered from ``ltr-bench rankers`` (a new plugin is covered without a test
of its own), plus the variants whose saved state differs: each ``neural`` scorer (allRank's
``mlp`` and ``transformer`` included, and a model trained from an inline allRank config), the
query-by-example forms of ``neural`` and ``lgmml``, and a query-normalised model. The saving
process fits and saves; a separate Python process loads the folder and predicts; the scores
must be identical (compared as bit patterns), as must ``fitted_info`` and the parameters.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from ltr_bench.data.normalise import query_level_norm
from ltr_bench.models import load_model, save_model
from ltr_bench.registry import list_rankers, make_ranker

RANKERS = [entry.name for entry in list_rankers()]

SPEED = {
    "lightgbm": {"n_estimators": 8, "num_leaves": 7, "min_data_in_leaf": 2},
    "lightgbm-dask": {"n_estimators": 5, "num_leaves": 7, "min_data_in_leaf": 2},
    "xgboost-gbrt": {"n_estimators": 8, "max_leaves": 7},
    "xgboost-lambdamart": {"n_estimators": 8, "max_leaves": 7, "min_child_weight": 1e-3},
    "xgboost-dask": {"n_estimators": 5, "max_leaves": 7, "min_child_weight": 1e-3},
    "catboost": {"n_estimators": 8, "depth": 3},
    "mlr": {"max_iter": 10, "admm_max_iter": 100},
    "rmlr": {"max_iter": 10, "admm_max_iter": 100},
    "lgmml": {"n_metrics": 6, "n_iter": 100},
    "neural": {"epochs": 3},
}

#: the layout of allRank's config_template.json (context-aware model), small sizes
ALLRANK_CONFIG = {
    "model": {
        "fc_model": {"sizes": [8], "input_norm": False, "activation": None, "dropout": 0.0},
        "transformer": {"N": 1, "d_ff": 16, "h": 2, "positional_encoding": None, "dropout": 0.1},
        "post_model": {"output_activation": "Tanh", "d_output": 1},
    },
    "data": {"path": "-", "validation_ds_role": "vali", "batch_size": 4, "slate_length": 12},
    "optimizer": {"name": "Adam", "args": {"lr": 0.01}},
    "training": {"epochs": 2, "early_stopping_patience": 100, "gradient_clipping_norm": None},
    "val_metric": "ndcg_5",
    "loss": {"name": "neuralNDCG", "args": {"temperature": 1.0, "k": None}},
}

#: (id, ranker, params, query-by-example rows)
VARIANTS = [
    ("neural-quadratic", "neural", {"scorer": "quadratic", "rho": 0.0, "epochs": 3}, False),
    ("neural-mlp", "neural", {"scorer": "mlp", "epochs": 3}, False),
    ("neural-transformer", "neural", {"scorer": "transformer", "epochs": 2}, False),
    ("neural-log1p", "neural", {"feature_transform": "log1p", "epochs": 3}, False),
    ("neural-bilinear-qbe", "neural", {"scorer": "bilinear", "query_dim": 3, "epochs": 3}, True),
    ("neural-distance-qbe", "neural", {"scorer": "distance", "query_dim": 3, "epochs": 3}, True),
    ("neural-allrank-config", "neural", {"config": ALLRANK_CONFIG}, False),
    ("lgmml-qbe", "lgmml", {"n_metrics": 6, "n_iter": 100, "query_dim": 3}, True),
    ("ridge-qbe", "ridge", {"query_dim": 3}, True),
]

CASES = [pytest.param(name, SPEED.get(name, {}), False, id=name) for name in RANKERS] + [
    pytest.param(name, params, qbe, id=case) for case, name, params, qbe in VARIANTS
]

_LOADER = """
import json, sys
import numpy as np
from ltr_bench.models import load_model
folder, data = sys.argv[1], sys.argv[2]
model = load_model(folder)
with np.load(data) as d:
    scores = model.predict(d["X"], d["qid"])
np.save(folder + ".scores.npy", scores)
print(json.dumps({"info": model.ranker.fitted_info(), "modules": sorted(sys.modules)}))
"""


def _data(qbe: bool, seed: int = 0):
    rng = np.random.default_rng(seed)
    n_q, docs = 16, 7
    f = 6 if qbe else 5
    X = rng.normal(size=(n_q * docs, f)) + 2.0  # positive-ish: log1p stays finite
    X = np.abs(X)
    qid = np.repeat(np.arange(n_q), docs)
    y = rng.integers(0, 3, n_q * docs)
    y[::docs] = 2  # every query has a relevant document
    return X, y, qid


def _round_trip(name, params, qbe, tmp_path, *, query_norm=False):
    X, y, qid = _data(qbe)
    Xv, yv, qv = _data(qbe, seed=1)
    Xt, _, qt = _data(qbe, seed=2)
    fit_X, fit_Xv = (query_level_norm(X, qid), query_level_norm(Xv, qv)) if query_norm else (X, Xv)
    ranker = make_ranker(name, params)
    ranker.fit(fit_X, y, qid=qid, eval_set=(fit_Xv, yv, qv))
    expected = ranker.predict(query_level_norm(Xt, qt) if query_norm else Xt, qid=qt)
    folder = save_model(
        ranker,
        tmp_path / "model",
        ranker_name=name,
        preprocessing={"query_norm": query_norm},
        data_fingerprint="f" * 16,
    )
    np.savez(tmp_path / "data.npz", X=Xt, qid=qt)
    out = subprocess.run(
        [sys.executable, "-c", _LOADER, str(folder), str(tmp_path / "data.npz")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    scores = np.load(str(folder) + ".scores.npy")
    assert scores.dtype == np.float64 and scores.shape == expected.shape
    assert np.array_equal(scores.view(np.int64), expected.view(np.int64)), (
        f"{name}: max abs difference {np.max(np.abs(scores - expected)):.3g}"
    )
    assert report["info"] == json.loads(json.dumps(ranker.fitted_info()))
    return ranker, folder, report


@pytest.mark.slow  # a fresh Python process per case (imports torch / the libraries again)
@pytest.mark.parametrize("name, params, qbe", CASES)
def test_a_saved_ranker_loaded_in_a_fresh_process_predicts_bit_for_bit(name, params, qbe, tmp_path):
    ranker, folder, report = _round_trip(name, params, qbe, tmp_path)
    loaded = load_model(folder)
    assert type(loaded.ranker) is type(ranker)
    assert loaded.ranker.get_params(deep=False) == ranker.get_params(deep=False)
    assert loaded.ranker.learning_curves() == ranker.learning_curves()
    if qbe:
        assert loaded.preprocessing["query_dim"] == 3
    assert "pickle" not in " ".join(p.suffix for p in (folder / "native").iterdir())


def test_every_registered_ranker_is_a_case():
    assert set(RANKERS) <= {p.values[0] for p in CASES}
    assert {"neural", "lgmml", "catboost"} <= set(RANKERS)


@pytest.mark.slow
def test_a_query_normalised_model_normalises_new_rows_in_a_fresh_process(tmp_path):
    _, folder, _ = _round_trip("lightgbm", SPEED["lightgbm"], False, tmp_path, query_norm=True)
    assert load_model(folder).preprocessing["query_norm"] is True

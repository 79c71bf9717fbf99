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
from ltrb_model_params import SPEED
from ltrb_processes import close_dask_rankers_clusters

from ltr_bench.data.normalise import query_level_norm
from ltr_bench.models import load_model, save_model
from ltr_bench.registry import list_rankers, make_ranker

RANKERS = [entry.name for entry in list_rankers()]


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
    (
        "neural-mlp-shortcuts",
        "neural",
        {"scorer": "mlp", "width": 8, "depth": 3, "epochs": 2},
        False,
    ),
    ("neural-transformer", "neural", {"scorer": "transformer", "epochs": 2}, False),
    ("neural-log1p", "neural", {"feature_transform": "log1p", "epochs": 3}, False),
    ("neural-bilinear-qbe", "neural", {"scorer": "bilinear", "query_dim": 3, "epochs": 3}, True),
    ("neural-distance-qbe", "neural", {"scorer": "distance", "query_dim": 3, "epochs": 3}, True),
    ("neural-allrank-config", "neural", {"config": ALLRANK_CONFIG}, False),
    ("lgmml-qbe", "lgmml", {"n_metrics": 6, "n_iter": 100, "query_dim": 3}, True),
    ("ridge-qbe", "ridge", {"query_dim": 3}, True),
]

#: the Dask rankers train on a one-worker cluster here: its second worker process cost about
#: 14 s of CPU a file (measured); training across two workers, and saving and loading what
#: they trained, is tested in tests/baselines/test_dask_gbdt.py
ONE_WORKER = {"n_workers": 1}


def _params(name: str) -> dict:
    return {**SPEED.get(name, {}), **(ONE_WORKER if name.endswith("-dask") else {})}


#: (id, ranker, params, query-by-example rows, query_norm) of every case
ALL = (
    [(name, name, _params(name), False, False) for name in RANKERS]
    + [(case, name, params, qbe, False) for case, name, params, qbe in VARIANTS]
    + [("lightgbm-query-norm", "lightgbm", SPEED["lightgbm"], False, True)]
)
TEST = "test_a_saved_ranker_loaded_in_a_fresh_process_predicts_bit_for_bit"

# One fresh process loads every saved model (a process per model would import torch and the
# libraries again each time): it loads each folder, predicts, and reports per case.
_LOADER = """
import json, sys
import numpy as np
from ltr_bench.models import load_model
for line in sys.stdin:
    case, folder, data = json.loads(line)
    try:
        model = load_model(folder)
        with np.load(data) as d:
            np.save(folder + ".scores.npy", model.predict(d["X"], d["qid"]))
        print(json.dumps({"case": case, "info": model.ranker.fitted_info()}), flush=True)
    except Exception as exc:
        print(json.dumps({"case": case, "error": f"{type(exc).__name__}: {exc}"}), flush=True)
"""


def _data(qbe: bool, seed: int = 0):
    rng = np.random.default_rng(seed)
    n_q, docs = 16, 7
    f = 6 if qbe else 5
    X = np.abs(rng.normal(size=(n_q * docs, f)) + 2.0)  # positive: log1p stays finite
    qid = np.repeat(np.arange(n_q), docs)
    y = rng.integers(0, 3, n_q * docs)
    y[::docs] = 2  # every query has a relevant document
    return X, y, qid


def _fit_and_save(root, case, name, params, qbe, query_norm):
    X, y, qid = _data(qbe)
    Xv, yv, qv = _data(qbe, seed=1)
    Xt, _, qt = _data(qbe, seed=2)
    norm = query_level_norm if query_norm else (lambda A, q: A)
    ranker = make_ranker(name, params)
    ranker.fit(norm(X, qid), y, qid=qid, eval_set=(norm(Xv, qv), yv, qv))
    expected = ranker.predict(norm(Xt, qt), qid=qt)
    folder = save_model(
        ranker,
        root / case,
        ranker_name=name,
        preprocessing={"query_norm": query_norm},
        data_fingerprint="f" * 16,
    )
    np.savez(root / f"{case}.data.npz", X=Xt, qid=qt)  # raw rows: the model normalises them
    return {"ranker": ranker, "folder": folder, "expected": expected}


@pytest.fixture(scope="module")
def fresh_process(request, tmp_path_factory):
    """{case: fitted ranker, its folder, its scores before saving, and what a fresh process
    that loaded the folder reported}, for the cases of this run (``-k`` selects fewer)."""
    wanted = {
        item.callspec.id
        for item in request.session.items
        if getattr(item, "originalname", None) == TEST and hasattr(item, "callspec")
    }
    root = tmp_path_factory.mktemp("round-trip")
    saved = {}
    # the Dask rankers last, and their cluster closed before the fresh process runs: its
    # idle worker would otherwise take CPU until the end of the module
    for case, name, params, qbe, query_norm in sorted(ALL, key=lambda c: c[1].endswith("-dask")):
        if case in wanted:
            try:
                saved[case] = _fit_and_save(root, case, name, params, qbe, query_norm)
            except Exception as exc:  # reported by this case's test only
                saved[case] = {"error": f"fit or save failed: {type(exc).__name__}: {exc}"}
    close_dask_rankers_clusters()
    lines = "".join(
        json.dumps([case, str(s["folder"]), str(root / f"{case}.data.npz")]) + "\n"
        for case, s in saved.items()
        if "folder" in s
    )
    out = subprocess.run(
        [sys.executable, "-c", _LOADER], input=lines, capture_output=True, text=True, timeout=900
    )
    assert out.returncode == 0, out.stderr[-3000:]
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            report = json.loads(line)
            saved[report["case"]]["report"] = report
    return saved


@pytest.mark.slow  # fits every ranker (Dask clusters, torch) and starts a fresh process
@pytest.mark.parametrize("case", [c[0] for c in ALL])
def test_a_saved_ranker_loaded_in_a_fresh_process_predicts_bit_for_bit(case, fresh_process):
    entry = fresh_process[case]
    assert "error" not in entry, entry.get("error")
    report = entry.get("report", {"error": "the fresh process reported nothing"})
    assert "error" not in report, f"{case}: loading in a fresh process: {report['error']}"
    ranker, folder, expected = entry["ranker"], entry["folder"], entry["expected"]
    scores = np.load(str(folder) + ".scores.npy")
    assert scores.dtype == np.float64 and scores.shape == expected.shape
    assert np.array_equal(scores.view(np.int64), expected.view(np.int64)), (
        f"{case}: max abs difference {np.max(np.abs(scores - expected)):.3g}"
    )
    assert report["info"] == json.loads(json.dumps(ranker.fitted_info()))
    loaded = load_model(folder)  # and in this process: the same class, parameters, curves
    assert type(loaded.ranker) is type(ranker)
    assert loaded.ranker.get_params(deep=False) == ranker.get_params(deep=False)
    assert loaded.ranker.learning_curves() == ranker.learning_curves()
    qbe = dict((c[0], c[3]) for c in ALL)[case]
    assert loaded.preprocessing["query_dim"] == (3 if qbe else None)
    assert loaded.preprocessing["query_norm"] is case.endswith("query-norm")


def test_every_registered_ranker_is_a_case():
    assert set(RANKERS) <= {c[1] for c in ALL} and set(RANKERS) <= {c[0] for c in ALL}
    assert {"neural", "lgmml", "catboost"} <= set(RANKERS)

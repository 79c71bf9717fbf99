"""What a local Dask cluster's workers import before their first cell
(``ltr_bench/run/dask_workers.py``): the rankers' modules and the libraries their ``fit``
imports lazily (``FIT_IMPORTS``), once in the forkserver; and a cluster that cannot start."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from ltr_bench.run.dask_workers import import_modules, ranker_modules


def test_ranker_modules_names_each_rankers_class_so_its_fit_imports_are_found():
    assert ranker_modules(["lightgbm", "neural", "no-such-ranker"]) == {
        "ltr_bench.run.unit",
        "ltr_bench_baselines.lightgbm:LightGBMRanker",
        "ltr_bench_neural.ranker:NeuralRanker",
    }


def test_import_modules_imports_a_classes_fit_imports_and_skips_whatever_fails(
    tmp_path, monkeypatch
):
    (tmp_path / "fake_ranker_mod.py").write_text(
        "class Ranker:\n    FIT_IMPORTS = ('fake_heavy_lib', 'no_such_lib_here', 'fake_bad_lib')\n"
    )
    (tmp_path / "fake_heavy_lib.py").write_text("LOADED = True\n")
    (tmp_path / "fake_bad_lib.py").write_text("raise OSError('no libgomp')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("fake_ranker_mod", "fake_heavy_lib", "fake_bad_lib"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    import_modules(["fake_ranker_mod:NoSuchClass", "no_such_mod:Ranker", "fake_ranker_mod:Ranker"])
    assert "fake_heavy_lib" in sys.modules
    assert "fake_bad_lib" not in sys.modules and "no_such_lib_here" not in sys.modules


# A fresh interpreter imports the ranker's module and its FIT_IMPORTS, then fits: the fit may
# import submodules of those packages, but no other library (such as sympy, which torch
# imports through torch._dynamo when the first optimiser is made)
_FIT_AFTER_IMPORTS = textwrap.dedent(
    """
    import importlib, json, sys
    import numpy as np
    from ltr_bench.registry import get_entry
    from ltr_bench.run.dask_workers import import_modules

    name, params = sys.argv[1], json.loads(sys.argv[2])
    target = get_entry(name).target
    import_modules(["ltr_bench.run.unit", target])
    module, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    before = set(sys.modules)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 5)), rng.integers(0, 3, 60)
    qid = np.repeat(np.arange(6), 10)
    cls(**params).fit(X, y, qid=qid).predict(X)
    allowed = {m.split(".")[0] for m in (module, *cls.FIT_IMPORTS)}
    new = {m.split(".")[0] for m in set(sys.modules) - before}
    print(json.dumps({"fit_imports": list(cls.FIT_IMPORTS), "other": sorted(new - allowed)}))
    """
)


@pytest.mark.slow
@pytest.mark.parametrize(
    "ranker, params",
    [
        ("lightgbm", {"n_estimators": 5}),
        ("xgboost-gbrt", {"n_estimators": 5}),
        ("neural", {"scorer": "mlp", "loss": "listnet", "epochs": 2}),
    ],
)
def test_a_rankers_fit_imports_no_library_beyond_its_declared_fit_imports(ranker, params):
    out = subprocess.run(
        [sys.executable, "-c", _FIT_AFTER_IMPORTS, ranker, json.dumps(params)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["fit_imports"]  # it declares what it imports lazily
    assert result["other"] == [], result


_FORKED_STATE = textwrap.dedent(
    """
    import json, os, sys
    from ltr_bench.run.dask_executor import DaskExecutor
    from ltr_bench.run.dask_workers import ranker_modules

    def state():
        return {"ppid": os.getppid(), "lightgbm": "lightgbm" in sys.modules}

    with DaskExecutor(workers=1, threads=1) as executor:
        executor._preload = ranker_modules(["lightgbm"])  # what start(["lightgbm"]) sets
        states = executor.client().run(state)  # no warm-up: only what the fork brought
    print(json.dumps({"client": os.getpid(), "workers": list(states.values()),
                      "client_lightgbm": "lightgbm" in sys.modules}))
    """
)


@pytest.mark.slow
def test_a_forked_worker_starts_with_its_rankers_fit_imports_which_the_client_never_imports():
    import multiprocessing

    if "forkserver" not in multiprocessing.get_all_start_methods():
        pytest.skip("no forkserver on this platform: workers are spawned")
    out = subprocess.run(
        [sys.executable, "-c", _FORKED_STATE], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    (worker,) = result["workers"]
    assert worker["ppid"] != result["client"]  # forked by the forkserver
    assert worker["lightgbm"]  # imported there, before any task reached the worker
    assert not result["client_lightgbm"]  # the client computes no cell


def test_a_local_cluster_that_cannot_start_is_reported_and_no_cell_is_lost(tmp_path, monkeypatch):
    import distributed
    from click.testing import CliRunner

    from ltr_bench.cli import main

    def no_cluster(*args, **kwargs):
        raise OSError("[Errno 98] Address already in use")

    monkeypatch.setattr(distributed, "LocalCluster", no_cluster)
    command = [
        "run",
        "--ranker",
        "ridge",
        "--dataset",
        "synthetic",
        "--dataset-option",
        "n_queries=60",
        "--folds",
        "1,2",
        "--no-mlflow",
        "--results-dir",
        str(tmp_path / "results"),
    ]
    failed = CliRunner().invoke(main, [*command, "--workers", "2"])
    assert failed.exit_code == 1, failed.output
    assert "could not start a local Dask cluster of 2 worker(s)" in failed.output
    assert "Address already in use" in failed.output
    assert "Traceback" not in failed.output
    assert not list((tmp_path / "results").glob("*.json"))  # nothing half-written
    # the same command in process computes every cell
    again = CliRunner().invoke(main, command)
    assert again.exit_code == 0, again.output
    assert len(list((tmp_path / "results").glob("*.json"))) == 2

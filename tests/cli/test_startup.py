"""Start-up stays light: commands and modules that do not need a heavy library never import
it (what is imported is checked, not how long it takes: timings live in
benchmarks/bench_overhead.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("numpy", "sklearn", "mlflow", "matplotlib", "distributed", "lightgbm", "torch")


def _imported_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys\nprint('MODULES:', ' '.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    line = out.splitlines()[-1]  # the help text comes before it
    assert line.startswith("MODULES: ")
    return {name.split(".")[0] for name in line.split()[1:]}


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["run", "--help"], ["report", "--help"], ["tune", "--help"], ["--version"]],
)
def test_help_and_version_import_no_heavy_library(argv):
    code = (
        "from ltr_bench.cli import main\n"
        "try:\n"
        f"    main({argv!r}, prog_name='ltr-bench')\n"
        "except SystemExit:\n"
        "    pass\n"
    )
    assert _imported_after(code) & set(HEAVY) == set()


def test_the_executors_module_imports_no_ranker_library():
    # the CLI starts a Dask cluster before it imports the rankers: this import comes first
    heavy = _imported_after("import ltr_bench.run.executors, ltr_bench.run.plan_options")
    assert heavy & {"sklearn", "mlflow", "distributed", "lightgbm", "torch"} == set()


#: what ``run`` never imports unless a ranker, option or store of the plan needs it
RUN_NEVER = (
    "mlflow",
    "sqlalchemy",
    "alembic",
    "matplotlib",
    "optuna",
    "dask",
    "distributed",
    "torch",
    "catboost",
    "ltr_bench_neural",
    "ltr_bench_lgmml",
)


@pytest.mark.slow  # imports scikit-learn, LightGBM and XGBoost and fits both
def test_run_of_the_gbdt_rankers_without_mlflow_imports_nothing_it_does_not_use(tmp_path):
    argv = [
        "run",
        "--ranker",
        "lightgbm,xgboost-gbrt",
        "--dataset",
        "synthetic",
        "--dataset-option",
        "n_queries=20",
        "--folds",
        "1",
        "--no-mlflow",
        "--results-dir",
        str(tmp_path / "res"),
    ]
    code = (
        "from ltr_bench.cli import main\n"
        "try:\n"
        f"    main({argv!r}, prog_name='ltr-bench')\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0, exc.code\n"
    )
    imported = _imported_after(code)
    assert {"lightgbm", "xgboost", "sklearn"} <= imported  # the probe saw the run's imports
    assert imported & set(RUN_NEVER) == set()
    assert len(list((tmp_path / "res").glob("*.json"))) == 2  # both cells ran

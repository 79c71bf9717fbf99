"""examples/: every example plan the README points to runs as documented."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ltr_bench.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _run(*args):
    return CliRunner().invoke(main, list(args))


def _write_letor(path: Path, n_queries: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    lines = []
    for q in range(1, n_queries + 1):
        for _ in range(8):
            x = rng.normal(size=5)
            label = int(np.clip(np.round(x[0] + rng.normal(scale=0.5)), 0, 2))
            feats = " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(x))
            lines.append(f"{label} qid:{q} {feats}")
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def example_run(tmp_path_factory):
    """``ltr-bench run --config examples/<name> --no-mlflow`` in a folder of its own, once per
    example for the module (the tests only read its results): name -> (run result, results
    folder). compare_settings.toml trains eight LightGBM models; two tests read one run."""
    done: dict = {}

    def ran(name: str):
        if name not in done:
            work = tmp_path_factory.mktemp(name.removesuffix(".toml"))
            results = work / "results"
            with pytest.MonkeyPatch.context() as mp:
                mp.chdir(work)
                cmd = ["run", "--config", str(EXAMPLES / name), "--no-mlflow"]
                done[name] = (_run(*cmd, "--results-dir", str(results)), results)
        return done[name]

    return ran


@pytest.mark.slow
@pytest.mark.parametrize("name", ["quickstart.toml", "compare_settings.toml"])
def test_generated_data_examples_run_and_report(name, example_run, monkeypatch):
    result, results = example_run(name)
    monkeypatch.chdir(results.parent)
    assert result.exit_code == 0, result.output
    report = _run("report", "--results-dir", str(results))
    assert report.exit_code == 0, report.output
    assert report.stdout.startswith("## synthetic")


def test_compare_settings_gives_one_row_per_labelled_configuration(example_run, monkeypatch):
    result, results = example_run("compare_settings.toml")
    monkeypatch.chdir(results.parent)
    assert result.exit_code == 0, result.output
    report = _run("report", "--results-dir", str(results), "--format", "csv", "--metric", "ndcg@10")
    assert report.exit_code == 0, report.output
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(report.stdout)))
    assert {r["ranker"] for r in rows} == {"lightgbm small", "lightgbm large"}
    # 2 folds x 2 seeds pooled into each cell
    assert {r["n_folds"] for r in rows if r["quantity"] == "ndcg@10"} == {"4"}


def test_the_folder_example_reads_a_letor_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "my_letor_data"
    data.mkdir()
    for split, seed in (("train", 0), ("vali", 1), ("test", 2)):
        _write_letor(data / f"{split}.txt", 12, seed)
    shutil.copy(EXAMPLES / "letor_folder.toml", tmp_path / "plan.toml")
    result = _run("run", "--config", "plan.toml", "--no-mlflow", "--results-dir", "results")
    assert result.exit_code == 0, result.output
    assert "my_letor_data" in result.stdout

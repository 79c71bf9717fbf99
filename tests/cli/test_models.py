"""``ltr-bench models``: one row per kept model with the fold run id and model URI MLflow gave
it (found in the store by the record's key, or taken from the record's own ``mlflow`` field),
``--best`` lists exactly what ``report --register`` registers, and the formats carry the same
rows. A store that does not exist is never created."""

from __future__ import annotations

import csv
import io
import json
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from ltr_bench.cli import main
from ltr_bench.results import ResultStore
from ltr_bench.results.labels import row_label


def _cli(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert not (result.exception and not isinstance(result.exception, SystemExit)), result.output
    return result


def _models(logged, *args):
    return _cli("models", "--results-dir", logged.root, "--tracking-uri", logged.uri, *args)


@pytest.mark.slow
def test_every_kept_model_is_listed_with_its_fold_run_and_logged_model(logged_models):
    result = _models(logged_models, "--format", "json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    records = {r.key: r for r in ResultStore(logged_models.root).records()}  # as stored
    assert sorted(row["key"] for row in rows) == sorted(r.key for r in logged_models.records)
    for row in rows:
        rec = records[row["key"]]
        run_id = logged_models.run_ids[rec.key]
        assert row["run_id"] == run_id
        assert row["model_uri"] == f"models:/{logged_models.model_ids[run_id]}"
        assert row["parent_run_id"] == logged_models.parents[run_id]
        label = row_label(rec.label, rec.dataset_options, rec.dataset_identity)
        assert (row["label"], row["ranker"], row["fold"], row["seed"]) == (
            label,
            rec.ranker,
            rec.fold,
            rec.seed,
        )
        assert row["variant"] and row["variant"] in row["label"]  # the options, in words
        assert row["model_dir"] == rec.model_dir and row["present"]
        assert (row["metric"], row["value"]) == ("ndcg@10", rec.metrics["ndcg@10"])
    # natural order: lightgbm's folds, then ridge's
    assert [(r["ranker"], r["fold"]) for r in rows] == [
        ("lightgbm", 1),
        ("lightgbm", 2),
        ("ridge", 1),
        ("ridge", 2),
    ]


@pytest.mark.slow
def test_csv_and_table_show_the_same_rows_as_json(logged_models):
    rows = json.loads(_models(logged_models, "--format", "json").stdout)
    parsed = list(csv.DictReader(io.StringIO(_models(logged_models, "--format", "csv").stdout)))
    assert [r["run_id"] for r in parsed] == [r["run_id"] for r in rows]
    assert [float(r["value"]) for r in parsed] == [r["value"] for r in rows]
    table = _models(logged_models, "--wide").stdout.splitlines()  # every column
    assert table[0].split()[:6] == ["label", "ranker", "dataset", "fold", "seed", "ndcg@10"]
    for line, row in zip(table[2:], rows):
        assert row["run_id"] in line and row["model_uri"] in line
        assert f"{row['value']:.4f}" in line


@pytest.mark.slow
@pytest.mark.parametrize("metric", [None, "map"])
def test_best_lists_the_models_report_register_registers(logged_models, metric):
    import mlflow

    name = f"best-{metric or 'default'}"
    report = ["report", "--dataset", "synthetic", "--tracking-uri", logged_models.uri]
    report += ["--metric", metric] if metric else []
    assert _cli(*report, "--register", name).exit_code == 0
    versions = mlflow.MlflowClient(logged_models.uri).search_model_versions(f"name='{name}'")
    best = ["--best", metric] if metric else ["--best"]
    rows = json.loads(_models(logged_models, *best, "--format", "json").stdout)
    assert sorted(r["run_id"] for r in rows) == sorted(v.run_id for v in versions)
    assert {r["metric"] for r in rows} == {metric or "ndcg@10"}
    # the choice is real: the other configuration has the lower mean
    means = {}
    for rec in logged_models.records:
        means.setdefault(rec.ranker, []).append(rec.metrics[metric or "ndcg@10"])
    assert {r["ranker"] for r in rows} == {max(means, key=lambda k: np.mean(means[k]))}


@pytest.mark.slow
def test_ranker_and_dataset_filter_and_a_filter_that_names_nothing_is_refused(logged_models):
    rows = json.loads(_models(logged_models, "--ranker", "ridge", "--format", "json").stdout)
    assert [r["ranker"] for r in rows] == ["ridge", "ridge"]
    result = _models(logged_models, "--dataset", "mslr30k")
    assert result.exit_code == 2
    assert "mslr30k" in result.stderr and "synthetic" in result.stderr


def test_ids_held_by_the_records_are_shown_only_with_no_mlflow(logged_models, tmp_path):
    root = tmp_path / "results"
    shutil.copytree(logged_models.root, root)
    store = ResultStore(root)
    for i, rec in enumerate(sorted(store.records(), key=lambda r: r.key)):
        store.note_mlflow(
            rec,
            {
                "tracking_uri": "http://elsewhere:5000",
                "experiment_id": "7",
                "parent_run_id": "p" * 32,
                "run_id": f"{i:032x}",
                "model_id": f"m-{i:032x}",
                "model_uri": f"models:/m-{i:032x}",
            },
        )
    absent = tmp_path / "absent" / "mlflow.db"
    result = _cli(
        "models", "--results-dir", root, "--tracking-uri", f"sqlite:///{absent}", "--format",
        "json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    # noted ids the store cannot confirm are not shown (the note may name another cell's run)
    assert all(r["run_id"] == "" and r["model_uri"] == "" for r in rows)
    assert "cannot confirm" in result.stderr
    rows = json.loads(
        _cli("models", "--results-dir", root, "--no-mlflow", "--format", "json").stdout
    )
    assert sorted(r["run_id"] for r in rows) == [f"{i:032x}" for i in range(4)]
    assert all(r["model_uri"] == f"models:/m-{r['run_id']}" for r in rows)
    assert not absent.parent.exists()


def test_without_a_store_the_models_are_listed_without_ids_and_no_store_is_made(
    logged_models, tmp_path
):
    absent = tmp_path / "mlflow.db"
    result = _cli("models", "--wide", "--results-dir", logged_models.root, "--tracking-uri", absent)
    assert result.exit_code == 0, result.output
    assert "no MLflow ids" in result.stderr and not absent.exists()
    lines = result.stdout.splitlines()[2:]
    assert len(lines) == 4 and all(line.split()[-2:] == ["-", "-"] for line in lines)


def test_no_results_or_no_kept_model_exit_1(tmp_path):
    result = _cli("models", "--results-dir", tmp_path / "none")
    assert result.exit_code == 1 and "no results folder" in result.stderr
    (tmp_path / "empty").mkdir()
    result = _cli("models", "--results-dir", tmp_path / "empty")
    assert result.exit_code == 1 and "no kept model" in result.stderr

"""``ltr-bench models`` shows only ids the store confirms: a note beside a record
(``<results>/.mlflow/<key>.json``) naming another cell's run, a run deleted in MLflow, or a
store that is gone or is not MLflow's, never puts an id on a row; each is said. A model
whose run is deleted in MLflow is exported with a note; a version below 1 gets our message."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest
from click.testing import CliRunner

from ltr_bench.cli import main
from ltr_bench.results import ResultStore


def _copy(logged, tmp_path):
    """A copy of the results folder and of the store (the tests change them)."""
    root = tmp_path / "results"
    shutil.copytree(logged.root, root)
    db = tmp_path / "mlflow.db"
    shutil.copy(logged.uri.removeprefix("sqlite:///"), db)
    return root, f"sqlite:///{db}"


def _models(root, uri, *args):
    result = CliRunner().invoke(
        main, ["models", "--results-dir", str(root), "--tracking-uri", uri, "--format", "json"]
    )
    assert not (result.exception and not isinstance(result.exception, SystemExit)), result.output
    return result


def _note_every_record(logged, root, *, swap: bool = False):
    """Notes with the runs the tracker logged; ``swap``: each lightgbm record's note names
    the ridge run of the same fold (well-formed, the wrong cell)."""
    store = ResultStore(root)
    records = store.records()
    by = {(r.ranker, r.fold): r for r in records}
    for rec in records:
        src = by[("ridge", rec.fold)] if swap and rec.ranker == "lightgbm" else rec
        run_id = logged.run_ids[src.key]
        model_id = logged.model_ids[run_id]
        store.note_mlflow(
            rec,
            {
                "tracking_uri": logged.uri,
                "experiment_id": "1",
                "parent_run_id": logged.parents[run_id],
                "run_id": run_id,
                "model_id": model_id,
                "model_uri": f"models:/{model_id}",
            },
        )
    return by


def test_a_note_naming_another_cells_run_does_not_put_it_on_the_row(logged_models, tmp_path):
    root, uri = _copy(logged_models, tmp_path)
    _note_every_record(logged_models, root, swap=True)
    result = _models(root, uri)
    assert result.exit_code == 0, result.output
    for row in json.loads(result.stdout):
        assert row["run_id"] == logged_models.run_ids[row["key"]]  # the store's, not the note's
    assert result.stderr.count("the fold run of another cell") == 2


def test_a_run_deleted_in_mlflow_is_not_listed_as_live(logged_models, tmp_path):
    root, uri = _copy(logged_models, tmp_path)
    by = _note_every_record(logged_models, root)
    gone = logged_models.run_ids[by[("ridge", 1)].key]
    con = sqlite3.connect(uri.removeprefix("sqlite:///"))
    con.execute("update runs set lifecycle_stage = 'deleted' where run_uuid = ?", (gone,))
    con.commit()
    con.close()
    result = _models(root, uri)
    assert result.exit_code == 0, result.output
    rows = {row["key"]: row for row in json.loads(result.stdout)}
    assert rows[by[("ridge", 1)].key]["run_id"] == ""
    assert rows[by[("ridge", 1)].key]["model_uri"] == ""
    assert rows[by[("ridge", 2)].key]["run_id"] == logged_models.run_ids[by[("ridge", 2)].key]
    assert f"{gone}" in result.stderr and "deleted in MLflow" in result.stderr


def test_a_store_moved_away_or_not_mlflows_gives_no_ids_and_says_why(logged_models, tmp_path):
    root, uri = _copy(logged_models, tmp_path)
    _note_every_record(logged_models, root)
    moved = tmp_path / "moved" / "mlflow.db"
    result = _models(root, f"sqlite:///{moved}")
    assert result.exit_code == 0, result.output
    assert all(r["run_id"] == "" for r in json.loads(result.stdout))
    assert "no MLflow ids" in result.stderr and "cannot confirm" in result.stderr
    assert not moved.parent.exists()

    own = tmp_path / "own.sqlite"
    con = sqlite3.connect(own)
    con.execute("create table people (name text)")
    con.commit()
    con.close()
    before = own.read_bytes()
    result = _models(root, f"sqlite:///{own}")
    assert result.exit_code == 1
    assert all(r["run_id"] == "" for r in json.loads(result.stdout))
    assert "without MLflow ids" in result.stderr and str(own) in result.stderr
    assert own.read_bytes() == before


def test_a_deleted_runs_model_exported_gets_a_note(logged_models, tmp_path):
    pytest.importorskip("onnxruntime")
    _, uri = _copy(logged_models, tmp_path)
    rec = next(r for r in logged_models.records if r.ranker == "ridge")
    run_id = logged_models.run_ids[rec.key]
    con = sqlite3.connect(uri.removeprefix("sqlite:///"))
    con.execute("update runs set lifecycle_stage = 'deleted' where run_uuid = ?", (run_id,))
    con.commit()
    con.close()
    for ref in (f"runs:/{run_id}/model", f"models:/{logged_models.model_ids[run_id]}"):
        out = tmp_path / "ridge.onnx"
        result = CliRunner().invoke(
            main, ["export", "--model", ref, "--output", str(out), "--tracking-uri", uri]
        )
        assert result.exit_code == 0, result.output
        assert f"MLflow run {run_id} is deleted" in result.output, result.output
        assert out.stat().st_size > 0


def test_a_version_below_1_gets_our_message(tmp_path):
    result = CliRunner().invoke(
        main,
        ["export", "--model", "models:/best/-1", "--output", str(tmp_path / "m.onnx")]
        + ["--tracking-uri", f"sqlite:///{tmp_path / 'none.db'}"],
    )
    assert result.exit_code == 2, result.output
    assert "versions are numbered from 1" in result.output and "stage" not in result.output
    assert not (tmp_path / "none.db").exists()

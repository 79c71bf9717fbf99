"""``ltr-bench predict`` and :mod:`ltr_bench.models.predict`: a kept model ranks a fold's test
split with exactly the cell's recorded metrics (the same scores, the same evaluation code), a
LETOR file read in chunks gives the same scores, and a model that does not fit the data, a
damaged folder, a newer format or a missing plugin is refused with the file and the cause."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ltr_bench.cli import main
from ltr_bench.models import load_model
from ltr_bench.models.predict import DataSpec, parse_data_spec, predict_file, predict_split
from ltr_bench.results import ResultStore
from ltr_bench.run.cells import expand_plan
from ltr_bench.run.harness import run_plan
from ltr_bench.run.plan import DatasetChoice, Plan, RankerChoice

SEED = 3
TINY = {"n_queries": 30, "docs_per_query": 8, "n_features": 5, "n_informative": 3}
FAST = {
    "lightgbm": {"n_estimators": 20, "num_leaves": 7, "min_data_in_leaf": 2},
    "neural": {},
    "lgmml": {"n_metrics": 8, "n_iter": 200},
}


def _run(name: str, root: Path, *, save_scores: bool = False, force: bool = False):
    plan = Plan(
        rankers=[RankerChoice(name, dict(FAST.get(name, {})))],
        datasets=[DatasetChoice("synthetic", dict(TINY))],
        folds=[1],
        seed=SEED,
        threads=1,
    )
    expanded = expand_plan(plan, score_repeats=1, save_scores=save_scores, keep_models=root)
    report = run_plan(expanded, ResultStore(root), force=force)
    assert not report.failed, [r.error for r in report.failed]
    return report.records[0]


@pytest.fixture(scope="module")
def lightgbm_cell(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    return _run("lightgbm", root, save_scores=True), root


def _split_prediction(rec, model):
    return predict_split(
        model,
        DataSpec(dataset="synthetic", fold=rec.fold, split="test"),
        seed=rec.seed,
        options=dict(TINY),
        metrics=rec.metrics_requested,
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", ["lightgbm", "neural", "lgmml"])
def test_predict_on_the_folds_test_split_gives_the_cells_recorded_metrics_exactly(name, tmp_path):
    rec = _run(name, tmp_path)
    assert rec.model_dir, rec.warnings
    pred = _split_prediction(rec, load_model(rec.model_dir))
    assert pred.metrics == rec.metrics  # every key, bit for bit
    assert pred.per_query == ResultStore(tmp_path).per_query(rec)
    assert not pred.notes  # the same data the model was fitted on


def test_the_cli_writes_the_same_trec_run_as_the_run_did(lightgbm_cell, tmp_path):
    rec, _ = lightgbm_cell
    out = tmp_path / "p.run"
    args = ["predict", "--model", rec.model_dir, "--data", "synthetic:1:test", "--seed", SEED]
    args += [x for k, v in TINY.items() for x in ("--dataset-option", f"{k}={v}")]
    args += ["--output", out, "--tag", rec.label]
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    assert out.read_text() == Path(rec.run_file).read_text()
    assert f"ndcg@10         {rec.metrics['ndcg@10']:.6f}" in result.output


def _write_letor(path: Path, X, y, qid, *, labels: bool = True) -> None:
    lines = []
    for row, label, q in zip(X, y, qid):
        feats = " ".join(f"{j}:{float(v)!r}" for j, v in enumerate(row, start=1))
        lines.append((f"{int(label)} " if labels else "") + f"qid:{int(q)} {feats}")
    path.write_text("\n".join(lines) + "\n")


def _test_split():
    from ltr_bench import data

    return data.load_fold("synthetic", 1, seed=SEED, options=dict(TINY)).test


def test_a_letor_file_in_small_chunks_gets_the_splits_scores_and_metrics(lightgbm_cell, tmp_path):
    rec, _ = lightgbm_cell
    model = load_model(rec.model_dir)
    test = _test_split()
    path = tmp_path / "test.txt"
    _write_letor(path, test.X, test.y, test.qid)
    pred = predict_file(model, path, metrics=rec.metrics_requested, chunk_rows=20, max_label=4)
    whole = _split_prediction(rec, model)
    np.testing.assert_array_equal(pred.scores, whole.scores)
    assert pred.metrics == rec.metrics


def test_a_file_without_labels_is_ranked_without_metrics(lightgbm_cell, tmp_path):
    rec, _ = lightgbm_cell
    test = _test_split()
    path = tmp_path / "unlabelled.txt"
    _write_letor(path, test.X, test.y, test.qid, labels=False)
    pred = predict_file(load_model(rec.model_dir), path, chunk_rows=50)
    assert pred.metrics is None and pred.y is None
    np.testing.assert_array_equal(pred.scores, load_model(rec.model_dir).predict(test.X, test.qid))


def _cli(*args):
    result = CliRunner().invoke(main, ["predict", *[str(a) for a in args]])
    assert not (result.exception and not isinstance(result.exception, SystemExit)), result.output
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def test_a_file_with_other_features_than_the_model_is_refused_naming_it(lightgbm_cell, tmp_path):
    rec, _ = lightgbm_cell
    test = _test_split()
    narrow, wide = tmp_path / "narrow.txt", tmp_path / "wide.txt"
    _write_letor(narrow, test.X[:, :-1], test.y, test.qid)
    _write_letor(wide, np.c_[test.X, test.X[:, :1]], test.y, test.qid)
    code, out = _cli("--model", rec.model_dir, "--data", narrow)
    assert code == 2 and str(narrow) in out and "fitted on 5" in out
    code, out = _cli("--model", rec.model_dir, "--data", wide)
    assert code == 2 and f"{wide}:1" in out  # the first line with a 6th feature
    assert "the 5 features the model in" in out and "this dataset" not in out
    assert "n_features" not in out  # no dataset option to set: the model decides


def _copy_model(rec, tmp_path) -> Path:
    import shutil

    folder = tmp_path / "copy"
    shutil.copytree(rec.model_dir, folder)
    return folder


def test_a_damaged_newer_or_pluginless_model_is_refused_naming_the_file(lightgbm_cell, tmp_path):
    rec, _ = lightgbm_cell
    data = ["--data", "synthetic:1:test", "--seed", SEED]
    damaged = _copy_model(rec, tmp_path / "d")
    native = next((damaged / "native").iterdir())
    native.write_bytes(native.read_bytes()[:-10])
    code, out = _cli("--model", damaged, *data)
    assert code == 1 and native.name in out
    for field, value, words in (
        ("format_version", 99, "newer"),
        ("ranker", "no-such-ranker", "no-such-ranker"),
    ):
        folder = _copy_model(rec, tmp_path / field)
        manifest = json.loads((folder / "manifest.json").read_text())
        manifest[field] = value
        (folder / "manifest.json").write_text(json.dumps(manifest))
        code, out = _cli("--model", folder, *data)
        assert code == 1 and "manifest.json" in out and words in out, out
    code, out = _cli("--model", tmp_path / "nowhere", *data)
    assert code == 2 and "nowhere" in out


def test_data_specs_name_a_file_or_a_datasets_fold_and_split(tmp_path):
    f = tmp_path / "x.txt"
    f.write_text("0 qid:1 1:0\n")
    assert parse_data_spec(str(f)).path == f
    assert parse_data_spec("synthetic") == DataSpec(dataset="synthetic", fold=1, split="test")
    assert parse_data_spec("mq2007:3:vali") == DataSpec(dataset="mq2007", fold=3, split="vali")
    assert parse_data_spec(str(tmp_path)) == DataSpec(dataset=str(tmp_path))  # a LETOR folder
    code, out = _cli("--model", tmp_path, "--data", "synthetic:1:dev")
    assert code == 2 and "split" in out
    code, out = _cli("--model", tmp_path, "--data", "queries.txt")
    assert code == 2 and "queries.txt: no such file" in out

"""``predict --model <an MLflow reference>`` names the model as the user gave it (never the
temporary folder it was downloaded into), a file with other features than the model's says
what the file must hold and how to train on one's own data first, and ``predict`` says where
it wrote each output."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from ltr_bench.cli import main
from ltr_bench.results import ResultStore
from ltr_bench.run.cells import expand_plan
from ltr_bench.run.harness import run_plan
from ltr_bench.run.plan import DatasetChoice, Plan, RankerChoice

TINY = {"n_queries": 12, "docs_per_query": 5, "n_features": 4, "n_informative": 2}
REF = "runs:/0123456789abcdef0123456789abcdef/model"


@pytest.fixture(scope="module")
def ridge_model(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("results")
    plan = Plan(
        rankers=[RankerChoice("ridge", {})],
        datasets=[DatasetChoice("synthetic", dict(TINY))],
        folds=[1],
        seed=1,
        threads=1,
    )
    report = run_plan(expand_plan(plan, score_repeats=1, keep_models=root), ResultStore(root))
    (rec,) = report.records
    return Path(rec.model_dir)


@pytest.fixture
def from_mlflow(ridge_model, monkeypatch):
    """MLflow answers ``REF`` with a copy of the kept model in the caller's temporary
    folder, as a real download does."""
    from ltr_bench.tracking import lookup, models

    monkeypatch.setattr(
        lookup, "model_uri_for", lambda ref, uri, notes=None: (REF, "sqlite:///x.db")
    )

    def download(uri, tracking_uri, dst):
        return Path(shutil.copytree(ridge_model, Path(dst) / "model"))

    monkeypatch.setattr(models, "download_model", download)


def _predict(*args) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["predict", *[str(a) for a in args]])
    assert not (result.exception and not isinstance(result.exception, SystemExit)), result.output
    return result.exit_code, result.stdout, result.stderr


def test_a_file_with_fewer_features_names_the_reference_and_says_to_train_first(
    from_mlflow, tmp_path
):
    narrow = tmp_path / "mine.txt"
    narrow.write_text("1 qid:1 1:0.5 2:0.1\n0 qid:1 1:0.2 2:0.3\n")
    code, _, err = _predict("--model", REF, "--data", narrow)
    assert code == 2, err
    assert f"but the model {REF} was fitted on 4" in err
    assert "ltr-bench-model-" not in err
    assert "must have the model's 4 features" in err and "train on it first" in err
    assert "ltr-bench run --ranker lightgbm --dataset <folder" in err


def test_predict_says_where_it_wrote_each_output(ridge_model, tmp_path):
    data = tmp_path / "q.txt"
    data.write_text("1 qid:1 1:0.5 2:0.1 3:0 4:1\n0 qid:1 1:0.2 2:0.3 3:1 4:0\n")
    outs = {k: tmp_path / f"out.{k}" for k in ("run", "qrels", "scores")}
    code, _, err = _predict(
        "--model", ridge_model, "--data", data, "--output", outs["run"], "--qrels",
        outs["qrels"], "--scores", outs["scores"],
    )  # fmt: skip
    assert code == 0, err
    for option, key in (("--output", "run"), ("--qrels", "qrels"), ("--scores", "scores")):
        assert f"wrote {outs[key]} ({option}" in err, err

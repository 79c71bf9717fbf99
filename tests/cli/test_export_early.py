"""``export`` refuses a bad invocation before it loads or converts anything (exit 2, naming
``--check`` or ``--output``), and removes the hidden temporary file a killed export left;
``predict --data`` says what a path that is not a file is."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from ltr_bench.cli import main
from ltr_bench.models import save_model
from ltr_bench.registry import make_ranker
from ltr_bench.testing.data import make_check_data

pytest.importorskip("onnxruntime")


def _cli(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert not (result.exception and not isinstance(result.exception, SystemExit)), result.output
    return result.exit_code, result.output


@pytest.fixture
def ridge_model(tmp_path) -> Path:
    X, y, qid = make_check_data(0, n_queries=20, n_features=5)
    ranker = make_ranker("ridge").fit(X, y, qid=qid)
    return save_model(ranker, tmp_path / "model", ranker_name="ridge", data_fingerprint="fp1")


@pytest.fixture
def no_work(monkeypatch):
    """Loading or converting the model fails the test: the refusal must come first."""
    import ltr_bench.cli.model_ref as model_ref
    import ltr_bench.models.onnx as onnx

    def never(*args, **kwargs):
        raise AssertionError("the model was loaded or converted before the refusal")

    monkeypatch.setattr(model_ref, "load_model_ref", never)
    monkeypatch.setattr(onnx, "onnx_model", never)


@pytest.mark.parametrize(
    ("check", "fragment"),
    [
        ("synthetic:9:test", "--check synthetic:9:test: synthetic has no fold 9 (its folds: 1..5)"),
        ("synthetic:1:dev", "--check synthetic:1:dev: the split must be one of"),
        ("synthetic:x", "--check synthetic:x: the fold must be a number"),
        ("nowhere/held.txt", "--check nowhere/held.txt: no such file"),
    ],
)
def test_a_bad_check_spec_exits_2_before_any_conversion(
    ridge_model, tmp_path, no_work, check, fragment
):
    out = tmp_path / "m.onnx"
    code, text = _cli("export", "--model", ridge_model, "--output", out, "--check", check)
    assert code == 2, text
    assert fragment in text and "--data" not in text, text
    assert not out.exists()


@pytest.mark.parametrize("output", ["", "  ", "newdir/"])
def test_an_output_that_names_no_file_exits_2_before_any_work(
    ridge_model, tmp_path, monkeypatch, no_work, output
):
    monkeypatch.chdir(tmp_path)
    before = sorted(os.listdir(tmp_path))
    code, text = _cli("export", "--model", ridge_model, "--output", output)
    assert code == 2, text
    assert "--output" in text and "give the file to write" in text, text
    assert sorted(os.listdir(tmp_path)) == before  # no file named newdir, no folder


def test_a_temporary_file_left_by_a_killed_export_is_removed_by_the_next(ridge_model, tmp_path):
    out = tmp_path / "ridge.onnx"
    stale = tmp_path / ".ridge.onnx.k1ll3d_x.tmp"  # what a SIGKILL before the rename leaves
    stale.write_bytes(b"a complete graph, never renamed")
    live = tmp_path / ".ridge.onnx.wr1t1ng_.tmp"  # another export, still writing
    live.write_bytes(b"")
    other = tmp_path / ".other.onnx.k1ll3d_x.tmp"  # not this output's
    other.write_bytes(b"")
    fd = os.open(live, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        code, text = _cli("export", "--model", ridge_model, "--output", out)
    finally:
        os.close(fd)
    assert code == 0, text
    assert out.stat().st_size > 0
    assert not stale.exists() and live.exists() and other.exists()
    assert sorted(p.name for p in tmp_path.glob(".ridge.onnx.*")) == [live.name]


def test_predict_data_on_a_named_pipe_says_what_it_is(ridge_model, tmp_path):
    fifo = tmp_path / "rows.fifo"
    os.mkfifo(fifo)
    code, text = _cli("predict", "--model", ridge_model, "--data", fifo)
    assert code == 2, text
    assert "a named pipe (FIFO)" in text and "no such file" not in text, text


def test_predict_qrels_on_unlabelled_rows_is_refused_before_ranking(
    ridge_model, tmp_path, monkeypatch
):
    import ltr_bench.models.predict as P

    def never(*args, **kwargs):
        raise AssertionError("the rows were ranked before --qrels was refused")

    monkeypatch.setattr(P, "predict_file", never)
    rows = tmp_path / "rows.txt"
    rows.write_text("".join(f"qid:{q} 1:0.{q} 2:0.5 3:0.1 4:0.2 5:0.3\n" for q in (1, 1, 2)))
    run, qrels = tmp_path / "out.run", tmp_path / "out.qrels"
    code, text = _cli(
        "predict", "--model", ridge_model, "--data", rows, "--output", run, "--qrels", qrels
    )
    assert code == 2, text
    assert f"--qrels {qrels}" in text and "has no labels" in text, text
    assert not run.exists() and not qrels.exists()

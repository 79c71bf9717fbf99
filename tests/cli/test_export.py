"""``ltr-bench export``: a kept model to one ONNX file, atomically, never over an input, with
``--check`` proving it on a data file as ``predict`` ranks it; bad invocations say why."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ltr_bench.cli import main
from ltr_bench.models import save_model
from ltr_bench.registry import make_ranker
from ltr_bench.testing.data import make_check_data

pytest.importorskip("onnxruntime")


def _cli(*args):
    result = CliRunner().invoke(main, ["export", *[str(a) for a in args]])
    assert not (result.exception and not isinstance(result.exception, SystemExit)), result.output
    return result.exit_code, result.output


@pytest.fixture
def ridge_model(tmp_path) -> Path:
    X, y, qid = make_check_data(0, n_queries=20, n_features=5)
    ranker = make_ranker("ridge").fit(X, y, qid=qid)
    return save_model(ranker, tmp_path / "model", ranker_name="ridge", data_fingerprint="fp1")


def _letor(path: Path, seed: int) -> Path:
    X, y, qid = make_check_data(seed, n_queries=15, n_features=5)
    lines = [
        f"{int(label)} qid:{int(q)} " + " ".join(f"{j}:{float(v)!r}" for j, v in enumerate(row, 1))
        for row, label, q in zip(X, y, qid)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_export_writes_a_checked_onnx_file_with_the_models_metadata(ridge_model, tmp_path):
    import onnx
    import onnxruntime as ort

    data = _letor(tmp_path / "held.txt", seed=5)
    out = tmp_path / "ship" / "ridge.onnx"
    code, text = _cli("--model", ridge_model, "--format", "onnx", "--output", out, "--check", data)
    assert code == 0, text
    assert "bound 1e-05: holds" in text and "metrics differ by at most" in text
    model = onnx.load(str(out))
    meta = {p.key: p.value for p in model.metadata_props}
    assert meta["ltr_bench.ranker"] == "ridge" and meta["ltr_bench.n_features"] == "5"
    assert meta["ltr_bench.data_fingerprint"] == '"fp1"' and meta["ltr_bench.input"] == "rows"
    X = np.random.default_rng(1).standard_normal((7, 5))
    from ltr_bench.models import load_model

    scores = ort.InferenceSession(str(out)).run(None, {"X": X})[0]
    np.testing.assert_allclose(scores, load_model(ridge_model).predict(X), rtol=1e-12)
    assert [p.name for p in out.parent.iterdir()] == ["ridge.onnx"]  # no temporary left


def test_an_output_that_would_replace_an_input_is_refused(ridge_model, tmp_path):
    data = _letor(tmp_path / "held.txt", seed=5)
    before = (ridge_model / "manifest.json").read_bytes()
    for target in (ridge_model / "manifest.json", ridge_model / "native" / "x.onnx", data):
        code, text = _cli("--model", ridge_model, "--output", target, "--check", data)
        assert code == 2 and "an input" in text and "Traceback" not in text, text
    assert (ridge_model / "manifest.json").read_bytes() == before
    assert not (ridge_model / "native" / "x.onnx").exists()


def test_without_onnx_installed_export_says_what_to_install(ridge_model, tmp_path, monkeypatch):
    out = tmp_path / "old.onnx"
    out.write_bytes(b"the previous file")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # find_spec then reports it missing
    code, text = _cli("--model", ridge_model, "--output", out)
    assert code == 1 and "pip install 'ltr-bench[onnx]'" in text and "Traceback" not in text
    assert out.read_bytes() == b"the previous file"


def test_a_missing_model_folder_is_a_bad_invocation(tmp_path):
    code, text = _cli("--model", tmp_path / "nothing", "--output", tmp_path / "m.onnx")
    assert code == 2 and "no such folder" in text


def test_the_cli_starts_without_importing_onnx():
    probe = "from ltr_bench.cli import main\nimport sys\nprint(sorted(sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert "'onnx'" not in out.stdout and "'onnxruntime'" not in out.stdout

"""``run --label``: a name with a control character is refused before any work (a newline
would split every table and CSV line), and a new label on cells that finished earlier under
another is said, not ignored."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from ltr_bench.cli import main

TINY = ["--dataset-option", "n_queries=20", "--dataset-option", "docs_per_query=5"]
TINY += ["--dataset-option", "n_features=4", "--dataset-option", "n_informative=2"]


def _run(tmp_path, *args):
    cmd = ["run", "--ranker", "ridge", "--dataset", "synthetic", *TINY, "--folds", "1"]
    cmd += ["--no-mlflow", "--keep-models", "none", "--results-dir", str(tmp_path / "res")]
    result = CliRunner().invoke(main, [*cmd, *args])
    assert not (result.exception and not isinstance(result.exception, SystemExit)), result.output
    return result


@pytest.mark.parametrize("label", ["two\\nlines", "tab\\there", "bell\\x07"])
def test_a_label_with_a_control_character_is_refused(tmp_path, monkeypatch, label):
    monkeypatch.setenv("LTR_BENCH_CACHE", str(tmp_path / "cache"))
    text = label.encode().decode("unicode_escape")
    result = _run(tmp_path, "--label", text)
    assert result.exit_code == 2, result.output
    assert "control character" in result.output and repr(text) in result.output
    assert not list((tmp_path / "res").glob("*.json"))


def test_a_new_label_on_a_finished_cell_is_said(tmp_path, monkeypatch):
    monkeypatch.setenv("LTR_BENCH_CACHE", str(tmp_path / "cache"))
    assert _run(tmp_path, "--label", "first").exit_code == 0
    result = _run(tmp_path, "--label", "second")
    assert result.exit_code == 0, result.output
    assert "1 cell(s) finished earlier under the label 'first' keep that name" in result.output
    assert "--force recomputes them under 'second'" in result.output
    again = _run(tmp_path, "--label", "first")
    assert "keep that name" not in again.output

"""``ltr-bench tune --output`` and ``--save-scores``: the same options, meaning and code path
as ``run``'s (declared once in :mod:`ltr_bench.cli.options`)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_reliability import make_folder

from ltr_bench.cli import main


def _invoke(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


@pytest.fixture
def data(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LTR_BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    return make_folder(tmp_path / "data")


def _tune(data, *extra):
    return _invoke(
        "tune", "--ranker", "ridge", "--dataset", data, "--trials", "2", "--no-mlflow",
        "--results-dir", "res", *extra,
    )  # fmt: skip


def test_tune_output_writes_the_tuned_records_as_run_does_and_save_scores_keeps_a_trec_file(
    data, tmp_path
):
    code, out = _tune(data, "--output", "tuned.json", "--save-scores")
    assert code == 0, out
    records = json.loads((tmp_path / "tuned.json").read_text())
    assert len(records) == 1
    rec = records[0]
    assert rec["label"].startswith("ridge[tuned,trials=2]")
    assert rec["config"]["tuning"]["trials_finished"] == 2
    run_file = Path(rec["run_file"])
    assert run_file.parent == (tmp_path / "res").resolve()
    lines = run_file.read_text().splitlines()
    n_test_docs = len((data / "test.txt").read_text().splitlines())
    assert len(lines) == n_test_docs
    assert all(len(line.split()) == 6 and line.split()[1] == "Q0" for line in lines)

    # a re-run skips the finished tuned cell and still exports it
    code, out = _tune(data, "--output", "again.json", "--save-scores")
    assert code == 0 and "finished earlier" in out, out
    assert json.loads((tmp_path / "again.json").read_text())[0]["key"] == rec["key"]


def test_tune_output_is_checked_before_any_trial_and_a_device_is_never_replaced(data, tmp_path):
    (tmp_path / "folder.json").mkdir()
    code, out = _tune(data, "--output", "folder.json")
    assert code == 2 and "--output" in out and "Traceback" not in out, out
    assert not (tmp_path / "res").exists() or not list((tmp_path / "res").glob("*.json"))
    if Path("/dev/full").exists():
        code, out = _tune(data, "--output", "/dev/full")
        assert code == 1 and "--output /dev/full: cannot write it" in out, out
        assert "ridge[tuned" in out  # the summary is printed all the same
        assert stat.S_ISCHR(Path("/dev/full").stat().st_mode)

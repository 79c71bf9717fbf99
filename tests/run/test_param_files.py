"""Issue 33, item 2: a file a ranker parameter names is part of the configuration's identity
by content (:mod:`ltr_bench.run.param_files`): an edited file is a new cell, never answered
with the old result; the same content is found finished."""

from __future__ import annotations

import json

import pytest
from test_hostile_cases import make_env

from ltr_bench.run.param_files import ParamFileError, param_file_fingerprints


@pytest.fixture
def env(tmp_path, monkeypatch, fake_rankers):
    return make_env(tmp_path, monkeypatch, fake_rankers)


def _run(e, path):
    return e.run(
        "run", "--ranker", "fake-file", "--param", f"fake-file.scale_file={path}",
        "--dataset", e.data, "--metrics", "ndcg@10", "--results-dir", "res", "--no-mlflow",
    )  # fmt: skip


def _records(e) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((e.cwd / "res").glob("*[0-9a-f].json"))]


def test_an_edited_file_named_by_a_parameter_is_a_new_cell_and_the_same_content_is_reused(env):
    path = env.cwd / "scale.txt"
    path.write_text("1\n")
    code, out = _run(env, path)
    assert code == 0, out
    (first,) = _records(env)
    assert first["config"]["param_files"]["scale_file"].startswith("sha256:")
    code, out = _run(env, path)
    assert code == 0 and "finished earlier, skipped" in out, out
    path.write_text("-1\n")  # the same path, another content: the reversed ranking
    code, out = _run(env, path)
    assert code == 0 and "finished earlier, skipped" not in out, out
    second = next(r for r in _records(env) if r["key"] != first["key"])
    assert second["metrics"]["ndcg@10"] != first["metrics"]["ndcg@10"]
    assert len(env.fakes.FITS) == 2
    path.write_text("1\n")  # back to the first content: its result is found again
    code, out = _run(env, path)
    assert code == 0 and "finished earlier, skipped" in out and len(env.fakes.FITS) == 2, out


def test_any_parameter_naming_an_existing_file_is_fingerprinted_and_others_are_not(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text("{}")
    b.write_text("{} ")
    got = param_file_fingerprints(
        {"config": str(a), "other": b, "optimizer": "adam", "n": 3, "gone": str(tmp_path / "x")}
    )
    assert set(got) == {"config", "other"} and got["config"] != got["other"]
    assert param_file_fingerprints({"config": "x" * 5000, "flag": True, "none": None}) == {}


def test_a_declared_file_that_cannot_be_read_is_named_before_any_work(env, monkeypatch):
    import ltr_bench.run.param_files as pf

    def denied(path):  # as an unreadable file does for a user who is not root
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(pf, "file_digest", denied)
    path = env.cwd / "scale.txt"
    path.write_text("1\n")
    with pytest.raises(ParamFileError, match="scale_file="):
        param_file_fingerprints({"scale_file": str(path)}, ("scale_file",))
    assert param_file_fingerprints({"other": str(path)}) == {}  # undeclared: not ours
    code, out = _run(env, path)
    assert code == 2 and "cannot read the file: Permission denied" in out, out
    assert "Traceback" not in out and not env.fakes.FITS, out


def test_a_file_edited_while_the_run_is_going_fails_its_cell_and_records_nothing(env, tmp_path):
    from ltr_bench.run.cells import expand_plan
    from ltr_bench.run.plan import DatasetChoice, Plan, RankerChoice
    from ltr_bench.run.unit import run_cell

    path = tmp_path / "scale.txt"
    path.write_text("1\n")
    plan = Plan(
        rankers=[RankerChoice("fake-file", {"scale_file": str(path)})],
        datasets=[DatasetChoice(str(env.data), {})],
        folds=[1],
    )
    (cell,) = expand_plan(plan).cells
    path.write_text("2\n")  # after planning, before the fit
    rec = run_cell(cell)
    assert rec.status == "failed" and rec.error_stage == "setup"
    assert "the file changed while the run was going" in rec.error and str(path) in rec.error
    path.write_text("1\n")  # the planned content again: fitted as planned
    assert run_cell(cell).ok
    # edited during the fit (the ranker read the old content, the key stands for it)
    code, out = env.run(
        "run", "--ranker", "ltrb_fake_rankers:EditedFileRanker",
        "--param", f"ltrb_fake_rankers:EditedFileRanker.scale_file={path}",
        "--dataset", env.data, "--metrics", "ndcg@10", "--results-dir", "res", "--no-mlflow",
    )  # fmt: skip
    assert code == 1 and "the file changed while the run was going" in out, out
    assert _records(env) == []

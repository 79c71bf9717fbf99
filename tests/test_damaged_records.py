"""Issue 27, damaged records: a damaged local result file or MLflow artifact is named (path,
field), left out of every computation and never deleted; a re-run of the same command repairs
it (a damaged MLflow copy is logged again from the local record, nothing recomputed), and the
report afterwards equals the report of an undamaged store. ``ltr-bench`` runs in-process on
tiny LETOR folders."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from test_hostile_cases import make_env
from test_reliability import FAKE, make_folder


@pytest.fixture
def env(tmp_path, monkeypatch, fake_rankers):
    """Working directory ``work``, cache, a one-fold LETOR folder ``data``."""
    return make_env(tmp_path, monkeypatch, fake_rankers)


def _two_rankers_two_folds(e, *extra):
    """fake-linear and fake-other on a two-fold folder: 4 records in ``res``."""
    data = e.root / "data2"
    if not data.exists():
        make_folder(data / "Fold1")
        make_folder(data / "Fold2")
    code, out = e.run(
        "run", "--ranker", f"{FAKE},fake-other", "--dataset", data,
        "--metrics", "ndcg@10,err@10", "--results-dir", "res", *extra,
    )  # fmt: skip
    assert code == 0, out
    return out


def _record_of(e, ranker: str, fold: int) -> Path:
    for p in (e.cwd / "res").glob("*.json"):
        d = json.loads(p.read_text())
        if d["ranker"] == ranker and d["fold"] == fold:
            return p
    raise AssertionError("no such record")


def test_a_non_object_json_and_a_wrongly_typed_field_are_named_and_set_aside_by_run(env):
    code, out = env.fake_run("--no-mlflow")
    assert code == 0, out
    rec = next((env.cwd / "res").glob("*.json"))
    d = json.loads(rec.read_text())
    d["fold"] = "one"
    rec.write_text(json.dumps(d))
    (env.cwd / "res" / "junk.json").write_text("[1, 2, 3]\n")
    code, out = env.fake_run("--no-mlflow")
    assert code == 0 and "Traceback" not in out, out
    assert f"res/{rec.name}: field 'fold': expected an integer, got a string" in out, out
    assert "junk.json: not a JSON object but a list" in out, out
    assert json.loads(rec.read_text())["fold"] == 1  # computed again ...
    assert json.loads(Path(str(rec) + ".damaged").read_text())["fold"] == "one"  # ... kept
    assert (env.cwd / "res" / "junk.json").exists()  # not ours to delete


def test_report_names_a_non_object_json_and_a_wrongly_typed_record_and_leaves_them_out(env):
    _two_rankers_two_folds(env, "--no-mlflow")
    rec = _record_of(env, "fake-other", 1)
    d = json.loads(rec.read_text())
    d["seed"] = "zero"
    rec.write_text(json.dumps(d))
    (env.cwd / "res" / "junk.json").write_text('"just a string"\n')
    code, out = env.run("report", "--results-dir", "res")
    assert code == 0 and "Traceback" not in out, out
    assert f"res/{rec.name}: field 'seed': expected an integer, got a string 'zero'" in out, out
    assert "junk.json: not a JSON object but a str" in out, out
    assert "fold/seed 1/0 left out: no result of fake-other for it" in out, out
    assert json.loads(rec.read_text())["seed"] == "zero"  # named, never rewritten or deleted


def test_report_names_a_damaged_per_query_file_and_blames_its_own_ranker(env):
    _two_rankers_two_folds(env, "--no-mlflow")
    rec = _record_of(env, "fake-other", 2)
    csv = rec.with_name(rec.stem + ".per_query.csv")
    lines = csv.read_text().splitlines()
    cells = lines[2].split(",")
    cells[1] = "abc"
    lines[2] = ",".join(cells)
    csv.write_text("\n".join(lines) + "\n")
    code, out = env.run("report", "--results-dir", "res")
    assert code == 0 and "Traceback" not in out, out
    assert f"res/{csv.name}:3: field" in out and "expected a number, got 'abc'" in out, out
    assert "fake-other / data2 fold 2" in out  # whose values they were
    assert "re-run its command to compute it again" in out, out
    assert "fold/seed 2/0 left out: no result of fake-other for it" in out, out
    assert f"{FAKE}: fold/seed" not in out


def test_a_nan_metric_is_not_counted_in_the_units_of_its_cell(env):
    _two_rankers_two_folds(env, "--no-mlflow")
    rec = _record_of(env, "fake-other", 2)
    d = json.loads(rec.read_text())
    d["metrics"]["ndcg@10"] = float("nan")
    rec.write_text(json.dumps(d))
    code, out = env.run("report", "--results-dir", "res", "--metric", "ndcg@10")
    assert code == 0, out
    assert "fake-other: ndcg@10 is NaN in fold/seed 2/0; its mean is over 1 of 2 units" in out
    row = next(line for line in out.splitlines() if line.startswith("| fake-other"))
    assert "(n=1)" in row, row


def _artifact(e, ranker: str, fold: int, name: str) -> Path:
    """The artifact ``name`` of the active fold run of ``ranker`` and ``fold``."""
    for rec in (e.cwd / "artifacts").rglob("record.json"):
        d = json.loads(rec.read_text())
        if d.get("ranker") == ranker and d.get("fold") == fold:
            path = rec.with_name(name)
            if _fold_run_ids(e.cwd / "m.db").get(rec.parent.parent.name) is not None:
                return path
    raise AssertionError(f"no artifact {name} of {ranker} fold {fold}")


def _fold_run_ids(db: Path) -> dict[str, str]:
    """run id -> cell key of every active fold run."""
    con = sqlite3.connect(db)
    try:
        rows = con.execute(
            "select r.run_uuid, k.value from runs r"
            " join tags role on role.run_uuid = r.run_uuid"
            " join tags k on k.run_uuid = r.run_uuid"
            " where role.key = 'ltr_bench_role' and role.value = 'fold'"
            " and k.key = 'ltr_bench_key' and r.lifecycle_stage = 'active'"
            " and r.status = 'FINISHED'"
        ).fetchall()
    finally:
        con.close()
    return dict(rows)


def test_report_names_a_damaged_record_artifact_in_mlflow_and_leaves_it_out(env):
    db = env.cwd / "m.db"
    _two_rankers_two_folds(env, "--tracking-uri", f"sqlite:///{db}")
    path = _artifact(env, "fake-other", 1, "record.json")
    d = json.loads(path.read_text())
    d["metrics"] = {"ndcg@10": "high"}
    path.write_text(json.dumps(d))
    code, out = env.run("report", "--dataset", "data2", "--tracking-uri", f"sqlite:///{db}")
    assert code == 0 and "Traceback" not in out, out
    assert "record.json: field 'metrics.ndcg@10': expected a number, got a string" in out, out
    assert "re-run its command to log it again from the local results" in out, out
    assert "fold/seed 1/0 left out: no result of fake-other for it" in out, out


def test_a_plain_rerun_replaces_damaged_or_missing_artifacts_without_refitting_and_the_report_is_as_before(  # noqa: E501
    env,
):
    """Four fold runs, four kinds of damage: a truncated record.json, a wrongly typed field,
    a deleted record.json and a per-query CSV with a non-number. The same command again
    logs each of them again from the local record (no fit), leaves one good run per cell,
    and the report (table, p-values) is the report of the undamaged store."""
    db = env.cwd / "m.db"
    uri = f"sqlite:///{db}"
    report = ("report", "--dataset", "data2", "--tracking-uri", uri)
    _two_rankers_two_folds(env, "--tracking-uri", uri)
    code, before = env.run(*report)
    assert code == 0 and "Paired tests" in before, before
    fits = len(env.fakes.FITS)

    truncated = _artifact(env, FAKE, 1, "record.json")
    typed = _artifact(env, FAKE, 2, "record.json")
    deleted = _artifact(env, "fake-other", 1, "record.json")
    csv = _artifact(env, "fake-other", 2, "per_query_metrics.csv")
    truncated.write_bytes(truncated.read_bytes()[:150])
    d = json.loads(typed.read_text())
    d["metrics"]["err@10"] = [0.5]
    typed.write_text(json.dumps(d))
    deleted.unlink()
    lines = csv.read_text().splitlines()
    lines[1] = lines[1].split(",")[0] + ",x" * (len(lines[1].split(",")) - 1)
    csv.write_text("\n".join(lines) + "\n")

    code, damaged = env.run(*report)  # nothing usable left: says so, and names all four
    assert code == 1 and "4 set aside as damaged" in damaged, damaged
    assert "Traceback" not in damaged and damaged.count("MLflow run ") == 4, damaged

    out = _two_rankers_two_folds(env, "--tracking-uri", uri)  # the same command again
    assert out.count("finished earlier, skipped") == 4, out
    assert out.count("logged again from the local record") == 4, out
    assert len(env.fakes.FITS) == fits  # nothing computed again
    cells = _fold_run_ids(db)
    assert len(cells) == 4 and len(set(cells.values())) == 4  # one good run per cell

    code, after = env.run(*report)
    assert code == 0 and "Traceback" not in after, after
    assert after == before  # same table, same p-values

    out = _two_rankers_two_folds(env, "--tracking-uri", uri)  # intact now: nothing replaced
    assert "logged again" not in out, out
    assert _fold_run_ids(db) == cells


def test_a_fold_run_that_differs_from_the_local_record_is_replaced_by_the_local_one(env):
    """The local record is the source of truth: an artifact edited into another valid
    record (a better score) is replaced on the next run of the command."""
    db = env.cwd / "m.db"
    uri = f"sqlite:///{db}"
    code, out = env.fake_run("--tracking-uri", uri)
    assert code == 0, out
    path = next((env.cwd / "artifacts").rglob("record.json"))
    d = json.loads(path.read_text())
    d["metrics"]["ndcg@10"] = 0.999
    path.write_text(json.dumps(d))
    code, out = env.fake_run("--tracking-uri", uri)
    assert code == 0, out
    assert "differs from the local record; logged again" in out, out
    local = json.loads(next((env.cwd / "res").glob("*.json")).read_text())
    (run_id,) = _fold_run_ids(db)
    stored = json.loads(next((env.cwd / "artifacts").rglob(f"{run_id}/**/record.json")).read_text())
    assert stored["metrics"] == local["metrics"] and stored["metrics"]["ndcg@10"] != 0.999

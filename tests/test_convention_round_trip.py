"""Issue 33, item 1: results scored under ``--convention`` profiles go run -> files -> report
and back for every profile, in the local store and in MLflow; a record that cannot give its
values back is never written; a store damaged by the old bug (a numpy scalar's ``repr`` in the
per-query CSV) is recomputed with a note on the next run. ``ltr-bench`` runs in-process on a
tiny LETOR folder."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from test_hostile_cases import make_env
from test_reliability import FAKE

from ltr_bench.evaluation.conventions import PROFILES, evaluate_profile, profile_keys
from ltr_bench.results import (
    ResultRecord,
    ResultStore,
    UnwritableRecordError,
    per_query_csv,
    read_per_query_csv,
    record_json,
)

METRICS = "ndcg@10,map,mrr,p@5,recall@10,err@10"


@pytest.fixture
def env(tmp_path, monkeypatch, fake_rankers):
    return make_env(tmp_path, monkeypatch, fake_rankers)


def _run(e, *extra):
    return e.run(
        "run", "--ranker", FAKE, "--dataset", e.data, "--metrics", METRICS,
        "--convention", ",".join(PROFILES), "--results-dir", "res", *extra,
    )  # fmt: skip


def test_every_profile_value_is_a_python_float_whatever_the_input_types():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 30).astype(np.int32)
    s = rng.normal(size=30).astype(np.float32)
    q = np.repeat(np.arange(5, dtype=np.int64), 6)
    for profile in PROFILES:
        means, per_query = evaluate_profile(y, s, q, METRICS.split(","), profile)
        assert set(per_query) == set(profile_keys(METRICS.split(","), profile))
        for key, values in per_query.items():
            assert all(type(v) is float for v in values), (profile, key, values)
            assert all(type(v) is float for v in means.values()), (profile, means)


def test_the_per_query_writer_refuses_what_is_not_a_number_and_writes_numbers_exactly():
    third = np.float64(1.0) / 3
    text = per_query_csv({"qid": [np.int64(7), "q8"], "mrr": [third, np.float32(0.5)]})
    assert "np.float64" not in text and "0.3333333333333333" in text
    for bad in ("0.5", None, True, [0.5], complex(1, 0), np.complex128(1)):
        with pytest.raises(UnwritableRecordError, match="per-query column 'mrr', query 2"):
            per_query_csv({"qid": [1, 2], "mrr": [0.5, bad]})
    with pytest.raises(UnwritableRecordError, match="unequal length"):
        per_query_csv({"qid": [1, 2], "mrr": [0.5]})


def test_a_record_that_could_not_be_read_back_is_not_written(tmp_path):
    rec = ResultRecord(key="k" * 64, plan_key="p", ranker="r", dataset="d", fold=1, seed=0)
    rec.metrics = {"mrr": object()}  # would be written as its repr: a string
    with pytest.raises(UnwritableRecordError, match="metrics.mrr"):
        record_json(rec)
    store = ResultStore(tmp_path / "res")
    rec.metrics = {"mrr": 0.5}
    rec.per_query = {"qid": [1], "mrr": ["np.float64(0.5)"]}
    with pytest.raises(UnwritableRecordError):
        store.save(rec)
    assert not (tmp_path / "res").exists() or not list((tmp_path / "res").iterdir())


@pytest.mark.parametrize("where", ["local", "mlflow"])
def test_every_profile_goes_run_files_report_and_back(env, where):
    db = env.cwd / "m.db"
    store = ["--no-mlflow"] if where == "local" else ["--tracking-uri", f"sqlite:///{db}"]
    code, out = _run(env, *store)
    assert code == 0 and "Traceback" not in out, out
    (path,) = (env.cwd / "res").glob("*[0-9a-f].json")
    rec = json.loads(path.read_text())
    per_query = read_per_query_csv(path.with_name(path.stem + ".per_query.csv"))
    for profile in PROFILES:
        for key in profile_keys(METRICS.split(","), profile):
            values = np.asarray(per_query[key], dtype=np.float64)  # numbers, read back
            mean = float(np.nanmean(values)) if np.any(~np.isnan(values)) else math.nan
            assert rec["metrics"][key] == pytest.approx(mean, abs=1e-15, nan_ok=True), key
    code, again = _run(env, *store)
    assert code == 0 and "finished earlier, skipped" in again, again
    source = ["--results-dir", "res"] if where == "local" else ["--tracking-uri", f"sqlite:///{db}"]
    for profile in PROFILES:
        code, report = env.run(
            "report", "--dataset", "data", "--convention", profile, "--metric", METRICS, *source
        )
        assert code == 0 and "damaged" not in report and "Traceback" not in report, report
        # the row's cells, over the tables the summary is split into to fit 120 columns
        row = " ".join(line for line in report.splitlines() if line.startswith(f"| {FAKE}"))
        for key in profile_keys(METRICS.split(","), profile):
            value = rec["metrics"][key]
            if not math.isnan(value):
                assert f"{value:.4f}" in row, (key, row)


def _numpy_repr(csv_path: Path) -> None:
    """Write one ``mrr_letor4`` value as the old writer did: ``np.float64(...)``."""
    lines = csv_path.read_text().splitlines()
    col = lines[0].split(",").index("mrr_letor4")
    row = lines[1].split(",")
    row[col] = f"np.float64({row[col]})"
    csv_path.write_text("\n".join([lines[0], ",".join(row), *lines[2:]]) + "\n")


@pytest.mark.parametrize("where", ["local", "mlflow"])
def test_a_store_damaged_by_a_numpy_repr_is_recomputed_with_a_note(env, where):
    db = env.cwd / "m.db"
    store = ["--no-mlflow"] if where == "local" else ["--tracking-uri", f"sqlite:///{db}"]
    code, out = _run(env, *store)
    assert code == 0, out
    (path,) = (env.cwd / "res").glob("*[0-9a-f].json")
    csv_path = path.with_name(path.stem + ".per_query.csv")
    good = csv_path.read_text()
    _numpy_repr(csv_path)
    if where == "mlflow":  # the old bug damaged the MLflow copy too
        (artifact,) = (env.cwd / "artifacts").rglob("per_query_metrics.csv")
        _numpy_repr(artifact)
    code, out = _run(env, *store)
    assert code == 0 and "Traceback" not in out, out
    assert "field 'mrr_letor4': expected a number, got 'np.float64(" in out, out
    assert "finished earlier, skipped" not in out, out  # computed again, not skipped
    assert csv_path.read_text() == good  # the same values, readable again
    assert "np.float64(" in Path(str(csv_path) + ".damaged").read_text()  # kept aside
    source = ["--results-dir", "res"] if where == "local" else ["--tracking-uri", f"sqlite:///{db}"]
    code, report = env.run(
        "report", "--dataset", "data", "--convention", "letor4", "--metric", "mrr", *source
    )
    assert code == 0 and "mrr_letor4" in report and "damaged" not in report, report
    mrr = json.loads(path.read_text())["metrics"]["mrr_letor4"]
    row = next(line for line in report.splitlines() if line.startswith(f"| {FAKE}"))
    assert f"| 1 | {mrr:.4f} |" in row, row  # one unit: the recomputed run, not the damaged

"""A new SQLite store is a copy of MLflow's empty schema (ltr_bench.tracking.store_template):
MLflow opens it as one it made, with its own Default experiment and artifact location, and a
template that is not MLflow's schema is never copied."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ltr_bench.tracking import Tracker, store_template
from ltr_bench.tracking.store_template import seed_new_store, template_path


def _tables(db: Path) -> set[str]:
    con = sqlite3.connect(db)
    try:
        return {r[0] for r in con.execute("select name from sqlite_master where type='table'")}
    finally:
        con.close()


def test_a_new_store_is_the_template_copied_and_mlflow_opens_it_as_its_own(tmp_path):
    template = template_path()
    assert template is not None
    uri = f"sqlite:///{tmp_path / 'a' / 'mlflow.db'}"
    tracker = Tracker(uri)
    tracker.check()
    assert template.is_file()  # built on first use, kept for the next store
    exp_id = tracker.experiment_id("synthetic")
    client = tracker.client
    assert client.get_experiment(exp_id).artifact_location.startswith(
        (tmp_path / "a" / "artifacts").as_uri()
    )
    # a store MLflow builds itself: the same tables, the same Default experiment
    other = tmp_path / "b" / "mlflow.db"
    other.parent.mkdir()
    import mlflow

    own = mlflow.MlflowClient(f"sqlite:///{other}")
    copied, made = client.get_experiment("0"), own.get_experiment("0")
    assert (copied.name, copied.artifact_location) == (made.name, made.artifact_location)
    assert _tables(tmp_path / "a" / "mlflow.db") == _tables(other)


def test_a_template_that_is_not_mlflows_schema_is_never_copied(tmp_path, monkeypatch):
    fake = tmp_path / "cache" / "mlflow-schema-x.db"
    fake.parent.mkdir()
    con = sqlite3.connect(fake)
    con.execute("create table mine (x)")
    con.commit()
    con.close()
    monkeypatch.setattr(store_template, "template_path", lambda: fake)
    monkeypatch.setattr(store_template, "_build", lambda target: False)  # cannot rebuild it
    db = tmp_path / "new.db"
    assert seed_new_store(db) is False
    assert not db.exists()  # nothing written: MLflow creates the store itself
    assert not list(tmp_path.glob(".new.db.*"))  # no temporary copy left behind


def test_a_store_copied_from_a_bad_template_is_rebuilt_by_mlflow_and_the_template_dropped(
    tmp_path, monkeypatch
):
    """A copy MLflow cannot open (here: a schema whose revision MLflow does not know) is
    rebuilt by MLflow from an empty file, and the template is discarded."""
    template = tmp_path / "cache" / "mlflow-schema-old.db"
    template.parent.mkdir()
    good = template_path()
    Tracker(f"sqlite:///{tmp_path / 'warm' / 'mlflow.db'}").check()  # the real template exists
    assert good is not None and good.is_file()
    template.write_bytes(good.read_bytes())
    con = sqlite3.connect(template)
    con.execute("update alembic_version set version_num = 'ffffffffffff'")
    con.commit()
    con.close()
    monkeypatch.setattr(store_template, "template_path", lambda: template)
    tracker = Tracker(f"sqlite:///{tmp_path / 'c' / 'mlflow.db'}")
    tracker.check()  # the first open fails on the revision; the store is rebuilt
    assert tracker.experiment_id("synthetic")
    assert not template.exists()
    con = sqlite3.connect(tmp_path / "c" / "mlflow.db")
    try:
        (revision,) = con.execute("select version_num from alembic_version").fetchone()
    finally:
        con.close()
    assert revision != "ffffffffffff"


@pytest.mark.parametrize("existing", [True, False])
def test_an_existing_store_is_never_replaced_by_the_template(tmp_path, existing):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = Tracker(uri)
    tracker.check()
    run_id = None
    if existing:
        exp = tracker.experiment_id("synthetic")
        run_id = tracker.client.create_run(exp).info.run_id
    again = Tracker(uri)
    again.check()
    if existing:
        assert again.client.get_run(run_id).info.run_id == run_id

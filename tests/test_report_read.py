"""Reading a dataset's fold runs back from MLflow (:func:`ltr_bench.tracking.reader.
fetch_fold_results`, what ``ltr-bench report`` waits for): each run's artifacts
come from the location its search returned, not from a lookup of the run per file (that
lookup was most of a report's time on a SQLite store: ``benchmarks/bench_report_read.py``)."""

from __future__ import annotations

from ltrb_logged import run_and_log


def test_fold_runs_are_read_back_whole_without_looking_any_run_up_again(tmp_path, monkeypatch):
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    from ltr_bench.tracking.reader import fetch_fold_results

    uri, _, report, run_ids = run_and_log(tmp_path, {"ridge": {}}, [1, 2])
    looked_up: list[str] = []
    get_run = SqlAlchemyStore.get_run

    def counted(self, run_id):
        looked_up.append(run_id)
        return get_run(self, run_id)

    monkeypatch.setattr(SqlAlchemyStore, "get_run", counted)
    records = fetch_fold_results("synthetic", uri)
    assert looked_up == []
    assert {r.mlflow["run_id"] for r in records} == set(run_ids.values())
    local = {r.key: r for r in report.records}
    for record in records:  # the record and its per-query values, as logged
        assert record.metrics == local[record.key].metrics
        assert record.per_query == local[record.key].per_query

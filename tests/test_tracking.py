"""MLflow tracking: store location, experiment/parent/nested layout, keys, no duplicates.
Runs are tiny fake rankers. (``ltr-bench ui`` and the MLflow UI in Chromium are in
``test_mlflow_links.py``: one UI server and one browser on one store for all of them.)

Isolation: tests that only read share one store per module (``ctx``; MLflow takes seconds to
create one), and no test may change it. Every test that runs more work or edits records gets
a store of its own (``own_ctx``; ``new_ctx``, with nothing logged, where a test's own runs
stand alone), so the tests pass in any order."""

from __future__ import annotations

import csv
import json
import socket
import subprocess
import sys
from pathlib import Path

import ltrb_fake_rankers as fakes
import numpy as np
import pytest
from click.testing import CliRunner
from ltrb_processes import untraced_env

from ltr_bench.cli import main
from ltr_bench.tracking import (
    artifact_root_for,
    default_tracking_uri,
    mlflow_metric_key,
    resolve_tracking_uri,
)

TINY = [
    "--dataset-option",
    "n_queries=30",
    "--dataset-option",
    "docs_per_query=6",
    "--dataset-option",
    "n_features=5",
    "--dataset-option",
    "n_informative=3",
]
BASE = ["run", "--dataset", "synthetic", *TINY]
RUN = [*BASE, "--ranker", "fake-linear,fake-other", "--folds", "1,2"]
METRIC_KEYS = {
    "ndcg_at_1",
    "ndcg_at_3",
    "ndcg_at_5",
    "ndcg_at_10",
    "ndcg_at_20",
    "ndcg_at_1_empty0",
    "ndcg_at_3_empty0",
    "ndcg_at_5_empty0",
    "ndcg_at_10_empty0",
    "ndcg_at_20_empty0",
    "map",
    "mrr",
    "err_at_10",
    "fit_seconds",
    "score_us_per_doc",
    "peak_rss_mb",
}


def _logged_store(work: Path, mp: pytest.MonkeyPatch, *, logged: bool = True) -> dict:
    """In ``work`` (made the working directory through ``mp``): the fake rankers installed
    and, if ``logged``, one CLI run (:data:`RUN`) logged to the default store."""
    fakes.use_workdir(work, mp)

    def invoke(*args):
        return CliRunner().invoke(main, list(args), catch_exceptions=False)

    ctx = {"work": work, "invoke": invoke, "mp": mp}
    if logged:
        first = invoke(*RUN)
        assert first.exit_code == 0, first.output
        ctx["client"] = _client(work)
    fakes.reset()
    return ctx


def _client(work: Path):
    """An MLflow client of ``work``'s default store. Made once the store exists: a client of
    a missing SQLite store creates it with MLflow's own migrations (seconds), not as
    ``ltr-bench run`` does."""
    from mlflow.tracking import MlflowClient

    return MlflowClient(default_tracking_uri(work))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The module's shared store: one CLI run logged. Read-only (see the module docstring)."""
    with pytest.MonkeyPatch.context() as mp:
        yield _logged_store(tmp_path_factory.mktemp("tracking"), mp)
    fakes.reset()


@pytest.fixture
def ctx(store, monkeypatch):
    """The shared store, for tests that only read it."""
    monkeypatch.chdir(store["work"])
    monkeypatch.syspath_prepend(str(store["work"] / "plugins"))
    fakes.reset()
    return store


@pytest.fixture
def own_ctx(tmp_path, monkeypatch):
    """A store of this test's own, in the same state as the shared one, free to change."""
    work = tmp_path / "tracking"
    work.mkdir()
    yield _logged_store(work, monkeypatch)
    fakes.reset()


@pytest.fixture
def new_ctx(tmp_path, monkeypatch):
    """As ``own_ctx``, with nothing logged yet (no store until a test's first run makes it):
    for a test whose runs stand alone, which a logged run first would only make longer."""
    work = tmp_path / "tracking"
    work.mkdir()
    yield _logged_store(work, monkeypatch, logged=False)
    fakes.reset()


def _experiment(client):
    exp = client.get_experiment_by_name("ltr-bench/synthetic")
    assert exp is not None
    return exp


def _runs(client, exp, role=None):
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    if role is not None:
        runs = [r for r in runs if r.data.tags.get("ltr_bench_role") == role]
    return runs


def _local_records(work: Path) -> dict[str, dict]:
    out = {}
    for p in (work / "mlflow_runs" / "results").glob("*.json"):
        d = json.loads(p.read_text())
        out[d["key"]] = d
    return out


def test_default_store_is_sqlite_in_cwd_with_artifacts_beside_it(ctx):
    work = ctx["work"]
    assert (work / "mlflow_runs" / "mlflow.db").is_file()
    exp = _experiment(ctx["client"])
    assert exp.artifact_location == (work / "mlflow_runs" / "artifacts" / "synthetic").as_uri()
    assert (work / "mlflow_runs" / "artifacts" / "synthetic").is_dir()


def test_one_parent_per_ranker_and_one_nested_run_per_fold(ctx):
    client = ctx["client"]
    exp = _experiment(client)
    parents = _runs(client, exp, "parent")
    folds = _runs(client, exp, "fold")
    assert sorted(p.data.tags["ranker"] for p in parents) == ["fake-linear", "fake-other"]
    assert all(p.info.status == "FINISHED" for p in parents)
    by_id = {p.info.run_id: p for p in parents}
    seen = sorted((r.data.tags["ranker"], r.data.tags["fold"]) for r in folds)
    assert seen == [
        ("fake-linear", "1"),
        ("fake-linear", "2"),
        ("fake-other", "1"),
        ("fake-other", "2"),
    ]
    for r in folds:
        parent = by_id[r.data.tags["mlflow.parentRunId"]]
        assert parent.data.tags["ranker"] == r.data.tags["ranker"]


def test_fold_runs_carry_the_metric_keys_params_and_tags_of_the_local_record(ctx):
    client = ctx["client"]
    local = _local_records(ctx["work"])
    for run in _runs(client, _experiment(client), "fold"):
        rec = local[run.data.tags["ltr_bench_key"]]
        assert "mlflow" not in rec  # tracking never writes into the local results
        assert METRIC_KEYS <= set(run.data.metrics)
        assert run.data.metrics["ndcg_at_10"] == pytest.approx(rec["metrics"]["ndcg@10"])
        assert run.data.metrics["ndcg_at_10_empty0"] == pytest.approx(
            rec["metrics"]["ndcg@10_empty0"]
        )
        assert run.data.metrics["fit_seconds"] == pytest.approx(rec["fit_seconds"])
        params = run.data.params
        assert params["scale"] == "1.0" and params["random_state"] == "0"
        assert params["seed"] == "0" and params["fold"] == run.data.tags["fold"]
        assert params["dataset"] == "synthetic" and params["dataset_option.n_queries"] == "30"
        tags = run.data.tags
        for split in ("train", "vali", "test"):
            assert tags[f"fingerprint_{split}"] == rec["fingerprints"][split]
        assert tags["ranker_distribution"] == "ltrb-fakes" and tags["ranker_version"] == "0.1"
        assert tags["version.numpy"] == np.__version__
        assert "convention.empty_query" in tags and "convention.ties" in tags
        assert tags["cpu_model"] and int(tags["cpu_count"]) >= 1
        assert "git_commit" in tags and tags["threads"] == "1"  # one thread by default


def test_parent_runs_carry_fold_means_and_standard_deviations(ctx):
    client = ctx["client"]
    exp = _experiment(client)
    for parent in _runs(client, exp, "parent"):
        kids = [
            r
            for r in _runs(client, exp, "fold")
            if r.data.tags["mlflow.parentRunId"] == parent.info.run_id
        ]
        values = np.array([k.data.metrics["ndcg_at_10"] for k in kids])
        assert parent.data.metrics["ndcg_at_10"] == pytest.approx(values.mean())
        assert parent.data.metrics["ndcg_at_10_std"] == pytest.approx(values.std(ddof=1))
        assert parent.data.metrics["n_folds"] == 2
        assert parent.data.params["scale"] == "1.0" and parent.data.params["seed"] == "0"


def test_artifacts_hold_the_resolved_config_and_per_query_metrics(ctx, tmp_path):
    client = ctx["client"]
    run = _runs(client, _experiment(client), "fold")[0]
    names = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert names == {"config.json", "per_query_metrics.csv", "record.json"}
    got = Path(client.download_artifacts(run.info.run_id, "per_query_metrics.csv", tmp_path))
    local = (
        ctx["work"]
        / "mlflow_runs"
        / "results"
        / (run.data.tags["ltr_bench_key"] + ".per_query.csv")
    )
    assert got.read_text() == local.read_text()
    rows = list(csv.DictReader(got.open()))
    assert "qid" in rows[0] and "ndcg@10_empty0" in rows[0]
    assert np.mean([float(r["ndcg@10"]) for r in rows]) == pytest.approx(
        run.data.metrics["ndcg_at_10"]
    )
    config = json.loads(
        Path(client.download_artifacts(run.info.run_id, "config.json", tmp_path)).read_text()
    )
    assert config["cell"]["params"]["random_state"] == 0
    assert config["plan"]["rankers"] == {"fake-linear": {}, "fake-other": {}}
    parent = _runs(client, _experiment(client), "parent")[0]
    assert {a.path for a in client.list_artifacts(parent.info.run_id)} == {"plan.json"}


def test_rerun_and_forced_rerun_do_not_duplicate_runs(own_ctx):
    ctx = own_ctx
    client = ctx["client"]
    exp = _experiment(client)
    before = {r.info.run_id for r in _runs(client, exp)}
    result = ctx["invoke"](*RUN)
    assert result.exit_code == 0 and fakes.FITS == []
    assert {r.info.run_id for r in _runs(client, exp)} == before
    result = ctx["invoke"](*RUN, "--folds", "1", "--force")
    assert result.exit_code == 0 and len(fakes.FITS) == 2
    after = _runs(client, exp)
    folds = [r for r in after if r.data.tags["ltr_bench_role"] == "fold"]
    assert len(folds) == 4  # fold 1's old runs replaced (soft-deleted), not duplicated
    assert len([r for r in after if r.data.tags["ltr_bench_role"] == "parent"]) == 2
    assert {r.info.run_id for r in after} - before == {
        r.info.run_id for r in folds if r.data.tags["fold"] == "1"
    }


def test_results_kept_locally_while_mlflow_was_unreachable_are_logged_on_rerun(new_ctx):
    ctx = new_ctx
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once the socket is closed
    result = ctx["invoke"](*RUN, "--seed", "9", "--tracking-uri", f"http://127.0.0.1:{port}")
    assert result.exit_code == 1
    assert f"MLflow at http://127.0.0.1:{port}" in result.stderr
    assert "re-run the same command" in result.stderr
    assert "Traceback (most recent" not in result.output
    assert len(fakes.FITS) == 4  # computed and saved all the same
    seeded = [r for r in _local_records(ctx["work"]).values() if r["seed"] == 9]
    assert len(seeded) == 4
    fakes.FITS.clear()
    result = ctx["invoke"](*RUN, "--seed", "9")
    assert result.exit_code == 0 and fakes.FITS == []
    client = _client(ctx["work"])  # the store, made by this re-run: nothing logged before
    exp = _experiment(client)
    logged = [r for r in _runs(client, exp, "fold") if r.data.params["seed"] == "9"]
    assert len(logged) == 4


def test_a_run_killed_after_logging_folds_is_completed_without_duplicates(own_ctx):
    """The fold runs are found again by their key and finish time, so re-running after a
    crash between logging and the end of the invocation logs nothing twice and ends the
    parents FINISHED with their aggregates. Then, on the same store (a store of its own costs
    a logged run): a later fold joins the existing parent of its configuration."""
    ctx = own_ctx
    client = ctx["client"]
    exp = _experiment(client)
    parents = _runs(client, exp, "parent")
    for p in parents:  # what a kill leaves: parents RUNNING, without aggregates
        client.update_run(p.info.run_id, status="RUNNING")
    # ... and the killed logging process's mark beside the records (every record has its note)
    (ctx["work"] / "mlflow_runs" / "results" / ".mlflow" / "logging-999999999.open").touch()
    before = {r.info.run_id for r in _runs(client, exp)}
    result = ctx["invoke"](*RUN)
    assert result.exit_code == 0, result.output
    after = _runs(client, exp)
    assert {r.info.run_id for r in after} == before and fakes.FITS == []
    assert all(p.info.status == "FINISHED" for p in _runs(client, exp, "parent"))

    # a later fold joins the existing parent
    result = ctx["invoke"](*BASE, "--ranker", "fake-linear", "--folds", "3")
    assert result.exit_code == 0, result.output
    parents = [p for p in _runs(client, exp, "parent") if p.data.tags["ranker"] == "fake-linear"]
    assert len(parents) == 1 and parents[0].data.metrics["n_folds"] == 3


def test_tracking_uri_resolution(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(tmp_path)
    default = resolve_tracking_uri()
    assert default == "sqlite:///" + str(tmp_path.resolve() / "mlflow_runs" / "mlflow.db")
    assert artifact_root_for(default) == (tmp_path.resolve() / "mlflow_runs" / "artifacts").as_uri()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow.example:5000")
    assert resolve_tracking_uri() == "http://mlflow.example:5000"
    assert artifact_root_for("http://mlflow.example:5000") is None
    assert resolve_tracking_uri("sqlite:////x/y.db") == "sqlite:////x/y.db"  # option wins
    assert resolve_tracking_uri("other.db") == "sqlite:///" + str(tmp_path.resolve() / "other.db")


def test_metric_keys_have_no_at_sign():
    assert mlflow_metric_key("ndcg@10") == "ndcg_at_10"
    assert mlflow_metric_key("ndcg@10_empty0") == "ndcg_at_10_empty0"
    assert mlflow_metric_key("err@10") == "err_at_10" and mlflow_metric_key("map") == "map"
    assert mlflow_metric_key("p@5") == "p_at_5"


def test_a_config_file_is_stored_with_its_parent_run(new_ctx, tmp_path):
    ctx = new_ctx
    plan = ctx["work"] / "plan.toml"
    plan.write_text(
        "seed = 21\nfolds = [1]\n[rankers.fake-linear]\nscale = 3.0\n"
        "[datasets.synthetic]\nn_queries = 30\ndocs_per_query = 6\n"
        "n_features = 5\nn_informative = 3\n"
    )
    result = ctx["invoke"]("run", "--config", str(plan))
    assert result.exit_code == 0, result.output
    client = _client(ctx["work"])
    (parent,) = [
        p for p in _runs(client, _experiment(client), "parent") if p.data.params["seed"] == "21"
    ]
    assert {a.path for a in client.list_artifacts(parent.info.run_id)} == {
        "plan.json",
        "plan.toml",
    }
    got = client.download_artifacts(parent.info.run_id, "plan.toml", tmp_path)
    assert Path(got).read_text() == plan.read_text()
    assert parent.data.params["scale"] == "3.0"


def test_mlflow_opens_on_the_comparison_with_readable_parents(ctx):
    """Model-training experiment (not MLflow's GenAI view); each parent's Description holds
    its fold means; its Duration is the compute time of its folds, not the wall span of
    every session that touched it."""
    client = ctx["client"]
    exp = _experiment(client)
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    folds = _runs(client, exp, "fold")
    for parent in _runs(client, exp, "parent"):
        note = parent.data.tags["mlflow.note.content"]
        # named as the run is: the label, then the data options it ran with in words
        name = parent.info.run_name.removesuffix(" @ synthetic")
        assert name.startswith(f"{parent.data.tags['label']} · ") and "n_queries=30" in name
        assert note.startswith(f"**{name}** on **synthetic**")
        assert f"| NDCG@10 | {parent.data.metrics['ndcg_at_10']:.4f} |" in note
        kids = [r for r in folds if r.data.tags["mlflow.parentRunId"] == parent.info.run_id]
        compute = sum(k.info.end_time - k.info.start_time for k in kids)
        assert parent.info.end_time - parent.info.start_time == compute


def test_no_html_report_is_drawn_unless_asked(ctx):
    client = ctx["client"]
    for parent in _runs(client, _experiment(client), "parent"):
        assert client.list_artifacts(parent.info.run_id, "report") == []


def test_with_attach_report_each_parent_carries_the_html_report_of_its_dataset(own_ctx, tmp_path):
    ctx = own_ctx
    result = ctx["invoke"](*RUN, "--attach-report")  # every cell finished: only the report
    assert result.exit_code == 0, result.output
    client = ctx["client"]
    for parent in _runs(client, _experiment(client), "parent"):
        names = {a.path for a in client.list_artifacts(parent.info.run_id, "report")}
        assert names == {"report/report.html"}
        page = Path(
            client.download_artifacts(parent.info.run_id, "report/report.html", tmp_path)
        ).read_text()
        assert "<h1>synthetic: 2 ranker(s) compared</h1>" in page


def test_report_plots_in_html_attaches_the_page_beside_the_figures(own_ctx, tmp_path):
    ctx = own_ctx
    plots = tmp_path / "plots"
    result = ctx["invoke"]("report", "--format", "html", "--plots", str(plots))
    assert result.exit_code == 0, result.output
    assert "plots and report.html attached to 2 parent run(s) under report/" in result.output
    client = ctx["client"]
    figures = {f"report/{p.name}" for p in plots.glob("*.png")}
    assert figures
    for parent in _runs(client, _experiment(client), "parent"):
        names = {a.path for a in client.list_artifacts(parent.info.run_id, "report")}
        assert names == figures | {"report/report.html"}


def test_learning_curves_are_step_metrics_of_the_fold_run(new_ctx):
    ctx = new_ctx
    # 2 curves x 600 iterations: more points than an MLflow server takes in one log_batch
    result = ctx["invoke"](
        *BASE, "--ranker", "fake-curves", "--folds", "1", "--param", "fake-curves.n_iter=600"
    )
    assert result.exit_code == 0, result.output
    client = _client(ctx["work"])
    exp = _experiment(client)
    (run,) = [r for r in _runs(client, exp, "fold") if r.data.tags["ranker"] == "fake-curves"]
    (record,) = [r for r in _local_records(ctx["work"]).values() if r["ranker"] == "fake-curves"]
    curves = record["learning_curves"]
    assert set(curves) == {"train_loss", "vali_ndcg@10"} and len(curves["train_loss"]) == 600
    for name, key in (
        ("train_loss", "curve.train_loss"),
        ("vali_ndcg@10", "curve.vali_ndcg_at_10"),
    ):
        history = sorted(client.get_metric_history(run.info.run_id, key), key=lambda m: m.step)
        assert [m.step for m in history] == list(range(1, len(curves[name]) + 1))
        assert [m.value for m in history] == curves[name]


def test_a_store_left_with_a_hot_journal_by_a_killed_writer_is_read_after_sqlites_recovery(
    tmp_path,
):
    # a logging process SIGKILLed mid-transaction leaves <db>-journal; the read-only probe
    # of the next command met "attempt to write a readonly database" and gave up on the store
    import signal
    import sqlite3

    from ltr_bench.tracking.store import _tables, check_not_foreign

    db = tmp_path / "mlflow.db"
    con = sqlite3.connect(db)
    for table in ("alembic_version", "experiments", "runs"):
        con.execute(f"create table {table} (x)")
    con.execute("insert into runs values (1)")
    con.commit()
    con.close()
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time\n"
            "con = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "con.execute('pragma cache_size=1'); con.execute('begin')\n"
            "for i in range(5000): con.execute('insert into runs values (?)', ('x' * 200,))\n"
            "print('in the middle', flush=True); time.sleep(60)\n",
            str(db),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=untraced_env(),  # an SQLite writer: none of our code to measure
    )
    assert writer.stdout.readline().strip() == "in the middle"
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=10)
    assert (tmp_path / "mlflow.db-journal").exists()  # hot: the case under test
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        sqlite3.connect(f"file:{db}?mode=ro", uri=True).execute("select count(*) from runs")
    assert _tables(db) == ["alembic_version", "experiments", "runs"]
    check_not_foreign(db, f"sqlite:///{db}")  # no TrackingError
    with sqlite3.connect(db) as con:  # only the uncommitted rows were undone
        assert con.execute("select count(*) from runs").fetchall() == [(1,)]

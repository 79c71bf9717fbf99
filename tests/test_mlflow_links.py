"""MLflow 3's links between what ltr-bench logs, read back the way a user meets them: through
MLflow's client, its REST API (``ltr-bench ui``) and the UI in Chromium.

A fold run lists its logged model as its output; the local record knows the ids of both; a
registered version is made from the logged model (the version's source is
``models:/<model_id>``, and the logged model names its versions, which the UI shows);
registering the same runs again adds no version; the registered model's description holds
the comparison; ``run --force`` never leaves a registered version pointing at nothing.
``ltr-bench ui`` serves the store, and its page /ltr-bench/ opens the runs tables with the
metric columns, sorted by NDCG@10, in MLflow's model-training view.

Isolation: the read-only tests share one store (``linked``); the tests that change a store
make their own."""

from __future__ import annotations

import contextlib
import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from ltrb_processes import CHROMIUM_ARGS, serve_ui, untraced_env

from ltr_bench.cli import main
from ltr_bench.results import ResultStore
from ltr_bench.tracking import default_tracking_uri

# the `ltr-bench ui` server's own code (its app, the exec of MLflow's server) runs only in that
# process; the docs snippets' process is untraced all the same (untraced_env)
pytestmark = pytest.mark.subprocess_coverage

TINY = {"n_queries": 30, "docs_per_query": 8, "n_features": 5, "n_informative": 3}
DATA = ["--dataset", "synthetic"] + [
    x for k, v in TINY.items() for x in ("--dataset-option", f"{k}={v}")
]
RUN = ["run", "--ranker", "lightgbm,ridge", "--param", "lightgbm.n_estimators=10", *DATA]


def _cli(*args) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert not (result.exception and not isinstance(result.exception, SystemExit)), result.output
    return result.exit_code, result.output


def _fold_runs(client, role: str = "fold") -> list:
    exp = client.get_experiment_by_name("ltr-bench/synthetic")
    return list(
        client.search_runs([exp.experiment_id], f"tags.ltr_bench_role = '{role}'", max_results=100)
    )


def _frame(n_features: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        rng.random((6, n_features)), columns=[f"f{j}" for j in range(1, n_features + 1)]
    )
    frame.insert(0, "qid", np.repeat([1, 2], 3))
    return frame


@pytest.fixture(scope="module")
def linked(tmp_path_factory):
    """One run of two configurations on two folds into the default store of a folder of its
    own, then ``report --register best``. Read-only for the tests that use it."""
    import mlflow

    work = tmp_path_factory.mktemp("links")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        mp.delenv("MLFLOW_TRACKING_URI", raising=False)
        code, out = _cli(*RUN, "--folds", "1,2")
        assert code == 0, out
        code, registered = _cli("report", "--register", "best")
        assert code == 0, registered
        uri = default_tracking_uri(work)
        yield {
            "work": work,
            "uri": uri,
            "client": mlflow.MlflowClient(uri),
            "registered": registered,
            "records": ResultStore(work / "mlflow_runs" / "results").records(),
        }


@pytest.mark.slow
def test_each_fold_run_lists_its_logged_model_as_its_output(linked):
    client = linked["client"]
    runs = _fold_runs(client)
    assert len(runs) == 4
    for run in runs:
        (output,) = run.outputs.model_outputs
        model = client.get_logged_model(output.model_id)
        assert model.source_run_id == run.info.run_id and model.name == "model"
        assert model.tags["ltr_bench_n_features"] == "5"


@pytest.mark.slow
def test_a_local_record_holds_the_ids_of_its_fold_run_and_its_logged_model(linked):
    client = linked["client"]
    records = linked["records"]
    assert len(records) == 4
    for rec in records:
        ids = rec.mlflow
        assert ids is not None and set(ids) == {
            "tracking_uri",
            "experiment_id",
            "parent_run_id",
            "run_id",
            "model_id",
            "model_uri",
        }
        assert ids["tracking_uri"] == linked["uri"]
        run = client.get_run(ids["run_id"])
        assert run.data.tags["ltr_bench_key"] == rec.key
        assert run.data.tags["mlflow.parentRunId"] == ids["parent_run_id"]
        assert run.info.experiment_id == ids["experiment_id"]
        assert [o.model_id for o in run.outputs.model_outputs] == [ids["model_id"]]
        assert ids["model_uri"] == f"models:/{ids['model_id']}"
    # the note is beside the record: the record file itself never names MLflow
    for path in (linked["work"] / "mlflow_runs" / "results").glob("*.json"):
        assert "mlflow" not in json.loads(path.read_text())


@pytest.mark.slow
def test_a_registered_version_is_made_from_the_logged_model_which_names_it(linked):
    client = linked["client"]
    versions = client.search_model_versions("name = 'best'")
    assert len(versions) == 2  # the best configuration's two folds
    by_run = {r.info.run_id: r for r in _fold_runs(client)}
    for v in versions:
        (output,) = by_run[v.run_id].outputs.model_outputs
        # MLflow's SQL registry keeps no model_id column: the id is the version's source
        assert v.source == f"models:/{output.model_id}"
        assert v.model_id in (None, output.model_id)
        assert v.tags["ltr_bench_model_id"] == output.model_id
        named = json.loads(client.get_logged_model(output.model_id).tags["mlflow.modelVersions"])
        assert named == [{"name": "best", "version": int(v.version)}]


@pytest.mark.slow
def test_the_registered_model_describes_the_comparison_its_configuration_won(linked):
    described = linked["client"].get_registered_model("best").description
    assert described.startswith("ltr-bench: Best of 2 configuration(s) on synthetic by mean")
    assert ("Against the baseline" in described) or ("It is the report's baseline" in described)


@pytest.mark.slow
def test_registering_the_same_runs_again_adds_no_version_and_says_so(linked, monkeypatch):
    monkeypatch.chdir(linked["work"])
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    code, out = _cli("report", "--register", "best")
    assert code == 0, out
    assert out.count("not registered again") == 2 and "registered best version" not in out
    assert len(linked["client"].search_model_versions("name = 'best'")) == 2


def test_register_with_two_datasets_is_refused_before_anything_is_read(tmp_path):
    code, out = _cli(
        "report", "--dataset", "a,b", "--register", "x", "--tracking-uri", tmp_path / "no.db"
    )
    assert code == 2 and "--register" in out and "one --dataset" in out, out
    assert not (tmp_path / "no.db").exists()


@pytest.mark.slow
def test_run_force_keeps_a_registered_model_loadable_and_its_old_run_out_of_the_results(
    tmp_path, monkeypatch
):
    import mlflow

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    run = ["run", "--ranker", "ridge", *DATA, "--folds", "1"]
    assert _cli(*run)[0] == 0
    code, out = _cli("report", "--register", "best")
    assert code == 0 and "registered best version 1" in out, out
    uri = default_tracking_uri(tmp_path)
    client = mlflow.MlflowClient(uri)
    (old,) = _fold_runs(client)
    mlflow.set_tracking_uri(uri)
    before = mlflow.pyfunc.load_model("models:/best/1").predict(_frame(5))

    code, out = _cli(*run, "--force")
    assert code == 0, out
    assert f"MLflow run {old.info.run_id}: superseded" in out and "best version 1" in out, out
    (new,) = _fold_runs(client)  # the report reads the recomputed run only
    assert new.info.run_id != old.info.run_id
    (kept,) = _fold_runs(client, "superseded")
    assert kept.info.run_id == old.info.run_id and kept.info.lifecycle_stage == "active"
    assert kept.data.tags["ltr_bench_superseded"].endswith("registered as best version 1")
    version = client.get_model_version("best", "1")
    assert client.get_logged_model(version.source.split("/")[-1]).status == "READY"
    after = mlflow.pyfunc.load_model("models:/best/1").predict(_frame(5))
    np.testing.assert_array_equal(np.asarray(after), np.asarray(before))
    (rec,) = ResultStore(tmp_path / "mlflow_runs" / "results").records()
    assert rec.mlflow["run_id"] == new.info.run_id  # the note of the old record is gone

    # a registered model's versions take one input: another dataset's models are refused
    letor = tmp_path / "letor"
    from test_reliability import make_folder

    make_folder(letor)  # 3 features, another dataset
    assert _cli("run", "--ranker", "ridge", "--dataset", letor)[0] == 0
    code, out = _cli("report", "--dataset", "letor", "--register", "best")
    assert code == 2 and "holds models of another input" in out and "synthetic" in out, out
    assert len(client.search_model_versions("name = 'best'")) == 1
    assert Path(tmp_path / "mlflow_runs" / "mlflow.db").is_file()


def _snippets(page: str) -> list[str]:
    """The Python blocks of a docs page that load a model through MLflow."""
    text = (Path(__file__).resolve().parent.parent / "docs" / page).read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    return [b for b in blocks if "mlflow.pyfunc.load_model" in b]


#: Runs each snippet (argv[1]: JSON, page -> code) in a child forked from one process that
#: imported NumPy, pandas and MLflow and set no tracking URI: each snippet meets MLflow as a
#: fresh process would, without a Python start and MLflow import of its own (seconds each).
#: The parent also does once what each load would otherwise do again in its child: import
#: the model's code (scikit-learn under it) and MLflow's map of the installed distributions
#: for its check of the model's requirements (a scan of every distribution's files; seconds).
#: Neither touches a tracking store: what is checked, no stray store, is the children's.
#: Prints, per page, the child's exit status, its error and whether MLflow's default store
#: (``mlflow.db`` in the working directory) exists after it.
_FORKED_SNIPPETS = """
import json, os, sys, traceback
import numpy, pandas, mlflow
import ltr_bench.models, ltr_bench.tracking.models
from mlflow.utils.requirements_utils import warn_dependency_requirement_mismatches
warn_dependency_requirement_mismatches(["mlflow"])
assert not os.path.exists("mlflow.db")
done = {}
for page, code in json.loads(sys.argv[1]).items():
    err = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(err[0])
        try:
            exec(compile(code, page, "exec"), {"__name__": "__main__"})
        except BaseException:
            os.write(err[1], traceback.format_exc()[-2000:].encode())
            os._exit(1)
        os._exit(0)
    os.close(err[1])
    with os.fdopen(err[0]) as fh:
        error = fh.read()
    status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    done[page] = {"status": status, "error": error, "stray": os.path.exists("mlflow.db")}
print(json.dumps(done))
"""


@pytest.fixture(scope="module")
def snippet_runs(linked) -> dict:
    """Each docs page's model-loading snippet, as written but for the ids filled in, run in
    ``linked``'s folder with a frame of two rows (``_FORKED_SNIPPETS``): page -> result."""
    import subprocess
    import sys

    ids = next(r for r in linked["records"] if r.label == "ridge").mlflow
    codes = {}
    for page in ("mlflow.md", "models.md"):
        (snippet,) = _snippets(page)
        codes[page] = (
            "import numpy as np, pandas as pd\n"
            "frame = pd.DataFrame(np.zeros((2, 5)), columns=[f'f{j}' for j in range(1, 6)])\n"
            "frame.insert(0, 'qid', 1)\n"
            + snippet.replace("<model id>", ids["model_id"]).replace("<fold run id>", ids["run_id"])
            + "assert len(scores) == 2, scores\n"
        )
    # untraced: this process stands for a user's fresh one; the code of ours it runs (the
    # pyfunc's load_context and predict) is measured in process by test_tracking_models
    env = untraced_env()
    env.pop("MLFLOW_TRACKING_URI", None)
    done = subprocess.run(
        [sys.executable, "-c", _FORKED_SNIPPETS, json.dumps(codes)],
        cwd=linked["work"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("page", ["mlflow.md", "models.md"])
def test_the_docs_snippets_load_a_model_as_written_and_create_no_stray_store(snippet_runs, page):
    (snippet,) = _snippets(page)
    assert "mlflow.set_tracking_uri(" in snippet
    ran = snippet_runs[page]
    assert ran["status"] == 0, ran["error"]
    assert not ran["stray"]  # MLflow 3's default store, unmade


# ------------------------------------------------------------------ ltr-bench ui and Chromium
# One `ltr-bench ui` (seconds of CPU to start: two Python processes importing MLflow's server)
# and one Chromium for the module; each browser test opens a fresh context (its own
# localStorage: a fresh browser as far as MLflow's page can tell). Every full load of MLflow's
# React app costs seconds of CPU, so each test loads it once and moves on inside the page.


@pytest.fixture(scope="module")
def ui(linked):
    """``ltr-bench ui`` on ``linked``'s store, one for the module's UI tests (they only
    read it, and starting the UI takes seconds): its base URL."""
    with serve_ui(linked["work"]) as base:
        yield base


@pytest.fixture(scope="module")
def _launched() -> Iterator[dict]:
    """The module's Chromium once a test has launched it (``browser``), closed at the end."""
    opened: dict = {}
    yield opened
    if opened:
        opened["browser"].close()
        opened["playwright"].stop()


@pytest.fixture
def browser(chromium, _launched):
    """The module's one Chromium (``chromium``: the path, or the skip where there is none),
    launched by the first test that asks for it."""
    if not _launched:
        from playwright.sync_api import sync_playwright

        playwright = sync_playwright().start()
        _launched["playwright"] = playwright
        _launched["browser"] = playwright.chromium.launch(
            executable_path=chromium, args=CHROMIUM_ARGS
        )
    return _launched["browser"]


@contextlib.contextmanager
def _fresh_page(browser, width: int = 1500, height: int = 1000):
    """A page in a new browser context: no cookies, cache or localStorage of another test."""
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        yield context.new_page()
    finally:
        context.close()


def _get(base: str, path: str) -> dict:
    with urllib.request.urlopen(base + path, timeout=10) as resp:
        return json.load(resp)


@pytest.mark.slow
def test_ui_serves_the_store_and_its_rest_api_finds_the_experiment(ui):
    found = _get(ui, "/api/2.0/mlflow/experiments/search?max_results=100")
    names = [e["name"] for e in found.get("experiments", [])]
    assert "ltr-bench/synthetic" in names
    with urllib.request.urlopen(ui + "/ltr-bench/", timeout=10) as resp:
        page = resp.read().decode()
    assert "metrics.`ndcg_at_10`" in page and "<script" in page


@pytest.mark.slow
def test_the_rest_api_shows_the_links_and_the_ui_shows_them_in_chromium(
    linked, ui, browser, tmp_path
):
    """A fresh browser at /ltr-bench/ lands on the experiments list in the model-training
    view; the runs table it set up shows the metric columns, one row per configuration, best
    NDCG@10 first (MLflow keeps a runs table's columns in the browser: without /ltr-bench/ a
    fresh browser shows no metric column at all); a fold run's page shows its logged model
    and the registered version made from it; the Models tab shows each version once."""
    from urllib.parse import parse_qs, urlsplit

    record = next(r for r in linked["records"] if r.label == "ridge" and r.fold == 1)
    ids = record.mlflow
    base = ui
    run = _get(base, f"/api/2.0/mlflow/runs/get?run_id={ids['run_id']}")["run"]
    assert run["outputs"]["model_outputs"] == [{"model_id": ids["model_id"], "step": 0}]
    version = _get(base, "/api/2.0/mlflow/model-versions/get?name=best&version=1")
    registered_run = version["model_version"]["run_id"]
    exp = ids["experiment_id"]
    # 1600 wide: the runs table draws only the columns in view, and the four checked below
    # are in view at that width
    with _fresh_page(browser, width=1600) as page:
        page.goto(base + "/ltr-bench/")
        page.wait_for_url("**/#/experiments?workflowType=machine_learning", timeout=60_000)
        # the runs table, as /ltr-bench/ left it: the UI puts the state it loaded into its
        # address
        page.goto(f"{base}/#/experiments/{exp}/runs")
        page.get_by_role("columnheader", name="ndcg_at_10").first.wait_for(timeout=60_000)
        for name in ("map", "fit_seconds", "score_us_per_doc"):
            assert page.get_by_role("columnheader", name=name).count() >= 1, name
        state = parse_qs(urlsplit(page.url).fragment.partition("?")[2])
        assert state["searchFilter"] == ["tags.ltr_bench_role = 'parent'"]
        assert state["orderByKey"] == ["metrics.`ndcg_at_10`"]
        assert state["orderByAsc"] == ["false"]
        # the fold run's page: its logged model, and the registered version made from it
        page.goto(f"{base}/#/experiments/{exp}/runs/{registered_run}")
        heading = page.get_by_text("Logged models (1)")
        heading.wait_for(timeout=60_000)
        heading.scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / "fold-run.png"))
        body = page.inner_text("body")
        assert "Registered models" in body and "best" in body, body[-1500:]
        # the experiment's Models tab: four logged models, two of them registered
        page.goto(f"{base}/#/experiments/{exp}/models")
        page.get_by_text("Registered models").first.wait_for(timeout=60_000)
        page.get_by_text("v2").first.wait_for(timeout=60_000)
        page.screenshot(path=str(tmp_path / "models-tab.png"))
        table = page.inner_text("body")
        # each registered version once, in its logged model's row; the other two: "-"
        assert len(re.findall(r"\bbest\s+v1\b", table)) == 1, table[-2000:]
        assert len(re.findall(r"\bbest\s+v2\b", table)) == 1, table[-2000:]


@pytest.mark.slow
def test_the_address_ui_prints_lands_on_the_runs_table_not_the_genai_overview(linked, ui, browser):
    """A fresh browser at the address `ltr-bench ui` prints: the experiment's runs table in
    the model-training view; then, as a user clicks, experiments list -> experiment lands
    on the runs table again (MLflow 3.17 opens an experiment on its GenAI overview unless
    the browser holds the model-training view)."""
    from ltr_bench.cli.ui import address_lines
    from ltr_bench.tracking.lookup import ltr_experiments

    base = ui
    (line,) = address_lines(linked["uri"], base, ltr_experiments(linked["uri"]))
    link = re.search(r"open (\S+)", line).group(1)
    exp = linked["client"].get_experiment_by_name("ltr-bench/synthetic").experiment_id
    assert link == f"{base}/ltr-bench/#/experiments/{exp}/runs"
    runs = re.compile(rf"#/experiments/{exp}/runs\?.*workflowType=machine_learning")
    with _fresh_page(browser) as page:
        page.goto(link)
        page.wait_for_url(runs, timeout=60_000)
        page.get_by_role("columnheader", name="ndcg_at_10").first.wait_for(timeout=60_000)
        page.get_by_text("ridge").first.wait_for(timeout=60_000)  # a configuration's row
        body = page.inner_text("body")
        assert "Detect Issues in Your Traces" not in body and "overview" not in page.url
        page.goto(base + "/#/experiments")
        page.get_by_role("columnheader", name="Time created").wait_for(timeout=60_000)
        page.get_by_test_id("experiment-list-item-link").first.click()
        page.wait_for_url(runs, timeout=60_000)
        page.get_by_role("columnheader", name="ndcg_at_10").first.wait_for(timeout=60_000)

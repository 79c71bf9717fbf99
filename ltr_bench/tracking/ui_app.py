"""The MLflow UI as ``ltr-bench ui`` serves it: MLflow's own server plus one page, ``/ltr-bench/``,
that opens it on the comparison.

MLflow 3 keeps a runs table's visible columns, sort order and filter in the browser's
``localStorage`` (key ``MLflowLocalStorage-1.1-ExperimentPage-["<id>"]-ReactComponentState``,
written by the UI itself), so a fresh browser shows no metric column until the user ticks one
among dozens. A page on the UI's own origin can write that state before the UI reads it: for
every experiment of the store, ``/ltr-bench/`` adds the headline metric and timing columns to
the selected columns (in a fresh browser instead of MLflow's Source / Models / Dataset
columns, which ltr-bench runs leave empty), sorts by NDCG@10 (best first) and shows the
configurations' parent runs
(``tags.ltr_bench_role = 'parent'``: one row per configuration with its fold means), unless
the user already chose a sort order or a filter; then it closes the MLflow Assistant panel,
switches MLflow to its model-training view (:data:`BROWSER_SETTINGS`: MLflow 3.17 keeps the
view in the browser and defaults to GenAI, whose experiment page is a traces overview) and
goes to the route after its ``#``: ``/ltr-bench/#/experiments/<id>/runs`` (what ``ltr-bench
ui`` prints, :func:`runs_link`) lands on that experiment's runs table, plain ``/ltr-bench/``
on the experiments list, both with ``workflowType=machine_learning`` in the address. Nothing
else changes: the columns and the view stay the user's to change, and the plain UI is at
``/``.

Registered with MLflow as the server app ``ltr-bench`` (entry point group ``mlflow.app``), so
``mlflow server --app-name ltr-bench`` (what ``ltr-bench ui`` runs) serves it; MLflow calls
:func:`create_app` in each server worker, where the store's settings are already in the
environment. This module is imported only there.
"""

from __future__ import annotations

import json

from ltr_bench.tracking.store import mlflow_metric_key

__all__ = [
    "BROWSER_SETTINGS",
    "COLUMNS",
    "PATH",
    "create_app",
    "page_html",
    "runs_link",
    "runs_route",
]

#: where the page is served
PATH = "/ltr-bench/"
#: the runs-table columns added for every experiment (MLflow's canonical column keys)
COLUMNS = tuple(
    f"metrics.`{mlflow_metric_key(m)}`" for m in ("ndcg@1", "ndcg@5", "ndcg@10", "map", "err@10")
) + ("metrics.`fit_seconds`", "metrics.`score_us_per_doc`", "metrics.`ranker_peak_mb`")
SORT_KEY = f"metrics.`{mlflow_metric_key('ndcg@10')}`"
PARENTS_ONLY = "tags.ltr_bench_role = 'parent'"
#: MLflow 3's own initial state of an experiment page (read off a fresh browser), used when
#: the browser has none yet; the UI reads the whole object, so every key is given
INITIAL_STATE = {
    "searchFilter": "",
    "orderByKey": "attributes.start_time",
    "orderByAsc": False,
    "startTime": "ALL",
    "lifecycleFilter": "Active",
    "datasetsFilter": [],
    "modelVersionFilter": "All Runs",
    "selectedColumns": ["attributes.`Source`", "attributes.`Models`", "attributes.`Dataset`"],
    "columnOrder": [],
    "columnWidths": {},
    "runsExpanded": {},
    "runsPinned": [],
    "runsHidden": [],
    "runsVisibilityMap": {},
    "runsHiddenMode": "FIRST_10_RUNS",
    "viewMaximized": False,
    "runListHidden": False,
    "isAccordionReordered": False,
    "useGroupedValuesInCharts": True,
    "hideEmptyCharts": True,
    "groupBy": None,
    "groupsExpanded": {},
    "autoRefreshEnabled": True,
    "globalLineChartConfig": {
        "xAxisKey": "step",
        "lineSmoothness": 0,
        "selectedXAxisMetricKey": "",
    },
}

#: MLflow 3.17's own browser settings (``localStorage``, ``<key>_v<version>`` holding JSON)
#: the page writes: the model-training view (the UI's default is its GenAI view, whose
#: experiment page is a traces overview) and the GenAI "Detect Issues" and registry promotion
#: pop-ups, which cover the page until dismissed, marked as seen
BROWSER_SETTINGS = {
    "mlflow.workflowType_v1": "machine_learning",
    "mlflow.detectIssues.guidanceShown_v1": True,
    "_mlflow_model_registry_promo_modal_dismissed_v1": True,
}


def runs_route(experiment_id: str) -> str:
    """The UI route (after ``#``) of an experiment's runs table in the model-training view:
    what :data:`PATH` followed by ``#`` and this route opens, once it has set the columns."""
    return f"/experiments/{experiment_id}/runs?workflowType=machine_learning"


def runs_link(base: str, experiment_id: str) -> str:
    """The address to print for an experiment: ``<base>/ltr-bench/#/experiments/<id>/runs``
    (``base`` like ``http://127.0.0.1:5000``), which prepares the runs table's columns and
    lands on it in the model-training view."""
    return base.rstrip("/") + PATH + "#" + runs_route(experiment_id).split("?")[0]


_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>ltr-bench: opening MLflow</title></head>
<body><p id="status">Preparing the MLflow runs tables for the comparison &hellip;</p>
<script>
const COLUMNS = __COLUMNS__;
const INITIAL = __INITIAL__;
const SORT_KEY = __SORT_KEY__;
const PARENTS_ONLY = __PARENTS_ONLY__;
const SETTINGS = __SETTINGS__;
const key = id => "MLflowLocalStorage-1.1-ExperimentPage-" + JSON.stringify([String(id)])
  + "-ReactComponentState";
function prepare(id) {
  let state = null;
  try { state = JSON.parse(localStorage.getItem(key(id))); } catch (e) { state = null; }
  if (!state || typeof state !== "object") {
    // a fresh browser: MLflow's initial state without its Source / Models / Dataset
    // columns, which ltr-bench runs leave empty
    state = JSON.parse(JSON.stringify(INITIAL));
    state.selectedColumns = [];
  }
  const columns = new Set(state.selectedColumns || []);
  COLUMNS.forEach(c => columns.add(c));
  state.selectedColumns = Array.from(columns);
  if (!state.orderByKey || state.orderByKey === INITIAL.orderByKey) {
    state.orderByKey = SORT_KEY; state.orderByAsc = false;
  }
  if (!state.searchFilter) state.searchFilter = PARENTS_ONLY;
  localStorage.setItem(key(id), JSON.stringify(state));
}
fetch("../ajax-api/2.0/mlflow/experiments/search", {
  method: "POST", headers: {"Content-Type": "application/json"},
  body: JSON.stringify({max_results: 1000})})
  .then(r => r.json())
  .then(d => {
    (d.experiments || []).forEach(e => prepare(e.experiment_id));
    // the Assistant panel opens by itself on a first visit and hides half the table
    localStorage.setItem("mlflow.assistant.panelOpen_v1", "false");
    localStorage.setItem("mlflow.assistant.fab.autoOpenedOnFirstLoad_v1", "true");
  })
  .catch(e => { document.getElementById("status").textContent = "MLflow did not answer: " + e; })
  .finally(() => location.replace("../" + target(location.hash)));
// MLflow 3 keeps its view (GenAI by default) in the browser; the model-training view shows
// an experiment's runs table, the Models tab and the registry without GenAI's pop-ups
Object.entries(SETTINGS).forEach(([k, v]) => localStorage.setItem(k, JSON.stringify(v)));
// the route asked for after /ltr-bench/ (#/experiments/<id>/runs), else the experiments list,
// with workflowType=machine_learning in its query (the address wins over what is stored)
function target(hash) {
  const [route, query] = (hash.startsWith("#/") ? hash : "#/experiments").split("?");
  const params = new URLSearchParams(query || "");
  params.set("workflowType", "machine_learning");
  return route + "?" + params.toString();
}
</script></body></html>
"""


def page_html() -> str:
    """The page served at :data:`PATH` (no external resources)."""
    return (
        _PAGE.replace("__COLUMNS__", json.dumps(list(COLUMNS)))
        .replace("__INITIAL__", json.dumps(INITIAL_STATE))
        .replace("__SORT_KEY__", json.dumps(SORT_KEY))
        .replace("__PARENTS_ONLY__", json.dumps(PARENTS_ONLY))
        .replace("__SETTINGS__", json.dumps(BROWSER_SETTINGS))
    )


def create_app():
    """MLflow's server app with :data:`PATH` added in front of its routes (MLflow's app
    object is kept, so its start-up and shutdown hooks still run)."""
    from mlflow.server.fastapi_app import app
    from starlette.responses import HTMLResponse, RedirectResponse
    from starlette.routing import Route

    page = page_html()

    async def serve(request):
        return HTMLResponse(page, headers={"Cache-Control": "no-store"})

    async def slash(request):
        return RedirectResponse(PATH)

    app.router.routes[:0] = [
        Route(PATH, serve, methods=["GET"]),
        Route(PATH.rstrip("/"), slash, methods=["GET"]),
    ]
    return app

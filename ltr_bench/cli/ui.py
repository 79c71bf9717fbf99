"""``ltr-bench ui``: the real MLflow UI on the results store, opened on the comparison."""

from __future__ import annotations

import os
import sys

import click

from ltr_bench.cli import options
from ltr_bench.errors import UsageError

CONTEXT = options.CONTEXT


def _err(message: str) -> None:
    click.echo(message, err=True)


@click.command("ui", cls=options.Command, context_settings=CONTEXT)
@options.tracking_uri
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on (loopback by default; 0.0.0.0 exposes it).",
)
@click.option("--port", default=5000, show_default=True, type=click.IntRange(1, 65535))
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Server worker processes (MLflow's own default, 4, suits a shared server).",
)
@click.pass_context
def ui_cmd(
    ctx: click.Context, tracking_uri: str | None, host: str, port: int, workers: int
) -> None:
    """Start the MLflow UI on the results store (foreground; Ctrl-C stops it).

    Runs `python -m mlflow ui --app-name ltr-bench` (MLflow's server plus the page
    /ltr-bench/, which opens the runs tables with the metric columns shown, sorted by NDCG@10,
    in MLflow's model-training view) with the store's URI and artifact root. Prints the
    address of each experiment's runs table (/ltr-bench/#/experiments/<id>/runs). MLflow's
    background job runner (GenAI scorers, not used by ltr-bench) is off unless
    MLFLOW_SERVER_ENABLE_JOB_EXECUTION is set.

    Exit codes: 1 no store there (nothing is created: run `ltr-bench run` first), 2 an
    SQLite file that is not an MLflow store (left as it is) or a bad invocation.
    """
    from ltr_bench.tracking import artifact_root_for, check_store, resolve_tracking_uri

    uri = resolve_tracking_uri(tracking_uri)
    if uri.startswith(("http://", "https://")):
        raise UsageError(f"{uri} is already an MLflow server: open it in a browser")
    # MLflow's server would create a missing store and migrate a foreign SQLite file
    check_store(uri, writes=False)
    cmd = [
        sys.executable,
        "-m",
        "mlflow",
        "ui",
        "--backend-store-uri",
        uri,
        "--host",
        host,
        "--port",
        str(port),
        "--workers",
        str(workers),
    ]
    from importlib.metadata import entry_points

    served = any(ep.name == "ltr-bench" for ep in entry_points(group="mlflow.app"))
    if served:
        cmd += ["--app-name", "ltr-bench"]
    os.environ.setdefault("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false")
    root = artifact_root_for(uri)
    if root is not None:
        cmd += ["--default-artifact-root", root]
    # MLflow keeps a runs table's columns in the browser; /ltr-bench/ (tracking.ui_app) sets
    # them to the headline metrics, sorted by NDCG@10, parents only, then opens the
    # model-training view (MLflow 3 opens in its GenAI view otherwise).
    if served:
        from ltr_bench.tracking.lookup import ltr_experiments

        for line in address_lines(uri, f"http://{host}:{port}", ltr_experiments(uri)):
            _err(line)
    else:  # an install from before the app existed: MLflow's plain UI
        _err(
            f"MLflow UI for {uri}: open http://{host}:{port}/#/experiments?workflowType="
            "machine_learning (Ctrl-C to stop; reinstall ltr-bench, pip install -e ., for "
            "the page that opens the runs tables with their metric columns)"
        )
    sys.stderr.flush()
    sys.stdout.flush()
    if os.name == "posix" and not os.environ.get("LTR_BENCH_UI_NO_EXEC"):
        os.execv(sys.executable, cmd)  # become the server: signals reach it directly
    import subprocess

    proc = subprocess.Popen(cmd)
    try:
        ctx.exit(proc.wait())
    except KeyboardInterrupt:
        proc.terminate()
        ctx.exit(proc.wait())


def address_lines(uri: str, base: str, experiments: list[tuple[str, str]]) -> list[str]:
    """What ``ltr-bench ui`` prints: for each ltr-bench experiment (``(name, id)``) the address
    of its runs table in the model-training view (:func:`ltr_bench.tracking.ui_app.runs_link`),
    then the experiments list; with one experiment, its runs table alone."""
    from ltr_bench.tracking.ui_app import PATH, runs_link

    every = base + PATH
    if len(experiments) == 1:
        ((name, eid),) = experiments
        return [f"MLflow UI for {uri}: open {runs_link(base, eid)} ({name}; Ctrl-C to stop)"]
    if not experiments:
        return [f"MLflow UI for {uri}: open {every} (Ctrl-C to stop)"]
    width = max(len(name) for name, _ in experiments)
    lines = [f"MLflow UI for {uri} (Ctrl-C to stop); open the runs table of"]
    lines += [f"  {name.ljust(width)}  {runs_link(base, eid)}" for name, eid in experiments]
    lines.append(f"  {'every experiment'.ljust(width)}  {every}")
    return lines

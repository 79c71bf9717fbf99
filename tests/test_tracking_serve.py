"""A registered model version served by ``mlflow models serve --env-manager local``: the
``/invocations`` scores are those of ``predict``, and rows of one query that are not
together are answered 400 with the cause in the message (not MLflow's generic
"unexpected error"). The server listens on 127.0.0.1 and is always stopped."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import numpy as np
import pytest
from click.testing import CliRunner
from ltrb_logged import TINY, run_and_log

from ltr_bench.cli import main
from ltr_bench.models import load_model


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _post(port: int, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/invocations",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _wait_ready(port: int, proc: subprocess.Popen, limit: float) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"mlflow models serve exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"mlflow models serve was not ready within {limit:.0f} s")


@pytest.mark.slow
def test_a_served_model_version_scores_as_predict_and_refuses_split_queries(tmp_path):
    uri, _, report, _ = run_and_log(tmp_path, {"ridge": {}}, [1])
    (rec,) = report.records
    result = CliRunner().invoke(
        main, ["report", "--dataset", "synthetic", "--tracking-uri", uri, "--register", "served"]
    )
    assert result.exit_code == 0, result.output

    from ltr_bench import data

    test = data.load_fold("synthetic", 1, seed=0, options=dict(TINY)).test
    columns = ["qid", *[f"f{j}" for j in range(1, 6)]]
    rows = np.c_[test.qid, test.X].tolist()
    expected = load_model(rec.model_dir).predict(test.X, test.qid)

    port = _free_port()
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri}
    command = [sys.executable, "-m", "mlflow", "models", "serve", "-m", "models:/served/1"]
    command += ["--env-manager", "local", "-p", str(port), "-h", "127.0.0.1"]
    proc = subprocess.Popen(
        command,
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait_ready(port, proc, limit=180)
        status, body = _post(port, {"dataframe_split": {"columns": columns, "data": rows}})
        assert status == 200, body
        np.testing.assert_allclose(np.asarray(body["predictions"]), expected, rtol=0, atol=1e-12)

        # the first query's rows, then another query's, then the first query's again
        first = int(np.flatnonzero(test.qid == test.qid[0]).size)
        split = rows[: first - 1] + rows[first : first + 2] + rows[first - 1 : first]
        status, body = _post(port, {"dataframe_split": {"columns": columns, "data": split}})
        assert status == 400, body
        assert "contiguous" in body["message"] and "unexpected error" not in body["message"]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

"""One query of 100 documents answered by ``mlflow models serve`` on the loopback address,
against the same model's ``predict`` in process.

Usage::

    python benchmarks/bench_serving.py                      # ridge and lightgbm, 200 requests
    python benchmarks/bench_serving.py --rankers ridge --requests 500

Per ranker: fitted on a generated pool of MSLR-WEB30K's shape (136 features, ~120 documents
per query; LightGBM 100 trees, one thread), kept as an ltr-bench model folder
(``ltr_bench.models.save_model``) and saved as the MLflow Model ``run`` logs
(``ltr_bench.tracking.models.RankerPyfunc``, ``mlflow.pyfunc.save_model``), then served by
``mlflow models serve --env-manager local -h 127.0.0.1``. After 20 warm-up requests the
client times ``--requests`` POSTs of one query's 100 rows (``dataframe_split`` JSON: ``qid``
and ``f1..f136``) from sending to the parsed answer; p50 and p99 in ms. In process, on the
same rows: the kept model's ``predict`` (``LoadedModel.predict``, what the pyfunc calls) and
the pyfunc's own ``predict`` on the request's pandas frame (the frame-to-array step
included), p50 of as many calls. The server's scores are checked against ``predict``'s.
Wall-clock on a shared machine; the load average is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import warnings
from pathlib import Path

import numpy as np

MODELS = {
    "ridge": {"n_jobs": 1},
    "lightgbm": {"n_estimators": 100, "early_stopping_rounds": None, "n_jobs": 1},
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _post(port: int, body: bytes) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/invocations",
        data=body,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def _wait_ready(port: int, proc: subprocess.Popen, limit: float) -> float:
    start = time.monotonic()
    while time.monotonic() - start < limit:
        if proc.poll() is not None:
            raise RuntimeError(f"mlflow models serve exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=2):
                return time.monotonic() - start
        except OSError:
            time.sleep(0.25)
    raise RuntimeError(f"mlflow models serve was not ready within {limit:.0f} s")


def _times(fn, n: int) -> np.ndarray:
    out = np.empty(n)
    for i in range(n):
        t0 = time.perf_counter()
        fn()
        out[i] = time.perf_counter() - t0
    return out * 1e3


def _load() -> str:
    return "/".join(f"{v:.2f}" for v in os.getloadavg())


def _save_pyfunc(folder: Path, path: Path) -> None:
    import logging

    import mlflow

    from ltr_bench.tracking.models import MODEL_ARTIFACT, RankerPyfunc

    logging.getLogger("mlflow").setLevel(logging.ERROR)  # set by its import: its advice

    mlflow.pyfunc.save_model(
        path=str(path), python_model=RankerPyfunc(), artifacts={MODEL_ARTIFACT: str(folder)}
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rankers", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--ready-limit", type=float, default=240.0, metavar="SECONDS")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] = "false"

    import pandas as pd

    from ltr_bench.data.loading import load_fold
    from ltr_bench.models import load_model, save_model
    from ltr_bench.registry import make_ranker
    from ltr_bench.tracking.models import MODEL_ARTIFACT, RankerPyfunc

    options = {"n_queries": 150, "docs_per_query": 120, "n_features": 136, "n_informative": 40}
    train = load_fold("synthetic", 1, seed=0, options=options).train
    rows = np.ascontiguousarray(train.X[:100])
    columns = ["qid", *[f"f{j}" for j in range(1, 137)]]
    qid = np.zeros(100, dtype=np.int64)
    body = json.dumps(
        {"dataframe_split": {"columns": columns, "data": np.c_[qid, rows].tolist()}}
    ).encode()
    frame = pd.DataFrame(np.c_[qid, rows], columns=columns)
    frame["qid"] = frame["qid"].astype(np.int64)
    print(f"one query of 100 rows x 136 features; {args.requests} calls each; load {_load()}")
    print(
        "| ranker | served p50 ms | served p99 ms | in process predict p50 ms | "
        "pyfunc predict on the frame p50 ms | served / predict | ready after s | load |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|", flush=True)
    for name in args.rankers:
        ranker = make_ranker(name, dict(MODELS[name])).fit(train.X, train.y, qid=train.qid)
        with tempfile.TemporaryDirectory(prefix="bench-serving-") as tmp:
            folder = save_model(ranker, Path(tmp) / "kept", ranker_name=name)
            model = load_model(folder)
            expected = model.predict(rows, qid)
            _save_pyfunc(folder, Path(tmp) / "pyfunc")
            pyfunc = RankerPyfunc()

            class Context:
                artifacts = {MODEL_ARTIFACT: str(folder)}

            pyfunc.load_context(Context())
            local = _times(lambda: model.predict(rows, qid), args.requests)
            framed = _times(lambda: pyfunc.predict(None, frame), args.requests)
            port = _free_port()
            command = [sys.executable, "-m", "mlflow", "models", "serve", "-m"]
            command += [str(Path(tmp) / "pyfunc"), "--env-manager", "local"]
            command += ["-p", str(port), "-h", "127.0.0.1"]
            proc = subprocess.Popen(
                command,
                cwd=tmp,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            try:
                ready = _wait_ready(port, proc, args.ready_limit)
                answer = _post(port, body)
                got = np.asarray(answer["predictions"], dtype=np.float64)
                np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
                for _ in range(20):
                    _post(port, body)
                served = _times(lambda: _post(port, body), args.requests)
            finally:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        p50, p99 = np.percentile(served, [50, 99])
        print(
            f"| {name} | {p50:.3g} | {p99:.3g} | {np.median(local):.3g} | "
            f"{np.median(framed):.3g} | {p50 / np.median(local):.0f}x | {ready:.1f} | "
            f"{_load()} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

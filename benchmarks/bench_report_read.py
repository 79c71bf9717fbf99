"""What reading a dataset's fold runs back from MLflow costs (what ``ltr-bench report`` waits
for): each run's two artifacts read from the location its search returned, against
``MlflowClient.download_artifacts(run_id, ...)``, which looks the run up in the store again
for every file.

In one process (MLflow imported and the store opened once, before any timing), ``--repeat``
pairs, the order within a pair alternating: :func:`ltr_bench.tracking.reader.fetch_fold_results`
as it is, and with its download swapped for the client's. The store is made first (untimed):
``ltr-bench run --ranker ridge,listnet --dataset synthetic`` (ten fold runs) in a scratch
folder, or ``--store DIR`` (a folder with ``mlflow.db``). Prints each pair, the medians, their
ratio and the load average before and after.

    python benchmarks/bench_report_read.py --repeat 5
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import tempfile
import time
from pathlib import Path
from unittest import mock


@functools.cache
def _client(uri: str):
    """One client per store, as ``fetch_fold_results`` opened one per read before."""
    from ltr_bench.tracking.store import open_client

    return open_client(uri)


def _client_download(uri: str, run, name: str, where: Path) -> str:
    return _client(uri).download_artifacts(run.info.run_id, name, str(where))


def _read(uri: str, dataset: str, *, client_download: bool) -> tuple[float, int]:
    from ltr_bench.tracking import reader

    swap = _client_download if client_download else reader._download
    t0 = time.perf_counter()
    with mock.patch.object(reader, "_download", swap):
        records = reader.fetch_fold_results(dataset, uri)
    return time.perf_counter() - t0, len(records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--store", type=Path, help="a folder with mlflow.db (default: made)")
    parser.add_argument("--dataset", default="synthetic")
    args = parser.parse_args()

    from click.testing import CliRunner

    from ltr_bench.cli import main as cli

    scratch = tempfile.TemporaryDirectory(prefix="ltr-bench-bench-report-")
    store = args.store
    if store is None:
        store = Path(scratch.name) / "mlflow_runs"
        cmd = ["run", "--ranker", "ridge,listnet", "--dataset", args.dataset]
        cmd += ["--results-dir", str(store / "results"), "--tracking-uri"]
        made = CliRunner().invoke(cli, cmd + [f"sqlite:///{store / 'mlflow.db'}"])
        assert made.exit_code == 0, made.output
    uri = f"sqlite:///{store / 'mlflow.db'}"
    for client_download in (False, True):  # warm-up: imports, the store's schema, the client
        _read(uri, args.dataset, client_download=client_download)
    print(f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}; store {uri}")
    ours: list[float] = []
    theirs: list[float] = []
    for i in range(args.repeat):
        order = (False, True) if i % 2 == 0 else (True, False)
        for client_download in order:
            seconds, n = _read(uri, args.dataset, client_download=client_download)
            (theirs if client_download else ours).append(seconds)
        print(
            f"pair {i + 1}: {n} fold runs, {ours[-1]:.3f} s; client's download {theirs[-1]:.3f} s"
        )
    a, b = statistics.median(ours), statistics.median(theirs)
    print(
        f"median {a:.3f} s against {b:.3f} s with the client's download: {a / b:.2f}x "
        f"({args.repeat} pairs); load {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    scratch.cleanup()


if __name__ == "__main__":
    main()

"""What a new MLflow store costs: MLflow's own creation against a copy of the empty schema.

In one process (MLflow imported once, before any timing), ``--repeat`` pairs, the order
within a pair alternating: a new SQLite store opened the way ``ltr-bench run`` opens one
(:meth:`ltr_bench.tracking.Tracker.check`) with the template switched off (MLflow runs its
migrations), and with the template (:mod:`ltr_bench.tracking.store_template`; built once,
untimed, before the pairs). Each store is opened until its first experiment exists. Prints
each pair, the medians, their ratio and the load average before and after.

    python benchmarks/bench_store_template.py --repeat 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from unittest import mock


def _open_new_store(folder: Path, *, template: bool) -> float:
    from ltr_bench.tracking import Tracker
    from ltr_bench.tracking import store as store_module

    uri = f"sqlite:///{folder / 'mlflow.db'}"
    seed = store_module.seed_new_store if template else (lambda db: False)
    t0 = time.perf_counter()
    with mock.patch.object(store_module, "seed_new_store", seed):
        tracker = Tracker(uri)
        tracker.check()
        tracker.experiment_id("synthetic")
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LTR_BENCH_CACHE"] = str(Path(tmp) / "cache")
        import mlflow  # noqa: F401 - imported before any timing

        from ltr_bench.tracking.store_template import seed_new_store

        t0 = time.perf_counter()
        seed_new_store(Path(tmp) / "warm.db")  # builds the template, untimed
        print(f"template built in {time.perf_counter() - t0:.2f} s (once per MLflow version)")
        print(f"load average before: {os.getloadavg()[0]:.2f}")
        mlflow_own, copied = [], []
        for i in range(args.repeat):
            order = (False, True) if i % 2 == 0 else (True, False)
            for template in order:
                folder = Path(tempfile.mkdtemp(dir=tmp))
                (copied if template else mlflow_own).append(
                    _open_new_store(folder, template=template)
                )
            print(f"pair {i + 1}: MLflow creates {mlflow_own[-1]:.2f} s, copy {copied[-1]:.2f} s")
        a, b = statistics.median(mlflow_own), statistics.median(copied)
        print(f"median: MLflow creates {a:.2f} s, copy {b:.2f} s; ratio {a / b:.1f}x")
        print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

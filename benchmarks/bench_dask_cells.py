"""Dask at the size of real cells (issue 35.3): efficiency = speed-up / parallel capacity.

Ten cells of seconds on OHSUMED (LETOR 3.0 ``Feature-min``, 5 folds): ``lightgbm`` with 500
trees and ``xgboost-gbrt`` with 150, no early stopping, one thread, MLflow on, the parsed-data
cache warm, each run into a fresh results folder. Every round runs the plan in process, then
measures the machine's parallel capacity (two CPU-bound processes against one: 2.0 on an idle
2-core machine, ``bench_executors.parallel_capacity``), then runs it with ``--workers``;
efficiency = speed-up / capacity (1.0: every core the machine gives is used; target 0.90). The
script checks that both runs' metrics are identical. Timers and ``--reference`` (the same
rounds on another checkout's code, at the same load) are ``bench_overhead.py``'s.

    python benchmarks/bench_dask_cells.py --repeat 3
    python benchmarks/bench_dask_cells.py --ohsumed DIR/OHSUMED/Feature-min --reference /tmp/before

``--ohsumed`` defaults to the data home's ``OHSUMED/Feature-min`` (``ltr-bench download
ohsumed``); the script stops with a message when it is absent.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_overhead import (  # noqa: E402
    LAST_CPU,
    REFERENCE,
    checkouts,
    load,
    records,
    stage_seconds,
    timed,
)


def long_cell_args(home: Path) -> list[str]:
    """Issue 35.3's plan of cells of seconds, on OHSUMED (5 folds): ``lightgbm`` with 500
    trees and ``xgboost-gbrt`` with 150, no early stopping, one thread: ten cells of two
    sizes."""
    return [
        "run",
        "--ranker",
        "lightgbm,xgboost-gbrt",
        "--dataset",
        "ohsumed",
        "--data-dir",
        str(home),
        "--param",
        "lightgbm.n_estimators=500",
        "--param",
        "lightgbm.early_stopping_rounds=none",
        "--param",
        "xgboost-gbrt.n_estimators=150",
        "--param",
        "xgboost-gbrt.early_stopping_rounds=none",
        "--threads",
        "1",
    ]


def part_long_cells(work: Path, env: dict, ohsumed: Path, workers: int, repeat: int) -> None:
    """Dask at the size of real cells (issue 35.3): the plan of :func:`long_cell_args` in
    process and with ``--workers``, each round measuring the machine's parallel capacity
    right between them (two CPU-bound processes against one); efficiency = speed-up /
    capacity (1.0: every core the machine gives is used). MLflow on; metrics checked equal."""
    from bench_executors import parallel_capacity

    home = work / "ohsumed-home"
    (home / "OHSUMED").mkdir(parents=True, exist_ok=True)
    link = home / "OHSUMED" / "Feature-min"
    if not link.exists():
        link.symlink_to(ohsumed)
    args = long_cell_args(home)
    for k in range(1, 6):  # the parsed-data cache warm, the store made
        timed([*args, "--folds", str(k), "--results-dir", str(work / "warm-long")], work, env)
    rows = []
    for r in range(repeat):
        before = load()
        here = timed([*args, "--results-dir", str(work / f"long-in-{r}")], work, env)
        here_cpu = LAST_CPU[0]
        capacity = parallel_capacity(workers)
        out = work / f"long-dask-{r}"
        dask = timed([*args, "--workers", str(workers), "--results-dir", str(out)], work, env)
        a = {x["key"]: x["metrics"] for x in records(work / f"long-in-{r}")}
        b = {x["key"]: x["metrics"] for x in records(out)}
        if a != b or len(a) != 10:
            raise SystemExit("the Dask run's metrics differ from the in-process run's")
        cells = sorted(stage_seconds([x]) for x in records(out))
        rows.append((here / dask, capacity, here / dask / capacity))
        print(
            f"ten cells of seconds (OHSUMED), round {r + 1}: in process {here:.2f} s (CPU "
            f"{here_cpu:.2f} s), --workers {workers} {dask:.2f} s (CPU {LAST_CPU[0]:.2f} s), "
            f"speed-up {here / dask:.2f}x, parallel capacity {capacity:.2f}, efficiency "
            f"{here / dask / capacity:.2f} (target >= 0.90); cells on Dask {cells[0]:.1f}-"
            f"{cells[-1]:.1f} s; metrics identical   [{before} -> {load()}]"
        )
    med = [statistics.median(x[i] for x in rows) for i in range(3)]
    print(
        f"ten cells of seconds: median speed-up {med[0]:.2f}x, capacity {med[1]:.2f}, "
        f"efficiency {med[2]:.2f} (target >= 0.90), of {repeat} round(s)"
    )


def main() -> None:
    from ltr_bench.data import resolve_data_dir

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1, help="rounds, and their medians")
    ap.add_argument(
        "--ohsumed",
        type=Path,
        default=resolve_data_dir() / "OHSUMED" / "Feature-min",
        help="OHSUMED's Feature-min folder (Fold1..5); default: the data home's "
        "(`ltr-bench download ohsumed`)",
    )
    ap.add_argument("--reference", type=Path, default=None, help="see bench_overhead.py")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = ap.parse_args()
    if not (args.ohsumed / "Fold1").is_dir():
        raise SystemExit(
            f"no OHSUMED folds at {args.ohsumed} (Fold1..Fold5 expected): pass --ohsumed DIR "
            "or `ltr-bench download ohsumed`"
        )
    work = Path(tempfile.mkdtemp(prefix="ltr-bench-dask-cells-"))
    env = {**os.environ, "LTR_BENCH_CACHE": str(work / "cache")}
    env.pop("MLFLOW_TRACKING_URI", None)
    print(f"{os.cpu_count()} cores; {load()}; scratch {work}")
    try:
        for name, folder, run_env in checkouts(work, env, args.reference):
            REFERENCE[:] = [Path(name)] if name != "this checkout" else []
            print(f"-- {name}")
            part_long_cells(folder, run_env, args.ohsumed, args.workers, args.repeat)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

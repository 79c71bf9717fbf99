"""What keeping models costs the README's main command (target: at most 0.3 s more).

Runs the installed ``ltr-bench run --ranker lightgbm,xgboost-gbrt --dataset synthetic``
(MLflow on, as the README shows it) in a subprocess, alternately with the default
(``--keep-models all``: ten model folders written, ten MLflow Models logged) and with
``--keep-models none``, ``--repeat`` pairs, each run into a fresh results folder (every
cell is computed) and the same MLflow store (made by a first, untimed run, as a user's
second command finds it). Both sides of a pair see the same load, and the order within a
pair alternates (keep first, then none first), so a drift in the machine's load does not
favour one side.

Printed per run: wall seconds and CPU seconds of all its processes (the run, the MLflow
logging process; :func:`command_timing.timed`), and the seconds its records spent saving
models (``stage_seconds["save"]``). Then the median over the pairs of (keep - none), wall
and CPU, and the ratio of the median walls. The load average is printed before and after.

``--no-mlflow`` runs both sides without MLflow: the difference is then the run's own cost of
saving the models (its critical path), without the logging process's.

    python benchmarks/bench_keep_models.py --repeat 5
    python benchmarks/bench_keep_models.py --repeat 5 --no-mlflow
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from command_timing import LAST_CPU, load, timed  # noqa: E402

MAIN = ["run", "--ranker", "lightgbm,xgboost-gbrt", "--dataset", "synthetic"]


def _save_seconds(results: Path) -> float:
    recs = [json.loads(p.read_text()) for p in results.glob("*.json")]
    return sum(r["stage_seconds"].get("save", 0.0) for r in recs)


def _one(work: Path, env: dict, keep: bool, n: int, mlflow: bool) -> tuple[float, float]:
    results = work / f"results-{n}-{'keep' if keep else 'none'}"
    extra = ([] if keep else ["--keep-models", "none"]) + ([] if mlflow else ["--no-mlflow"])
    wall = timed([*MAIN, "--results-dir", str(results), *extra], work, env)
    cpu = LAST_CPU[0]
    models = len(list(results.glob("*.model.*")))
    print(
        f"  {'keep' if keep else 'none'}: wall {wall:6.2f} s  cpu {cpu:6.2f} s  "
        f"models {models:2d}  saving {_save_seconds(results):.3f} s  ({load()})",
        flush=True,
    )
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="pairs of runs (default 5)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ap.add_argument("--no-mlflow", action="store_true", help="both sides without MLflow")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ltr-bench-keep-models-"))
    env = {**os.environ, "LTR_BENCH_CACHE": str(work / "cache")}
    env.pop("MLFLOW_TRACKING_URI", None)
    print(f"{os.cpu_count()} cores; {load()}; scratch {work}")
    tail = " --no-mlflow" if args.no_mlflow else ""
    print(f"command: ltr-bench {' '.join(MAIN)} [--keep-models none]{tail}")
    try:
        timed([*MAIN, "--folds", "1", "--results-dir", str(work / "warm")], work, env)
        walls: dict[bool, list[float]] = {True: [], False: []}
        cpus: dict[bool, list[float]] = {True: [], False: []}
        for n in range(args.repeat):
            print(f"pair {n + 1}:")
            for keep in (True, False) if n % 2 == 0 else (False, True):
                wall, cpu = _one(work, env, keep, n, not args.no_mlflow)
                walls[keep].append(wall)
                cpus[keep].append(cpu)
        d_wall = statistics.median(k - o for k, o in zip(walls[True], walls[False]))
        d_cpu = statistics.median(k - o for k, o in zip(cpus[True], cpus[False]))
        ratio = statistics.median(walls[True]) / statistics.median(walls[False])
        print(
            f"median over {args.repeat} pairs: keep - none = {d_wall:+.2f} s wall, "
            f"{d_cpu:+.2f} s CPU; median wall keep / none = {ratio:.3f} "
            f"({statistics.median(walls[True]):.2f} s / {statistics.median(walls[False]):.2f} s)"
        )
        print(f"target: at most +0.30 s wall; {load()}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""The README main command, this checkout and a reference checkout taking turns (issue 35.2).

On a machine shared with other work the load moves by more than a change saves, so two blocks
of rounds minutes apart (``bench_overhead.py --reference``) compare loads. Here every round
runs the four commands one after the other, the order reversed every other round: this
checkout and the reference, each with MLflow (an existing store) and with ``--no-mlflow``,
each into a fresh results folder. Printed per command: wall from start to exit (``wait4`` of
the command's process) / stage time (as ``command_timing.stage_seconds`` counts it), wall -
stages, and the **in-cell time outside the stages**: each record's ``finished - started``
less its setup, fit, score and evaluate, summed over the cells (the per-cell bookkeeping:
fitted_info, keeping the model, ...; the steadiest of these numbers under load). Medians at
the end. The logging process left to finish in the background is waited for (this script is
its subreaper) before the next command starts.

    git archive d7ca5e0 | (mkdir -p /tmp/before && tar -x -C /tmp/before)
    python benchmarks/bench_overhead_turns.py --reference /tmp/before --repeat 3
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from command_timing import _reap, load, records, stage_seconds  # noqa: E402 - script dir

STAGES = ("setup", "fit", "score", "evaluate")


def in_cell_outside_stages(recs: list[dict]) -> float:
    """Sum over the records of ``finished - started`` less the record's own stages."""

    def ts(text: str) -> float:
        return datetime.datetime.fromisoformat(text).timestamp()

    return sum(
        ts(r["finished"]) - ts(r["started"]) - sum(r["stage_seconds"].get(s, 0.0) for s in STAGES)
        for r in recs
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reference", type=Path, required=True, help="a checkout of another commit")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ltr-bench-turns-"))
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    ref = args.reference.resolve()
    exe = Path(sys.executable).with_name("ltr-bench")
    trees = {
        "this": ([str(exe)] if exe.exists() else [sys.executable, "-m", "ltr_bench"], env),
        "before": (
            [sys.executable, "-m", "ltr_bench"],
            {**env, "PYTHONPATH": os.pathsep.join([str(ref), str(ref / "baselines")])},
        ),
    }
    argv = ["run", "--ranker", "lightgbm,xgboost-gbrt", "--dataset", "synthetic"]
    for name, (cmd, tree_env) in trees.items():  # the store exists before the timed runs
        (work / name).mkdir()
        tree_env["LTR_BENCH_CACHE"] = str(work / name / "cache")
        warm = [*argv, "--folds", "1", "--results-dir", str(work / name / "warm")]
        subprocess.run(cmd + warm, cwd=work / name, env=tree_env, capture_output=True, check=True)
        _reap()
    print(f"{os.cpu_count()} cores; {load()}; scratch {work}")
    variants = [(t, m) for t in trees for m in ("mlflow", "no-mlflow")]
    rows: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    for r in range(args.repeat):
        for tree, mode in variants if r % 2 == 0 else variants[::-1]:
            cmd, tree_env = trees[tree]
            out = work / tree / f"{mode}-{r}"
            extra = ["--no-mlflow"] if mode == "no-mlflow" else []
            before = load()
            t = time.perf_counter()
            proc = subprocess.Popen(
                cmd + argv + extra + ["--results-dir", str(out)],
                cwd=work / tree,
                env=tree_env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            _, status, _ = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - t
            _reap()
            if status != 0:
                raise SystemExit(f"{tree} {mode}: exit status {status}")
            recs = records(out)
            stages, inside = stage_seconds(recs), in_cell_outside_stages(recs)
            rows.setdefault((tree, mode), []).append((wall / stages, wall - stages, inside))
            print(
                f"round {r + 1} {tree:6s} {mode:9s}: start to exit {wall:.2f} s, stages "
                f"{stages:.2f} s, ratio {wall / stages:.3f}, beyond the stages "
                f"{wall - stages:.2f} s, in-cell outside the stages {inside:.2f} s   [{before}]",
                flush=True,
            )
    for (tree, mode), values in rows.items():
        med = [statistics.median(v[i] for v in values) for i in range(3)]
        print(
            f"{tree:6s} {mode:9s}: median ratio {med[0]:.3f}, beyond the stages {med[1]:.2f} s, "
            f"in-cell outside the stages {med[2]:.2f} s ({len(values)} rounds)"
        )
    print(load())


if __name__ == "__main__":
    main()

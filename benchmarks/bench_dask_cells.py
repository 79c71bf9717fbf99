"""Dask at the size of real cells (issue 35.3): efficiency = speed-up / parallel capacity.

Two cases of ten cells each, one thread a cell, MLflow on, the parsed-data cache warm, each
run into a fresh results folder:

* ``issue``: the issue's plan on 5 generated MQ2008-shaped folds (``synthetic``: 784 queries,
  ~19 documents a query, 46 features): ``lightgbm`` with 1,000 trees and no early stopping,
  ``neural`` mlp/listnet with 20 epochs (cells of about 1 and 5 s);
* ``short``: OHSUMED (LETOR 3.0 ``Feature-min``, 5 folds), ``lightgbm`` with 500 trees and
  ``xgboost-gbrt`` with 150, no early stopping (cells of 0.5-3 s).

Every round runs the plan in process, then measures the machine's parallel capacity (two
CPU-bound processes against one: 2.0 on an idle 2-core machine,
``bench_executors.parallel_capacity``), then runs it with ``--workers``; efficiency =
speed-up / capacity (1.0: every core the machine gives is used; target 0.90). The script
checks that both runs' metrics are identical, and ends with one SUMMARY line per case.
Timers and ``--reference`` (the same rounds on another checkout's code, at the same load)
are ``bench_overhead.py``'s.

    python benchmarks/bench_dask_cells.py --repeat 3
    python benchmarks/bench_dask_cells.py --case issue --repeat 3
    python benchmarks/bench_dask_cells.py --ohsumed DIR/OHSUMED/Feature-min --reference /tmp/before

``--ohsumed`` defaults to the data home's ``OHSUMED/Feature-min`` (``ltr-bench download
ohsumed``); the script stops with a message when it is absent and the ``short`` case is
asked for.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_overhead import checkouts  # noqa: E402
from command_timing import (  # noqa: E402
    LAST_CPU,
    REFERENCE,
    _children_cpu,
    cli,
    load,
    records,
    stage_seconds,
)

#: a cell's progress lines: "[3/10] lightgbm[...] on synthetic fold 2: fitting ..." when it
#: starts (in process) or is handed to a worker (Dask: it starts there), then its result line
_STARTED = re.compile(r"^\[(\d+)/\d+\] .*: fitting \.\.\.$")
_ENDED = re.compile(r"^\[(\d+)/\d+\] .*(ndcg@|FAILED)")


def _children() -> set[int]:
    """This process's children (Linux ``/proc``): with the subreaper set
    (``command_timing``), a command's orphans become ours."""
    me, found = os.getpid(), set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            found.add(int(stat.parent.name))
    return found


def _wait_for(pids: set[int], timeout: float) -> None:
    """Reap ``pids`` (orphans of the last command) as they exit, for at most ``timeout`` s;
    never a child of this script's own (the capacity pool's resource tracker)."""
    end = time.monotonic() + timeout
    while pids and time.monotonic() < end:
        for pid in list(pids):
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    pids.discard(pid)
            except ChildProcessError:
                pids.discard(pid)
        time.sleep(0.02)


def timeline(args: list[str], cwd: Path, env: dict) -> tuple[float, dict[str, float]]:
    """:func:`command_timing.timed` (wall, and CPU in ``LAST_CPU``), reading the command's
    output as it comes to say where the time goes, in seconds: ``first`` (start to the first
    cell started), ``cells`` (first start to last end), ``tail`` (the last cell's end minus
    the one before: a slot idle at the end, on Dask), ``exit`` (last end to exit: MLflow's
    catching up, the summary), ``all`` (start to the end of every process it started: the
    MLflow logger may finish in the background after the run's exit)."""
    ours = _children()
    cpu = _children_cpu()
    t = time.perf_counter()
    proc = subprocess.Popen(
        cli() + args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    starts: dict[str, float] = {}
    ends: dict[str, float] = {}
    lines = []
    for line in proc.stdout:
        now = time.perf_counter() - t
        lines.append(line)
        for pattern, seen in ((_STARTED, starts), (_ENDED, ends)):
            m = pattern.match(line.strip())
            if m and m.group(1) not in seen:
                seen[m.group(1)] = now
    proc.wait()
    wall = time.perf_counter() - t
    # the MLflow logger may finish in the background after the run's exit
    _wait_for(_children() - ours, 180.0)
    done = time.perf_counter() - t
    LAST_CPU[0] = _children_cpu() - cpu
    if proc.returncode != 0 or not starts or len(ends) != len(starts):
        raise SystemExit(
            f"ltr-bench {' '.join(args)} failed ({proc.returncode}):\n{''.join(lines)}"
        )
    last = sorted(ends.values())
    phases = {
        "first": min(starts.values()),
        "cells": last[-1] - min(starts.values()),
        "tail": last[-1] - last[-2] if len(last) > 1 else 0.0,
        "exit": wall - last[-1],
        "all": done,
    }
    return wall, phases


def _phases(p: dict[str, float]) -> str:
    return (
        f"first cell at {p['first']:.1f} s, cells {p['cells']:.1f} s (tail {p['tail']:.1f} s), "
        f"exit {p['exit']:.1f} s after the last, every process (MLflow's background "
        f"logging) ended at {p['all']:.1f} s"
    )


def short_cell_args(home: Path) -> list[str]:
    """The short-cell case, on OHSUMED (5 folds): ``lightgbm`` with 500 trees and
    ``xgboost-gbrt`` with 150, no early stopping, one thread: ten cells of 0.5-3 s."""
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


#: MQ2008's shape (LETOR 4.0: 784 queries, ~19 documents a query, 46 features), as
#: ``bench_neural.py --fold mq2008-like``; the ``synthetic`` dataset has 5 folds
MQ2008_LIKE = {"n_queries": 784, "docs_per_query": 19, "n_features": 46}


def issue_cell_args() -> list[str]:
    """Issue 35.3's plan on 5 generated MQ2008-shaped folds: ``lightgbm`` with 1,000 trees
    and no early stopping, ``neural`` mlp/listnet with 20 epochs, one thread: ten cells of
    two sizes (seconds each)."""
    options = [x for k, v in MQ2008_LIKE.items() for x in ("--dataset-option", f"{k}={v}")]
    return [
        "run",
        "--ranker",
        "lightgbm,neural",
        "--dataset",
        "synthetic",
        *options,
        "--param",
        "lightgbm.n_estimators=1000",
        "--param",
        "lightgbm.early_stopping_rounds=none",
        "--param",
        "neural.scorer=mlp",
        "--param",
        "neural.loss=listnet",
        "--param",
        "neural.epochs=20",
        "--threads",
        "1",
    ]


def ohsumed_home(work: Path, ohsumed: Path) -> Path:
    """A data home whose ``OHSUMED/Feature-min`` is ``ohsumed`` (a link)."""
    home = work / "ohsumed-home"
    (home / "OHSUMED").mkdir(parents=True, exist_ok=True)
    link = home / "OHSUMED" / "Feature-min"
    if not link.exists():
        link.symlink_to(ohsumed)
    return home


def best_makespan(durations: list[float], slots: int) -> float:
    """The shortest time ``slots`` workers can run cells of these ``durations`` in (no
    overhead, each cell on one worker, whole): the optimum over every assignment (exact;
    ``slots ** len(durations)`` assignments, fine for ten cells on two or three slots)."""
    import itertools

    best = float("inf")
    for assignment in itertools.product(range(slots), repeat=len(durations)):
        loads = [0.0] * slots
        for d, k in zip(durations, assignment):
            loads[k] += d
        best = min(best, max(loads))
    return best


def bound(here: float, durations: list[float], slots: int) -> tuple[float, float]:
    """(wall, efficiency) of the best possible Dask run, from the in-process run's wall
    ``here`` and its cells' ``durations``: what is not cells (start, plan, exit) paid as in
    process, the cells in :func:`best_makespan`, and a capacity of exactly ``slots``."""
    wall = here - sum(durations) + best_makespan(durations, slots)
    return wall, here / wall / slots


def part_cells(
    work: Path, env: dict, name: str, args: list[str], workers: int, repeat: int
) -> tuple[float, float, float]:
    """One case: the plan ``args`` in process and with ``--workers``, each round measuring
    the machine's parallel capacity right between them (two CPU-bound processes against
    one); efficiency = speed-up / capacity (1.0: every core the machine gives is used).
    MLflow on; metrics checked equal. Returns the medians (speed-up, capacity, efficiency)."""
    from bench_executors import parallel_capacity

    tag = name.split()[0]
    for k in range(1, 6):  # the parsed-data cache warm, the store made
        timeline([*args, "--folds", str(k), "--results-dir", str(work / f"warm-{tag}")], work, env)
    rows = []
    for r in range(repeat):
        before = load()
        here, here_phases = timeline(
            [*args, "--results-dir", str(work / f"{tag}-in-{r}")], work, env
        )
        here_cpu = LAST_CPU[0]
        capacity = parallel_capacity(workers)
        out = work / f"{tag}-dask-{r}"
        dask, dask_phases = timeline(
            [*args, "--workers", str(workers), "--results-dir", str(out)], work, env
        )
        a = {x["key"]: x["metrics"] for x in records(work / f"{tag}-in-{r}")}
        b = {x["key"]: x["metrics"] for x in records(out)}
        if a != b or len(a) != 10:
            raise SystemExit(f"{name}: the Dask run's metrics differ from the in-process run's")
        cells = sorted(stage_seconds([x]) for x in records(out))
        # the cells' own time (stage seconds) on Dask against in process: above 1 when two
        # cells at once share caches and memory bandwidth, which the spin-loop capacity
        # (pure Python, no memory traffic) does not see
        slowdown = sum(cells) / sum(stage_seconds([x]) for x in records(work / f"{tag}-in-{r}"))
        rows.append((here / dask, capacity, here / dask / capacity))
        in_cells = [stage_seconds([x]) for x in records(work / f"{tag}-in-{r}")]
        best_wall, best_eff = bound(here, in_cells, workers)
        print(
            f"{name}, round {r + 1}: in process {here:.2f} s (CPU {here_cpu:.2f} s), "
            f"--workers {workers} {dask:.2f} s (CPU {LAST_CPU[0]:.2f} s), speed-up "
            f"{here / dask:.2f}x, parallel capacity {capacity:.2f}, efficiency "
            f"{here / dask / capacity:.2f} (target >= 0.90); cells on Dask {cells[0]:.1f}-"
            f"{cells[-1]:.1f} s, their own time {slowdown:.2f}x in process's; metrics "
            f"identical   [{before} -> {load()}]\n"
            f"    where the time goes: in process {_phases(here_phases)}; --workers {workers} "
            f"{_phases(dask_phases)}; to the end of every process: speed-up "
            f"{here_phases['all'] / dask_phases['all']:.2f}x, efficiency "
            f"{here_phases['all'] / dask_phases['all'] / capacity:.2f}\n"
            f"    bound: the in-process cells ({min(in_cells):.1f}-{max(in_cells):.1f} s, "
            f"{sum(in_cells):.1f} s in all) on {workers} slots at best take "
            f"{best_makespan(in_cells, workers):.1f} s (whole cells); with the rest as in "
            f"process and a capacity of {workers}: {best_wall:.1f} s, efficiency at most "
            f"{best_eff:.2f}",
            flush=True,
        )
    med = tuple(statistics.median(x[i] for x in rows) for i in range(3))
    print(
        f"{name}: median speed-up {med[0]:.2f}x, capacity {med[1]:.2f}, "
        f"efficiency {med[2]:.2f} (target >= 0.90), of {repeat} round(s)",
        flush=True,
    )
    return med


CASES = ("issue", "short")


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
    ap.add_argument(
        "--case",
        default=",".join(CASES),
        help="issue (MQ2008-shaped lightgbm + neural, cells of seconds), short (OHSUMED, "
        "cells of 0.5-3 s), or both (default)",
    )
    ap.add_argument("--reference", type=Path, default=None, help="see bench_overhead.py")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = ap.parse_args()
    cases = [c.strip() for c in args.case.split(",") if c.strip()]
    if not cases or set(cases) - set(CASES):
        raise SystemExit(f"--case: expected a list of {', '.join(CASES)}, got {args.case!r}")
    if "short" in cases and not (args.ohsumed / "Fold1").is_dir():
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
            summary = []
            for case in cases:
                if case == "issue":
                    plan, title = issue_cell_args(), "issue plan (MQ2008-shaped, 5 folds)"
                else:
                    home = ohsumed_home(folder, args.ohsumed)
                    plan, title = short_cell_args(home), "short cells (OHSUMED, 5 folds)"
                med = part_cells(folder, run_env, title, plan, args.workers, args.repeat)
                summary.append((title, med))
            for title, (speed_up, capacity, efficiency) in summary:
                print(
                    f"SUMMARY {title}: speed-up {speed_up:.2f}x / capacity {capacity:.2f} "
                    f"= efficiency {efficiency:.2f} (median of {args.repeat})"
                )
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""In-process vs. a local Dask cluster: the same cells, the same records, how much faster.

The cells of ``--rankers`` (default ``lightgbm,xgboost-gbrt``) x every fold of ``--dataset``
(default ``ohsumed``: 2 x 5 = 10 cells), each ranker with one thread, are run twice through
:func:`ltr_bench.run.harness.run_plan` into two scratch result folders:

1. in this process (today's default), one cell after another;
2. on a ``LocalCluster`` of ``--workers`` (default 2) one-thread worker processes
   (:class:`ltr_bench.run.dask_executor.DaskExecutor`, what ``ltr-bench run --workers 2`` uses).

Every fold is loaded once before anything is timed, so both runs read the parsed-data cache
(the in-process run shares one loaded fold among the rankers of that fold; each Dask cell
loads its fold from the cache on its worker). Printed: wall time of each run, the cluster
start-up time separately (starting the worker processes and importing the rankers' modules
on them: :meth:`DaskExecutor.warm_up`; the in-process run imports them before its clock
starts too), the speed-up with and without the start-up, the load average
before and after and the parallel capacity the machine offers right now
(:func:`parallel_capacity`; the machine may be shared), and whether every record's metrics are
identical (they must be: the check fails the script otherwise).

    python benchmarks/bench_executors.py --dataset /path/to/OHSUMED     # a LETOR folder
    python benchmarks/bench_executors.py --data-dir ~/ltr_bench_data    # ohsumed in a home

Timings are wall-clock: on a busy machine they are noisy; compare the ratio within one run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def _spin(n: int = 10_000_000) -> float:
    """Seconds of a pure-Python loop (one core's worth of work)."""
    t = time.perf_counter()
    s = 0
    for i in range(n):
        s += i
    return time.perf_counter() - t


def parallel_capacity(workers: int) -> float:
    """How many cores' worth of work ``workers`` processes get right now: ``workers x``
    (time of one loop alone) / (wall time of ``workers`` loops at once). 2.0 on an idle
    2-core machine; near 1.0 when other programs take the second core. No executor can beat
    it, so it is printed beside the speed-up."""
    import multiprocessing

    alone = _spin()
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(workers) as pool:
        pool.map(_spin, [1000] * workers)  # start-up out of the timing
        t = time.perf_counter()
        pool.map(_spin, [10_000_000] * workers)
        together = time.perf_counter() - t
    return workers * alone / together


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--dataset", default="ohsumed", help="registered dataset name or a folder of LETOR files"
    )
    parser.add_argument("--data-dir", default=None, help="the data home (default: as ltr-bench)")
    parser.add_argument("--rankers", default="lightgbm,xgboost-gbrt")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    from ltr_bench.registry import load_ranker_class
    from ltr_bench.results import ResultStore
    from ltr_bench.run.cells import expand_plan
    from ltr_bench.run.dask_executor import DaskExecutor
    from ltr_bench.run.harness import run_plan
    from ltr_bench.run.plan import DatasetChoice, Plan, RankerChoice
    from ltr_bench.run.unit import load_fold as _load_fold

    plan = Plan(
        rankers=[RankerChoice(r, {}) for r in args.rankers.split(",")],
        datasets=[DatasetChoice(args.dataset, {})],
        folds=None,
        seed=0,
        threads=1,
        data_dir=args.data_dir,
    )
    expanded = expand_plan(plan)
    cells = expanded.cells
    folds = sorted({c.fold for c in cells})
    print(
        f"{len(cells)} cells: {args.rankers} x folds {folds} of {cells[0].dataset}; "
        f"{os.cpu_count()} CPUs; load average before: {_load()}"
    )
    print(
        f"parallel capacity now: {parallel_capacity(args.workers):.2f} cores for "
        f"{args.workers} processes (the ceiling of the speed-up)"
    )
    for fold in folds:  # parse once (or find the cache) before anything is timed
        _load_fold(next(c for c in cells if c.fold == fold))
    for name in {c.ranker for c in cells}:  # the rankers' modules too, as on the workers
        load_ranker_class(name)

    with tempfile.TemporaryDirectory() as scratch:
        t = time.perf_counter()
        local = run_plan(expanded, ResultStore(Path(scratch) / "in_process"))
        t_local = time.perf_counter() - t
        print(f"in process, 1 thread:          {t_local:7.1f} s   (load average {_load()})")

        with DaskExecutor(workers=args.workers, threads=1) as executor:
            t = time.perf_counter()
            executor.client()
            executor.warm_up(cells)  # the workers import the rankers' modules
            t_start = time.perf_counter() - t
            t = time.perf_counter()
            remote = run_plan(expanded, ResultStore(Path(scratch) / "dask"), executor=executor)
            t_dask = time.perf_counter() - t
        print(
            f"Dask, {args.workers} workers x 1 thread:   {t_dask:7.1f} s   + cluster "
            f"start {t_start:.1f} s   (load average {_load()})"
        )

    bad = [r for r in (*local.failed, *remote.failed)]
    same = [a.metrics == b.metrics for a, b in zip(local.records, remote.records)]
    print(
        f"speed-up: {t_local / t_dask:.2f}x without the cluster start, "
        f"{t_local / (t_dask + t_start):.2f}x with it"
    )
    fit = [sum(r.fit_seconds for r in rep.records) for rep in (local, remote)]
    print(
        f"sum of the cells' fit seconds: {fit[0]:.1f} in process, {fit[1]:.1f} on Dask "
        "(fits slowed by competition for the cores show up here)"
    )
    print(
        f"records: {len(local.records)} in process, {len(remote.records)} on Dask, "
        f"{len(bad)} failed; metrics identical in {sum(same)}/{len(same)}"
    )
    return 0 if not bad and all(same) and len(same) == len(cells) else 1


if __name__ == "__main__":
    sys.exit(main())

"""The L-GMML paper's Fig. 4 (Su, King & Lyu, SIGIR 2017): L-GMML fit time (m = 10) against
the feature dimension, on generated ``synthetic`` data. Speed only: the paper's accuracy
experiments are plans under ``experiments/`` (run with ``ltr-bench run --config``).

For each dimension d, fold 1 of ``synthetic`` (``n_queries`` queries, 60 % of them training,
40 documents per query, ``n_informative = min(10, d)``) is generated from ``--seed`` and
L-GMML (``n_metrics=10``, one thread) is fitted ``--repeats`` times; the table gives the
median and minimum wall seconds of ``fit`` (:class:`ltr_bench.timing.Stopwatch`). Timings on
a shared machine are noisy: compare the shape of the curve, not single values.

Usage::

    python benchmarks/paper_fig4.py                       # d = 10, 50, 100, 500, 1000
    python benchmarks/paper_fig4.py --dims 10,100 --n-queries 5000 --json fig4.json
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from ltr_bench.data import load_fold
from ltr_bench.timing import Stopwatch, thread_limit


def measure(dims, n_queries: int, repeats: int, seed: int) -> list[dict]:
    from ltr_bench_lgmml import LGMMLRanker

    rows = []
    for d in dims:
        fold = load_fold(
            "synthetic",
            1,
            seed=seed,
            progress=lambda *a: None,
            options={"n_queries": n_queries, "n_features": d, "n_informative": min(10, d)},
        )
        tr = fold.train
        times = []
        for _ in range(repeats):
            ranker = LGMMLRanker(n_metrics=10, random_state=seed, n_threads=1)
            with thread_limit(1), Stopwatch() as sw:
                ranker.fit(tr.X, tr.y, qid=tr.qid)
            times.append(sw.seconds)
        rows.append(
            {
                "d": d,
                "train_docs": int(tr.n_docs),
                "train_queries": int(tr.n_queries),
                "fit_seconds": times,
            }
        )
        print(
            f"d = {d}: fit {np.median(times):.3f} s (median of {repeats})",
            file=sys.stderr,
            flush=True,
        )
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--dims", default="10,50,100,500,1000", help="comma-separated feature dimensions"
    )
    ap.add_argument("--n-queries", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="also write the raw timings here")
    args = ap.parse_args(argv)
    try:
        dims = [int(x) for x in args.dims.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--dims: expected integers like 10,50,100, got {args.dims!r}")
    if not dims or min(dims) < 1 or args.n_queries < 5 or args.repeats < 1:
        ap.error("--dims must be positive integers, --n-queries >= 5 and --repeats >= 1")
    rows = measure(dims, args.n_queries, args.repeats, args.seed)
    print("| features d | train docs | train queries | fit s (median) | fit s (min) |")
    print("|---|---|---|---|---|")
    for r in rows:
        t = r["fit_seconds"]
        print(
            f"| {r['d']} | {r['train_docs']} | {r['train_queries']} | {np.median(t):.3f} | "
            f"{min(t):.3f} |"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"args": vars(args), "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

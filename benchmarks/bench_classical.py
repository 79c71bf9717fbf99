"""Fit and scoring times of the classical LETOR baselines on a MSLR-WEB10K-sized generated fold.

Usage::

    python benchmarks/bench_classical.py                  # 10,000 queries x 120 docs x 136
    python benchmarks/bench_classical.py --rankers ranksvm adarank
    python benchmarks/bench_classical.py --n-queries 1000      # a quick look

The data: fold 1 of the ``synthetic`` dataset (``ltr_bench.data.generated``) with
``n_queries`` queries of about ``docs_per_query`` documents (Gamma-distributed sizes, mean
``docs_per_query``) and ``n_features=136`` (``n_informative=40``): fold 1 trains on 3/5 of the
queries, so the defaults give about 720k training rows, 240k validation and 240k test rows
(MSLR-WEB10K: 10,000 queries, ~120 documents each). Each ranker runs with its defaults, on
one thread, with the validation split as ``eval_set`` (what ``ltr-bench run`` passes).

Printed per ranker: fit seconds (wall clock, and the process's CPU seconds: on a loaded shared
machine the wall time stretches with the load, the CPU time much less), scoring microseconds
per document (``predict`` on the test
split), test NDCG@10 (ltr-bench's metric), what ``fitted_info`` says, and the load average
(``os.getloadavg``) before and after: the machine is shared, so times are noisy. The target
is a fit under 10 minutes for each; a miss is printed as such. Peak RSS of the process is
printed at the end (the data alone is ~1.2 GB).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
import warnings

RANKERS = ("ranksvm", "adarank", "rankboost", "coordinate-ascent")
TARGET_SECONDS = 600.0


def _load(n_queries: int, docs_per_query: int, seed: int, cache_dir: str | None):
    from ltr_bench.data.loading import load_fold

    options = {
        "n_queries": n_queries,
        "docs_per_query": docs_per_query,
        "n_features": 136,
        "n_informative": 40,
    }
    return load_fold("synthetic", 1, seed=seed, options=options, cache_dir=cache_dir)


def _load_avg() -> str:
    return "/".join(f"{v:.2f}" for v in os.getloadavg())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rankers", nargs="+", default=list(RANKERS), choices=RANKERS)
    parser.add_argument("--n-queries", type=int, default=10_000)
    parser.add_argument("--docs-per-query", type=int, default=120)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--cache-dir", default=None, help="generated-data cache (default: ltr-bench's)"
    )
    args = parser.parse_args(argv)

    from ltr_bench.evaluation.metrics import evaluate
    from ltr_bench.registry import make_ranker

    t0 = time.perf_counter()
    fold = _load(args.n_queries, args.docs_per_query, args.seed, args.cache_dir)
    tr, va, te = fold.train, fold.vali, fold.test
    print(
        f"data: train {tr.X.shape[0]:,} rows x {tr.X.shape[1]} features "
        f"({len(set(tr.qid.tolist())):,} queries), vali {va.X.shape[0]:,}, test {te.X.shape[0]:,}"
        f"; loaded in {time.perf_counter() - t0:.1f} s; load average {_load_avg()}"
    )
    print(
        f"{'ranker':18s} {'fit s':>8s} {'fit cpu s':>9s} {'score us/doc':>13s} "
        f"{'test ndcg@10':>13s}  load avg before -> after"
    )
    failed = []
    for name in args.rankers:
        ranker = make_ranker(name)
        params = {"random_state": args.seed} if "random_state" in ranker.get_params() else {}
        ranker.set_params(**params)
        before = _load_avg()
        start, cpu = time.perf_counter(), time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the skipped-query notice
            ranker.fit(tr.X, tr.y, qid=tr.qid, eval_set=(va.X, va.y, va.qid))
        fit_s = time.perf_counter() - start
        fit_cpu = time.process_time() - cpu
        start = time.perf_counter()
        scores = ranker.predict(te.X)
        score_us = (time.perf_counter() - start) / te.X.shape[0] * 1e6
        ndcg = evaluate(te.y, scores, te.qid, "ndcg@10")["ndcg@10"]
        verdict = "" if fit_s < TARGET_SECONDS else "  MISSES the 10-minute target"
        print(
            f"{name:18s} {fit_s:8.1f} {fit_cpu:9.1f} {score_us:13.3f} {ndcg:13.4f}  "
            f"{before} -> {_load_avg()}{verdict}"
        )
        print(f"{'':18s} fitted_info: {ranker.fitted_info()}")
        sys.stdout.flush()
        if fit_s >= TARGET_SECONDS:
            failed.append(name)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(f"peak RSS {rss:,.0f} MiB")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

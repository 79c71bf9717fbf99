"""Scoring speed of L-GMML for 1 and 2 threads (``predict`` only), and whether the scores are
bit-identical across thread counts.

Usage::

    python benchmarks/bench_lgmml_scoring.py [--docs 200000] [--features 136] [--metrics 100]

Fits one model on a small generated training set (queries of 40 documents, labels 0-2, the
first feature informative), then times ``predict`` on ``--docs`` generated documents (median
of ``--repeats`` calls after one warm-up) with ``n_threads`` = 1 and 2 set on the same fitted
model, and prints us/doc for each, the 2-thread speed-up, and max |s1 - s2|. Compare the
numbers of two commits by running the script on each (the load average is printed; CPU time
is shared with whatever else runs)."""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=200_000)
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--metrics", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()

    from ltr_bench_lgmml import LGMMLRanker

    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, size=300 * 40)
    X = rng.normal(size=(y.size, args.features))
    X[:, 0] += 0.5 * y
    qid = np.repeat(np.arange(300), 40)
    ranker = LGMMLRanker(n_metrics=args.metrics, random_state=0, n_threads=1).fit(X, y, qid=qid)
    Xs = rng.normal(size=(args.docs, args.features))
    scores, times = {}, {}
    for t in (1, 2):
        ranker.set_params(n_threads=t)
        scores[t] = ranker.predict(Xs)  # warm-up
        runs = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            ranker.predict(Xs)
            runs.append(time.perf_counter() - t0)
        times[t] = float(np.median(runs))
    load = os.getloadavg()[0]
    print(f"load average {load:.2f}; {args.docs} docs x {args.features}, m={args.metrics}")
    for t in (1, 2):
        print(f"n_threads={t}: {1e6 * times[t] / args.docs:.3f} us/doc")
    print(f"speed-up 2 vs 1 thread: {times[1] / times[2]:.2f}x")
    print(f"max |s1 - s2| = {np.max(np.abs(scores[1] - scores[2])):.3e}")


if __name__ == "__main__":
    main()

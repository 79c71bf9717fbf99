"""Speed of ltr_bench.evaluation.metrics.evaluate at MSLR-WEB30K test-fold scale.

Generates 750,000 documents in 6,000 queries (labels 0-4 with MSLR-like frequencies),
then times, median of ``--repeats`` runs:

* ``evaluate`` with NDCG@1,3,5,10 (the issue's target: under one second);
* ``evaluate`` with all of DEFAULT_METRICS, with continuous scores, with heavy ties (scores
  rounded), with a constant scorer (one tie group per query: the worst case for the exact
  tie formulas of MRR and ERR), and with the rows shuffled (non-contiguous query ids);

and, in the same process, two references for NDCG@1,3,5,10 with the same tie handling:

* a plain per-query Python loop over numpy (tie-averaged DCG, one query at a time), run on
  all queries;
* ``sklearn.metrics.ndcg_score`` called per query and per k, run on ``--sklearn-queries``
  queries and extrapolated linearly to all queries (it is too slow to run on all).

Results of the references are checked against ``evaluate`` before timings are printed.
Run: ``/work/venv/bin/python benchmarks/bench_metrics.py`` (numbers are noisy on a shared
machine; the ratios matter more than the seconds).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from ltr_bench.evaluation.metrics import DEFAULT_METRICS, evaluate

NDCG4 = ("ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10")


def make_data(n_docs: int, n_queries: int, seed: int):
    rng = np.random.default_rng(seed)
    weights = rng.lognormal(0.0, 0.6, n_queries)
    sizes = 1 + rng.multinomial(n_docs - n_queries, weights / weights.sum())
    qid = np.repeat(np.arange(n_queries, dtype=np.int64), sizes)
    y = rng.choice(5, size=n_docs, p=[0.52, 0.32, 0.13, 0.02, 0.01])
    scores = 0.5 * y + rng.normal(size=n_docs)
    return y, scores, qid


def median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def loop_ndcg(y, scores, qid, ks):
    """Reference: one query at a time, numpy inside, ties averaged like sklearn."""
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    ends = np.r_[starts[1:], qid.size]
    out = {k: np.empty(starts.size) for k in ks}
    for i, (a, b) in enumerate(zip(starts, ends)):
        gain = np.exp2(y[a:b]) - 1.0
        s = scores[a:b]
        order = np.argsort(-s)
        g, s_sorted = gain[order], s[order]
        disc = 1.0 / np.log2(np.arange(2, b - a + 2))
        bounds = np.flatnonzero(np.r_[True, s_sorted[1:] != s_sorted[:-1]])
        mean_gain = np.repeat(
            np.add.reduceat(g, bounds) / np.diff(np.r_[bounds, b - a]),
            np.diff(np.r_[bounds, b - a]),
        )
        ideal = np.sort(gain)[::-1]
        for k in ks:
            idcg = (ideal[:k] * disc[:k]).sum()
            out[k][i] = (mean_gain[:k] * disc[:k]).sum() / idcg if idcg > 0 else 1.0
    return {f"ndcg@{k}": float(v.mean()) for k, v in out.items()}


def sklearn_ndcg(y, scores, qid, ks, n_queries):
    from sklearn.metrics import ndcg_score

    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    ends = np.r_[starts[1:], qid.size]
    values = {k: [] for k in ks}
    for a, b in list(zip(starts, ends))[:n_queries]:
        for k in ks:
            if b - a < 2:  # sklearn refuses one-document queries: NDCG 1 (or empty -> 1)
                values[k].append(1.0)
                continue
            gain = [np.exp2(y[a:b]) - 1.0]
            v = ndcg_score(gain, [scores[a:b]], k=k) if gain[0].any() else 1.0
            values[k].append(v)
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=750_000)
    parser.add_argument("--queries", type=int, default=6_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sklearn-queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    y, scores, qid = make_data(args.docs, args.queries, args.seed)
    sizes = np.bincount(qid)
    print(
        f"data: {args.docs} docs, {args.queries} queries (sizes {sizes.min()}-{sizes.max()}, "
        f"median {int(np.median(sizes))}), seed {args.seed}, median of {args.repeats} runs"
    )

    evaluate(y, scores, qid, NDCG4)  # warm-up
    t_ndcg = median_seconds(lambda: evaluate(y, scores, qid, NDCG4), args.repeats)

    rng = np.random.default_rng(args.seed + 1)
    rounded = np.round(scores, 1)
    constant = np.zeros_like(scores)
    shuffle = rng.permutation(y.size)
    cases = {
        "DEFAULT_METRICS, continuous scores": (y, scores, qid),
        "DEFAULT_METRICS, scores rounded to 0.1 (ties)": (y, rounded, qid),
        "DEFAULT_METRICS, constant scorer": (y, constant, qid),
        "DEFAULT_METRICS, rows shuffled": (y[shuffle], scores[shuffle], qid[shuffle]),
    }
    t_cases = {
        name: median_seconds(lambda a=a: evaluate(*a, DEFAULT_METRICS), args.repeats)
        for name, a in cases.items()
    }

    ours = evaluate(y, scores, qid, NDCG4)
    start = time.perf_counter()
    loop = loop_ndcg(y, scores, qid, (1, 3, 5, 10))
    t_loop = time.perf_counter() - start
    for name in NDCG4:
        assert abs(loop[name] - ours[name]) < 1e-9, (name, loop[name], ours[name])

    n_sk = min(args.sklearn_queries, args.queries)
    start = time.perf_counter()
    sk = sklearn_ndcg(y, scores, qid, (1, 3, 5, 10), n_sk)
    t_sk = (time.perf_counter() - start) * args.queries / n_sk
    first = (
        np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])[n_sk] if n_sk < args.queries else qid.size
    )
    part = evaluate(y[:first], scores[:first], qid[:first], NDCG4, per_query=True)
    for k in (1, 3, 5, 10):
        assert np.allclose(part[f"ndcg@{k}"], sk[k], atol=1e-12, rtol=0)

    print(f"evaluate NDCG@1,3,5,10:                      {t_ndcg:8.3f} s   (target < 1 s)")
    for name, t in t_cases.items():
        print(f"evaluate {name:44s}{t:8.3f} s")
    print(
        f"reference: per-query numpy loop, NDCG@1,3,5,10: {t_loop:8.3f} s   "
        f"ratio {t_loop / t_ndcg:6.1f}x"
    )
    print(
        f"reference: sklearn ndcg_score per query and k, {n_sk} queries extrapolated to "
        f"{args.queries}: {t_sk:8.3f} s   ratio {t_sk / t_ndcg:6.1f}x"
    )
    print("values agree with both references (1e-9 / 1e-12)")


if __name__ == "__main__":
    main()

"""Speed and memory of L-GMML on generated MSLR-WEB30K-sized data, against LightGBM.

Usage::

    python benchmarks/bench_lgmml.py                 # modest: 200k docs x 136, m = 100
    python benchmarks/bench_lgmml.py --full          # 2.27M docs x 136, m = 500 (the target)
    python benchmarks/bench_lgmml.py --docs 500000 --metrics 200 --threads 2
    python benchmarks/bench_lgmml.py --full --threads 1 --lgbm-train-docs 30000 \
        --max-rank 5 10 20                           # what the issue-4 numbers came from

What it prints (one process, so ratios compare like with like):

- L-GMML fit wall time (the ranker's defaults, ``n_metrics`` from ``--metrics``), split into
  scaling fit + local metrics + anchors (``report_progress`` timestamps), WARP's feature
  computation h(p) of the training rows (timed by wrapping ``warp._query_features``), and
  the rest (WARP's SGD iterations, and the distance scale of ``score_form="rising"``);
- peak RSS (``resource.ru_maxrss``) before the fit (the data alone) and after it;
- per-document scoring time of L-GMML (float32 and float64 distance terms, median of
  ``--repeats``) and of a LightGBM model with 500 trees of 255 leaves scored on the
  same documents with the same thread count; the ratio; the leaf counts actually reached.
  LightGBM is trained on a subsample (``--lgbm-train-docs``) to save time, with objective
  ``regression`` and ``min_data_in_leaf=2, min_sum_hessian_in_leaf=1e-3`` so every tree
  grows its 255 leaves (lambdarank's gradients vanish on a subsample and its trees stay
  small): scoring cost depends on the trees' shape, not on what grew them;
- the float32 vs float64 score difference (max relative, and whether per-query orderings
  change: Kendall tau over a sample of queries);
- with ``--max-rank r ...``: scoring time with every fitted metric truncated to its r
  largest-|g| components (``MetricBank.truncated``, post hoc: WARP's weights are those of
  the exact model) and the median per-query Kendall tau against the exact scores; the
  NDCG effect of ``max_rank`` is measured on OHSUMED by ``experiments/lgmml_ohsumed_grid.py``.

Threads: on a shared machine use ``--threads 1``; with more threads than free cores,
OpenMP spin-waiting makes LightGBM many times slower and the ratio meaningless.

Generated data: queries of 120 documents (18,917 queries = 2.27M rows with ``--full``), labels
0-4 drawn from a latent relevance (about half 0), 136 features of which 40 informative (noisy
monotone transforms of the latent relevance plus a per-query offset) and 96 noise. CPU time is
shared with whatever else runs on the machine: numbers are noisy; run twice to see.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

import numpy as np


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def generate(n_docs: int, n_features: int, seed: int, docs_per_query: int = 120):
    rng = np.random.default_rng(seed)
    nq = max(1, n_docs // docs_per_query)
    n = nq * docs_per_query
    qid = np.repeat(np.arange(nq, dtype=np.int64), docs_per_query)
    y = np.empty(n, dtype=np.int64)
    X = np.empty((n, n_features), dtype=np.float64)
    n_inf = min(40, n_features)
    w = rng.uniform(0.5, 2.0, size=n_inf)
    step = 120 * 2000
    for a in range(0, n, step):
        b = min(n, a + step)
        q_here = qid[a:b]
        rel = rng.normal(size=b - a)
        lab = np.digitize(rel, [0.0, 0.8, 1.5, 2.2])  # ~50% zeros, then 0.29, 0.15, 0.05, 0.01
        y[a:b] = lab
        offs = np.random.default_rng(seed + 1 + a).normal(
            size=(int(q_here[-1] - q_here[0]) + 1, n_inf)
        )[q_here - q_here[0]]
        X[a:b, :n_inf] = rel[:, None] * w + 0.8 * offs + rng.normal(scale=1.0, size=(b - a, n_inf))
        X[a:b, n_inf:] = rng.normal(size=(b - a, n_features - n_inf))
    return X, y, qid


class PhaseClock:
    """Records when each progress message first and last appears."""

    def __init__(self):
        self.first, self.last = {}, {}

    def __call__(self, done, total, msg):
        now = time.perf_counter()
        self.first.setdefault(msg, now)
        self.last[msg] = now


def time_predict(fn, X, repeats):
    fn(X[:1000])  # warm-up
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(X)
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--full", action="store_true", help="2.27M x 136, m = 500")
    ap.add_argument("--docs", type=int, default=None)
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--metrics", type=int, default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--score-docs", type=int, default=100_000)
    ap.add_argument("--lgbm-train-docs", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--max-rank",
        type=int,
        nargs="*",
        default=[],
        help="also time scoring with each metric truncated to this rank",
    )
    ap.add_argument(
        "--n-iter", type=int, default=None, help="WARP iterations (default: the ranker's)"
    )
    ap.add_argument(
        "--max-positives",
        type=int,
        default=None,
        help="documents sampled per metric (default: the ranker's); with "
        "--max-negatives this bounds each metric's rank, hence scoring cost",
    )
    ap.add_argument("--max-negatives", type=int, default=None)
    args = ap.parse_args(argv)
    n_docs = args.docs or (2_270_000 if args.full else 200_000)
    m = args.metrics or (500 if args.full else 100)

    from ltr_bench.progress import progress_handler
    from ltr_bench_lgmml import LGMMLRanker, __version__

    print(
        f"# bench_lgmml (ltr-bench-lgmml {__version__}): docs={n_docs} d={args.features} "
        f"m={m} threads={args.threads}",
        flush=True,
    )
    t0 = time.perf_counter()
    X, y, qid = generate(n_docs, args.features, args.seed)
    print(
        f"generated {X.shape[0]} docs, {qid[-1] + 1} queries in "
        f"{time.perf_counter() - t0:.1f}s; label counts {np.bincount(y).tolist()}",
        flush=True,
    )
    rss_data = peak_rss_mib()
    print(f"peak RSS with the data loaded: {rss_data:.0f} MiB", flush=True)

    caps = {
        k: v
        for k, v in (("max_positives", args.max_positives), ("max_negatives", args.max_negatives))
        if v is not None
    }
    ranker = LGMMLRanker(
        n_metrics=m, random_state=args.seed, n_threads=args.threads, n_iter=args.n_iter, **caps
    )
    print(f"L-GMML parameters: {ranker.get_params()}", flush=True)
    clock = PhaseClock()
    # Benchmark-only instrumentation: time WARP's feature computation (h of the cached
    # training rows) apart from its SGD iterations.
    import ltr_bench_lgmml.warp as warp_mod

    feat_time = [0.0]
    orig_query_features = warp_mod._query_features

    def timed_query_features(*a, **k):
        t = time.perf_counter()
        try:
            return orig_query_features(*a, **k)
        finally:
            feat_time[0] += time.perf_counter() - t

    warp_mod._query_features = timed_query_features
    t0 = time.perf_counter()
    try:
        with progress_handler(clock):
            ranker.fit(X, y, qid=qid)
    finally:
        warp_mod._query_features = orig_query_features
    fit_s = time.perf_counter() - t0
    rss_fit = peak_rss_mib()
    K = ranker.metric_bank_.V.shape[1]
    print(
        f"L-GMML fit: {fit_s:.1f}s wall ({fit_s / 60:.2f} min); WARP iterations "
        f"{ranker.n_iter_}; total low-rank columns K={K} (mean rank {K / m:.1f})",
        flush=True,
    )
    if "local metrics" in clock.first:
        lm = clock.last["local metrics"] - t0
        print(f"  phase: scaling fit + local metrics + anchors: {lm:.1f}s", flush=True)
        rest = fit_s - lm
        print(
            f"  phase: after the metrics (distance scale, WARP): {rest:.1f}s, of which WARP "
            f"feature computation h(p) of the training rows {feat_time[0]:.1f}s and WARP "
            f"iterations + distance scale {rest - feat_time[0]:.1f}s",
            flush=True,
        )
    print(
        f"peak RSS after fit: {rss_fit:.0f} MiB (data alone: {rss_data:.0f} MiB; "
        f"target <= 8192 MiB)",
        flush=True,
    )

    rng = np.random.default_rng(args.seed + 7)
    n_score = min(args.score_docs, X.shape[0])
    start = int(rng.integers(0, X.shape[0] - n_score + 1))
    Xs = np.ascontiguousarray(X[start : start + n_score])
    qs = qid[start : start + n_score]
    t32 = time_predict(lambda Z: ranker.predict(Z), Xs, args.repeats)
    s32 = ranker.predict(Xs)
    ranker.set_params(dtype="float64")
    t64 = time_predict(lambda Z: ranker.predict(Z), Xs, max(1, args.repeats - 2))
    s64 = ranker.predict(Xs)
    ranker.set_params(dtype="float32")
    rel = np.max(np.abs(s32 - s64)) / max(np.max(np.abs(s64)), 1e-300)
    from scipy.stats import kendalltau

    bounds = np.r_[np.flatnonzero(np.r_[True, qs[1:] != qs[:-1]]), qs.size]
    taus = [
        kendalltau(s32[a:b], s64[a:b])[0] for a, b in zip(bounds[:-1], bounds[1:]) if b - a > 1
    ][:200]
    print(
        f"L-GMML scoring: float32 {1e6 * t32 / n_score:.2f} us/doc, float64 "
        f"{1e6 * t64 / n_score:.2f} us/doc ({n_score} docs, {args.threads} threads)"
    )
    print(
        f"  float32 vs float64 scores: max |diff| / max |score| = {rel:.2e}; "
        f"min per-query Kendall tau over {len(taus)} queries = {np.nanmin(taus):.6f}",
        flush=True,
    )

    trunc = {}
    exact_bank = ranker.metric_bank_
    for r in args.max_rank:
        ranker.metric_bank_ = exact_bank.truncated(r)
        try:
            tr = time_predict(lambda Z: ranker.predict(Z), Xs, args.repeats)
            sr = ranker.predict(Xs)
        finally:
            ranker.metric_bank_ = exact_bank
        taus_r = [
            kendalltau(sr[a:b], s32[a:b])[0] for a, b in zip(bounds[:-1], bounds[1:]) if b - a > 1
        ][:200]
        trunc[r] = tr
        print(
            f"L-GMML scoring, max_rank={r} (post-hoc truncation of the fitted metrics, K="
            f"{ranker.metric_bank_.truncated(r).V.shape[1]}): {1e6 * tr / n_score:.2f} "
            f"us/doc; median per-query Kendall tau vs exact {np.nanmedian(taus_r):.3f}",
            flush=True,
        )

    import lightgbm as lgb

    n_lgb = min(args.lgbm_train_docs, X.shape[0])
    n_lgb -= n_lgb % 120
    # objective "regression": lambdarank on a subsample fits the training rankings and its
    # gradients vanish, so its trees stop at a few leaves; squared-error residuals on noisy
    # labels persist, so every tree grows its 255 leaves (printed below). Traversal cost
    # depends only on the trees' shape, which is what this model is for.
    # Trained with one thread: on a shared machine OpenMP spin-waiting makes multi-threaded
    # training many times slower, and how the trees were grown does not matter here.
    params = dict(
        objective="regression",
        num_leaves=255,
        learning_rate=0.1,
        min_data_in_leaf=2,
        min_sum_hessian_in_leaf=1e-3,
        num_threads=1,
        verbosity=-1,
        seed=args.seed,
    )
    t0 = time.perf_counter()
    ds = lgb.Dataset(X[:n_lgb], label=y[:n_lgb], group=np.full(n_lgb // 120, 120))
    booster = lgb.train(params, ds, num_boost_round=500)
    lgb_fit = time.perf_counter() - t0
    trees = booster.dump_model()["tree_info"]
    leaves = [t["num_leaves"] for t in trees]

    def leaf_depths(node, depth=0):
        if "leaf_index" in node or "leaf_value" in node and "split_index" not in node:
            return [depth]
        return leaf_depths(node["left_child"], depth + 1) + leaf_depths(
            node["right_child"], depth + 1
        )

    depths = [leaf_depths(t["tree_structure"]) for t in trees]
    tl = time_predict(lambda Z: booster.predict(Z, num_threads=args.threads), Xs, args.repeats)
    print(
        f"LightGBM: {booster.num_trees()} trees, leaves per tree min {min(leaves)} / median "
        f"{int(np.median(leaves))} / max {max(leaves)}; trained on {n_lgb} docs in "
        f"{lgb_fit:.1f}s (not comparable: subsample); leaf depth mean "
        f"{np.mean([np.mean(d) for d in depths]):.1f}, max {max(max(d) for d in depths)} "
        "(traversal cost grows with depth)"
    )
    print(f"LightGBM scoring: {1e6 * tl / n_score:.2f} us/doc")
    print(
        f"ratio L-GMML(float32) / LightGBM per-document scoring time: {t32 / tl:.2f} (target <= 1)"
    )
    for r, tr in trunc.items():
        print(f"ratio L-GMML(float32, max_rank={r}) / LightGBM: {tr / tl:.2f}")
    print(f"peak RSS at the end: {peak_rss_mib():.0f} MiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

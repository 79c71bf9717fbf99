"""What each ranker's ``predict`` costs against the bare model call it wraps, in bulk and one
query per call, on a generated split of MSLR-WEB30K's shape, one thread.

Usage::

    python benchmarks/bench_scoring.py --quick               # a few minutes on 2 cores
    python benchmarks/bench_scoring.py                       # larger split, bigger models
    python benchmarks/bench_scoring.py --rankers ridge lightgbm xgboost-lambdamart

The data: the ``synthetic`` generator (``ltr_bench.data.generated``) with 136 features (40
informative), about 120 documents per query (query sizes vary as the generator draws them).
Each model is fitted on fold 1's training split of a ``--train-queries`` pool and scores the
test split of a separately generated ``--score-queries`` pool. Every ranker's thread
parameter is 1 and everything runs inside ``ltr_bench.timing.thread_limit(1)``, as the
harness runs a cell of ``ltr-bench run --threads 1``; the split's arrays are read-only, as
the harness freezes them.

Per ranker:

bulk ``predict`` (µs/doc) and the bare model call (µs/doc), and their ratio
    ``predict(X, qid=qid)`` on the whole split against the library's own call on the same
    rows, each the best of ``--repeats`` passes. The bare calls: LightGBM
    ``Booster.predict(X, num_threads=1)``, XGBoost ``Booster.inplace_predict``, CatBoost
    ``CatBoost.predict(X, thread_count=1)``; the linear family (ridge, ListNet, RankSVM,
    AdaRank, Coordinate Ascent) ``X @ w + b`` with the standardisation already folded into
    ``w`` and ``b``; RankBoost its threshold sums (``rankboost.threshold_sums``); MLR its
    scoring kernel (``mlr_solver.folded_row_scores``, factors precomputed); L-GMML its
    chunked scoring kernel (``scoring.score_rows``) without the input checks; the neural
    scorers the forward pass through the plugin's own batching (``training.score_matrix``)
    under ``torch.inference_mode`` on rows standardised beforehand.
one query per call: p50 / p99 latency (ms) and the fixed cost (µs)
    Up to ``--latency-queries`` queries of the split (evenly spread), each at its own size:
    ``predict`` on the query's rows (a view of the split) and ``qid``, and the bare call on
    the same rows, alternately, each the best of 3. The fixed cost per call is the median
    over the queries of (``predict`` time - bare time).
goal
    bulk ratio <= 1.2 and fixed cost <= 50 µs.

Wall-clock timings on a shared machine: compare within one row (the ratio and the fixed cost
are measured in one process, close together in time); the load average is printed beside
them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings

import numpy as np


def _models(quick: bool) -> list[tuple[str, str, dict]]:
    """(label, registered ranker, parameters): tree sizes as the issue measured them, fewer
    with ``--quick``; the others their defaults, with a few limits to keep the fit short."""
    trees = 100 if quick else 300
    return [
        ("ridge", "ridge", {}),
        ("listnet", "listnet", {"max_iter": 100}),
        ("ranksvm", "ranksvm", {"max_pairs": 20000, "C": 1.0}),
        ("adarank", "adarank", {}),
        ("coordinate-ascent", "coordinate-ascent", {"restarts": 1}),
        ("rankboost", "rankboost", {"rounds": trees}),
        ("mlr", "mlr", {"max_iter": 10}),
        ("lightgbm", "lightgbm", {"n_estimators": trees, "early_stopping_rounds": None}),
        (
            "xgboost-lambdamart",
            "xgboost-lambdamart",
            {"n_estimators": trees, "early_stopping_rounds": None},
        ),
        ("xgboost-gbrt", "xgboost-gbrt", {"n_estimators": trees * 2 // 3}),
        ("catboost", "catboost", {"n_estimators": trees * 2 // 3, "depth": 6}),
        ("lgmml", "lgmml", {}),
        ("neural-linear", "neural", {"epochs": 5}),
        ("neural-mlp", "neural", {"scorer": "mlp", "epochs": 3}),
        ("neural-transformer", "neural", {"scorer": "transformer", "epochs": 1}),
    ]


def _pool(n_queries: int, seed: int):
    from ltr_bench.data.loading import load_fold

    options = {"n_queries": n_queries, "docs_per_query": 120, "n_features": 136}
    options["n_informative"] = 40
    return load_fold("synthetic", 1, seed=seed, options=options)


def _bare(label: str, r):
    """The bare model call for ``r`` as ``f(X, qid) -> scores`` (see the module)."""
    if label == "lightgbm":
        return lambda X, q: r.booster_.predict(X, num_iteration=r.best_iteration_, num_threads=1)
    if label.startswith("xgboost"):
        return lambda X, q: r.booster_.inplace_predict(X, iteration_range=(0, r.best_iteration_))
    if label == "catboost":
        return lambda X, q: r.model_.predict(X, thread_count=1)
    if label in ("ridge", "listnet", "ranksvm", "adarank", "coordinate-ascent"):
        r.predict(np.zeros((1, r.n_features_in_)))  # makes its scorer (the folded weights)
        w, c = r._linear_scorer.w, r._linear_scorer.b
        return lambda X, q: X @ w + c
    if label == "rankboost":
        from ltr_bench_baselines.rankboost import threshold_sums

        return lambda X, q: threshold_sums(X, r.features_, r.thresholds_, r.alphas_)
    if label == "mlr":
        from ltr_bench_baselines.mlr_solver import folded_row_scores

        _, A, c = r._scoring_factors()
        return lambda X, q: folded_row_scores(X, A, c)
    if label == "lgmml":
        return _lgmml_bare(r)
    if label.startswith("neural"):
        return _neural_bare(r)
    raise ValueError(label)


def _lgmml_bare(r):
    from ltr_bench_lgmml.scoring import SCORE_CHUNK_ROWS, score_rows

    bank = r.metric_bank_
    w = bank.sign * r.weights_
    step = min(r._chunk_rows(bank), SCORE_CHUNK_ROWS)
    dtype = np.float32 if r.dtype == "float32" else np.float64

    def bare(X, q):
        out = np.empty(X.shape[0])
        return score_rows(bank, r.scaler_, None, X, out, lambda h: h @ w, dtype, step, 1)

    return bare


def _neural_bare(r):
    import torch

    from ltr_bench_neural.features import transform_features
    from ltr_bench_neural.training import score_matrix

    model = r.model_
    param = next(model.parameters())

    from ltr_bench_neural.training import torch_threads

    def bare(Xs, q):
        with torch_threads(1), torch.inference_mode():
            return score_matrix(model, Xs, q, r, param.device, param.dtype)

    def prepare(X):  # outside the timed call: the rows standardised as predict does it
        return (transform_features(X, r.feature_transform) - r.feature_mean_) / r.feature_scale_

    bare.prepare = prepare  # type: ignore[attr-defined]
    return bare


def _best(fn, repeats: int) -> float:
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _load() -> str:
    return "/".join(f"{v:.2f}" for v in os.getloadavg())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller split and models")
    parser.add_argument("--rankers", nargs="+", default=None, metavar="LABEL")
    parser.add_argument("--train-queries", type=int, default=None)
    parser.add_argument("--score-queries", type=int, default=None)
    parser.add_argument("--latency-queries", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    models = _models(args.quick)
    labels = [m[0] for m in models]
    unknown = sorted(set(args.rankers or ()) - set(labels))
    if unknown:
        parser.error(f"--rankers: unknown {', '.join(unknown)}; choose from {', '.join(labels)}")
    train_q = args.train_queries or (100 if args.quick else 300)
    score_q = args.score_queries or (300 if args.quick else 1500)
    lat_q = args.latency_queries or (50 if args.quick else 200)

    from ltr_bench.ranker import query_boundaries, tags_of
    from ltr_bench.registry import make_ranker
    from ltr_bench.timing import thread_limit

    train = _pool(train_q, seed=0).train
    test = _pool(score_q, seed=1).test
    X = np.ascontiguousarray(test.X, dtype=np.float64)
    qid = np.array(test.qid, dtype=np.int64)
    X.flags.writeable = qid.flags.writeable = False  # as the harness freezes its splits
    bounds = query_boundaries(qid)
    n_q = len(bounds) - 1
    picks = np.unique(np.linspace(0, n_q - 1, min(n_q, lat_q)).round().astype(int))
    print(
        f"fit on {train.X.shape[0]:,} rows; scoring {X.shape[0]:,} rows x {X.shape[1]} features, "
        f"{n_q:,} queries (one query per call: {picks.size}, median size "
        f"{int(np.median(np.diff(bounds)[picks]))}); best of {args.repeats}; one thread; "
        f"load {_load()}",
        flush=True,
    )
    print(
        "| ranker | predict µs/doc | bare µs/doc | predict / bare | one query p50 ms | "
        "p99 ms | bare p50 ms | fixed cost µs | goal | load |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---|", flush=True)
    for label, name, params in models:
        if args.rankers and label not in args.rankers:
            continue
        try:
            ranker = make_ranker(name, dict(params))
        except Exception as exc:  # a plugin or library that is not installed
            print(f"| {label} | not run: {exc} |", flush=True)
            continue
        thread = tags_of(ranker).thread_param
        if thread:
            ranker.set_params(**{thread: 1})
        with thread_limit(1):
            ranker.fit(train.X, train.y, qid=train.qid)
            bare = _bare(label, ranker)
            prepare = getattr(bare, "prepare", lambda X: X)
            Xb = prepare(X)
            scores, ref = ranker.predict(X, qid=qid), bare(Xb, qid)
            # the bare call must be the model predict wraps
            assert np.allclose(scores, ref, rtol=1e-6, atol=1e-6 * np.abs(ref).max()), label
            t_pred = _best(lambda: ranker.predict(X, qid=qid), args.repeats)
            t_bare = _best(lambda: bare(Xb, qid), args.repeats)
            lat, lat_bare = [], []
            for i in picks:
                a, b = int(bounds[i]), int(bounds[i + 1])
                Xq, qq = X[a:b], qid[a:b]
                Xqb = prepare(Xq)
                ranker.predict(Xq, qid=qq)  # warm
                lat.append(_best(lambda: ranker.predict(Xq, qid=qq), 3))
                lat_bare.append(_best(lambda: bare(Xqb, qq), 3))
        n = X.shape[0]
        ratio = t_pred / t_bare
        fixed = statistics.median(p - q for p, q in zip(lat, lat_bare)) * 1e6
        p50, p99 = np.percentile(np.asarray(lat) * 1e3, [50, 99])
        goal = "met" if ratio <= 1.2 and fixed <= 50 else "not met"
        print(
            f"| {label} | {1e6 * t_pred / n:.3g} | {1e6 * t_bare / n:.3g} | {ratio:.2f} | "
            f"{p50:.3g} | {p99:.3g} | {statistics.median(lat_bare) * 1e3:.3g} | "
            f"{fixed:.0f} | {goal} | {_load()} |",
            flush=True,
        )
    print(f"load after: {_load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

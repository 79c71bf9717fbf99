"""Per-document scoring time of each ranker family: ONNX Runtime (1 thread) against the native
model (1 thread), on a generated split of MSLR-WEB30K's test size.

Usage::

    python benchmarks/bench_onnx.py                         # 6,300 queries x ~120 docs x 136
    python benchmarks/bench_onnx.py --score-queries 500     # a quick look
    python benchmarks/bench_onnx.py --rankers lightgbm ridge

The data: the ``synthetic`` generator (``ltr_bench.data.generated``) with 136 features (40
informative). Each model is fitted on fold 1's training split of a ``--train-queries`` pool
(default 1,000 queries: about 72,000 rows; fit size does not change scoring cost except
through the model's size, which is fixed below) and scores every row of a separately
generated ``--score-queries`` pool (default 6,300 queries of about 120 documents: about
760,000 rows, one MSLR-WEB30K fold's test split). Model sizes: the tree ensembles 500 rounds
of at most 31 leaves (CatBoost depth 6), no early stopping; the others their defaults
(a few fixed to keep the fit short, printed).

Per family: native ``predict`` (threads set to 1 through the ranker's ``thread_param``) and
ONNX Runtime (``intra_op_num_threads=1``; calls of 16,384 rows, or one call per query for
a model whose input contract is one query), each the best of ``--repeats`` passes (default
3), as microseconds per document, and the ratio ONNX / native (below 1: ONNX is faster).
The largest scaled score difference is printed too (the export's proof on this data).
Timings are wall-clock on a shared machine: compare the ratios within one run; the load
average is printed beside them.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings

import numpy as np

TREES = {"n_estimators": 500, "early_stopping_rounds": None}
#: (label, registered ranker, parameters)
MODELS = [
    ("lightgbm", "lightgbm", {**TREES, "num_leaves": 31}),
    ("xgboost-lambdamart", "xgboost-lambdamart", {**TREES, "max_leaves": 31}),
    ("catboost", "catboost", {**TREES, "depth": 6}),
    ("ridge", "ridge", {}),
    ("ranksvm", "ranksvm", {"max_pairs": 20}),
    ("rankboost", "rankboost", {"rounds": 300}),
    ("mlr", "mlr", {"max_iter": 20}),
    ("lgmml", "lgmml", {}),
    ("neural-linear", "neural", {"epochs": 20}),
    ("neural-mlp", "neural", {"scorer": "mlp", "epochs": 10}),
    ("neural-transformer", "neural", {"scorer": "transformer", "epochs": 2}),
]


def _pool(n_queries: int, docs: int, seed: int):
    from ltr_bench.data.loading import load_fold

    options = {"n_queries": n_queries, "docs_per_query": docs, "n_features": 136}
    options["n_informative"] = 40
    return load_fold("synthetic", 1, seed=seed, options=options)


#: rows per ONNX Runtime call for a model whose input contract is rows (a service scores a
#: request's rows; L-GMML's graph holds rows x metric columns at once)
BLOCK = 16384


def _blocks(session, X, onnx_scores) -> np.ndarray:
    return np.concatenate(
        [onnx_scores(session, X[a : a + BLOCK], one_query=False) for a in range(0, len(X), BLOCK)]
    )


def _best(fn, repeats: int) -> tuple[float, np.ndarray]:
    best, out = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    labels = [m[0] for m in MODELS]
    parser.add_argument("--rankers", nargs="+", default=labels, choices=labels)
    parser.add_argument("--train-queries", type=int, default=1000)
    parser.add_argument("--score-queries", type=int, default=6300)
    parser.add_argument("--docs-per-query", type=int, default=120)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")

    from ltr_bench.models import load_model, save_model
    from ltr_bench.models.onnx import (
        SCORE_BOUND,
        compare_scores,
        input_contract,
        onnx_model,
        onnx_scores,
        onnx_session,
    )
    from ltr_bench.ranker import tags_of
    from ltr_bench.registry import make_ranker

    train = _pool(args.train_queries, args.docs_per_query, seed=0)
    pool = _pool(args.score_queries, args.docs_per_query, seed=1)
    X = np.ascontiguousarray(np.vstack([pool.train.X, pool.vali.X, pool.test.X]))
    offset = 1 + int(max(pool.train.qid.max(), pool.vali.qid.max(), pool.test.qid.max()))
    qid = np.concatenate([pool.train.qid, pool.vali.qid + offset, pool.test.qid + 2 * offset])
    print(
        f"fit on {train.train.X.shape[0]:,} rows; scoring {X.shape[0]:,} rows x {X.shape[1]} "
        f"features, {np.unique(qid).size:,} queries; best of {args.repeats}; load "
        f"{'/'.join(f'{v:.2f}' for v in os.getloadavg())}",
        flush=True,
    )
    print("| family | native µs/doc | ONNX Runtime µs/doc | ONNX / native | max scaled diff |")
    print("|---|---:|---:|---:|---:|", flush=True)
    for label, name, params in MODELS:
        if label not in args.rankers:
            continue
        ranker = make_ranker(name, dict(params))
        thread = tags_of(ranker).thread_param
        if thread:
            ranker.set_params(**{thread: 1})
        tr = train.train
        ranker.fit(tr.X, tr.y, qid=tr.qid)
        with tempfile.TemporaryDirectory(prefix="bench-onnx-") as tmp:
            model = load_model(save_model(ranker, f"{tmp}/m", ranker_name=name))
            data = onnx_model(model).SerializeToString()
        one_query = input_contract(model) == "one query"
        session = onnx_session(data, threads=1)
        t_native, native = _best(lambda: model.predict(X, qid), args.repeats)
        if one_query:
            t_onnx, scores = _best(
                lambda: onnx_scores(session, X, qid, one_query=True), args.repeats
            )
        else:
            t_onnx, scores = _best(lambda: _blocks(session, X, onnx_scores), args.repeats)
        diff = compare_scores(native, scores, qid, SCORE_BOUND)
        n = X.shape[0]
        print(
            f"| {label} | {1e6 * t_native / n:.3g} | {1e6 * t_onnx / n:.3g} | "
            f"{t_onnx / t_native:.2f} | {diff.max_scaled_diff:.2g}"
            f"{'' if diff.holds else ' (FAILS)'} |",
            flush=True,
        )
    print(f"load after: {'/'.join(f'{v:.2f}' for v in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Training throughput and scoring time of the allRank-style ``neural`` scorers.

For ``mlp`` and ``transformer`` (and ``linear`` as the reference row of the same run), on one
fold of a generated ``synthetic`` LETOR dataset (or any dataset ``--dataset`` names, e.g. a
folder of LETOR files):

* training documents per second per epoch: ``--epochs`` Adam epochs over the training split
  (no early stopping, ``--batch-size`` queries per step, ``--slate-length`` documents at most
  per training list), training documents / (fit seconds / epochs);
* per-document scoring time: ``predict`` on the test split (every document of every query,
  in input order), best of ``--repeats`` runs, seconds / documents.

torch runs on ``--threads`` threads (``torch.set_num_threads``, printed). The load average is
printed beside the timings: on a shared machine compare the ratios to ``linear`` within one
run, not absolute numbers across runs.

    python benchmarks/bench_neural_throughput.py --threads 1 [--queries 300] [--docs 120]
        [--features 136] [--epochs 3] [--loss listnet] [--dataset NAME|PATH --data-dir DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from ltr_bench.data import load_fold  # noqa: E402

SCORERS = {
    "linear": {},
    "mlp": {"sizes": [64, 32], "activation": "ReLU"},
    "transformer": {"sizes": [96], "N": 2, "h": 1, "d_ff": 384, "dropout": 0.1},
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, required=True, help="torch threads (printed)")
    ap.add_argument("--dataset", default="synthetic")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--queries", type=int, default=300, help="synthetic: queries in all folds")
    ap.add_argument("--docs", type=int, default=120, help="synthetic: mean documents per query")
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--slate-length", type=int, default=240)
    ap.add_argument("--loss", default="listnet")
    ap.add_argument(
        "--default-path",
        action="store_true",
        help="the ranker's default optimizer (auto), lr, batch size and no slate: what a user "
        "gets with only scorer, loss and epochs set; L-BFGS iterations count as epochs",
    )
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)

    import torch

    from ltr_bench_neural.ranker import NeuralRanker

    opts = None
    if args.dataset == "synthetic":
        opts = {
            "n_queries": args.queries,
            "docs_per_query": args.docs,
            "n_features": args.features,
            "n_informative": min(10, args.features),
        }
    fold = load_fold(args.dataset, 1, data_dir=args.data_dir, options=opts)
    tr, te = fold.train, fold.test
    print(
        f"{args.dataset} fold 1: {len(tr.X)} training documents in {len(np.unique(tr.qid))} "
        f"queries, {len(te.X)} test documents, {tr.X.shape[1]} features; "
        f"torch {torch.__version__}, threads={args.threads}, loss={args.loss}, "
        f"epochs={args.epochs}, batch_size={args.batch_size}, slate_length={args.slate_length}"
    )
    # warm-up (not timed): the first fit of a process pays torch's one-time start-up costs
    NeuralRanker(
        scorer="mlp", loss=args.loss, optimizer="adam", epochs=1, n_threads=args.threads
    ).fit(tr.X, tr.y, qid=tr.qid)
    rows = []
    for scorer, scorer_args in SCORERS.items():
        tuned = dict(optimizer="adam", lr=1e-3, batch_size=args.batch_size)
        tuned["slate_length"] = args.slate_length
        ranker = NeuralRanker(
            scorer=scorer,
            scorer_args=scorer_args,
            loss=args.loss,
            epochs=args.epochs,
            patience=None,
            random_state=0,
            n_threads=args.threads,
            device="cpu",
            **({} if args.default_path else tuned),
        )
        t0 = time.perf_counter()
        ranker.fit(tr.X, tr.y, qid=tr.qid)
        fit_s = time.perf_counter() - t0
        epochs = ranker.fitted_info()["iterations"]
        # documents actually trained on per epoch: each list capped at slate_length
        _, sizes = np.unique(tr.qid, return_counts=True)
        cap = np.inf if args.default_path else args.slate_length
        train_docs = int(np.minimum(sizes, cap).sum())
        score_s = np.inf
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            ranker.predict(te.X, qid=te.qid)
            score_s = min(score_s, time.perf_counter() - t0)
        rows.append(
            (scorer, train_docs * epochs / fit_s, 1e6 * score_s / len(te.X), os.getloadavg()[0])
        )
        if args.default_path:
            print(f"  {scorer}: optimizer {ranker.fitted_info()['optimizer']}, no slate")
        print(
            f"  {scorer:<12} train {rows[-1][1]:>10.0f} docs/s per epoch   "
            f"score {rows[-1][2]:>8.2f} us/doc   (load average {rows[-1][3]:.2f})",
            flush=True,
        )
    ref_train, ref_score = rows[0][1], rows[0][2]
    print(f"ratios against linear (same run, threads={args.threads}):")
    for scorer, train, score, _ in rows[1:]:
        print(
            f"  {scorer:<12} training throughput x{train / ref_train:.3f}   "
            f"scoring time x{score / ref_score:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

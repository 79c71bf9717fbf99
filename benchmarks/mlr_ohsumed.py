"""5-fold OHSUMED (LETOR 3.0 Feature-min, 45 features): MLR / R-MLR fit time and NDCG@10,
with L-GMML timed in the same process for the ratio.

MLR on query-document data uses the ideal-candidate adaptation (ALGORITHMS.md section 5):
features z-scored on the training split, z = mean of the training documents with the top
label, score -(x - z)^T W (x - z). C is chosen per fold on the validation split's NDCG@10
from ``--c-grid`` (the test split is never used to choose anything); the reported fit time is
the fit of the chosen model only, and "grid s" is the whole validation sweep.

Usage::

    python benchmarks/mlr_ohsumed.py --data ../shared/data/OHSUMED-LETOR3-Feature-min

Timing numbers are wall-clock seconds on a shared 2-core machine, single BLAS thread: noisy.
"""

from __future__ import annotations

import argparse
import lzma
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_svmlight_file

from ltr_bench.metrics import evaluate
from ltr_bench_baselines.mlr import MLRRanker, RMLRRanker


def read(path: Path):
    with lzma.open(path) as fh:
        X, y, q = load_svmlight_file(fh, query_id=True, n_features=45, zero_based=False)
    return np.asarray(X.todense()), y.astype(np.int64), q.astype(np.int64)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" /
                                          "data" / "OHSUMED-LETOR3-Feature-min"))
    ap.add_argument("--c-grid", default="1,10,100")
    ap.add_argument("--loss", default="ndcg")
    ap.add_argument("--lam", type=float, default=0.1)
    ap.add_argument("--folds", default="1,2,3,4,5")
    ap.add_argument("--no-lgmml", action="store_true")
    args = ap.parse_args(argv)
    c_grid = [float(c) for c in args.c_grid.split(",")]
    rows = []
    for f in [int(x) for x in args.folds.split(",")]:
        base = Path(args.data) / f"Fold{f}"
        tr, va, te = (read(base / f"{n}.txt.xz")
                      for n in ("trainingset", "validationset", "testset"))
        for name, cls, extra in (("mlr", MLRRanker, {}),
                                 ("rmlr", RMLRRanker, {"lam": args.lam})):
            t0 = time.perf_counter()
            best = None
            for C in c_grid:
                t1 = time.perf_counter()
                m = cls(C=C, loss=args.loss, **extra).fit(tr[0], tr[1], qid=tr[2])
                fit_s = time.perf_counter() - t1
                v = evaluate(va[1], m.predict(va[0]), va[2], ("ndcg@10",))["ndcg@10"]
                if best is None or v > best[0]:
                    best = (v, C, m, fit_s)
            grid_s = time.perf_counter() - t0
            v, C, m, fit_s = best
            res = evaluate(te[1], m.predict(te[0]), te[2], ("ndcg@10",))["ndcg@10"]
            res0 = evaluate(te[1], m.predict(te[0]), te[2], ("ndcg@10",),
                            empty_query=0.0)["ndcg@10"]
            rows.append((f, name, C, res, res0, fit_s, grid_s, m.n_iter_))
            print(f"fold {f} {name}: C={C:g} vali {v:.4f} test NDCG@10 {res:.4f} "
                  f"(empty=0: {res0:.4f}) fit {fit_s:.1f}s ({m.n_iter_} cutting planes), "
                  f"grid {grid_s:.1f}s", file=sys.stderr, flush=True)
        if not args.no_lgmml:
            try:
                from ltr_bench.registry import load_ranker_class

                L = load_ranker_class("lgmml")
            except Exception as exc:  # the plugin is optional
                print(f"lgmml unavailable: {exc}", file=sys.stderr)
                args.no_lgmml = True
                continue
            t1 = time.perf_counter()
            m = L(random_state=0).fit(tr[0], tr[1], qid=tr[2], eval_set=va)
            fit_s = time.perf_counter() - t1
            res = evaluate(te[1], m.predict(te[0]), te[2], ("ndcg@10",))["ndcg@10"]
            res0 = evaluate(te[1], m.predict(te[0]), te[2], ("ndcg@10",),
                            empty_query=0.0)["ndcg@10"]
            rows.append((f, "lgmml", float("nan"), res, res0, fit_s, fit_s, 0))
            print(f"fold {f} lgmml (defaults): test NDCG@10 {res:.4f} fit {fit_s:.1f}s",
                  file=sys.stderr, flush=True)
    print("| ranker | NDCG@10 (empty=1) | NDCG@10 (empty=0) | fit s per fold (chosen C) |"
          " grid s per fold |")
    print("|---|---|---|---|---|")
    for name in ("mlr", "rmlr", "lgmml"):
        r = [x for x in rows if x[1] == name]
        if not r:
            continue
        a = np.array([x[3:7] for x in r], dtype=np.float64)
        print(f"| {name} | {a[:, 0].mean():.4f} | {a[:, 1].mean():.4f} | "
              f"{a[:, 2].mean():.1f} | {a[:, 3].mean():.1f} |")


if __name__ == "__main__":
    main()

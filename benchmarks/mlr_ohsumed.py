"""5-fold OHSUMED (LETOR 3.0 Feature-min, 45 features): MLR / R-MLR fit time and NDCG@10,
with L-GMML timed in the same process for the ratio.

MLR on query-document data uses the ideal-candidate adaptation
(docs/decisions.md#mlr-ideal-candidate): features z-scored on the training split, z = mean of
the training documents with the top label, score -(x - z)^T W (x - z). C is chosen per fold on
the validation split's NDCG@10 from ``--c-grid`` (the test split is never used to choose
anything); the reported fit time is the fit of the chosen model only, and "grid s" is the whole
validation sweep.

Data are read with ``ltr_bench.data.load_fold(<folder>, k)`` (the harness path).
``--max-iter`` / ``--admm-max-iter`` cap the cutting planes / inner ADMM steps (the fit
reports whether the stopping rule fired; "cap" in the log means it did not).

Usage::

    python benchmarks/mlr_ohsumed.py --data ../shared/data/OHSUMED-LETOR3-Feature-min
    python benchmarks/mlr_ohsumed.py --rankers mlr --no-lgmml --c-grid 1,10,100,1000 \\
        --max-iter 100 --admm-max-iter 50
    python benchmarks/mlr_ohsumed.py --no-lgmml --c-grid 1,10,100,1000,10000 --max-iter 200 \\
        --admm-max-iter 50 --lam-ratio 0.3

Timing numbers are wall-clock seconds on a shared 2-core machine, single BLAS thread: noisy.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from ltr_bench.data import load_fold
from ltr_bench.metrics import evaluate
from ltr_bench_baselines.mlr import MLRRanker, RMLRRanker


def read(split):
    return np.asarray(split.X), split.y, split.qid


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" /
                                          "data" / "OHSUMED-LETOR3-Feature-min"))
    ap.add_argument("--c-grid", default="1,10,100")
    ap.add_argument("--loss", default="ndcg")
    ap.add_argument("--lam", type=float, default=0.1)
    ap.add_argument("--lam-ratio", type=float, default=None,
                    help="R-MLR lam = ratio * C for each C of the grid (overrides --lam); the "
                         "l2,1 threshold that removes a feature scales with C")
    ap.add_argument("--folds", default="1,2,3,4,5")
    ap.add_argument("--no-lgmml", action="store_true")
    ap.add_argument("--rankers", default="mlr,rmlr", help="subset of mlr,rmlr")
    ap.add_argument("--max-iter", type=int, default=200)
    ap.add_argument("--admm-max-iter", type=int, default=500)
    args = ap.parse_args(argv)
    wanted = set(args.rankers.split(","))
    c_grid = [float(c) for c in args.c_grid.split(",")]
    rows = []
    for f in [int(x) for x in args.folds.split(",")]:
        fold = load_fold(args.data, f)
        tr, va, te = read(fold.train), read(fold.vali), read(fold.test)
        for name, cls, extra in (("mlr", MLRRanker, {}),
                                 ("rmlr", RMLRRanker, {"lam": args.lam})):
            if name not in wanted:
                continue
            extra = dict(extra, max_iter=args.max_iter, admm_max_iter=args.admm_max_iter)
            t0 = time.perf_counter()
            best = None
            for C in c_grid:
                t1 = time.perf_counter()
                if name == "rmlr" and args.lam_ratio is not None:
                    extra["lam"] = args.lam_ratio * C
                m = cls(C=C, loss=args.loss, **extra).fit(tr[0], tr[1], qid=tr[2])
                fit_s = time.perf_counter() - t1
                v = evaluate(va[1], m.predict(va[0]), va[2], ("ndcg@10",))["ndcg@10"]
                kept = int((np.abs(m.W_).sum(axis=0) > 0).sum())
                print(f"  fold {f} {name} C={C:g} lam={extra.get('lam', 0):g} "
                      f"({kept} features kept): vali NDCG@10 {v:.4f}, fit {fit_s:.1f}s, "
                      f"{m.n_iter_} cutting planes{'' if m.converged_ else ' (cap)'}",
                      file=sys.stderr, flush=True)
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
    print("| fold | ranker | C (vali) | test NDCG@10 | fit s (chosen C) | grid s |")
    print("|---|---|---|---|---|---|")
    for x in rows:
        print(f"| {x[0]} | {x[1]} | {x[2]:g} | {x[3]:.4f} | {x[5]:.1f} | {x[6]:.1f} |")
    print()
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

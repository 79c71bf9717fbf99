"""5-fold OHSUMED (LETOR 3.0, Feature-min): L-GMML next to LightGBM and XGBoost GBRT.

Usage::

    python benchmarks/lgmml_ohsumed.py [--data ../shared/data/OHSUMED-LETOR3-Feature-min]
    python benchmarks/lgmml_ohsumed.py --tune        # also the validation-split tuning grid

Prints NDCG@1/3/5/10 on the test splits (5-fold mean; queries without a relevant document
scored 1, and separately 0) for:

- ``lightgbm``: LightGBM lambdarank, 500 trees, 255 leaves, lr 0.1, min_sum_hessian_in_leaf
  100 (the project default), early stopping (50 rounds) on the validation split's NDCG@10;
  and the same with min_sum_hessian_in_leaf 1e-3 (on OHSUMED's ~9k training documents the
  lambdarank hessians are so small that 100 blocks most splits: Fold 1 stops at 1 tree);
- ``xgboost-gbrt``: XGBoost squared error, eta 0.1, 500 rounds, min_child_weight 100, hist,
  lossguide, max_leaves 255, early stopping on the validation split's NDCG@10;
- ``lgmml paper``: the paper's settings (l2 scaling, Eq. 12 distance, Eq. 13 score, t = 1/2,
  m = 500) with each weight strategy;
- ``lgmml default``: the ranker's defaults with each weight strategy;
- with ``--tune``: every configuration of a small grid is scored on the validation splits
  (5-fold mean NDCG@10, empty queries 0) and the best one is then evaluated on the test
  splits. Test splits are never used to choose anything.

The data are read directly (lzma + scikit-learn's svmlight reader); seeds are fixed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import lzma
import sys
import time
from pathlib import Path

import numpy as np

KS = (1, 3, 5, 10)
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "OHSUMED-LETOR3-Feature-min"


def load_split(root: Path, fold: int, part: str):
    from sklearn.datasets import load_svmlight_file
    with lzma.open(root / f"Fold{fold}" / f"{part}.txt.xz") as f:
        X, y, qid = load_svmlight_file(f, query_id=True, n_features=45)
    return np.ascontiguousarray(X.toarray()), y.astype(np.int64), qid.astype(np.int64)


def ndcgs(y, s, qid):
    from ltr_bench.metrics import evaluate
    names = tuple(f"ndcg@{k}" for k in KS)
    one = evaluate(y, s, qid, names, empty_query=1.0)
    zero = evaluate(y, s, qid, names, empty_query=0.0)
    return np.array([one[n] for n in names] + [zero[n] for n in names])


def groups(qid):
    b = np.r_[np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]]), qid.size]
    return np.diff(b)


def fit_lightgbm(tr, va, min_hessian=100.0):
    import lightgbm as lgb
    params = dict(objective="lambdarank", metric="ndcg", eval_at=[10], num_leaves=255,
                  learning_rate=0.1, min_sum_hessian_in_leaf=min_hessian, min_data_in_leaf=0,
                  num_threads=2, seed=0, deterministic=True, force_row_wise=True, verbosity=-1)
    dtr = lgb.Dataset(tr[0], tr[1], group=groups(tr[2]))
    dva = lgb.Dataset(va[0], va[1], group=groups(va[2]), reference=dtr)
    b = lgb.train(params, dtr, 500, valid_sets=[dva],
                  callbacks=[lgb.early_stopping(50, verbose=False)])
    return lambda X: b.predict(X, num_iteration=b.best_iteration)


def fit_xgboost(tr, va):
    import xgboost as xgb
    dtr = xgb.DMatrix(tr[0], label=tr[1], qid=tr[2])
    dva = xgb.DMatrix(va[0], label=va[1], qid=va[2])
    params = dict(objective="reg:squarederror", eta=0.1, min_child_weight=100,
                  tree_method="hist", grow_policy="lossguide", max_depth=0, max_leaves=255,
                  nthread=2, seed=0, eval_metric="ndcg@10")
    b = xgb.train(params, dtr, 500, evals=[(dva, "vali")], early_stopping_rounds=50,
                  verbose_eval=False)
    return lambda X: b.predict(xgb.DMatrix(X), iteration_range=(0, b.best_iteration + 1))


def fit_lgmml(params):
    from ltr_bench_lgmml import LGMMLRanker

    def fit(tr, va):
        r = LGMMLRanker(random_state=0, n_threads=2, **params).fit(tr[0], tr[1], qid=tr[2])
        return r.predict
    return fit


PAPER = dict(scaling="l2", distance="paper", score_form="eq13", t=0.5, n_metrics=500,
             step_size="authors", margin=0.01, initial_weight=1.0)

GRID = {
    "score_form": ["eq13", "rising"],
    "scaling": ["zscore", "l2"],
    "distance": ["paper", "mahalanobis"],
    "n_metrics": [50],
    "step_size": [0.01, 0.1],
    "weight_strategy": ["global", "mean", "uniform"],
}


def run(name, fitter, folds, *, split="test"):
    t0 = time.perf_counter()
    vals = []
    for tr, va, te in folds:
        predict = fitter(tr, va)
        ev = te if split == "test" else va
        vals.append(ndcgs(ev[1], predict(ev[0]), ev[2]))
    vals = np.array(vals)
    return vals.mean(0), vals.std(0), time.perf_counter() - t0


def fmt_row(name, mean, secs):
    a = " ".join(f"{v:.4f}" for v in mean[:4])
    b = " ".join(f"{v:.4f}" for v in mean[4:])
    return f"| {name:<44} | {a} | {b} | {secs:6.1f} |"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--tune", action="store_true")
    ap.add_argument("--skip-baselines", action="store_true")
    args = ap.parse_args(argv)
    folds = [tuple(load_split(args.data, k, p) for p in ("trainingset", "validationset",
                                                          "testset")) for k in range(1, 6)]
    header = ("| ranker (5-fold mean, test)                   | NDCG@1/3/5/10, empty=1        "
              "| NDCG@1/3/5/10, empty=0        | secs   |")
    print(header)
    print("|" + "---|" * 4)
    rows = []
    if not args.skip_baselines:
        rows.append(("lightgbm (project defaults, min_hess 100)", fit_lightgbm))
        rows.append(("lightgbm (min_sum_hessian_in_leaf 1e-3)",
                     lambda tr, va: fit_lightgbm(tr, va, 1e-3)))
        rows.append(("xgboost-gbrt (early stop on vali)", fit_xgboost))
    for s in ("uniform", "mean", "global"):
        rows.append((f"lgmml paper settings, {s}", fit_lgmml(dict(PAPER, weight_strategy=s))))
    for s in ("uniform", "mean", "global"):
        rows.append((f"lgmml defaults, {s}", fit_lgmml(dict(weight_strategy=s))))
    for name, fitter in rows:
        mean, _, secs = run(name, fitter, folds)
        print(fmt_row(name, mean, secs), flush=True)
    if args.tune:
        keys = list(GRID)
        best = None
        print("\n# validation grid (5-fold mean NDCG@10 on the validation splits, empty=0)")
        for vals in itertools.product(*GRID.values()):
            p = dict(zip(keys, vals))
            mean, _, secs = run("", fit_lgmml(p), folds, split="vali")
            print(f"vali ndcg@10 {mean[7]:.4f}  {json.dumps(p)}", flush=True)
            if best is None or mean[7] > best[0]:
                best = (mean[7], p)
        print(f"\nbest on validation: {json.dumps(best[1])} (vali NDCG@10 {best[0]:.4f})")
        for s in ("uniform", "mean", "global"):
            p = dict(best[1], weight_strategy=s)
            mean, _, secs = run("", fit_lgmml(p), folds)
            print(fmt_row(f"lgmml tuned on vali, {s}", mean, secs), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

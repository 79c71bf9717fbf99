"""Reproduce MLR's Table 2 (kNN error, WDBC and Wine) and R-MLR's noisy-Wine point.

Protocol (McFee & Lanckriet 2010, Section 5.1): seeded random 80/20 splits, features z-scored
with training statistics (``ltr_bench.data.load_fold("wine"|"wdbc", fold, seed=...)``; fold k
is the stratified split drawn with ``random_state = seed + k``; sklearn rounds the test part
up, so 36 / 114 test points instead of the paper's 35 / 113). Each training point is a query
over the other training points, relevant = same class.

Model selection uses the training part only (the paper reports the best C and k, picked on
the test points; we do not): 3-fold stratified cross-validation on the training points over
``C`` in ``--c-grid`` and k in {1, 3, ..., 11}; "Euclidean" (W = I) picks k the same way.
The chosen model is refitted on the whole training part and its kNN error is measured on the
test points (majority vote, ties to the nearest tied class).

Noisy Wine (R-MLR, ``--noise``): 96 correlated Gaussian noise dimensions appended before the
split (``options={"noise_features": 96}``: covariance A A^T / 96, A standard normal from the
seed), z-scored; C = 1e3, lambda = 0.1, loss MAP for both MLR and R-MLR as in the reference
demo; k picked by leave-one-out kNN on the training points under the learned metric.

Usage::

    python benchmarks/mlr_table2.py --splits 10 --out mlr_table2.json
    python benchmarks/mlr_table2.py --noise --splits 10 --out mlr_noise.json
    python benchmarks/mlr_table2.py --noise-cv --loss map --c-grid 1,10 --splits 10 \\
        --max-iter 100 --admm-max-iter 20 --out mlr_noise_cv.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
from sklearn.model_selection import StratifiedKFold
from threadpoolctl import threadpool_limits

from ltr_bench.data import load_fold
from ltr_bench_baselines.mlr import (
    MLRRanker,
    RMLRRanker,
    _neighbour_order,
    knn_predict,
    qbe_rows,
)

PAPER = {"wdbc": {"MLR-AUC": 2.7, "Euclidean": 3.1}, "wine": {"MLR-AUC": 1.4, "Euclidean": 3.1}}
K_GRID = (1, 3, 5, 7, 9, 11)


def points(fold):
    """(X_train, c_train, X_test, c_test) z-scored points recovered from the qbe rows."""
    d = fold.query_dim
    tr, te = fold.train, fold.test
    _, i = np.unique(tr.extras["doc_index"], return_index=True)
    _, j = np.unique(te.extras["query_index"], return_index=True)
    return (tr.X[i, d:], tr.extras["doc_class"][i], te.X[j, :d], te.extras["query_class"][j])


def errors_all_k(W, Xa, ca, Xb, cb):
    order = _neighbour_order(W, Xa, Xb)
    return np.array([np.mean(knn_predict(W, Xa, ca, Xb, k, order=order) != cb)
                     for k in K_GRID])


def loo_errors_all_k(W, X, c):
    """Leave-one-out kNN error on the training points for every k (a point is not its own
    neighbour)."""
    order = _neighbour_order(W, X, X)
    n = X.shape[0]
    order = order[order != np.arange(n)[:, None]].reshape(n, n - 1)
    idx = np.arange(n)
    out = []
    for k in K_GRID:
        # knn_predict with a precomputed order over the training points themselves
        pred = knn_predict(W, X, c, X, k, order=order)
        out.append(np.mean(pred != c[idx]))
    return np.array(out)


def fit(cls, X, c, **params):
    rows, y, q = qbe_rows(X, c)
    return cls(query_dim=X.shape[1], scaling="none", **params).fit(rows, y, qid=q)


def table2(dataset, splits, seed, c_grid, loss, epsilon, log):
    res = {"mlr": [], "euclid": [], "C": [], "k_mlr": [], "k_euclid": [], "fit_s": []}
    for f in range(1, splits + 1):
        fold = load_fold(dataset, f, seed=seed)
        Xtr, ctr, Xte, cte = points(fold)
        d = Xtr.shape[1]
        cv = StratifiedKFold(3, shuffle=True, random_state=seed + f)
        cv_mlr = np.zeros((len(c_grid), len(K_GRID)))
        cv_euc = np.zeros(len(K_GRID))
        for a, b in cv.split(Xtr, ctr):
            cv_euc += errors_all_k(np.eye(d), Xtr[a], ctr[a], Xtr[b], ctr[b])
            for ci, C in enumerate(c_grid):
                m = fit(MLRRanker, Xtr[a], ctr[a], C=C, loss=loss, epsilon=epsilon)
                cv_mlr[ci] += errors_all_k(m.W_, Xtr[a], ctr[a], Xtr[b], ctr[b])
        ci, ki = np.unravel_index(np.argmin(cv_mlr), cv_mlr.shape)  # first minimum wins
        ke = int(np.argmin(cv_euc))
        t0 = time.perf_counter()
        # the final model trains on the dataset's own train split rows (the harness path)
        m = MLRRanker(query_dim=d, scaling="none", C=c_grid[ci], loss=loss,
                      epsilon=epsilon).fit(fold.train.X, fold.train.y, qid=fold.train.qid)
        res["fit_s"].append(time.perf_counter() - t0)
        res["mlr"].append(float(errors_all_k(m.W_, Xtr, ctr, Xte, cte)[ki]))
        res["euclid"].append(float(errors_all_k(np.eye(d), Xtr, ctr, Xte, cte)[ke]))
        res["C"].append(c_grid[ci])
        res["k_mlr"].append(K_GRID[ki])
        res["k_euclid"].append(K_GRID[ke])
        log(f"{dataset} split {f}: MLR {100 * res['mlr'][-1]:.1f}% (C={c_grid[ci]}, "
            f"k={K_GRID[ki]}), Euclidean {100 * res['euclid'][-1]:.1f}% (k={K_GRID[ke]})")
    return res


def noise(splits, seed, epsilon, log, admm_max_iter, max_iter):
    res = {"mlr": [], "rmlr": [], "euclid": [], "rmlr_nonzero_cols": [], "mlr_fit_s": [],
           "rmlr_fit_s": [], "mlr_converged": [], "rmlr_converged": []}
    for f in range(1, splits + 1):
        fold = load_fold("wine", f, seed=seed, options={"noise_features": 96})
        Xtr, ctr, Xte, cte = points(fold)
        d = Xtr.shape[1]
        e = loo_errors_all_k(np.eye(d), Xtr, ctr)
        res["euclid"].append(float(errors_all_k(np.eye(d), Xtr, ctr, Xte, cte)[np.argmin(e)]))
        for name, cls, extra in (("mlr", MLRRanker, {}), ("rmlr", RMLRRanker, {"lam": 0.1})):
            t0 = time.perf_counter()
            m = cls(query_dim=d, scaling="none", C=1e3, loss="map", epsilon=epsilon,
                    admm_max_iter=admm_max_iter, max_iter=max_iter, **extra).fit(
                fold.train.X, fold.train.y, qid=fold.train.qid)
            res[f"{name}_fit_s"].append(time.perf_counter() - t0)
            res[f"{name}_converged"].append(bool(m.converged_))
            ki = int(np.argmin(loo_errors_all_k(m.W_, Xtr, ctr)))
            res[name].append(float(errors_all_k(m.W_, Xtr, ctr, Xte, cte)[ki]))
            if name == "rmlr":
                res["rmlr_nonzero_cols"].append(int((np.abs(m.W_).sum(axis=0) > 0).sum()))
        log(f"wine+96 split {f}: MLR {100 * res['mlr'][-1]:.1f}%, R-MLR "
            f"{100 * res['rmlr'][-1]:.1f}% ({res['rmlr_nonzero_cols'][-1]} of {d} features "
            f"kept), Euclidean {100 * res['euclid'][-1]:.1f}%")
    return res


def noise_cv(splits, seed, epsilon, log, admm_max_iter, max_iter, c_grid, ratio_grid, loss):
    """R-MLR vs MLR on Wine + 96 noise dims with C (and lambda) chosen by 3-fold CV on the
    training part only. R-MLR's grid is (C, lambda = r * C): the l2,1 threshold that removes a
    column scales with C (optimality: column j of W is zero iff the column of C * sum_t
    alpha_t Psi_t, less the trace/PSD multipliers, has norm <= lambda), so r = lambda / C is
    the scale-free knob. k is chosen jointly by the same CV; first minimum in grid order."""
    res = {"mlr": [], "rmlr": [], "euclid": [], "rmlr_nonzero_cols": [],
           "rmlr_signal_cols": [], "mlr_C": [], "rmlr_C": [], "rmlr_lam": [], "k_mlr": [],
           "k_rmlr": [], "k_euclid": [], "split_s": [], "mlr_converged": [],
           "rmlr_converged": []}
    configs = [("mlr", MLRRanker, C, {}) for C in c_grid] + [
        ("rmlr", RMLRRanker, C, {"lam": r * C}) for C in c_grid for r in ratio_grid]
    common = dict(loss=loss, epsilon=epsilon, admm_max_iter=admm_max_iter, max_iter=max_iter)
    for f in range(1, splits + 1):
        t0 = time.perf_counter()
        fold = load_fold("wine", f, seed=seed, options={"noise_features": 96})
        Xtr, ctr, Xte, cte = points(fold)
        d = Xtr.shape[1]
        cv = StratifiedKFold(3, shuffle=True, random_state=seed + f)
        cv_err = np.zeros((len(configs), len(K_GRID)))
        cv_euc = np.zeros(len(K_GRID))
        for a, b in cv.split(Xtr, ctr):
            cv_euc += errors_all_k(np.eye(d), Xtr[a], ctr[a], Xtr[b], ctr[b])
            for i, (_, cls, C, extra) in enumerate(configs):
                m = fit(cls, Xtr[a], ctr[a], C=C, **common, **extra)
                cv_err[i] += errors_all_k(m.W_, Xtr[a], ctr[a], Xtr[b], ctr[b])
        ke = int(np.argmin(cv_euc))
        res["euclid"].append(float(errors_all_k(np.eye(d), Xtr, ctr, Xte, cte)[ke]))
        res["k_euclid"].append(K_GRID[ke])
        for name in ("mlr", "rmlr"):
            idx = [i for i, c in enumerate(configs) if c[0] == name]
            sub = cv_err[idx]
            ci, ki = np.unravel_index(np.argmin(sub), sub.shape)
            _, cls, C, extra = configs[idx[ci]]
            m = cls(query_dim=d, scaling="none", C=C, **common, **extra).fit(
                fold.train.X, fold.train.y, qid=fold.train.qid)
            res[name].append(float(errors_all_k(m.W_, Xtr, ctr, Xte, cte)[ki]))
            res[f"{name}_C"].append(C)
            res[f"k_{name}"].append(K_GRID[ki])
            res[f"{name}_converged"].append(bool(m.converged_))
            if name == "rmlr":
                nz = np.abs(m.W_).sum(axis=0) > 0
                res["rmlr_lam"].append(extra["lam"])
                res["rmlr_nonzero_cols"].append(int(nz.sum()))
                res["rmlr_signal_cols"].append(int(nz[:13].sum()))
        res["split_s"].append(time.perf_counter() - t0)
        log(f"wine+96 CV split {f}: MLR {100 * res['mlr'][-1]:.1f}% (C={res['mlr_C'][-1]:g}, "
            f"k={res['k_mlr'][-1]}), R-MLR {100 * res['rmlr'][-1]:.1f}% "
            f"(C={res['rmlr_C'][-1]:g}, lam={res['rmlr_lam'][-1]:g}, k={res['k_rmlr'][-1]}, "
            f"{res['rmlr_nonzero_cols'][-1]} of {d} features kept, "
            f"{res['rmlr_signal_cols'][-1]} of 13 Wine features), Euclidean "
            f"{100 * res['euclid'][-1]:.1f}% (k={K_GRID[ke]}); {res['split_s'][-1]:.0f}s")
    return res


def mean_se(v):
    v = 100.0 * np.asarray(v, dtype=np.float64)
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else 0.0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--splits", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--datasets", default="wine,wdbc")
    ap.add_argument("--c-grid", default="1,10,100")
    ap.add_argument("--loss", default="auc")
    ap.add_argument("--epsilon", type=float, default=0.01, help="paper Section 5: 0.01")
    ap.add_argument("--noise", action="store_true",
                    help="R-MLR noisy-Wine study at the reference demo's fixed C=1e3, lam=0.1")
    ap.add_argument("--noise-cv", action="store_true",
                    help="R-MLR noisy-Wine study, C and lam/C chosen by CV on training points")
    ap.add_argument("--ratio-grid", default="0.1,0.3,1,3", help="lam / C grid for --noise-cv")
    ap.add_argument("--admm-max-iter", type=int, default=500)
    ap.add_argument("--max-iter", type=int, default=200)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    out = {"args": vars(args)}
    with threadpool_limits(1):
        if args.noise_cv:
            c_grid = [float(c) for c in args.c_grid.split(",")]
            ratios = [float(r) for r in args.ratio_grid.split(",")]
            r = noise_cv(args.splits, args.seed, args.epsilon, log, args.admm_max_iter,
                         args.max_iter, c_grid, ratios, args.loss)
            out["noise_cv"] = r
            diff = 100 * (np.asarray(r["rmlr"]) - np.asarray(r["mlr"]))
            print(f"| Wine + 96 noise dims ({len(diff)} splits) | kNN error % (mean +- SE) |")
            print("|---|---|")
            for name, label in (("euclid", "Euclidean"), ("mlr", f"MLR-{args.loss.upper()}"),
                                ("rmlr", f"R-MLR-{args.loss.upper()}")):
                m, s = mean_se(r[name])
                print(f"| {label} | {m:.1f} +- {s:.1f} |")
            print(f"\nR-MLR - MLR: {diff.mean():.1f} points (SE "
                  f"{diff.std(ddof=1) / np.sqrt(diff.size) if diff.size > 1 else 0:.1f}); "
                  f"R-MLR better on {(diff < 0).sum()}, worse on {(diff > 0).sum()} of "
                  f"{diff.size} splits; R-MLR features kept (median of 109): "
                  f"{np.median(r['rmlr_nonzero_cols']):g}, Wine features kept (median of 13): "
                  f"{np.median(r['rmlr_signal_cols']):g}")
        elif args.noise:
            r = noise(args.splits, args.seed, args.epsilon, log, args.admm_max_iter,
                      args.max_iter)
            out["noise"] = r
            diff = 100 * (np.asarray(r["rmlr"]) - np.asarray(r["mlr"]))
            print("| Wine + 96 noise dims | kNN error % (mean +- SE) |")
            print("|---|---|")
            for name in ("mlr", "rmlr", "euclid"):
                m, s = mean_se(r[name])
                print(f"| {name} | {m:.1f} +- {s:.1f} |")
            print(f"\nR-MLR - MLR: {diff.mean():.1f} points (SE "
                  f"{diff.std(ddof=1) / np.sqrt(diff.size) if diff.size > 1 else 0:.1f}); "
                  f"R-MLR better on {(diff < 0).sum()}, worse on {(diff > 0).sum()} of "
                  f"{diff.size} splits; mean fit s MLR {np.mean(r['mlr_fit_s']):.1f}, "
                  f"R-MLR {np.mean(r['rmlr_fit_s']):.1f}")
        else:
            c_grid = [float(c) for c in args.c_grid.split(",")]
            print(f"| dataset | MLR-{args.loss.upper()} ours | paper | Euclidean ours | paper |")
            print("|---|---|---|---|---|")
            for ds in args.datasets.split(","):
                r = table2(ds, args.splits, args.seed, c_grid, args.loss, args.epsilon, log)
                out[ds] = r
                m1, s1 = mean_se(r["mlr"])
                m2, s2 = mean_se(r["euclid"])
                print(f"| {ds} | {m1:.1f} +- {s1:.1f} | {PAPER[ds]['MLR-AUC']} | "
                      f"{m2:.1f} +- {s2:.1f} | {PAPER[ds]['Euclidean']} |", flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()

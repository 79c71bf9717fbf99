"""How L-GMML's defaults were chosen: a small search scored on VALIDATION splits only.

Run from the repository root (one thread; about 15-25 minutes on one core)::

    OMP_NUM_THREADS=1 python -m experiments.lgmml_defaults --json /tmp/lgmml_defaults.json
    OMP_NUM_THREADS=1 python -m experiments.lgmml_defaults --quick     # a 2-minute smoke run

Data (``--ohsumed`` / ``--lgbm-example`` point at the shared copies by default):

- ``ohsumed``: OHSUMED (LETOR 3.0, Feature-min), folds 1-5, train -> validation;
- ``lgbm-example``: LightGBM's lambdarank example (``rank.train``/``rank.test``). It has no
  validation split: the training queries are split 75% / 25% by a permutation seeded with
  ``SPLIT_SEED`` (0), fitted on the 75% and scored on the 25%; ``rank.test`` is never read;
- ``synthetic``: the registered generator with its defaults (data seed 0), folds 1-3;
- ``synthetic-mslr``: MSLR-shaped generated data: 136 features (40 informative), about 100
  documents per query, 300 queries, ``feature_distribution="lognormal"`` (positive,
  heavy-tailed raw features, skewness about 6), data seed 0, folds 1-2.

Score: NDCG@10 on the validation split (queries without a relevant document count 0), the
mean over folds and ranker seeds. Every dataset gets equal weight in the selection through
the *ratio* to a linear reference fitted on the same training split: scikit-learn
``RidgeCV`` (alphas 10^-3..10^3 by its own leave-one-out on the training split) on z-scored
features. The label-free references (``||x||^2`` of the l2-scaled features, far-first and
near-first) are printed beside.

Stages:

1. every combination of ``GRID`` (lambda form and value x scaling x score form / distance),
   m = 50, WARP "global", seeds ``--seeds``;
2. the ``--top`` best of stage 1 (by mean ratio to ridge) re-scored with ``--final-seeds``;
3. around the best of stage 2: the weight strategies and methods (WARP global / per-query
   mean / uniform, and ListNet -- our extension), m = 100, and ``scaling="none"`` (raw
   features: the relative lambda is meant to make this work too), same seeds.

4. around the best of stage 2: the per-metric sampling caps (max_positives, max_negatives)
   in ``CAPS``; they bound each metric's rank (<= max_positives + max_negatives - 1) and so
   the exact scoring cost O(d (m + K)).

The winner of stage 2 with the best caps of stage 4 is what the ranker's defaults were set
to; stage 3 documents what the other parts contribute. Nothing in the search reads a test split.

``--test-table`` (a separate run, after the defaults were fixed) reports the TEST NDCG@10 of
the ranker's current defaults next to the references, 5 folds x ``--final-seeds`` on OHSUMED
and ``rank.train`` -> ``rank.test`` on the LightGBM example (empty queries 0)::

    OMP_NUM_THREADS=1 python -m experiments.lgmml_defaults --test-table --final-seeds 0 1 2 3 4

Also defined here: :class:`NormReferenceRanker`, the label-free reference as a ranker, so a
plan can put it on every table (``ranker = "experiments.lgmml_defaults:NormReferenceRanker"``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np

from ltr_bench.data import resolve_data_dir
from ltr_bench.data.layout import BUILTIN_DIR
from ltr_bench.model_state import load_fitted_state, save_fitted_state
from ltr_bench.ranker import BaseRanker, RankerTags, check_ranking_input

__all__ = ["GRID", "NormReferenceRanker", "load_validation_sets", "main", "ridge_scores"]

# OHSUMED where `ltr-bench download ohsumed` puts it; the LightGBM example ships with ltr-bench
OHSUMED_DEFAULT = resolve_data_dir() / "OHSUMED" / "Feature-min"
LGBM_EXAMPLE_DEFAULT = BUILTIN_DIR / "lightgbm-example"
SPLIT_SEED = 0
MSLR_SHAPED = {
    "n_features": 136,
    "n_informative": 40,
    "docs_per_query": 100,
    "n_queries": 300,
    "feature_distribution": "lognormal",
}

#: fixed in stages 1-3 (the ranker's defaults when the search was run; stage 4 varies the caps)
STAGE_BASE = {"max_positives": 10, "max_negatives": 20}

#: stage 4: (max_positives, max_negatives)
CAPS = [(10, 20), (5, 5), (4, 4)]

#: stage 1: (reg_scale, reg_lambda) x scaling x (score_form, distance)
GRID = {
    "reg": [("absolute", 0.1), ("relative", 0.01), ("relative", 0.1), ("relative", 1.0)],
    "scaling": ["l2", "zscore"],
    "form": [("rising", "mahalanobis"), ("eq13", "paper")],
}


class NormReferenceRanker(BaseRanker):
    """Label-free reference: score ``+/- ||x'||^2`` with ``x'`` the features scaled like
    L-GMML's default (each column divided by its 2-norm over the training documents).

    ``direction="far"``: larger norm first; ``"near"``: smaller first. ``||p - a||^2``
    contains ``||p||^2``, so a distance ranking that barely depends on the anchors or local
    metrics ranks like one of these; L-GMML must beat both to show that it adds anything.
    """

    def __init__(self, direction="far"):
        self.direction = direction

    def ranker_tags(self) -> RankerTags:
        return RankerTags(requires_qid_at_predict=False, uses_eval_set=False, deterministic=True)

    def fit(self, X, y, *, qid, eval_set=None):
        if self.direction not in ("far", "near"):
            raise ValueError(f"direction must be 'far' or 'near', got {self.direction!r}")
        X, y, qid = check_ranking_input(X, y, qid)
        norm = np.sqrt(np.einsum("ij,ij->j", X, X))
        self.scale_ = np.where(norm > 0, norm, 1.0)
        self.n_features_in_ = X.shape[1]
        return self

    def save_native(self, folder) -> dict:
        return save_fitted_state(self, folder)

    @classmethod
    def load_native(cls, folder, manifest):
        return load_fitted_state(cls, folder, manifest)

    def predict(self, X, *, qid=None):
        self._check_fitted("scale_")
        X, _, _ = check_ranking_input(
            X, None, qid, n_features=self.n_features_in_, require_qid=False
        )
        Z = X / self.scale_
        s = np.einsum("ij,ij->i", Z, Z)
        return s if self.direction == "far" else -s


def load_validation_sets(
    name: str, *, ohsumed: Path, lgbm_example: Path, cache_dir=None, quick: bool = False
):
    """[(label, (Xtr, ytr, qtr), (Xva, yva, qva))] for one dataset; never a test split."""
    from ltr_bench.data import load_fold

    out = []
    if name == "ohsumed":
        for k in range(1, 3) if quick else range(1, 6):
            f = load_fold(str(ohsumed), k, cache_dir=cache_dir)
            out.append(
                (f"fold{k}", (f.train.X, f.train.y, f.train.qid), (f.vali.X, f.vali.y, f.vali.qid))
            )
    elif name == "lgbm-example":
        f = load_fold(str(lgbm_example), 1, cache_dir=cache_dir)
        X, y, q = f.train.X, f.train.y, f.train.qid
        uq = np.unique(q)
        perm = np.random.default_rng(SPLIT_SEED).permutation(uq)
        vali_q = np.sort(perm[: len(uq) // 4])
        va = np.isin(q, vali_q)
        out.append(("split0", (X[~va], y[~va], q[~va]), (X[va], y[va], q[va])))
    elif name in ("synthetic", "synthetic-mslr"):
        opts = MSLR_SHAPED if name == "synthetic-mslr" else None
        n = 2 if (name == "synthetic-mslr" or quick) else 3
        for k in range(1, n + 1):
            f = load_fold("synthetic", k, seed=0, options=opts, cache_dir=cache_dir)
            out.append(
                (f"fold{k}", (f.train.X, f.train.y, f.train.qid), (f.vali.X, f.vali.y, f.vali.qid))
            )
    else:
        raise ValueError(f"unknown dataset {name!r}")
    return out


def _ndcg(y, s, q) -> float:
    from ltr_bench.evaluation.metrics import evaluate

    return float(evaluate(y, s, q, ("ndcg@10",), empty_query=0.0)["ndcg@10"])


def ridge_scores(train, vali) -> float:
    """Validation NDCG@10 of RidgeCV on z-scored features (scaler fitted on train)."""
    from sklearn.linear_model import RidgeCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), RidgeCV(alphas=np.logspace(-3, 3, 7)))
    model.fit(train[0], train[1])
    return _ndcg(vali[1], model.predict(vali[0]), vali[2])


def _references(sets) -> dict:
    ridge, far, near = [], [], []
    for _, tr, va in sets:
        ridge.append(ridge_scores(tr, va))
        for direction, acc in (("far", far), ("near", near)):
            r = NormReferenceRanker(direction).fit(*tr[:2], qid=tr[2])
            acc.append(_ndcg(va[1], r.predict(va[0]), va[2]))
    return {
        "ridge": float(np.mean(ridge)),
        "norm_far": float(np.mean(far)),
        "norm_near": float(np.mean(near)),
    }


def _run_config(params: dict, sets, seeds) -> dict:
    """Mean validation NDCG@10 and mean diagnostics of one configuration."""
    from ltr_bench_lgmml import LGMMLRanker

    keys = (
        "vali_ndcg10",
        "vali_ndcg10_uniform_weights",
        "metric_eig_ratio_median",
        "top_anchor_r2",
    )
    acc = {k: [] for k in keys}
    t0 = time.perf_counter()
    for seed in seeds:
        for _, tr, va in sets:
            r = LGMMLRanker(random_state=seed, n_threads=1, **params)
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                r.fit(tr[0], tr[1], qid=tr[2], eval_set=va)
            info = r.fitted_info()
            for k in keys:
                acc[k].append(info.get(k, np.nan))
    out = {k: float(np.nanmean(v)) for k, v in acc.items()}
    out["seconds"] = time.perf_counter() - t0
    return out


def _label(p: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in p.items())


def _evaluate(params, data, refs, seeds, log) -> dict:
    row = {"params": params, "datasets": {}}
    ratios = []
    for name, sets in data.items():
        res = _run_config(params, sets, seeds)
        res["ratio_to_ridge"] = res["vali_ndcg10"] / refs[name]["ridge"]
        row["datasets"][name] = res
        ratios.append(res["ratio_to_ridge"])
    row["mean_ratio_to_ridge"] = float(np.mean(ratios))
    log(
        f"{row['mean_ratio_to_ridge']:.4f}  "
        + "  ".join(f"{n}={r['vali_ndcg10']:.4f}" for n, r in row["datasets"].items())
        + f"   [{_label(params)}]"
    )
    return row


def _table(rows, data) -> str:
    names = list(data)
    head = (
        "| configuration | mean ratio to ridge | "
        + " | ".join(names)
        + " | eig. ratio (median) | top-anchor R^2 | learned - uniform |"
    )
    lines = [head, "|" + "---|" * (len(names) + 5)]
    for r in rows:
        d = r["datasets"]
        eig = np.mean([d[n]["metric_eig_ratio_median"] for n in names])
        top = np.mean([d[n]["top_anchor_r2"] for n in names])
        gain = np.mean([d[n]["vali_ndcg10"] - d[n]["vali_ndcg10_uniform_weights"] for n in names])
        lines.append(
            f"| {_label(r['params'])} | {r['mean_ratio_to_ridge']:.3f} | "
            + " | ".join(f"{d[n]['vali_ndcg10']:.4f}" for n in names)
            + f" | {eig:.1f} | {top:.2f} | {gain:+.4f} |"
        )
    return "\n".join(lines)


def test_table(args, log) -> dict:
    """Test NDCG@10 (empty 0) of fixed configurations; chooses nothing."""
    from ltr_bench.data import load_fold
    from ltr_bench_lgmml import LGMMLRanker

    folds = {
        "ohsumed": [load_fold(str(args.ohsumed), k, cache_dir=args.cache_dir) for k in range(1, 6)],
        "lgbm-example": [load_fold(str(args.lgbm_example), 1, cache_dir=args.cache_dir)],
    }
    rows = {
        "L-GMML defaults (WARP)": {},
        "L-GMML defaults, uniform weights": {"weight_strategy": "uniform"},
        "L-GMML defaults, ListNet weights (extension)": {"weight_method": "listnet"},
    }
    out: dict = {}
    for name, fl in folds.items():
        res: dict = {}
        for f in fl:
            tr, te = f.train, f.test
            res.setdefault("ridge (RidgeCV, z-scored)", []).append(
                ridge_scores((tr.X, tr.y, tr.qid), (te.X, te.y, te.qid))
            )
            for direction in ("far", "near"):
                r = NormReferenceRanker(direction).fit(tr.X, tr.y, qid=tr.qid)
                res.setdefault(f"||x||^2 {direction}-first (label-free)", []).append(
                    _ndcg(te.y, r.predict(te.X), te.qid)
                )
            for label, kw in rows.items():
                per_seed = []
                for seed in args.final_seeds:
                    r = LGMMLRanker(random_state=seed, n_threads=1, **kw)
                    r.fit(tr.X, tr.y, qid=tr.qid)
                    per_seed.append(_ndcg(te.y, r.predict(te.X), te.qid))
                res.setdefault(label, []).append(per_seed)
        out[name] = {}
        log(
            f"\n## test NDCG@10 (empty queries 0): {name}, {len(fl)} fold(s), L-GMML seeds "
            f"{args.final_seeds}"
        )
        log("| ranker | NDCG@10 | seed sd |")
        log("|---|---|---|")
        for label, vals in res.items():
            a = np.asarray(vals, dtype=float)
            mean = float(a.mean())
            sd = float(a.mean(axis=0).std()) if a.ndim == 2 else 0.0
            out[name][label] = {"mean": mean, "seed_sd": sd}
            log(f"| {label} | {mean:.4f} | {sd:.4f} |")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ohsumed", type=Path, default=OHSUMED_DEFAULT)
    ap.add_argument("--lgbm-example", type=Path, default=LGBM_EXAMPLE_DEFAULT)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--final-seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--top", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="fewer folds, 2 configurations")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--test-table",
        action="store_true",
        help="only report test NDCG@10 of the current defaults (no search)",
    )
    args = ap.parse_args(argv)

    def log(msg):
        print(msg, flush=True)

    if args.test_table:
        out = test_table(args, log)
        if args.json:
            args.json.write_text(json.dumps(out, indent=1))
        return 0

    t_start = time.perf_counter()
    names = ("ohsumed", "lgbm-example", "synthetic", "synthetic-mslr")
    data = {
        n: load_validation_sets(
            n,
            ohsumed=args.ohsumed,
            lgbm_example=args.lgbm_example,
            cache_dir=args.cache_dir,
            quick=args.quick,
        )
        for n in names
    }
    refs = {n: _references(s) for n, s in data.items()}
    log("## references (validation NDCG@10, empty queries 0)")
    log("| dataset | ridge (RidgeCV, z-scored) | ||x||^2 far-first | ||x||^2 near-first |")
    log("|---|---|---|---|")
    for n, r in refs.items():
        log(f"| {n} | {r['ridge']:.4f} | {r['norm_far']:.4f} | {r['norm_near']:.4f} |")

    grid = [
        dict(reg_scale=rs, reg_lambda=rl, scaling=sc, score_form=sf, distance=di, **STAGE_BASE)
        for (rs, rl), sc, (sf, di) in itertools.product(GRID["reg"], GRID["scaling"], GRID["form"])
    ]
    if args.quick:
        grid = grid[:2]
    log(f"\n## stage 1: {len(grid)} configurations, m = 50, WARP global, seeds {args.seeds}")
    stage1 = [_evaluate(p, data, refs, args.seeds, log) for p in grid]
    stage1.sort(key=lambda r: -r["mean_ratio_to_ridge"])
    log(_table(stage1, data))

    log(f"\n## stage 2: top {args.top} with seeds {args.final_seeds}")
    stage2 = [_evaluate(r["params"], data, refs, args.final_seeds, log) for r in stage1[: args.top]]
    stage2.sort(key=lambda r: -r["mean_ratio_to_ridge"])
    log(_table(stage2, data))
    best = stage2[0]["params"]
    log(f"\nchosen (best mean ratio to ridge on validation): {_label(best)}")

    variants = [
        dict(weight_strategy="mean"),
        dict(weight_strategy="uniform"),
        dict(weight_method="listnet"),
        dict(n_metrics=100),
        dict(scaling="none"),
    ]
    if args.quick:
        variants = variants[2:3]
    log(
        f"\n## stage 3: what the parts contribute, around the chosen configuration "
        f"(seeds {args.final_seeds})"
    )
    stage3 = [stage2[0]] + [
        _evaluate({**best, **v}, data, refs, args.final_seeds, log) for v in variants
    ]
    log(_table(stage3, data))

    log(f"\n## stage 4: sampling caps (max_positives, max_negatives), seeds {args.final_seeds}")
    stage4 = [
        _evaluate(
            {**best, "max_positives": p, "max_negatives": q}, data, refs, args.final_seeds, log
        )
        for p, q in (CAPS[:2] if args.quick else CAPS)
    ]
    stage4.sort(key=lambda r: -r["mean_ratio_to_ridge"])
    log(_table(stage4, data))
    log(f"\nchosen caps: {_label(stage4[0]['params'])}")
    log(f"\ntotal {time.perf_counter() - t_start:.0f}s")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "references": refs,
                    "stage1": stage1,
                    "stage2": stage2,
                    "chosen": best,
                    "stage3": stage3,
                    "stage4": stage4,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

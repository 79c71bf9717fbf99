"""Paired per-query differences between lines of the clicks curve, at every log size.

For each pair (candidate, baseline) of row labels of clicks_curve_<dataset>.toml and each
number of sessions both were run at, the NDCG@10 values of the same test queries are paired
over every fold and the mean difference and the paired t-test's p-value (two-sided, before
any correction for multiple comparisons) are printed as a Markdown table (docs/clicks.md,
"The clicks curve").

Run:  python experiments/clicks_curve_pairs.py --results-dir runs/clicks_curve_ohsumed \
          --dataset ohsumed
"""

from __future__ import annotations

import argparse

import numpy as np

from ltr_bench.evaluation.stats import paired_pvalues
from ltr_bench.results import ResultStore

PAIRS = [
    ("neural ips", "neural naive"),
    ("neural ips randomisation", "neural naive"),
    ("neural ips em", "neural naive"),
    ("neural dla", "neural naive"),
    ("lightgbm unbiased", "lightgbm"),
    ("xgboost-lambdamart unbiased", "xgboost-lambdamart"),
    ("lightgbm ips", "lightgbm softmax"),
    ("xgboost-lambdamart ips", "xgboost-lambdamart softmax"),
    ("lightgbm", "lightgbm exp-gain"),
    ("lightgbm unbiased", "lightgbm unbiased exp-gain"),
    ("xgboost-lambdamart", "xgboost-lambdamart exp-gain"),
    ("xgboost-lambdamart unbiased", "xgboost-lambdamart unbiased exp-gain"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results-dir", required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--metric", default="ndcg@10")
    args = ap.parse_args()
    store = ResultStore(args.results_dir)
    by: dict = {}
    for r in store.records():
        if not (r.ok and r.dataset == args.dataset):
            continue
        store.per_query(r)
        clicks = (r.dataset_identity or {}).get("clicks")
        by.setdefault((r.label, clicks["sessions"] if clicks else None), {})[r.fold] = r
    xs = sorted({x for _, x in by if x is not None})
    print("| pair | " + " | ".join(map(str, xs)) + " |")
    print("|---|" + "---:|" * len(xs))
    for cand, base in PAIRS:
        cells = []
        for x in xs:
            a, b = by.get((cand, x)), by.get((base, x))
            if not a or not b or set(a) != set(b):
                cells.append("")
                continue
            da: list[float] = []
            db: list[float] = []
            for fold in sorted(a):
                pa, pb = a[fold].per_query, b[fold].per_query
                where = {q: i for i, q in enumerate(pb["qid"])}
                da += pa[args.metric]
                db += [pb[args.metric][where[q]] for q in pa["qid"]]
            p_t, _ = paired_pvalues(da, db)
            diff = float(np.mean(np.asarray(da) - np.asarray(db)))
            cells.append(f"{diff:+.3f} (p {p_t:.2g}, n {len(da)})")
        print(f"| {cand} − {base} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

"""The GBDT presets compared on VALIDATION splits (docs/decisions.md#gbdt-defaults).

For every GBDT ranker and preset, on every fold of a dataset: fit on the training split with
the validation split as ``eval_set`` (early stopping, as in a benchmark run), score the
validation split, and print NDCG@10 (empty queries = 1) as mean ± sample sd over the folds.
The test split is never read. One thread, seed 0.

    OMP_NUM_THREADS=1 python -m experiments.gbdt_presets_vali --dataset /path/to/OHSUMED
    OMP_NUM_THREADS=1 python -m experiments.gbdt_presets_vali --dataset synthetic
    OMP_NUM_THREADS=1 python -m experiments.gbdt_presets_vali --dataset /path/to/OHSUMED \
        --rankers catboost --presets auto,catboost-defaults
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

RANKERS = ("lightgbm", "xgboost-gbrt", "xgboost-lambdamart")
PRESETS = ("auto", "mslr-benchmark")


def validation_ndcg(ranker_name: str, preset: str, fold) -> float:
    from ltr_bench.evaluation.metrics import evaluate
    from ltr_bench.run.cells import build_ranker

    ranker = build_ranker(ranker_name, {"preset": preset}, seed=0, threads=1)
    train, vali = fold.train, fold.vali
    ranker.fit(train.X, train.y, qid=train.qid, eval_set=(vali.X, vali.y, vali.qid))
    scores = ranker.predict(vali.X, qid=vali.qid)
    return float(
        evaluate(vali.y, scores, vali.qid, ("ndcg@10",), max_label=fold.max_label)["ndcg@10"]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dataset", required=True, help="a registered dataset name or a folder of LETOR files"
    )
    parser.add_argument("--folds", default="1,2,3,4,5")
    parser.add_argument("--rankers", default=",".join(RANKERS), help="comma list")
    parser.add_argument("--presets", default=",".join(PRESETS), help="comma list")
    args = parser.parse_args()

    from ltr_bench.data import load_fold

    source = Path(args.dataset) if Path(args.dataset).is_dir() else args.dataset
    folds = [load_fold(source, int(f), seed=0) for f in args.folds.split(",")]
    if any(f.vali is None for f in folds):
        raise SystemExit(
            f"{args.dataset}: no validation split; the presets are compared on validation data only"
        )
    print(f"validation NDCG@10 (empty queries = 1), folds {args.folds} of {args.dataset}")
    rankers, presets = args.rankers.split(","), args.presets.split(",")
    print("| ranker | " + " | ".join(f"`{p}`" for p in presets) + " |")
    print("|---|" + "---|" * len(presets))
    for name in rankers:
        cells = []
        for preset in presets:
            values = np.array([validation_ndcg(name, preset, fold) for fold in folds])
            sd = values.std(ddof=1) if values.size > 1 else 0.0
            cells.append(f"{values.mean():.4f} ± {sd:.4f}")
        print(f"| `{name}` | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()

"""How far rounding alone moves a ``neural`` fit: the measurement behind the tolerances of the
``gpu`` tests (``plugins/neural/tests/test_devices.py``).

A CUDA fit and a CPU fit of the same data, seed and configuration (dropout 0) differ only in
the order float32 sums are taken. The same kind of difference is made here without a GPU:
each configuration of the tests (MLP 64-32 and a small transformer, LambdaLoss, Adam, 10
epochs) is fitted on the CPU twice, on the features as they are and with every feature moved
by one float32 rounding, ``x * (1 +- 2^-23)`` (signs drawn from the seed). Printed per seed and
scorer: |NDCG@10 difference| on the test split, the relative difference of the first epoch's
training loss and its largest over the epochs, and the largest score difference; then the
maxima, and the NDCG@10 range across seeds (what the seed alone moves).

    python benchmarks/neural_rounding.py [--seeds 5]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "plugins" / "neural" / "tests"))

from test_devices import SCORERS, _fold, _ranker  # noqa: E402

from ltr_bench.evaluation.metrics import evaluate  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args(argv)
    fold = _fold()
    tr, te = fold.train, fold.test
    worst = {"ndcg": 0.0, "loss1": 0.0, "loss": 0.0}
    by_seed: dict[str, list[float]] = {s: [] for s in SCORERS}
    for seed in range(args.seeds):
        signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=tr.X.shape)
        for scorer in sorted(SCORERS):
            fits = []
            for X in (tr.X, tr.X * (1 + 2.0**-23 * signs)):
                ranker = _ranker(scorer, "cpu", seed).fit(X, tr.y, qid=tr.qid)
                scores = ranker.predict(te.X, qid=te.qid)
                ndcg = float(evaluate(te.y, scores, te.qid)["ndcg@10"])
                fits.append((ndcg, np.array(ranker.curves_["train_loss"]), scores))
            (n0, l0, s0), (n1, l1, s1) = fits
            rel = np.abs(l1 - l0) / np.abs(l0)
            by_seed[scorer].append(n0)
            worst = {
                "ndcg": max(worst["ndcg"], abs(n1 - n0)),
                "loss1": max(worst["loss1"], float(rel[0])),
                "loss": max(worst["loss"], float(rel.max())),
            }
            print(
                f"seed {seed} {scorer:<11} ndcg@10 {n0:.4f} |d| {abs(n1 - n0):.5f}  "
                f"loss rel. diff epoch 1 {rel[0]:.1e}, max {rel.max():.1e}  "
                f"max |score diff| {np.max(np.abs(s1 - s0)):.1e}",
                flush=True,
            )
    print(
        f"max |d ndcg@10| {worst['ndcg']:.5f}; max loss rel. diff epoch 1 {worst['loss1']:.1e}, "
        f"any epoch {worst['loss']:.1e}"
    )
    for scorer, values in by_seed.items():
        print(f"{scorer}: ndcg@10 over seeds {min(values):.4f} to {max(values):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

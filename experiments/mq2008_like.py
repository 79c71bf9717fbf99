"""Write a folder in the LETOR 4.0 MQ2008 layout (``Fold1/{train,vali,test}.txt`` with the
``#docid = ... inc = ... prob = ...`` comments the official ``Eval-Score-4.0.pl`` parses):
46 features, labels 0-2, 4-24 documents per query (so some queries are shorter than 10, and
some have no relevant document), seeded. Used to check ``--convention letor4`` against the
official script where the real MQ2008 is not available.

    python -m experiments.mq2008_like OUT_DIR [--seed 1]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def write(out: Path, seed: int = 1) -> Path:
    root = out / "Fold1"
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    base = {"train": 1000, "vali": 2000, "test": 3000}
    for split, n_queries in (("train", 80), ("vali", 25), ("test", 40)):
        lines = []
        for q in range(n_queries):
            for d in range(int(rng.integers(4, 25))):
                x = rng.normal(size=46)
                label = int(np.clip(np.floor(0.8 * x[0] + 0.5 * x[1] + rng.normal(0, 0.8)), 0, 2))
                feats = " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(x))
                lines.append(
                    f"{label} qid:{base[split] + q} {feats} #docid = GX{q}-{d} inc = 1 prob = 0.5"
                )
        (root / f"{split}.txt").write_text("\n".join(lines) + "\n")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(write(args.out, args.seed))


if __name__ == "__main__":
    main()

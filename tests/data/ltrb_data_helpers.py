"""Small LETOR files for the data-layer tests."""

from __future__ import annotations

import bz2
import gzip
import lzma
from pathlib import Path

OPENERS = {"": open, ".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}


def write_lines(path: Path, lines, compression: str = "") -> Path:
    """Write ``lines`` (str) as a file at ``path + compression``; returns the path written."""
    path = Path(str(path) + compression)
    path.parent.mkdir(parents=True, exist_ok=True)
    with OPENERS[compression](path, "wb") as fh:
        fh.write(("\n".join(lines) + "\n").encode() if lines else b"")
    return path


def good_lines(
    n_queries: int = 3,
    docs: int = 4,
    n_features: int = 5,
    qid0: int = 1,
    max_label: int = 2,
    comment: bool = True,
):
    """Deterministic valid LETOR lines: query q, doc d, feature j has value q + d/10 + j/100."""
    out = []
    for q in range(qid0, qid0 + n_queries):
        for d in range(docs):
            feats = " ".join(f"{j}:{q + d / 10 + j / 100:g}" for j in range(1, n_features + 1))
            tail = f" #docid = {q * 100 + d}" if comment else ""
            out.append(f"{(q + d) % (max_label + 1)} qid:{q} {feats}{tail}")
    return out


def make_letor_dir(
    root: Path,
    *,
    names=("train.txt", "vali.txt", "test.txt"),
    folds=(1,),
    n_features: int = 5,
    max_label: int = 2,
    compression: str = "",
    fold_dirs: bool = True,
) -> Path:
    """A folder of valid LETOR files: ``root/Fold{k}/<names>`` (or directly in ``root``)."""
    for k in folds:
        base = root / f"Fold{k}" if fold_dirs else root
        for i, name in enumerate(names):
            write_lines(
                base / name,
                good_lines(qid0=1 + 10 * i, n_features=n_features, max_label=max_label),
                compression,
            )
    return root

"""Parse time vs. cache reload time of ``ltr_bench.data.load_fold``.

Part 1, OHSUMED (LETOR 3.0 Feature-min, 5 folds; ``--ohsumed DIR``, default the data
home's ``OHSUMED/Feature-min``; skipped when absent): for each fold, load with an
empty cache (parse + validate + write the cache), then load again (memory-mapped reload), and
print both times and their ratio. The reference run is scikit-learn's
``load_svmlight_files`` on the same (decompressed-in-memory) files, whole-file, in the same
process.

Part 2, a generated MSLR-WEB30K-sized fold: ``synthetic`` with 31,531 queries x 120 docs
(mean) x 136 features (fold 1: about 2.27M training rows), written as LETOR text files
(values rounded to 2 decimals, ~1.2 KB per line like the real MSLR files) into a temporary
folder, then loaded through the folder path (parse) and again (reload).
``--queries N`` scales it down (e.g. ``--queries 3000`` for a quick run); ``--skip-large``
runs part 1 only.

    /work/venv/bin/python benchmarks/bench_data_cache.py [--queries 31531] [--skip-large]

Timings are wall-clock on a shared machine: noisy; compare ratios within one run.
"""

from __future__ import annotations

import argparse
import io
import lzma
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from ltr_bench.data import load_fold, resolve_data_dir  # noqa: E402


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def _touch_all(fold):
    """Read every byte once so a lazy memory map is not credited with work it skipped."""
    s = 0.0
    for split in (fold.train, fold.vali, fold.test):
        if split is not None:
            s += float(np.asarray(split.X[-1]).sum()) + float(split.y.sum())
    return s


def bench_ohsumed(root: Path) -> None:
    from sklearn.datasets import load_svmlight_files

    if not root.is_dir():
        print(f"skip OHSUMED: {root} not found")
        return
    print(f"== OHSUMED (LETOR 3.0 Feature-min) at {root}, per fold ==")
    print(f"{'fold':>4} {'parse s':>9} {'reload s':>9} {'ratio':>8} {'sklearn s':>10}")
    tot_p = tot_r = 0.0
    for k in range(1, 6):
        cache = tempfile.mkdtemp(prefix="ltrb-cache-")
        try:
            _, t_parse = _timed(lambda: load_fold(root, k, cache_dir=cache))
            fold, t_reload = _timed(lambda: load_fold(root, k, cache_dir=cache))
            _touch_all(fold)
            files = [
                root / f"Fold{k}" / f"{n}.txt.xz"
                for n in ("trainingset", "validationset", "testset")
            ]

            def ref():
                bufs = [io.BytesIO(lzma.open(f).read()) for f in files]
                return load_svmlight_files(bufs, n_features=45, query_id=True, zero_based=False)

            _, t_ref = _timed(ref)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        tot_p += t_parse
        tot_r += t_reload
        print(f"{k:>4} {t_parse:9.3f} {t_reload:9.4f} {t_parse / t_reload:8.0f} {t_ref:10.3f}")
    print(f"{'all':>4} {tot_p:9.3f} {tot_r:9.4f} {tot_p / tot_r:8.0f}")


def _write_letor(split, path: Path) -> None:
    from sklearn.datasets import dump_svmlight_file

    step = 20000
    with open(path, "wb") as fh:
        for i in range(0, split.n_docs, step):
            X = np.round(np.asarray(split.X[i : i + step]), 2)
            dump_svmlight_file(
                X,
                np.array(split.y[i : i + step]),
                fh,
                query_id=np.array(split.qid[i : i + step]),
                zero_based=False,
            )


def bench_large(n_queries: int) -> None:
    opts = {"n_queries": n_queries, "docs_per_query": 120, "n_features": 136, "n_informative": 20}
    work = Path(tempfile.mkdtemp(prefix="ltrb-large-"))
    cache_gen, cache_parse = work / "cache-gen", work / "cache-parse"
    data = work / "data" / "Fold1"
    data.mkdir(parents=True)
    try:
        print(f"== generated MSLR-WEB30K-sized fold: synthetic {opts}, fold 1 ==")
        fold, t_gen = _timed(
            lambda: load_fold("synthetic", 1, options=opts, seed=0, cache_dir=cache_gen)
        )
        print(
            f"rows train/vali/test: {fold.train.n_docs:,} / {fold.vali.n_docs:,} / "
            f"{fold.test.n_docs:,}; queries {fold.train.n_queries:,} / "
            f"{fold.vali.n_queries:,} / {fold.test.n_queries:,}"
        )
        print(f"generate + write cache: {t_gen:8.2f} s")
        fold2, t_gen_reload = _timed(
            lambda: load_fold("synthetic", 1, options=opts, seed=0, cache_dir=cache_gen)
        )
        _touch_all(fold2)
        print(f"reload generated fold:  {t_gen_reload:8.4f} s   ratio {t_gen / t_gen_reload:8.0f}")
        t = time.perf_counter()
        for name, split in (("train", fold.train), ("vali", fold.vali), ("test", fold.test)):
            _write_letor(split, data / f"{name}.txt")
        sizes = sum(f.stat().st_size for f in data.iterdir())
        print(
            f"write LETOR text:       {time.perf_counter() - t:8.2f} s  ({sizes / 2**30:.2f} GiB)"
        )
        del fold, fold2
        root = work / "data"
        parsed, t_parse = _timed(
            lambda: load_fold(root, 1, cache_dir=cache_parse, options={"n_features": 136})
        )
        print(
            f"parse LETOR text + cache: {t_parse:8.2f} s  "
            f"(train X {parsed.train.X.shape}, {parsed.train.X.nbytes / 2**30:.2f} GiB)"
        )
        del parsed
        again, t_reload = _timed(
            lambda: load_fold(root, 1, cache_dir=cache_parse, options={"n_features": 136})
        )
        _touch_all(again)
        print(f"reload from cache:      {t_reload:8.4f} s   ratio {t_parse / t_reload:8.0f}")
        _, t_fp = _timed(lambda: again.fingerprints())
        print(f"fingerprints (stored in the cache): {t_fp:.4f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=31531)
    ap.add_argument("--skip-large", action="store_true")
    ap.add_argument(
        "--ohsumed",
        type=Path,
        default=resolve_data_dir() / "OHSUMED" / "Feature-min",
        help="OHSUMED Feature-min folder (Fold1..Fold5); default: the data home's "
        "(`ltr-bench download ohsumed`)",
    )
    args = ap.parse_args()
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, cpus {os.cpu_count()}")
    if args.ohsumed.is_dir():
        bench_ohsumed(args.ohsumed)
    else:
        print(f"part 1 skipped: no OHSUMED folder at {args.ohsumed} (ltr-bench download ohsumed)")
    if not args.skip_large:
        bench_large(args.queries)


if __name__ == "__main__":
    main()

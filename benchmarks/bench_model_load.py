"""What the checks of an untrusted model folder cost ``load_model`` on a big model.

Fits LightGBM (one thread) with ``--trees`` trees and no early stopping on generated data,
saves it with :func:`ltr_bench.models.save_model`, then times, alternately in this process
(``--repeat`` rounds, each side once per round, the order alternating):

* ``checked``: :func:`ltr_bench.models.load_model` as every command calls it (the folder
  walked without following links, every listed file checked by size, read once, hashed and
  copied to a private folder, the ranker loading the copy);
* ``library``: the reference, the ranker's own ``load_native`` on the folder, which is
  what loading costs without any check;
* ``verify``: :func:`ltr_bench.models.read_manifest`, the checks without the copy and the
  library (the walk, and every listed file read and hashed: what the loader did before it
  made a private copy), so ``checked - library - verify`` is the copy's cost;
* ``agree``: :func:`ltr_bench.models.loading.check_loaded` on the loaded model (the feature
  counts, a probe of 4 rows scored), a part of ``checked``.

Printed: the model's size, the median of each side and the ratio of the medians (checked /
library), with the load average before and after. The page cache is warm for both sides
(the same files read over and over), so the ratio is the CPU cost of the checks.

    python benchmarks/bench_model_load.py --trees 1000 --repeat 15
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trees", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()

    from ltr_bench import data
    from ltr_bench.models import load_model, read_manifest, save_model
    from ltr_bench.models.loading import check_loaded
    from ltr_bench.registry import get_entry, make_ranker

    fold = data.load_fold("synthetic", 1, seed=0, options={"n_queries": 600, "docs_per_query": 40})
    ranker = make_ranker(
        "lightgbm",
        {"n_estimators": args.trees, "early_stopping_rounds": None, "n_jobs": 1},
    )
    ranker.fit(fold.train.X, fold.train.y, qid=fold.train.qid)
    with tempfile.TemporaryDirectory(prefix="bench-model-load-") as tmp:
        folder = save_model(ranker, Path(tmp) / "m", ranker_name="lightgbm")
        size = sum(p.stat().st_size for p in (folder / "native").iterdir())
        manifest = read_manifest(folder)
        cls = get_entry("lightgbm").load()
        print(f"{args.trees} trees, native files {size / 2**20:.2f} MiB ({_load()})")

        def checked() -> None:
            load_model(folder)

        def library() -> None:
            cls.load_native(folder / "native", manifest)

        def verify() -> None:
            read_manifest(folder)

        loaded = load_model(folder)

        def agree() -> None:
            check_loaded(loaded.ranker, loaded.manifest, folder)

        times: dict[str, list[float]] = {"checked": [], "library": [], "verify": [], "agree": []}
        for k in range(args.repeat):
            order = (checked, library, verify, agree)
            order = order if k % 2 == 0 else order[::-1]
            for fn in order:
                start = time.perf_counter()
                fn()
                times[fn.__name__].append(time.perf_counter() - start)
        med = {name: statistics.median(v) for name, v in times.items()}
        for name, value in med.items():
            print(f"  {name:8s} median {value * 1e3:8.1f} ms over {args.repeat}")
        print(f"  ratio checked / library: {med['checked'] / med['library']:.3f} ({_load()})")


if __name__ == "__main__":
    main()

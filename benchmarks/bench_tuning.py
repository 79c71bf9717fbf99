"""Overhead of the tuning loop itself (ltr_bench.tune.study.tune) as a fraction of a trial's time.

Overhead = everything a trial costs except the ranker's ``fit`` and ``predict`` on the
validation split: the Optuna sampler (TPE) and its SQLite storage, building the ranker,
evaluating the validation metric, the budget bookkeeping between trials. Measured as

    overhead fraction = (wall time of tune() - sum over trials of (fit + score seconds))
                        / wall time of tune()

where fit and score seconds are what each trial records (``user_attrs``). One-time costs
are paid before the clock starts, as in a real tuning session they are paid once per
machine or process, not per trial: loading the fold, importing the ranker's library, and
creating the Optuna SQLite schema (about 3 s here). The tuning split, study creation and
every per-trial step count as overhead. Target: below 5 %.

    python benchmarks/bench_tuning.py --data /path/to/OHSUMED-LETOR3-Feature-min \
        --ranker lightgbm --trials 20
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="OHSUMED folder (Fold1..Fold5 inside)")
    ap.add_argument("--ranker", default="lightgbm")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--fold", type=int, default=1)
    args = ap.parse_args()

    from ltr_bench.registry import make_ranker
    from ltr_bench.run.cells import expand_plan
    from ltr_bench.run.plan import DatasetChoice, Plan, RankerChoice
    from ltr_bench.run.unit import load_fold as _load_fold
    from ltr_bench.tune.cell import tuned_cell
    from ltr_bench.tune.study import Budget, resolve_space, tune

    plan = Plan(
        rankers=[RankerChoice(args.ranker)],
        datasets=[DatasetChoice(str(Path(args.data).resolve()))],
        folds=[args.fold],
        threads=1,
    )
    cell = expand_plan(plan).cells[0]
    fold = _load_fold(cell)
    space = resolve_space(args.ranker, make_ranker(args.ranker, {}))
    budget = Budget(n_trials=args.trials)
    tcell = tuned_cell(cell, space=space, budget=budget, objective="ndcg@10")
    make_ranker(args.ranker, {})  # the ranker's module is imported
    import optuna

    shares = {}
    for kind in ("journal", "sqlite"):  # the default storage, and SQLite as the reference
        with tempfile.TemporaryDirectory() as tmp:
            if kind == "sqlite":
                storage = f"sqlite:///{tmp}/optuna.db"
                optuna.storages.RDBStorage(storage)  # creates the schema once, as on first use
            else:
                storage = f"{tmp}/optuna.journal"
            t0 = time.perf_counter()
            result = tune(tcell, fold, space=space, budget=budget, storage=storage)
            wall = time.perf_counter() - t0
        work = sum(
            t.user_attrs.get("fit_seconds", 0.0) + t.user_attrs.get("score_seconds", 0.0)
            for t in result.trials
        )
        overhead = wall - work
        shares[kind] = overhead / wall
        print(
            f"[{kind}] {args.ranker} on {Path(args.data).name} fold {args.fold}: "
            f"{result.n_finished} trials ({result.n_complete} complete, {result.n_pruned} "
            f"pruned, {result.n_failed} failed)"
        )
        print(
            f"[{kind}] wall time of tune(): {wall:.2f} s; fit + score inside trials: "
            f"{work:.2f} s; mean trial {wall / max(result.n_finished, 1):.3f} s"
        )
        print(
            f"[{kind}] tuning-loop overhead: {overhead:.3f} s = "
            f"{overhead / max(result.n_finished, 1):.4f} s per trial = "
            f"{100 * overhead / wall:.2f}% of a trial's time (target < 5%)"
        )
    print(f"overhead share, journal / sqlite: {shares['journal'] / shares['sqlite']:.2f}")


if __name__ == "__main__":
    main()

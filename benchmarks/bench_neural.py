"""Speed and memory of the ``neural`` ranker (the LtR design paper's plugin).

Part 1, one fold (OHSUMED fold 1 when ``--data-dir`` holds it, else a generated
``synthetic`` fold): fit time and per-document scoring time of ``neural`` (linear scorer,
L-BFGS, pair-logistic) beside ``ridge`` and ``lightgbm`` on the same fold and one thread, as
ratios from this one run.

Part 2, the quadratic scorer (Eq. 4) on a generated MSLR-WEB10K-shaped fold: ``synthetic``
with 10,000 queries x 120 documents (mean) x 136 features, of which fold 1's training split
holds about 720k documents; rho is set to the |Pearson| of the 2,000th best product, so about
2,000 products are kept. Prints the selection time, the fit time of ``--iters`` L-BFGS
iterations, the scoring time and the process's peak resident memory (the target: under
8 GiB). ``--queries`` scales it down.

Part 3, memory of the pairwise/MRF losses on long lists: queries of 1,250 documents (MSLR's
longest) trained with ``pair-logistic`` and ``wub``; the batches are bounded by
``memory_budget`` (B * L * L elements), printed with the peak memory of each fit measured in
a fresh process.

    python benchmarks/bench_neural.py [--data-dir DATA] [--queries 10000] [--iters 5]
                                      [--skip-large]

Part 4 (``--losses``; only this part runs then): every loss on its default path (only
``scorer``, ``epochs``, the seed and one thread set; optimizer ``auto``), fit CPU time
(``time.process_time``, one thread) and its ratio to ``listnet`` with the same scorer in the
same run, validation and test NDCG@10; with ``--old`` also the pre-issue-35 default path
(``optimizer=lbfgs``, ``l2=1e-4``, allRank's 50 Sinkhorn rounds) for the NDCG comparison.
The fold: ``--fold mq2008-like`` (generated ``synthetic`` with MQ2008's shape: 784 queries,
19 documents a query on average, 46 features, fold 1: 470 training queries) or
``--fold ohsumed`` (``--data-dir`` holding OHSUMED, or a LETOR folder given as ``--fold PATH``).

    python benchmarks/bench_neural.py --losses --scorer mlp --epochs 15 --fold mq2008-like [--old]

Wall-clock on a shared machine: noisy; compare the ratios within one run. The load average
is printed beside every timing.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from ltr_bench.data import load_fold  # noqa: E402
from ltr_bench.registry import make_ranker  # noqa: E402


def _load() -> str:
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def _peak_mib() -> float:
    """Peak resident memory of this process (VmHWM; unlike ru_maxrss it is not inherited
    from the parent across exec)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _fit_score(ranker, fold, repeats=3, fit_repeats=2):
    tr, te = fold.train, fold.test
    ev = None if fold.vali is None else (fold.vali.X, fold.vali.y, fold.vali.qid)
    fits = []
    for _ in range(fit_repeats):  # the first fit also pays imports and thread-pool start-up
        t = time.perf_counter()
        ranker.fit(tr.X, tr.y, qid=tr.qid, eval_set=ev)
        fits.append(time.perf_counter() - t)
    fit = min(fits)
    ranker.predict(te.X, qid=te.qid)  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        ranker.predict(te.X, qid=te.qid)
        times.append(time.perf_counter() - t)
    return fit, 1e6 * min(times) / len(te.X)


def part1(data_dir) -> None:
    try:
        fold = load_fold("ohsumed", 1, data_dir=data_dir)
        name = "OHSUMED fold 1"
    except Exception:
        opts = {"n_queries": 1000, "docs_per_query": 60, "n_features": 46}
        fold = load_fold("synthetic", 1, options=opts)
        name = f"synthetic {opts} fold 1"
    print(f"Part 1: {name}: {len(fold.train.X)} training rows x {fold.train.X.shape[1]} features")
    rows = {}
    for label, ranker_name, params in (
        (
            "neural linear lbfgs pair-logistic",
            "neural",
            dict(loss="pair-logistic", optimizer="lbfgs", n_threads=1, random_state=0),
        ),
        ("ridge", "ridge", {}),
        ("lightgbm", "lightgbm", {"n_jobs": 1, "random_state": 0}),
    ):
        ranker = make_ranker(ranker_name, params)
        fit, us = _fit_score(ranker, fold)
        rows[label] = (fit, us)
        print(f"  {label:36s} fit {fit:8.3f} s (best of 2)  score {us:8.4f} us/doc  ({_load()})")
    nf, ns = rows["neural linear lbfgs pair-logistic"]
    for ref in ("ridge", "lightgbm"):
        rf, rs = rows[ref]
        print(f"  neural / {ref}: fit x{nf / rf:.2f}, scoring x{ns / rs:.2f}")


def part2(n_queries: int, iters: int) -> None:
    from ltr_bench_neural.ranker import NeuralRanker
    from ltr_bench_neural.scorers.quadratic import select_products

    opts = {"n_queries": n_queries, "docs_per_query": 120, "n_features": 136}
    t = time.perf_counter()
    fold = load_fold("synthetic", 1, options=opts)
    tr = fold.train
    print(
        f"Part 2: synthetic {opts} fold 1: {len(tr.X)} training rows, generated in "
        f"{time.perf_counter() - t:.1f} s; peak so far {_peak_mib():.0f} MiB"
    )
    mean, sd = tr.X.mean(0), tr.X.std(0)
    sd[sd == 0] = 1
    t = time.perf_counter()
    _, _, _, _, corr = select_products((tr.X - mean) / sd, tr.y, 0.0)
    sel = time.perf_counter() - t
    values = np.sort(corr[np.isfinite(corr)])[::-1]
    rho = float(values[min(1999, len(values) - 1)])
    print(f"  Pearson of {len(values)} products: {sel:.1f} s ({_load()}); rho = {rho:.5f}")
    ranker = NeuralRanker(
        scorer="quadratic",
        rho=rho,
        loss="pair-logistic",
        weight="gain-diff/nq",
        epochs=iters,
        patience=None,
        n_threads=1,
        random_state=0,
    )
    fit, us = _fit_score(ranker, fold, repeats=1, fit_repeats=1)
    info = ranker.fitted_info()
    print(
        f"  quadratic fit ({info['iterations']} L-BFGS iterations, "
        f"{info['n_second_order_features']} products): {fit:.1f} s, score {us:.3f} us/doc "
        f"({_load()})"
    )
    print(f"  peak resident memory of the process: {_peak_mib() / 1024:.2f} GiB (limit 8 GiB)")


_PART3 = """
import sys, time
from pathlib import Path
import numpy as np
from ltr_bench_neural.ranker import NeuralRanker
loss, budget = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(0)
n_q, n_d, d = 8, 1250, 136
X = rng.standard_normal((n_q * n_d, d))
y = np.digitize(X[:, :4].sum(1) + rng.standard_normal(len(X)), [0.5, 1.5, 2.5, 3.5])
q = np.repeat(np.arange(n_q), n_d)
def hwm():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
import torch  # imported before the baseline, so the peak difference is the fit's
base = hwm()
t = time.perf_counter()
r = NeuralRanker(loss=loss, epochs=3, patience=None, n_threads=1, memory_budget=budget)
r.fit(X, y, qid=q)
peak = hwm()
print(f"{r.fitted_info()['n_batches']} {time.perf_counter() - t:.2f} {base:.0f} {peak:.0f}")
"""


def part3() -> None:
    print("Part 3: 8 queries x 1,250 documents x 136 features, 3 L-BFGS iterations")
    for loss in ("pair-logistic", "wub"):
        for budget in (2**22, 2**24, 2**26):
            out = subprocess.run(
                [sys.executable, "-c", _PART3, loss, str(budget)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()
            n_batches, secs, base, peak = out
            print(
                f"  {loss:14s} memory_budget=2^{int(np.log2(budget))}: {n_batches} batches, "
                f"fit {secs} s, peak {peak} MiB (before the fit {base} MiB) ({_load()})"
            )


MQ2008_LIKE = {"n_queries": 784, "docs_per_query": 19, "n_features": 46}


def part4(fold_name, data_dir, scorer, epochs, old, only=None) -> None:
    from ltr_bench.evaluation.metrics import evaluate
    from ltr_bench_neural.losses import ALIASES, LOSSES

    if fold_name == "mq2008-like":
        fold = load_fold("synthetic", 1, options=MQ2008_LIKE)
    else:
        fold = load_fold(fold_name, 1, data_dir=data_dir)
    tr, va, te = fold.train, fold.vali, fold.test
    lengths = np.unique(tr.qid, return_counts=True)[1]
    print(
        f"part 4: {fold_name} fold 1: {len(lengths)} training queries, {len(tr.y)} documents, "
        f"lists {lengths.min()}-{lengths.max()}; scorer {scorer}, epochs {epochs}, 1 thread"
    )
    ev = None if va is None else (va.X, va.y, va.qid)
    losses = only or ["listnet"] + [n for n in list(LOSSES) + list(ALIASES) if n != "listnet"]
    paths = [("default", {})]
    if old:
        paths.append(("old", {"optimizer": "lbfgs", "l2": 1e-4}))
    base = {}
    warm = make_ranker("neural", {"scorer": scorer, "loss": "listnet", "epochs": 2})
    warm.fit(tr.X, tr.y, qid=tr.qid)  # imports and thread pools, paid before the first timing
    for loss in losses:
        for path, extra in paths:
            params = {"scorer": scorer, "loss": loss, "epochs": epochs, **extra}
            if path == "old" and loss == "neuralndcg":
                params["loss_args"] = {"max_iter": 50}
            params.update(random_state=0, n_threads=1)
            ranker = make_ranker("neural", params)
            c0, t0 = time.process_time(), time.perf_counter()
            try:
                ranker.fit(tr.X, tr.y, qid=tr.qid, eval_set=ev)
            except ValueError as exc:  # e.g. ordinal needs scorer_args d_output = n
                print(f"  {loss:15s} {path:7s} not on a default path: {exc}", flush=True)
                continue
            cpu, wall = time.process_time() - c0, time.perf_counter() - t0
            base.setdefault(path, cpu)  # listnet comes first
            nv = float("nan")
            if va is not None:
                sv = ranker.predict(va.X, qid=va.qid)
                nv = evaluate(va.y, sv, va.qid, ("ndcg@10",))["ndcg@10"]
            st = ranker.predict(te.X, qid=te.qid)
            nt = evaluate(te.y, st, te.qid, ("ndcg@10",))["ndcg@10"]
            info = ranker.fitted_info()
            print(
                f"  {loss:15s} {path:7s} {info['optimizer']:5s} fit cpu {cpu:7.2f} s "
                f"({cpu / base[path]:5.2f}x listnet) wall {wall:7.2f} s  vali ndcg@10 {nv:.4f}  "
                f"test ndcg@10 {nt:.4f}  iterations {info['iterations']}  ({_load()})",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--losses", action="store_true", help="run part 4 only")
    parser.add_argument("--only", default=None, help="part 4: comma list of losses")
    parser.add_argument("--scorer", default="mlp")
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--fold", default="mq2008-like")
    parser.add_argument("--old", action="store_true")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--queries", type=int, default=10000)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--skip-large", action="store_true")
    args = parser.parse_args()
    if args.losses:
        only = None if args.only is None else ["listnet"] + args.only.split(",")
        part4(args.fold, args.data_dir, args.scorer, args.epochs, args.old, only)
        return
    part1(args.data_dir)
    part3()
    if not args.skip_large:
        part2(args.queries, args.iters)


if __name__ == "__main__":
    main()

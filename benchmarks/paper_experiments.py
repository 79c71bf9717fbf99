"""The L-GMML paper's Section 4 experiments (Su, King & Lyu, SIGIR 2017) as commands.

Each subcommand writes ``<name>.md`` (a markdown table with the paper's numbers beside ours
where the paper gives numbers), ``<name>.png`` (a plot, for the figures and the time tables)
and ``<name>.json`` (the raw measurements) into ``--out``:

=========  ==========================================================================
fig2       GMML (L-GMML with m = 1) against L-GMML: test MAP on gauss-10/50/100
           (query-by-example Gaussian classes, Section 4.3.1) as m varies.
fig3       Test NDCG@5/10/20 against m on OHSUMED (LETOR 3.0 Feature-min, 5 folds),
           L-GMML's default (closer-first ``rising``) and tuned (``positive``) forms.
fig4       L-GMML fit time (m = 10) on ``synthetic`` data with 10 ... 1000 features.
table3     Fit time of L-GMML (m = 50) against R-MLR on the same data (OHSUMED folds,
           ``wine`` query-by-example, ``wine`` with 96 correlated noise dimensions).
table4     NDCG@5/10/20 and fit time of GBRT (XGBoost ``reg:squarederror``), lambda-MART
           (LightGBM ``lambdarank``, and XGBoost ``rank:ndcg``) and L-GMML on OHSUMED.
table5     Per-document scoring time of the table-4 models (fold 1), median of timed
           ``predict`` calls after a warm-up, on OHSUMED's test split tiled to >= 50,000 rows.
all        All of the above, in that order (table5 reuses table4's fold-1 models).
=========  ==========================================================================

Defaults are sized for a 2-core machine (each experiment about 2 minutes or less);
``--full`` uses the paper's sizes where they apply (fig2: 10 folds and m up to 200; fig3: m up
to 500 and 5 seeds; fig4: 1,000 queries; table4/5: 5,000 trees, m = 500); ``--tiny`` is the
smoke-test size (seconds; numbers meaningless). Every random choice flows from ``--seed``.
Every ranker runs with one thread (BLAS and tree threads), so times compare like with like;
they are wall-clock seconds on whatever machine runs this, i.e. noisy on a shared one.

Usage::

    python benchmarks/paper_experiments.py all --out runs/paper
    python benchmarks/paper_experiments.py fig2 --out runs/paper --full
    python benchmarks/paper_experiments.py table4 --data ../shared/data/OHSUMED-LETOR3-Feature-min

The paper's own data (Yahoo!, MSLR-WEB10K/30K, CAL10K) are not on this machine; the real-data
experiments use OHSUMED, so our numbers answer "does the paper's claim hold on the data we
have", not "do we get the paper's numbers".
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np

# the settings these numbers were measured with (before the size-aware "auto" preset):
# LightGBM's MSLR benchmark shape, with early stopping after 50 rounds
MSLR_SETTINGS = dict(preset="mslr-benchmark", early_stopping_rounds=50)

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ltr_bench.data import load_fold  # noqa: E402
from ltr_bench.folds import Split  # noqa: E402
from ltr_bench.metrics import evaluate  # noqa: E402
from ltr_bench.timing import thread_limit, time_scoring  # noqa: E402

DEFAULT_OHSUMED = Path(__file__).resolve().parents[2] / "shared" / "data" / \
    "OHSUMED-LETOR3-Feature-min"
EXPERIMENTS = ("fig2", "fig3", "fig4", "table3", "table4", "table5")

# ---------------------------------------------------------------------------------------------
# The paper's numbers (quoted from the text; figures are described in prose only)
# ---------------------------------------------------------------------------------------------
PAPER_FIG2 = ("Paper (Fig. 2, prose): the relative MAP gain of L-GMML over GMML is largest when "
              "m is close to the number of Gaussian centres (10, 50, 100).")
PAPER_FIG3 = ("Paper (Fig. 3, prose): on every dataset the localized method competes with the "
              "single global metric; the best m varies strongly between datasets.")
PAPER_FIG4 = ("Paper (Fig. 4, prose): training time of L-GMML with m = 10 on synthetic data of "
              "10 to 1000 features; the text gives no numbers, only that training is fast.")
PAPER_TABLE3 = [  # (representation, R-MLR s, L-GMML s), m = 50, 12 cores, CAL10K
    ("Audio (1,024 features)", "N/A", "38"),
    ("Audio with PCA", "607", "4.7"),
    ("Lyrics-128", "302", "2.6"),
    ("Lyrics-256", "1241", "7.8"),
]
PAPER_TABLE4 = {  # dataset -> metric -> (GBRT, lambda-MART, L-GMML) test NDCG; time in minutes
    "MSLR-WEB10K": {"ndcg@5": (0.4019, 0.4417, 0.4771), "ndcg@10": (0.4342, 0.4513, 0.5390),
                    "ndcg@20": (0.4512, 0.4634, 0.551), "min": (48.8, 57.7, 19.2)},
    "MSLR-WEB30K": {"ndcg@5": (0.409, 0.3812, 0.4837), "ndcg@10": (0.4146, 0.409, 0.4976),
                    "ndcg@20": (0.421, 0.4112, 0.5038), "min": (170.3, 182.0, 72.0)},
    "Yahoo! Set I": {"ndcg@5": (0.6529, 0.6567, 0.6698), "ndcg@10": (0.6824, 0.7060, 0.6715),
                     "ndcg@20": (0.6912, 0.7091, 0.6934), "min": (42.0, 47.1, 28.6)},
}
PAPER_TABLE5 = [("Yahoo! Set I", 276, 302, 421), ("Yahoo! Set II", 218, 286, 421),
                ("MSLR-WEB10K", 73, 92, 158)]  # "ms" per document as printed


# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------
def _arr(split: Split):
    return np.asarray(split.X), split.y, split.qid


def _fit(ranker, split: Split, vali: Split | None = None) -> float:
    """Fit on ``split`` (``vali`` as eval_set when given); return wall seconds."""
    X, y, q = _arr(split)
    ev = None if vali is None else _arr(vali)
    with thread_limit(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        ranker.fit(X, y, qid=q, eval_set=ev)
        return time.perf_counter() - t0


def _predict(ranker, split: Split) -> np.ndarray:
    with thread_limit(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ranker.predict(np.asarray(split.X), qid=split.qid)


def _mean_sd(values) -> tuple[float, float]:
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0


def _fmt(m: float, sd: float | None = None, digits: int = 4) -> str:
    if sd is None or sd == 0.0:
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} ± {sd:.{digits}f}"


def _md_table(header: list[str], rows: list[list]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def _write(out: Path, name: str, title: str, body: str, raw: dict, fig=None) -> str:
    out.mkdir(parents=True, exist_ok=True)
    text = f"### {title}\n\n{body}\n"
    (out / f"{name}.md").write_text(text)
    (out / f"{name}.json").write_text(json.dumps(raw, indent=1, default=float))
    if fig is not None:
        fig.tight_layout()
        fig.savefig(out / f"{name}.png", dpi=110)
        plt.close(fig)
    print(text, flush=True)
    return text


def _check_finite(name: str, values) -> None:
    v = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(v)):
        raise RuntimeError(f"{name}: non-finite result {v}")


class Sizes:
    """Per-experiment sizes for the three modes (tiny < default < full)."""

    def __init__(self, mode: str):
        self.mode = mode
        tiny, full = mode == "tiny", mode == "full"
        # fig2: the registered gauss-* sizes (n_per_class 30/10/5, d = 10) except in tiny mode.
        self.fig2_m = [1, 3] if tiny else ([1, 2, 5, 10, 20, 50, 100, 200] if full
                                           else [1, 2, 5, 10, 20, 50, 100])
        self.fig2_folds = [1] if tiny else (list(range(1, 11)) if full else [1, 2, 3])
        self.fig2_opts = ({"n_per_class": 4, "n_features": 4, "test_size": 0.5} if tiny
                          else {})
        self.fig3_m = [1, 5] if tiny else ([1, 2, 5, 10, 20, 50, 100, 200, 500] if full
                                           else [1, 2, 5, 10, 20, 50, 100, 200])
        self.fig3_seeds = 1 if tiny else (5 if full else 3)
        self.fig3_folds = [1] if tiny else [1, 2, 3, 4, 5]
        self.fig4_dims = [10, 50] if tiny else [10, 50, 100, 500, 1000]
        self.fig4_queries = 20 if tiny else (5000 if full else 500)
        self.fig4_repeats = 1 if tiny else 3
        self.t3_ohsumed_folds = [1] if tiny else [1, 2, 3, 4, 5]
        self.t3_rmlr_iter = (5, 5) if tiny else (200, 50)  # (cutting planes, ADMM steps)
        self.t4_folds = [1] if tiny else [1, 2, 3, 4, 5]
        self.t4_trees = 20 if tiny else (5000 if full else 500)
        self.t4_m = 5 if tiny else (500 if full else 50)
        self.t5_min_docs = 2000 if tiny else 50_000
        self.t5_repeats = 2 if tiny else 7


# ---------------------------------------------------------------------------------------------
# Figure 2: GMML vs L-GMML on gauss-*
# ---------------------------------------------------------------------------------------------
def fig2(args, S: Sizes, cache: dict) -> str:
    from ltr_bench_lgmml import LGMMLRanker

    datasets = ["gauss-10", "gauss-50", "gauss-100"]
    opts = {"overlap": args.overlap, **S.fig2_opts}
    raw = {"overlap": args.overlap, "m": S.fig2_m, "folds": S.fig2_folds, "results": {}}
    rows = []
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for name in datasets:
        per_m = {m: [] for m in S.fig2_m}
        zero_phi = {m: 0 for m in S.fig2_m}  # fits whose WARP weights came out all zero
        zero_flags = {m: [] for m in S.fig2_m}
        euclid = []
        for k in S.fig2_folds:
            f = load_fold(name, k, seed=args.seed, options=opts, cache_dir=args.cache_dir)
            d = f.query_dim
            te = f.test
            Xt = np.asarray(te.X)
            # Euclidean distance of document to query: the no-learning reference.
            euclid.append(evaluate(te.y, -np.linalg.norm(Xt[:, :d] - Xt[:, d:], axis=1),
                                   te.qid, ("map",))["map"])
            for m in S.fig2_m:
                r = LGMMLRanker(n_metrics=m, query_dim=d, random_state=args.seed, n_threads=1)
                _fit(r, f.train)
                # All-zero Phi means constant scores (random-ranking MAP); flag it, since it
                # is a failure of the fit, not an effect of m.
                zero_flags[m].append(bool(r.warp_collapsed_))
                zero_phi[m] += int(zero_flags[m][-1])
                per_m[m].append(evaluate(te.y, _predict(r, te), te.qid, ("map",))["map"])
        means = [float(np.mean(per_m[m])) for m in S.fig2_m]
        _check_finite("fig2", means)
        # The plot, best m and gain use only fits whose Phi is not all zero (a failed fit
        # would otherwise hide the effect of m); the table's cells average every fit.
        ok = [float(np.mean([v for v, z in zip(per_m[m], zero_flags[m]) if not z]))
              if not all(zero_flags[m]) else float("nan") for m in S.fig2_m]
        # Gain per fold against that fold's GMML, averaged over folds where both fits worked.
        base = np.asarray(per_m[S.fig2_m[0]])
        good0 = ~np.asarray(zero_flags[S.fig2_m[0]])
        gains = []
        for m in S.fig2_m:
            keep = good0 & ~np.asarray(zero_flags[m])
            g = 100.0 * (np.asarray(per_m[m]) - base) / base
            gains.append(float(g[keep].mean()) if keep.any() else float("nan"))
        raw["results"][name] = {"map": {str(m): per_m[m] for m in S.fig2_m},
                                "euclidean_map": euclid,
                                "zero_phi_fits": {str(m): zero_phi[m] for m in S.fig2_m}}
        best_i = int(np.nanargmax(gains))
        rows.append([name, f"{np.mean(euclid):.4f}"]
                    + [f"{v:.4f}" + (f" ({zero_phi[m]}×Φ=0)" if zero_phi[m] else "")
                       for m, v in zip(S.fig2_m, means)]
                    + [str(S.fig2_m[best_i]), f"{gains[best_i]:+.2f} %"])
        line, = ax1.plot(S.fig2_m, ok, "o-", label=f"{name} (L-GMML)")
        ax1.axhline(np.mean(euclid), ls=":", lw=1, color=line.get_color())
        ax2.plot(S.fig2_m, gains, "o-", label=name, color=line.get_color())
        bad = [i for i, m in enumerate(S.fig2_m) if zero_phi[m]]
        for ax, ys in ((ax1, ok), (ax2, gains)):
            ax.plot([S.fig2_m[i] for i in bad], [ys[i] for i in bad], "kx", ms=10, mew=2,
                    label="a fold with Φ = 0 left out" if name == datasets[-1] and bad
                    and ax is ax1 else None)
        n_classes = int(name.split("-")[1])
        if n_classes <= max(S.fig2_m):
            ax2.axvline(n_classes, ls="--", lw=0.8, color=line.get_color())
    for ax in (ax1, ax2):
        ax.set_xscale("log")
        ax.set_xlabel("number of local metrics m (log scale; m = 1 is GMML)")
        ax.grid(alpha=0.3)
    ax1.set_ylabel("test MAP")
    ax1.set_title("MAP (dotted: Euclidean distance, no learning)", fontsize=10)
    ax2.set_ylabel("MAP gain over GMML (%)")
    ax2.set_title("gain over GMML (dashed: m = number of classes)", fontsize=10)
    ax1.legend(fontsize=8)
    ax2.legend(fontsize=8)
    header = ["dataset", "Euclidean"] + [f"m={m}" + (" (GMML)" if m == 1 else "")
                                          for m in S.fig2_m] + ["best m", "best gain over GMML"]
    body = (f"Test MAP, mean over fold(s) {S.fig2_folds}, seed {args.seed}, Gaussian overlap "
            f"{args.overlap} (1.0 = the registered default, where 95 % balls just touch). "
            f"\"(k×Φ=0)\": in k of the folds WARP drove every global weight to 0 and the "
            f"ranker fell back to uniform weights (``warp_collapsed_``, with a warning); "
            f"\"best m\", the gain (MAP_m / MAP_GMML - 1 per fold, averaged over folds) and "
            f"the plot leave such fits out."
            f"\n\n"
            + _md_table(header, rows) + f"\n\n{PAPER_FIG2}")
    return _write(args.out, "fig2", "Figure 2: GMML (m = 1) vs L-GMML on gauss-10/50/100 (MAP)",
                  body, raw, fig)


# ---------------------------------------------------------------------------------------------
# Figure 3: NDCG vs m on OHSUMED
# ---------------------------------------------------------------------------------------------
def fig3(args, S: Sizes, cache: dict) -> str:
    from ltr_bench_lgmml import LGMMLRanker

    metrics = ("ndcg@5", "ndcg@10", "ndcg@20")
    forms = {"default (rising)": {}, "tuned (positive)": {"score_form": "positive"}}
    folds = [load_fold(str(args.data), k) for k in S.fig3_folds]
    raw = {"m": S.fig3_m, "folds": S.fig3_folds, "seeds": S.fig3_seeds, "results": {}}
    rows = []
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, params in forms.items():
        res = {m: {mt: [] for mt in metrics} for m in S.fig3_m}
        for m in S.fig3_m:
            for seed in range(args.seed, args.seed + S.fig3_seeds):
                for f in folds:
                    r = LGMMLRanker(n_metrics=m, random_state=seed, n_threads=1, **params)
                    _fit(r, f.train)
                    ev = evaluate(f.test.y, _predict(r, f.test), f.test.qid, metrics)
                    for mt in metrics:
                        res[m][mt].append(ev[mt])
            means = {mt: float(np.mean(res[m][mt])) for mt in metrics}
            _check_finite("fig3", list(means.values()))
            rows.append([label, m] + [f"{means[mt]:.4f}" for mt in metrics])
        raw["results"][label] = {str(m): res[m] for m in S.fig3_m}
        y = [np.mean(res[m]["ndcg@10"]) for m in S.fig3_m]
        sd = [np.std(res[m]["ndcg@10"]) for m in S.fig3_m]
        ax.errorbar(S.fig3_m, y, yerr=sd, fmt="o-", capsize=3, label=f"L-GMML {label}")
    ax.set_xscale("log")
    ax.set_xlabel("number of local metrics m (log scale; m = 1 is GMML)")
    ax.set_ylabel(f"test NDCG@10 (mean over folds x {S.fig3_seeds} seed(s); bars: sd)",
                  fontsize=9)
    ax.set_title("OHSUMED (LETOR 3.0 Feature-min), 5 folds")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    body = (f"Test NDCG, mean over fold(s) {S.fig3_folds} and {S.fig3_seeds} seed(s) from "
            f"{args.seed}; empty queries = 1.\n\n"
            + _md_table(["L-GMML", "m", "NDCG@5", "NDCG@10", "NDCG@20"], rows)
            + f"\n\n{PAPER_FIG3}")
    return _write(args.out, "fig3", "Figure 3: NDCG against the number of local metrics (OHSUMED)",
                  body, raw, fig)


# ---------------------------------------------------------------------------------------------
# Figure 4: fit time vs feature dimension
# ---------------------------------------------------------------------------------------------
def fig4(args, S: Sizes, cache: dict) -> str:
    from ltr_bench_lgmml import LGMMLRanker

    raw = {"n_queries": S.fig4_queries, "results": {}}
    rows, med = [], []
    for d in S.fig4_dims:
        opts = {"n_queries": S.fig4_queries, "n_features": d, "n_informative": min(10, d)}
        f = load_fold("synthetic", 1, seed=args.seed, options=opts, cache_dir=args.cache_dir,
                      progress=lambda *a: None)
        times = []
        for _ in range(S.fig4_repeats):
            r = LGMMLRanker(n_metrics=10, random_state=args.seed, n_threads=1)
            times.append(_fit(r, f.train))
        med.append(float(np.median(times)))
        _check_finite("fig4", times)
        raw["results"][str(d)] = times
        rows.append([d, f.train.X.shape[0], len(np.unique(f.train.qid)), f"{med[-1]:.3f}",
                     f"{min(times):.3f}"])
    fig, ax = plt.subplots(figsize=(6.5, 4.3))
    ax.plot(S.fig4_dims, med, "o-", label="L-GMML fit, m = 10 (median)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("feature dimension d (log scale)")
    ax.set_ylabel("fit time (s, log scale)")
    ax.set_title(f"synthetic data, {rows[0][1]} training documents, 1 thread")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    body = (f"`synthetic` fold 1 (seed {args.seed}), n_queries = {S.fig4_queries} "
            f"(60 % train), 40 documents per query; L-GMML m = 10, one thread; median and "
            f"minimum of {S.fig4_repeats} fits.\n\n"
            + _md_table(["features d", "train docs", "train queries", "fit s (median)",
                         "fit s (min)"], rows) + f"\n\n{PAPER_FIG4}")
    return _write(args.out, "fig4", "Figure 4: L-GMML training time against feature dimension",
                  body, raw, fig)


# ---------------------------------------------------------------------------------------------
# Table 3: L-GMML vs R-MLR fit time
# ---------------------------------------------------------------------------------------------
def table3(args, S: Sizes, cache: dict) -> str:
    from ltr_bench_baselines.mlr import RMLRRanker
    from ltr_bench_lgmml import LGMMLRanker

    planes, admm = S.t3_rmlr_iter
    cases = []  # (label, fold, rmlr params)
    for k in S.t3_ohsumed_folds:
        # OHSUMED: the README's validation-chosen R-MLR setting (loss NDCG@10, C = 1000,
        # lambda = 0.001 C); query-document data use the ideal-candidate adaptation.
        cases.append((f"OHSUMED fold {k} (45 features)", load_fold(str(args.data), k),
                      {"loss": "ndcg", "k": 10, "C": 1000.0, "lam": 1.0}))
    for noise in (0, 96):
        f = load_fold("wine", 1, seed=args.seed, options={"noise_features": noise})
        what = "wine" if noise == 0 else f"wine + {noise} noise dims"
        cases.append((f"{what}, fold 1 ({f.query_dim} features)", f,
                      {"loss": "map", "C": 10.0, "lam": 3.0, "query_dim": f.query_dim}))
    raw, rows = {"rmlr_max_iter": planes, "rmlr_admm_max_iter": admm, "results": {}}, []
    labels, t_r, t_l = [], [], []
    for label, f, p in cases:
        rm = RMLRRanker(max_iter=planes, admm_max_iter=admm, random_state=args.seed,
                        n_threads=1, **p)
        tr_ = _fit(rm, f.train)
        qd = {"query_dim": f.query_dim} if f.query_dim else {}
        lg = LGMMLRanker(n_metrics=50, random_state=args.seed, n_threads=1, **qd)
        tl = _fit(lg, f.train)
        mname = "map" if f.query_dim else "ndcg@10"
        q_r = evaluate(f.test.y, _predict(rm, f.test), f.test.qid, (mname,))[mname]
        q_l = evaluate(f.test.y, _predict(lg, f.test), f.test.qid, (mname,))[mname]
        _check_finite("table3", [tr_, tl, q_r, q_l])
        raw["results"][label] = {"rmlr_s": tr_, "lgmml_s": tl, "metric": mname,
                                 "rmlr": q_r, "lgmml": q_l, "rmlr_params": p}
        rows.append([label, f.train.X.shape[0], f"{tr_:.2f}", f"{tl:.2f}", f"{tr_ / tl:.0f}x",
                     f"{mname.upper()} {q_r:.4f} / {q_l:.4f}"])
        labels.append(textwrap.fill(label.split(" (")[0].replace(", fold 1", ""), 16))
        t_r.append(tr_)
        t_l.append(tl)
    fig, ax = plt.subplots(figsize=(7.5, 4.3))
    x = np.arange(len(labels))
    ax.bar(x - 0.2, t_r, 0.4, label=f"R-MLR ({planes} planes, {admm} ADMM steps max)")
    ax.bar(x + 0.2, t_l, 0.4, label="L-GMML (m = 50)")
    ax.set_xticks(x, labels, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylim(top=max(t_r + t_l) * 6)  # room for the legend above the bars
    ax.set_ylabel("fit time (s, log scale)")
    ax.set_title("Training time, one thread")
    ax.grid(alpha=0.3, axis="y", which="both")
    ax.legend(fontsize=8)
    paper = _md_table(["paper: CAL10K (12 cores)", "R-MLR s", "L-GMML s"],
                      [list(r) for r in PAPER_TABLE3])
    body = (f"Fit wall seconds, one thread, seed {args.seed}. R-MLR: at most {planes} cutting "
            f"planes and {admm} ADMM steps per plane; OHSUMED loss NDCG@10, C = 1000, lambda = 1 "
            f"(lambda/C = 0.001, chosen on validation in the README's MLR section); wine loss "
            f"MAP, C = 10, lambda = 3. L-GMML m = 50, defaults otherwise. Last column: test "
            f"quality R-MLR / L-GMML (context only).\n\n"
            + _md_table(["data", "train rows", "R-MLR s", "L-GMML s", "ratio", "test R-MLR / L-GMML"],
                        rows) + "\n\nPaper (Table 3, m = 50):\n\n" + paper)
    return _write(args.out, "table3", "Table 3: training time of R-MLR and L-GMML", body, raw, fig)


# ---------------------------------------------------------------------------------------------
# Tables 4 and 5: GBRT / lambda-MART / L-GMML on OHSUMED
# ---------------------------------------------------------------------------------------------
def _t4_rankers(S: Sizes, seed: int) -> dict:
    from ltr_bench_baselines.gbdt import (LightGBMRanker, XGBoostGBRTRanker,
                                          XGBoostLambdaMARTRanker)
    from ltr_bench_lgmml import LGMMLRanker

    n = S.t4_trees
    return {
        "GBRT (XGBoost reg:squarederror)":
            lambda: XGBoostGBRTRanker(**MSLR_SETTINGS, n_estimators=n, n_jobs=1, random_state=seed),
        "lambda-MART (LightGBM, defaults)":
            lambda: LightGBMRanker(**MSLR_SETTINGS, n_estimators=n, n_jobs=1, random_state=seed),
        "lambda-MART (LightGBM, min_sum_hessian_in_leaf=1e-3)":
            lambda: LightGBMRanker(**MSLR_SETTINGS, n_estimators=n, n_jobs=1, random_state=seed,
                                   min_sum_hessian_in_leaf=1e-3),
        "lambda-MART (XGBoost rank:ndcg)":
            lambda: XGBoostLambdaMARTRanker(**MSLR_SETTINGS, n_estimators=n, n_jobs=1,
                                            random_state=seed),
        f"L-GMML default (m = {S.t4_m})":
            lambda: LGMMLRanker(n_metrics=S.t4_m, random_state=seed, n_threads=1),
        f"L-GMML tuned (positive, m = {S.t4_m})":
            lambda: LGMMLRanker(n_metrics=S.t4_m, score_form="positive", random_state=seed,
                                n_threads=1),
    }


def _t4_fit_all(args, S: Sizes, cache: dict, folds: list[int]) -> dict:
    """{(ranker label, fold): (model, fit seconds, metrics)}; fits each pair once."""
    store = cache.setdefault("t4", {})
    makers = _t4_rankers(S, args.seed)
    for k in folds:
        f = None
        for label, make in makers.items():
            if (label, k) in store:
                continue
            f = f or load_fold(str(args.data), k)
            model = make()
            secs = _fit(model, f.train, f.vali)
            ev = evaluate(f.test.y, _predict(model, f.test), f.test.qid,
                          ("ndcg@5", "ndcg@10", "ndcg@20"))
            store[(label, k)] = (model, secs, ev)
            print(f"  table4 fold {k} {label}: fit {secs:.2f} s, NDCG@10 {ev['ndcg@10']:.4f}",
                  file=sys.stderr, flush=True)
    return store


def table4(args, S: Sizes, cache: dict) -> str:
    store = _t4_fit_all(args, S, cache, S.t4_folds)
    labels = list(_t4_rankers(S, args.seed))
    rows, raw = [], {"folds": S.t4_folds, "trees": S.t4_trees, "m": S.t4_m, "results": {}}
    for label in labels:
        cells = [store[(label, k)] for k in S.t4_folds]
        secs = [c[1] for c in cells]
        row = [label]
        raw["results"][label] = {"fit_s": secs}
        for mt in ("ndcg@5", "ndcg@10", "ndcg@20"):
            vals = [c[2][mt] for c in cells]
            _check_finite("table4", vals)
            raw["results"][label][mt] = vals
            row.append(_fmt(*_mean_sd(vals)))
        row.append(_fmt(*_mean_sd(secs), digits=2))
        rows.append(row)
    paper_rows = []
    for ds, d in PAPER_TABLE4.items():
        for i, who in enumerate(("GBRT", "lambda-MART", "L-GMML")):
            paper_rows.append([ds, who, d["ndcg@5"][i], d["ndcg@10"][i], d["ndcg@20"][i],
                               d["min"][i]])
    fig, ax = plt.subplots(figsize=(10, 4.8))
    x = np.arange(len(labels))
    for j, mt in enumerate(("ndcg@5", "ndcg@10", "ndcg@20")):
        ms = [_mean_sd(raw["results"][lb][mt]) for lb in labels]
        ax.bar(x + (j - 1) * 0.27, [m for m, _ in ms], 0.27, yerr=[s for _, s in ms],
               capsize=2, label=mt.upper())
    ax.set_xticks(x, [textwrap.fill(lb, 20) for lb in labels], fontsize=7)
    ax.set_ylabel("test NDCG (mean over 5 folds; bars: sd)")
    ax.set_title("OHSUMED: GBRT, lambda-MART, L-GMML")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    body = (f"OHSUMED (LETOR 3.0 Feature-min), fold(s) {S.t4_folds}, test mean ± sd over "
            f"folds, empty queries = 1, seed {args.seed}, one thread. Trees: at most "
            f"{S.t4_trees}, early stopping (50 rounds) on the validation NDCG@10; L-GMML does "
            f"not use the validation split. Fit time in **seconds** per fold.\n\n"
            + _md_table(["ranker", "NDCG@5", "NDCG@10", "NDCG@20", "fit s"], rows)
            + "\n\nPaper (Table 4; RankLib GBRT / lambda-MART with 5,000 trees, L-GMML m = 500, "
              "12 cores; time in **minutes**; MSLR = 5-fold means, time here = mean of the "
              "three NDCG rows):\n\n"
            + _md_table(["dataset", "method", "NDCG@5", "NDCG@10", "NDCG@20", "train min"],
                        paper_rows))
    return _write(args.out, "table4", "Table 4: GBRT, lambda-MART and L-GMML on OHSUMED", body,
                  raw, fig)


def _tile(split: Split, min_docs: int) -> Split:
    """Repeat ``split`` (with fresh query ids) until it has at least ``min_docs`` rows, so a
    timed ``predict`` call is long enough to measure."""
    reps = max(1, math.ceil(min_docs / split.X.shape[0]))
    X = np.ascontiguousarray(np.tile(np.asarray(split.X), (reps, 1)))
    span = int(split.qid.max()) + 1
    qid = np.concatenate([split.qid + i * span for i in range(reps)])
    return Split(name="test-tiled", X=X, y=np.tile(split.y, reps), qid=qid)


def table5(args, S: Sizes, cache: dict) -> str:
    store = _t4_fit_all(args, S, cache, [1])
    f = load_fold(str(args.data), 1)
    big = _tile(f.test, S.t5_min_docs)
    n = big.X.shape[0]
    rows, raw, labels, us = [], {"n_docs": n, "results": {}}, [], []
    for label in _t4_rankers(S, args.seed):
        model = store[(label, 1)][0]
        with thread_limit(1), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time_scoring(lambda: model.predict(big.X, qid=big.qid), n,
                             repeats=S.t5_repeats)
        _check_finite("table5", [t.us_per_doc])
        raw["results"][label] = {"seconds": t.seconds, "us_per_doc": t.us_per_doc}
        rows.append([label, f"{t.us_per_doc:.3f}", f"{t.median_seconds * 1e3:.1f}",
                     t.repeats])
        labels.append(label)
        us.append(t.us_per_doc)
    fig, ax = plt.subplots(figsize=(7.5, 4.3))
    ax.barh(np.arange(len(labels)), us)
    ax.set_yticks(np.arange(len(labels)), labels, fontsize=7)
    ax.set_xlabel("scoring time per document (µs; median of timed predict calls)")
    ax.set_title(f"OHSUMED fold-1 models, {n:,} documents per call, 1 thread", fontsize=9)
    ax.grid(alpha=0.3, axis="x")
    paper = _md_table(["paper (12 cores)", "GBRT", "lambda-MART", "L-GMML"],
                      [list(r) for r in PAPER_TABLE5])
    body = (f"Models of table 4, fold 1; OHSUMED fold-1 test split tiled to {n:,} documents; "
            f"one warm-up call, then the median of up to {S.t5_repeats} timed `predict` calls "
            f"(`ltr_bench.timing.time_scoring`), one thread. Trees actually used: the early-"
            f"stopped best iteration.\n\n"
            + _md_table(["ranker", "µs / document", "ms / call", "timed calls"], rows)
            + "\n\nPaper (Table 5, \"per-document scoring time ... united in ms\", as printed):"
              "\n\n" + paper)
    return _write(args.out, "table5", "Table 5: per-document scoring time", body, raw, fig)


RUNNERS = {"fig2": fig2, "fig3": fig3, "fig4": fig4, "table3": table3, "table4": table4,
           "table5": table5}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("experiment", choices=EXPERIMENTS + ("all",))
    ap.add_argument("--out", type=Path, default=Path("runs/paper"),
                    help="folder for <experiment>.md/.png/.json (created)")
    ap.add_argument("--seed", type=int, default=0)
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--full", action="store_true", help="the paper's sizes (long)")
    size.add_argument("--tiny", action="store_true", help="smoke-test sizes (seconds)")
    ap.add_argument("--data", type=Path, default=DEFAULT_OHSUMED,
                    help="OHSUMED folder (Fold1..5), for fig3 and tables 3-5")
    ap.add_argument("--overlap", type=float, default=3.0,
                    help="fig2: Gaussian class overlap (gauss-* option; 1.0 = the registered "
                         "default, at which every m gives MAP >= 0.999)")
    ap.add_argument("--cache-dir", default=None, help="generated-data cache (default as CLI)")
    args = ap.parse_args(argv)
    if args.seed < 0:
        ap.error("--seed must be >= 0")
    S = Sizes("full" if args.full else "tiny" if args.tiny else "default")
    todo = EXPERIMENTS if args.experiment == "all" else (args.experiment,)
    cache: dict = {}
    sections, t_all = [], time.perf_counter()
    for name in todo:
        t0 = time.perf_counter()
        sections.append(RUNNERS[name](args, S, cache))
        print(f"[{name}: {time.perf_counter() - t0:.1f} s]", file=sys.stderr, flush=True)
    if args.experiment == "all":
        (args.out / "all.md").write_text("\n".join(sections))
    print(f"[total {time.perf_counter() - t_all:.1f} s, mode {S.mode}, seed {args.seed}]",
          file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

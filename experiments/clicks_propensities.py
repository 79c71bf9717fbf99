"""Propensities of a simulated click log, estimated three ways and reported against the truth.

For every fold of a dataset: the click log of ``clicks_ohsumed.toml`` (position-based clicks,
``eta``, ``sessions`` per query, the top 10 of the ridge logging ranker) is simulated exactly as
``ltr-bench run`` does (:func:`ltr_bench.clicks.simulate_clicks`, same seed and options), and

* regression EM (Wang et al. 2018) estimates the examination curve from that log alone;
* result randomisation (Joachims et al. 2017) estimates it from a second, randomised log: the
  same training queries, each session showing 10 of the query's documents in random order;
* DLA's estimates are read from the finished ``neural dla`` runs of a results folder
  (``propensity@k`` of ``fitted_info``) when ``--results-dir`` is given.

Prints a markdown table (mean over folds, rank by rank, with the true ``(1/k)^eta``) and the
mean absolute error over ranks 2-10, and writes the plot
(:func:`ltr_bench.report.propensity_plot.plot_propensities`).

Run:  python experiments/clicks_propensities.py --data-dir DATA [--results-dir runs/clicks_ohsumed]
          [--plot propensities.png] [--dataset ohsumed] [--eta 1] [--sessions 10] [--seed 0]
"""

from __future__ import annotations

import argparse

import numpy as np

from ltr_bench.clicks import simulate_clicks
from ltr_bench.clicks.estimation import (
    compare_to_truth,
    propensity_by_randomisation,
    propensity_by_regression_em,
    randomised_log,
)
from ltr_bench.clicks.models import PositionBasedModel
from ltr_bench.clicks.options import resolve_click_options
from ltr_bench.data import load_fold
from ltr_bench.report.propensity_plot import plot_propensities

K = 10


def _dla(results_dir: str, dataset: str, label: str) -> list[np.ndarray]:
    from ltr_bench.results import ResultStore

    out = []
    for r in ResultStore(results_dir).records():
        if r.ok and r.dataset == dataset and r.label == label:
            info = r.model_info
            if all(f"propensity@{k}" in info for k in range(1, K + 1)):
                out.append(np.array([info[f"propensity@{k}"] for k in range(1, K + 1)]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--dataset", default="ohsumed")
    ap.add_argument("--folds", default="1,2,3,4,5")
    ap.add_argument("--eta", type=float, default=1.0)
    ap.add_argument("--sessions", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--results-dir")
    ap.add_argument("--dla-label", default="neural dla")
    ap.add_argument("--plot")
    args = ap.parse_args()

    options = {"clicks": "pbm", "eta": args.eta, "sessions": args.sessions}
    config = resolve_click_options(options, kind="letor")
    true = (1.0 / np.arange(1, K + 1)) ** args.eta
    em, rand = [], []
    for f in (int(x) for x in args.folds.split(",")):
        fold = load_fold(args.dataset, f, data_dir=args.data_dir, seed=args.seed)
        clicked = simulate_clicks(fold, config, seed=args.seed)
        tr = clicked.train
        em.append(
            propensity_by_regression_em(
                tr.X, tr.extras["position"], tr.y, args.sessions, iterations=30
            )
        )
        rng = np.random.default_rng([args.seed, f, 7])
        model = PositionBasedModel(eta=args.eta, eps=0.1)
        log = randomised_log(
            fold.train.y,
            fold.train.qid,
            model,
            max_label=fold.max_label,
            top_k=K,
            sessions=args.sessions,
            rng=rng,
        )
        rand.append(propensity_by_randomisation(*log))
    curves = {
        "result randomisation": np.mean(rand, axis=0),
        "regression EM": np.mean(em, axis=0),
    }
    spread = {"result randomisation": np.std(rand, axis=0, ddof=1), "regression EM": None}
    spread["regression EM"] = np.std(em, axis=0, ddof=1)
    if args.results_dir:
        dla = _dla(args.results_dir, args.dataset, args.dla_label)
        if dla:
            curves["DLA"] = np.mean(dla, axis=0)
            spread["DLA"] = np.std(dla, axis=0, ddof=1)
    print("| rank | true | " + " | ".join(curves) + " |")
    print("|---:|---:|" + "---:|" * len(curves))
    for k in range(K):
        cells = " | ".join(f"{c[k]:.3f} ± {spread[n][k]:.3f}" for n, c in curves.items())
        print(f"| {k + 1} | {true[k]:.3f} | {cells} |")
    maes = " | ".join(f"{compare_to_truth(c, true)['mae']:.3f}" for c in curves.values())
    print(f"| MAE 2-10 | | {maes} |")
    if args.plot:
        path = plot_propensities(
            {n: (c, spread[n]) for n, c in curves.items()},
            true,
            args.plot,
            title=f"{args.dataset}: pbm eta={args.eta:g}, {args.sessions} sessions "
            f"(mean ± sd over folds)",
        )
        print(f"plot: {path}")


if __name__ == "__main__":
    main()

"""experiments/: every plan parses and expands, its rankers follow the ranker contract, and
a small plan runs through the harness with the numbers an independent reference gives."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from sklearn.neighbors import KNeighborsClassifier

from experiments.mlr import MLRWithCV, MLRWithValidation, point_set
from experiments.paper import EuclideanRanker
from ltr_bench.data import load_fold
from ltr_bench.evaluation.metrics import evaluate
from ltr_bench.registry import make_ranker
from ltr_bench.results import ResultStore
from ltr_bench.run.cells import expand_plan, ranker_tags
from ltr_bench.run.harness import run_plan
from ltr_bench.run.plan import load_plan, plan_from_dict
from ltr_bench.run.sweeps import expand_sweeps
from ltr_bench.testing import check_ranker

EXPERIMENTS = Path(__file__).resolve().parent.parent / "experiments"
PLANS = sorted(EXPERIMENTS.glob("*.toml"))
OHSUMED_FOLDER = "OHSUMED-LETOR3-Feature-min"


def _needs_ohsumed(path: Path) -> bool:
    return any(d.name == "ohsumed" for d in load_plan(path).datasets)


def _downloaded(path: Path) -> list[str]:
    """Datasets of a plan that must be downloaded and are not in ../shared (MQ2007 ...)."""
    from ltr_bench.data import get_spec

    return [
        d.name
        for d in load_plan(path).datasets
        if d.name != "ohsumed" and get_spec(d.name).kind == "letor"
    ]


@pytest.fixture
def ohsumed_home(shared_data, tmp_path) -> Path:
    """A data home holding OHSUMED in the loader's layout, as symlinks to the shared copy."""
    source = shared_data / OHSUMED_FOLDER
    if not source.is_dir():
        pytest.skip(f"{source} is absent")
    home = tmp_path / "data"
    (home / "OHSUMED").mkdir(parents=True)
    (home / "OHSUMED" / "Feature-min").symlink_to(source, target_is_directory=True)
    return home


def test_there_are_plans_for_every_reproduced_table():
    names = {p.stem for p in PLANS}
    assert {
        "paper_fig2",
        "paper_fig3",
        "paper_table3_ohsumed",
        "paper_table4",
        "paper_table5",
        "lgmml_ohsumed",
        "mlr_table2",
        "mlr_noise",
        "mlr_ohsumed",
    } <= names


@pytest.mark.parametrize(
    "path", [p for p in PLANS if not _needs_ohsumed(p) and not _downloaded(p)], ids=lambda p: p.name
)
def test_generated_data_plan_expands_with_one_thread_and_its_run_command(path):
    _check_plan(path, data_dir=None)


def _fake_letor_home(root: Path, names: list[str]) -> Path:
    """A data home with each dataset's official layout filled with small valid files of
    the spec's width (the real data is a download; the plan only needs to expand)."""
    from ltr_bench.data import get_spec

    rng = np.random.default_rng(0)
    for name in names:
        spec = get_spec(name)
        for k in range(1, spec.n_folds + 1):
            for i, (split, _) in enumerate(spec.split_files):
                lines = []
                for q in range(3):
                    for _ in range(4):
                        feats = " ".join(
                            f"{j}:{v:.3f}"
                            for j, v in enumerate(rng.uniform(size=spec.n_features), 1)
                        )
                        lines.append(f"{rng.integers(0, 3)} qid:{100 * i + q} {feats}")
                path = spec.fold_files(root, k)[split]
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


@pytest.mark.parametrize("path", [p for p in PLANS if _downloaded(p)], ids=lambda p: p.name)
def test_downloaded_data_plan_expands_on_a_data_home_of_that_layout(path, tmp_path):
    home = _fake_letor_home(tmp_path / "data", _downloaded(path))
    expanded = _check_plan(path, data_dir=home)
    assert {c.fold for c in expanded.cells} == set(expanded.plan.folds or range(1, 6))


@pytest.mark.parametrize("path", [p for p in PLANS if _needs_ohsumed(p)], ids=lambda p: p.name)
def test_ohsumed_plan_expands_on_a_symlinked_data_home(path, ohsumed_home):
    expanded = _check_plan(path, data_dir=ohsumed_home)
    plan = expanded.plan
    folds = {c.fold for c in expanded.cells}
    assert folds == set(plan.folds or range(1, 6))


def _check_plan(path: Path, data_dir):
    plan = load_plan(path)
    # timings in the README compare rankers on one thread each; users have no ../shared
    assert plan.threads == 1
    assert plan.data_dir is None and plan.cache_dir is None
    text = path.read_text(encoding="utf-8")
    assert "shared" not in text
    assert f"ltr-bench run --config experiments/{path.name}" in text, (
        "the plan's header must say how to run it"
    )
    assert re.search(r"ltr-bench report .*--dataset", text), "the header must say how to report"
    plan.data_dir = None if data_dir is None else str(data_dir)
    expanded = expand_plan(expand_sweeps(plan))
    variants: dict[str, set] = {}
    for c in expanded.cells:
        variants.setdefault(json.dumps([c.dataset_source, c.dataset_options]), set()).add(c)
    for cells in variants.values():
        n_folds = len({c.fold for c in cells})
        clicks = next(iter(cells)).dataset_identity.get("clicks")
        # on true labels the learners from click positions are left out (with a note)
        running = [
            r
            for r in plan.rankers
            if clicks or not ranker_tags(make_ranker(r.name, dict(r.params))).requires_position
        ]
        assert len(cells) == n_folds * len(running) * len(plan.all_seeds())
    return expanded


@pytest.mark.parametrize(
    "ranker",
    [
        EuclideanRanker(),
        # each fit below fits every grid point on every fold (two folds and ten iterations:
        # a third of the CPU time of three folds and fifteen, measured; the models still
        # score the check data's documents differently)
        pytest.param(
            MLRWithCV(C_grid=[1.0, 10.0], cv=2, max_iter=10, admm_max_iter=10),
            marks=pytest.mark.slow,
        ),
        pytest.param(
            MLRWithCV(
                C_grid=[1.0, 10.0], lam_ratios=[0.1, 1.0], cv=2, max_iter=10, admm_max_iter=10
            ),
            marks=pytest.mark.slow,
        ),
        pytest.param(
            MLRWithValidation(C_grid=[1.0, 10.0], max_iter=10, admm_max_iter=10),
            marks=pytest.mark.slow,
        ),
    ],
    ids=["euclidean", "mlr-cv", "rmlr-cv", "mlr-validation"],
)
def test_experiment_ranker_follows_the_ranker_contract(ranker):
    check_ranker(ranker)


def test_point_set_recovers_the_classes_of_a_query_by_example_fold():
    fold = load_fold("wine", 1, seed=0)
    tr = fold.train
    query_point, doc_point, classes = point_set(tr.X, tr.y, tr.qid, fold.query_dim)
    # the recovered partition is the true one up to renaming the classes
    true_q, true_d = tr.extras["query_class"], tr.extras["doc_class"]
    pairs_q = set(zip(classes[query_point].tolist(), true_q.tolist()))
    pairs_d = set(zip(classes[doc_point].tolist(), true_d.tolist()))
    assert len(pairs_q | pairs_d) == len(np.unique(true_q)) == len(np.unique(classes))


def test_point_set_is_none_for_graded_query_document_data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((12, 4))
    y = np.array([0, 1, 2, 0] * 3)
    assert point_set(X, y, np.repeat([1, 2, 3], 4), 2) is None
    assert point_set(X, y, np.repeat([1, 2, 3], 4), None) is None


def test_validation_wrapper_keeps_the_grid_point_with_the_best_validation_ndcg():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((120, 4))
    y = (X[:, 0] + 0.5 * rng.standard_normal(120) > 0.5).astype(np.int64)
    qid = np.repeat(np.arange(12), 10)
    Xv = rng.standard_normal((60, 4))
    yv = (Xv[:, 0] + 0.5 * rng.standard_normal(60) > 0.5).astype(np.int64)
    qv = np.repeat(np.arange(6), 10)
    grid = [0.01, 1.0, 100.0]
    ranker = MLRWithValidation(loss="ndcg", C_grid=grid, max_iter=30, admm_max_iter=30)
    ranker.fit(X, y, qid=qid, eval_set=(Xv, yv, qv))
    from ltr_bench_baselines.mlr import MLRRanker

    vali = [
        evaluate(
            yv,
            MLRRanker(loss="ndcg", C=c, max_iter=30, admm_max_iter=30)
            .fit(X, y, qid=qid)
            .predict(Xv),
            qv,
            ("ndcg@10",),
        )["ndcg@10"]
        for c in grid
    ]
    assert ranker.chosen_params_["C"] == grid[int(np.argmax(vali))]
    assert ranker.fitted_info()["selection_score"] == pytest.approx(max(vali))


def test_tiny_plan_runs_and_euclidean_knn_error_matches_sklearn(tmp_path):
    plan = plan_from_dict(
        {
            "seed": 0,
            "folds": [1],
            "threads": 1,
            "metrics": ["map"],
            "rankers": {
                "Euclidean": {"ranker": "experiments.paper:EuclideanRanker"},
                "MLR": {
                    "ranker": "experiments.mlr:MLRWithCV",
                    "C_grid": [1.0, 10.0],
                    "max_iter": 20,
                    "admm_max_iter": 20,
                    "scaling": "none",
                },
                "L-GMML m=2": {"ranker": "lgmml", "n_metrics": 2},
            },
            # two classes: a 3-NN vote cannot tie, so the tie rules of the two k-NN codes agree
            "datasets": {"gauss-10": {"n_classes": 2, "n_per_class": 15}},
        }
    )
    report = run_plan(expand_plan(plan), ResultStore(tmp_path / "results"))
    assert not report.failed, [r.error for r in report.failed]
    by_label = {r.label: r for r in report.records}
    assert set(by_label) == {"Euclidean", "MLR", "L-GMML m=2"}
    assert by_label["MLR"].model_info["chosen_C"] in (1.0, 10.0)

    fold = load_fold("gauss-10", 1, seed=0, options={"n_classes": 2, "n_per_class": 15})
    d = fold.query_dim
    tr, te = fold.train, fold.test
    _, i = np.unique(tr.extras["query_index"], return_index=True)
    _, j = np.unique(te.extras["query_index"], return_index=True)
    knn = KNeighborsClassifier(n_neighbors=3).fit(tr.X[i, :d], tr.extras["query_class"][i])
    expected = np.mean(knn.predict(te.X[j, :d]) != te.extras["query_class"][j])
    assert by_label["Euclidean"].extra_metrics["knn_error"] == pytest.approx(expected)


def test_gbdt_presets_experiment_scores_the_validation_split():
    from experiments import gbdt_presets_vali as exp

    fold = load_fold(
        "synthetic",
        1,
        options={"n_queries": 40, "docs_per_query": 8, "n_features": 5, "n_informative": 3},
    )
    value = exp.validation_ndcg("xgboost-gbrt", "auto", fold)
    assert 0.0 <= value <= 1.0
    # the same number as evaluating the ranker on the validation split by hand
    from ltr_bench.run.cells import build_ranker

    r = build_ranker("xgboost-gbrt", {"preset": "auto"}, seed=0, threads=1)
    r.fit(
        fold.train.X,
        fold.train.y,
        qid=fold.train.qid,
        eval_set=(fold.vali.X, fold.vali.y, fold.vali.qid),
    )
    want = evaluate(
        fold.vali.y, r.predict(fold.vali.X), fold.vali.qid, ("ndcg@10",), max_label=fold.max_label
    )["ndcg@10"]
    assert value == want

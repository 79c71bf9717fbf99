"""report: tables from MLflow fold runs, Holm, paired tests, formats, CLI, no retraining.

One real MLflow store per module (built by ``ltr-bench run`` on tiny synthetic data with the
fake rankers: MLflow is slow to start); the statistics are also checked on hand-made runs.
"""

from __future__ import annotations

import copy
import csv
import io
import json
from html.parser import HTMLParser

import ltrb_fake_rankers as fakes
import numpy as np
import pytest
from click.testing import CliRunner

from ltr_bench.cli import main
from ltr_bench.cli.report import report_command
from ltr_bench.evaluation.stats import holm
from ltr_bench.report.tables import ReportError, build_report
from ltr_bench.report.text import format_report
from ltr_bench.results import ResultRecord, ResultStore
from ltr_bench.tracking import default_tracking_uri, fetch_fold_results

TINY = [
    "--dataset-option",
    "n_queries=30",
    "--dataset-option",
    "docs_per_query=6",
    "--dataset-option",
    "n_features=5",
    "--dataset-option",
    "n_informative=3",
]
RUN = ["run", "--dataset", "synthetic", *TINY, "--folds", "1,2"]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A working directory whose default MLflow store holds three (ranker, params) runs of
    two folds: fake-linear, fake-other (same seed, hence the same scores) and fake-linear
    with scale=2 (scores doubled: the same rankings). Two folds, not more: every report of
    the store reads each fold run's artifacts back from MLflow (a tenth of a second each)."""
    work = tmp_path_factory.mktemp("report")
    with pytest.MonkeyPatch.context() as mp:
        fakes.use_workdir(work, mp)
        for extra in (
            ["--ranker", "fake-linear,fake-other"],
            ["--ranker", "fake-linear", "--param", "fake-linear.scale=2"],
        ):
            result = CliRunner().invoke(main, [*RUN, *extra], catch_exceptions=False)
            assert result.exit_code == 0, result.output
        runs = fetch_fold_results("synthetic")
        yield {"work": work, "runs": runs, "mp": mp}
    fakes.reset()


@pytest.fixture
def ctx(store, monkeypatch):
    monkeypatch.chdir(store["work"])
    monkeypatch.syspath_prepend(str(store["work"] / "plugins"))
    return store


def invoke(*args):
    return CliRunner().invoke(report_command, list(args))


def _runs(values: dict[str, list[np.ndarray]], fit=None) -> list[ResultRecord]:
    """Records with per-query ndcg@10 ``values[ranker][fold-1]`` (qids 0..n-1)."""
    out = []
    for name, folds in values.items():
        for f, v in enumerate(folds, start=1):
            v = np.asarray(v, dtype=float)
            out.append(
                ResultRecord(
                    key=f"{name}-{f}",
                    plan_key=f"pk-{name}",
                    config_key=f"ck-{name}",
                    ranker=name,
                    label=name,
                    dataset="toy",
                    fold=f,
                    seed=0,
                    metrics={"ndcg@10": float(v.mean()), "ndcg@5": float(v.mean() * 0.9)},
                    per_query={
                        "qid": list(range(v.size)),
                        "ndcg@10": v.tolist(),
                        "ndcg@5": (v * 0.9).tolist(),
                    },
                    fit_seconds=1.0 + f,
                    score_us_per_doc=2.0,
                    fingerprints={"train": f"tr{f}", "test": f"te{f}"},
                )
            )
    return out


def test_better_on_every_query_is_a_win_worse_is_a_loss_equal_is_unmarked():
    rng = np.random.default_rng(0)
    base = [rng.uniform(0.2, 0.8, size=15) for _ in range(3)]
    runs = _runs(
        {
            "lightgbm": base,
            "better": [b + rng.uniform(0.01, 0.1, size=b.size) for b in base],
            "worse": [b - rng.uniform(0.01, 0.1, size=b.size) for b in base],
            "same": [b.copy() for b in base],
        }
    )
    rep = build_report(runs, dataset="toy")
    assert rep.baseline == "lightgbm" and rep.metrics == ["ndcg@5", "ndcg@10"]
    for m in rep.metrics:
        assert rep.comparisons[("better", m)].mark == "win"
        assert rep.comparisons[("worse", m)].mark == "loss"
        assert rep.comparisons[("same", m)].mark == ""
        assert rep.comparisons[("better", m)].n_pairs == 45  # pooled over 3 folds
    md = format_report(rep, "md")
    better_line = next(line for line in md.splitlines() if line.startswith("| better |"))
    assert better_line.count("\u25b2") == 2
    same_line = next(line for line in md.splitlines() if line.startswith("| same |"))
    assert "\u25b2" not in same_line and "\u25bc" not in same_line
    assert "significantly better / worse than the baseline lightgbm" in md
    assert "Holm" in md


def test_holm_is_applied_over_rankers_times_metrics():
    rng = np.random.default_rng(1)
    base = [rng.uniform(0.2, 0.8, size=12) for _ in range(2)]
    runs = _runs(
        {
            "lightgbm": base,
            "a": [b + rng.normal(0.02, 0.05, b.size) for b in base],
            "b": [b + rng.normal(0.0, 0.05, b.size) for b in base],
        }
    )
    rep = build_report(runs, dataset="toy")
    comps = list(rep.comparisons.values())
    assert len(comps) == 4
    np.testing.assert_allclose([c.p_ttest_holm for c in comps], holm([c.p_ttest for c in comps]))
    np.testing.assert_allclose(
        [c.p_wilcoxon_holm for c in comps], holm([c.p_wilcoxon for c in comps])
    )


def test_folds_not_shared_by_every_ranker_are_left_out_with_a_note():
    rng = np.random.default_rng(2)
    base = [rng.uniform(size=8) for _ in range(3)]
    runs = [
        r
        for r in _runs({"lightgbm": base, "other": base})
        if not (r.ranker == "other" and r.fold == 3)
    ]
    rep = build_report(runs, dataset="toy")
    assert rep.folds == [1, 2]
    assert rep.row("lightgbm").cells["ndcg@10"].n == 2
    # the note blames the row that lacks the unit, not the one that has it
    assert any("fold/seed 3/0 left out: no result of other for it" in n for n in rep.notes)
    assert not any("lightgbm" in n and "3/0" in n for n in rep.notes)


def test_query_ids_that_do_not_match_are_refused():
    runs = _runs({"lightgbm": [np.ones(4)], "other": [np.ones(4)]})
    runs[1].per_query["qid"] = [0, 1, 2, 9]
    with pytest.raises(ReportError, match="do not cover the same query ids"):
        build_report(runs, dataset="toy")


# ------------------------------------------------------------------ from a real MLflow store


def test_fetched_fold_runs_carry_metrics_timings_and_per_query_values(ctx):
    runs = ctx["runs"]
    assert len(runs) == 6  # 3 (ranker, params) x 2 folds
    for r in runs:
        assert isinstance(r, ResultRecord) and r.ok
        assert {"ndcg@10", "ndcg@10_empty0", "map", "err@10"} <= set(r.metrics)
        assert r.fit_seconds > 0 and r.score_us_per_doc > 0 and r.mlflow["parent_run_id"]
        assert set(r.fingerprints) == {"train", "vali", "test"}
        assert np.mean(r.per_query["ndcg@10"]) == pytest.approx(r.metrics["ndcg@10"])


def test_fetched_records_equal_the_local_records_field_for_field(ctx):
    store = ResultStore(ctx["work"] / "mlflow_runs" / "results")
    local = {r.key: r for r in store.records()}
    assert len(local) == len(ctx["runs"])
    for r in ctx["runs"]:
        mine = local[r.key]
        store.per_query(mine)
        assert r.to_dict(per_query=True) == {**mine.to_dict(per_query=True), "mlflow": r.mlflow}


def test_table_rows_match_the_local_result_records(ctx):
    rep = build_report(ctx["runs"], dataset="synthetic")
    local: dict[str, list[dict]] = {}
    for p in (ctx["work"] / "mlflow_runs" / "results").glob("*.json"):
        d = json.loads(p.read_text())
        local.setdefault(d["config_key"], []).append(d)
    assert len(rep.rows) == len(local) == 3
    for row in rep.rows:
        recs = local[row.config_key]
        assert sorted(r["fold"] for r in recs) == rep.folds == [1, 2]
        for m in ("ndcg@10", "map"):
            vals = np.array([r["metrics"][m] for r in recs])
            assert row.cells[m].mean == pytest.approx(vals.mean())
            assert row.cells[m].std == pytest.approx(vals.std(ddof=1))
        fit = np.array([r["fit_seconds"] for r in recs])
        assert row.cells["fit_seconds"].mean == pytest.approx(fit.mean())
        score = np.array([r["score_us_per_doc"] for r in recs])
        assert row.cells["score_us_per_doc"].std == pytest.approx(score.std(ddof=1))


def test_the_same_ranker_with_two_parameter_sets_gets_two_labelled_rows(ctx):
    rep = build_report(ctx["runs"], dataset="synthetic")
    # the defaults are the bare name; the other set names only what the user set
    assert sorted(r.label for r in rep.rows) == [
        "fake-linear",
        "fake-linear[scale=2]",
        "fake-other",
    ]
    only = build_report(ctx["runs"], dataset="synthetic", rankers=["fake-linear[scale=2]"])
    assert [r.label for r in only.rows] == ["fake-linear[scale=2]"]


def test_the_default_configuration_is_the_baseline_not_the_one_with_set_parameters(ctx):
    assert build_report(ctx["runs"], dataset="synthetic").baseline == "fake-linear"
    named = build_report(ctx["runs"], dataset="synthetic", baseline="fake-linear")
    assert named.baseline == "fake-linear"


def test_rankers_with_identical_rankings_get_no_mark(ctx):
    rep = build_report(ctx["runs"], dataset="synthetic", baseline="fake-other")
    assert rep.baseline == "fake-other" and len(rep.comparisons) == 2 * len(rep.metrics)
    for c in rep.comparisons.values():
        assert c.mark == "" and c.mean_diff == 0 and c.p_ttest == 1.0 and c.n_pairs == 12


def test_runs_on_other_data_are_left_out_with_a_note_naming_them(ctx):
    runs = copy.deepcopy(ctx["runs"])
    victim = next(r for r in runs if r.ranker == "fake-other" and r.fold == 2)
    victim.fingerprints["test"] = "0" * 64
    rep = build_report(runs, dataset="synthetic", baseline="fake-linear[scale=2]")
    assert "fake-other" not in [r.label for r in rep.rows] and len(rep.rows) == 2
    assert any(
        n.startswith("fake-other left out: it was run on other data") and "fold 2 seed 0" in n
        for n in rep.notes
    )


@pytest.mark.parametrize("fmt", ["md", "csv", "html"])
def test_every_format_parses(ctx, fmt):
    result = invoke(
        "--dataset",
        "synthetic",
        "--metric",
        "ndcg@10,map",
        "--format",
        fmt,
        "--baseline",
        "fake-other",
        *(["--wide"] if fmt == "md" else []),  # one table each (else split to fit 120)
    )
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        assert len(rows) == 3 * 6  # 3 rankers x (2 metrics + 4 timings)
        got = {(r["ranker"], r["quantity"]) for r in rows}
        assert ("fake-other", "ndcg@10") in got and ("fake-linear[scale=2]", "fit_seconds") in got
        tested = [r for r in rows if r["quantity"] == "ndcg@10" and r["baseline"] == "0"]
        assert all(r["result"] == "ns" and float(r["p_ttest_holm"]) == 1.0 for r in tested)
    elif fmt == "html":

        class Cells(HTMLParser):
            tables, cells = 0, []

            def handle_starttag(self, tag, attrs):
                self.tables += tag == "table"

            def handle_data(self, data):
                self.cells.append(data)

        p = Cells()
        p.feed(out)
        # results, paired tests, split fingerprints
        assert p.tables == 3 and "fake-other " in p.cells and "(baseline)" in p.cells
    else:
        lines = out.splitlines()
        header = next(line for line in lines if line.startswith("| ranker | units"))
        assert header.split("|")[3].strip() == "ndcg@10"
        assert sum(line.startswith("| fake-") for line in lines) == 3 + 4


def test_report_never_retrains(ctx, monkeypatch):
    import ltr_bench.registry as registry
    import ltr_bench.run.harness as harness

    def boom(*a, **k):
        raise AssertionError("report must not fit anything")

    monkeypatch.setattr(harness, "run_cell", boom)
    monkeypatch.setattr(harness, "run_plan", boom)
    monkeypatch.setattr(registry, "make_ranker", boom)
    monkeypatch.setattr(fakes.LinearRanker, "fit", boom)
    monkeypatch.setattr(fakes.LinearRanker, "predict", boom)
    fakes.reset()
    result = invoke("--dataset", "synthetic")
    assert result.exit_code == 0, result.stderr
    assert fakes.FITS == []


def test_output_file_and_plots_are_written_and_attached_to_the_parent_runs(ctx, tmp_path):
    from mlflow.tracking import MlflowClient

    out = tmp_path / "report.md"
    result = invoke(
        "--dataset", "synthetic", "--output", str(out), "--plots", str(tmp_path / "plots")
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "" and out.read_text().startswith("## synthetic")
    pngs = sorted(p.name for p in (tmp_path / "plots").glob("*.png"))
    assert pngs == [
        "synthetic_ndcg_at_10_pareto_fit_time.png",
        "synthetic_ndcg_at_10_pareto_score_time.png",
        "synthetic_ndcg_at_10_per_fold.png",
        "synthetic_ndcg_at_10_vs_fit_time.png",
        "synthetic_ndcg_at_k.png",
    ]
    client = MlflowClient(default_tracking_uri(ctx["work"]))
    for pid in {r.mlflow["parent_run_id"] for r in ctx["runs"]}:
        names = {a.path for a in client.list_artifacts(pid, "report")}
        assert names == {f"report/{n}" for n in pngs}  # run attaches no HTML unless asked


def test_empty_store_exits_1_with_a_message_and_no_traceback(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("--dataset", "synthetic")
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert "no MLflow store at" in result.stderr and "Traceback" not in result.output
    assert not (tmp_path / "mlflow_runs").exists()  # reading creates no store


def test_unknown_dataset_exits_1_naming_the_datasets_with_results(ctx):
    result = invoke("--dataset", "synthetc")
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert "no results for dataset 'synthetc'" in result.stderr
    assert "datasets with results: synthetic" in result.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--metric", "ndcg@7"], "--metric ndcg@7: not recorded"),
        (["--baseline", "lightgbm"], "--baseline lightgbm has no results"),
        (["--ranker", "xgboost"], "--ranker xgboost: no results"),
        (["--format", "pdf"], "Invalid value for '--format'"),
    ],
)
def test_bad_requests_exit_2_with_a_message(ctx, args, message):
    result = invoke("--dataset", "synthetic", *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr and "Traceback" not in result.output


def test_report_is_a_subcommand_of_ltr_bench():
    assert main.get_command(None, "report") is report_command


def test_local_results_give_the_same_report_as_mlflow(ctx):
    store = ResultStore(ctx["work"] / "mlflow_runs" / "results")
    for r in store.records():
        store.per_query(r)
    local = build_report(store.records(), dataset="synthetic", baseline="fake-other")
    remote = build_report(ctx["runs"], dataset="synthetic", baseline="fake-other")
    assert [r.label for r in local.rows] == [r.label for r in remote.rows]
    for a, b in zip(local.rows, remote.rows):
        for k in (*remote.metrics, "fit_seconds"):
            assert a.cells[k].mean == pytest.approx(b.cells[k].mean)
    assert {k: c.n_pairs for k, c in local.comparisons.items()} == {
        k: c.n_pairs for k, c in remote.comparisons.items()
    }


def test_report_from_the_results_folder_prints_the_same_table_as_from_mlflow(ctx):
    args = ["--dataset", "synthetic", "--baseline", "fake-other", "--format", "csv"]
    remote = invoke(*args)
    local = invoke(*args, "--results-dir", str(ctx["work"] / "mlflow_runs" / "results"))
    assert remote.exit_code == 0 and local.exit_code == 0, local.stderr
    # the same table, except that local records do not know their MLflow parent runs
    assert _without_run_ids(local.stdout) == _without_run_ids(remote.stdout)


def _without_run_ids(csv_text: str) -> list[dict]:
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    for r in rows:
        r.pop("parent_run_ids")
    return rows


def test_dataset_is_optional_when_the_store_holds_one(ctx):
    result = invoke("--metric", "ndcg@10")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("## synthetic")


def test_the_rankers_warnings_reach_the_report_notes():
    runs = _runs({"lightgbm": [np.ones(4) * 0.5, np.ones(4) * 0.4]})
    runs[0].warnings = ["UserWarning: the solver stopped at max_iter=200 (violation 0.34)"]
    rep = build_report(runs, dataset="toy")
    assert (
        "lightgbm: warning in 1/2 unit(s): UserWarning: the solver stopped at max_iter=200 "
        "(violation 0.34)"
    ) in rep.notes


# ------------------------------------------------------------ label order and label lists
NATURAL = [
    "lgmml[n_metrics=2]",
    "lgmml[n_metrics=10]",
    "lgmml[n_metrics=100]",
    "lightgbm[learning_rate=0.05]",
    "lightgbm[learning_rate=0.1]",
    "lightgbm[num_leaves=7]",
    "lightgbm[num_leaves=63]",
    "lightgbm[num_leaves=63,learning_rate=0.05]",
]


def _labelled_runs(labels: list[str], folds: int = 2) -> list[ResultRecord]:
    """Records of configurations named ``labels`` (ranker = the text before ``[``), the
    i-th with per-query ndcg@10 = 0.1 + 0.01 i on 4 queries, ``folds`` folds."""
    out = []
    for i, label in enumerate(labels):
        v = [0.1 + 0.01 * i] * 4
        for f in range(1, folds + 1):
            out.append(
                ResultRecord(
                    key=f"cell{i}-{f}",
                    plan_key=f"pk{i}",
                    config_key=f"ck{i}",
                    ranker=label.split("[")[0],
                    label=label,
                    dataset="toy",
                    fold=f,
                    seed=0,
                    metrics={"ndcg@10": v[0]},
                    per_query={"qid": [0, 1, 2, 3], "ndcg@10": v},
                    fit_seconds=1.0,
                    score_us_per_doc=2.0,
                    fingerprints={"train": f"tr{f}", "test": f"te{f}"},
                )
            )
    return out


def test_label_sort_key_orders_numbers_by_value_including_decimals_and_signs():
    from ltr_bench.results.labels import label_sort_key

    shuffled = [NATURAL[i] for i in (2, 7, 0, 4, 6, 1, 5, 3)]
    assert sorted(shuffled, key=label_sort_key) == NATURAL
    assert sorted(
        ["x[eta=1e-05]", "x[eta=0.001]", "x[eta=-1]", "x[eta=2]"], key=label_sort_key
    ) == ["x[eta=-1]", "x[eta=1e-05]", "x[eta=0.001]", "x[eta=2]"]
    # a hyphen inside a name is not a minus sign; a bare name sorts before its variants
    assert sorted(["gauss-100", "gauss-10", "gauss-50", "gauss"], key=label_sort_key) == [
        "gauss",
        "gauss-10",
        "gauss-50",
        "gauss-100",
    ]
    # brackets sort first: a label's variants follow it, shorter settings lists first
    assert sorted(
        [
            "lightgbm-big",
            "lightgbm[num_leaves=63,learning_rate=0.05]",
            "lightgbm",
            "lightgbm[num_leaves=63]",
        ],
        key=label_sort_key,
    ) == [
        "lightgbm",
        "lightgbm[num_leaves=63]",
        "lightgbm[num_leaves=63,learning_rate=0.05]",
        "lightgbm-big",
    ]
    # equal values written differently still get a deterministic order (by their text)
    assert sorted(["a[x=0.10]", "a[x=0.1]"], key=label_sort_key) == ["a[x=0.1]", "a[x=0.10]"]
    assert sorted(["a[x=b]", "a[x=2]"], key=label_sort_key) == ["a[x=2]", "a[x=b]"]


def test_report_rows_are_in_natural_label_order_with_the_baseline_first():
    shuffled = [NATURAL[i] for i in (2, 7, 0, 4, 6, 1, 5, 3)]
    rep = build_report(_labelled_runs(shuffled), dataset="toy", baseline="lightgbm[num_leaves=63]")
    assert [r.label for r in rep.rows] == ["lightgbm[num_leaves=63]"] + [
        lab for lab in NATURAL if lab != "lightgbm[num_leaves=63]"
    ]
    assert _md_row_labels(format_report(rep, "md")) == [r.label for r in rep.rows]


def _md_row_labels(md: str) -> list[str]:
    """The first column of the main Markdown table (up to its first blank line)."""
    table = md.split("\n\n")[1].splitlines()[2:]  # after the title; skip header, rule
    return [line.split(" | ")[0][2:].removesuffix(" (baseline)") for line in table]


def test_ranker_selection_by_name_lists_its_labelled_rows_in_natural_order():
    rep = build_report(
        _labelled_runs(
            [
                "lgmml[n_metrics=100]",
                "lgmml[n_metrics=2]",
                "lgmml[n_metrics=10]",
                "lightgbm[num_leaves=7]",
            ]
        ),
        dataset="toy",
        rankers=["lgmml"],
    )
    assert [r.label for r in rep.rows] == [
        "lgmml[n_metrics=2]",
        "lgmml[n_metrics=10]",
        "lgmml[n_metrics=100]",
    ]


def test_split_names_keeps_commas_inside_brackets():
    from ltr_bench.results.labels import split_names

    assert split_names(
        ("lightgbm[num_leaves=63,learning_rate=0.05], lgmml", "xgboost,lgmml[dims=[1,2],k=3]"),
        option="--ranker",
    ) == ["lightgbm[num_leaves=63,learning_rate=0.05]", "lgmml", "xgboost", "lgmml[dims=[1,2],k=3]"]
    assert split_names("a,,b ,", option="--ranker") == ["a", "b"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("lightgbm[num_leaves=63,lgmml", "1 '[' not closed"),
        ("lightgbm]num_leaves=63[", "']' at position 9 closes no '['"),
    ],
)
def test_split_names_refuses_unbalanced_brackets_naming_the_option(text, message):
    from ltr_bench.errors import UsageError
    from ltr_bench.results.labels import split_names

    with pytest.raises(UsageError, match="^--ranker ") as info:
        split_names((text,), option="--ranker")
    assert message in str(info.value) and info.value.exit_code == 2


@pytest.fixture
def labelled_store(tmp_path):
    store = ResultStore(tmp_path / "results")
    for r in _labelled_runs(NATURAL):
        store.save(r)
    return str(store.root)


def test_report_ranker_option_selects_a_label_that_contains_commas(labelled_store):
    result = invoke(
        "--results-dir",
        labelled_store,
        "--format",
        "csv",
        "--ranker",
        "lightgbm[num_leaves=63,learning_rate=0.05],lgmml[n_metrics=10]",
        "--baseline",
        "lgmml[n_metrics=10]",
    )
    assert result.exit_code == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    labels = list(dict.fromkeys(r["ranker"] for r in rows))
    assert labels == ["lgmml[n_metrics=10]", "lightgbm[num_leaves=63,learning_rate=0.05]"]


def test_report_rows_from_the_results_folder_are_in_natural_order(labelled_store):
    result = CliRunner().invoke(
        main, ["report", "--results-dir", labelled_store, "--baseline", "lgmml[n_metrics=2]"]
    )
    assert result.exit_code == 0, result.stderr
    assert _md_row_labels(result.stdout) == NATURAL


def test_report_unbalanced_bracket_in_ranker_exits_2_naming_the_option(labelled_store):
    result = invoke(
        "--results-dir", labelled_store, "--ranker", "lightgbm[num_leaves=63,learning_rate=0.05"
    )
    assert result.exit_code == 2, result.output
    assert "--ranker lightgbm[num_leaves=63,learning_rate=0.05: 1 '[' not closed" in (result.stderr)
    assert "Traceback" not in result.output

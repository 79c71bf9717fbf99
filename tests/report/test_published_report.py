"""report.published.compare and the report's section: published rows are shown only under a
convention the results recorded, beside our row for the same model, over the same folds."""

from __future__ import annotations

import math
from html.parser import HTMLParser

import numpy as np
import pytest
from click.testing import CliRunner

from ltr_bench.cli.report import report_command
from ltr_bench.report.published import ModelMap, load_published, published_section
from ltr_bench.report.tables import build_report
from ltr_bench.report.text import format_report
from ltr_bench.results import ResultRecord, ResultStore

FOLDS = (1, 2, 3, 4, 5)


def _published(model: str, metric: str, convention: str = "letor3", dataset: str = "ohsumed"):
    return next(
        r
        for r in load_published()
        if (r.dataset, r.model, r.metric, r.convention) == (dataset, model, metric, convention)
    )


def _records(
    rankers: dict[str, tuple[str, dict]],
    *,
    dataset: str = "ohsumed",
    folds=FOLDS,
    seeds=(0,),
    profiles=("letor3",),
) -> list[ResultRecord]:
    """One record per (label, fold, seed): metric m of fold f, seed s = base + f/100 + s/1000,
    under ltr-bench's convention and each profile (the profile's value 0.01 lower)."""
    out = []
    for i, (label, (ranker, params)) in enumerate(rankers.items()):
        base = 0.3 + 0.05 * i
        for f in folds:
            for s in seeds:
                v = base + f / 100 + s / 1000
                metrics = {"ndcg@10": v, "map": v - 0.1}
                for p in profiles:
                    metrics.update({f"ndcg@10_{p}": v - 0.01, f"map_{p}": v - 0.11})
                out.append(
                    ResultRecord(
                        key=f"{label}-{f}-{s}",
                        plan_key=f"pk-{label}-{s}",
                        config_key=f"ck-{label}",
                        ranker=ranker,
                        label=label,
                        params=dict(params),
                        dataset=dataset,
                        fold=f,
                        seed=s,
                        metrics=metrics,
                        fit_seconds=1.0,
                        score_us_per_doc=1.0,
                        fingerprints={"train": f"tr{f}", "test": f"te{f}"},
                    )
                )
    return out


RANKERS = {
    "listnet": ("listnet", {"l2": 1e-4}),
    "adarank-map": ("adarank", {"metric": "map", "rounds": 100}),
    "adarank-ndcg": ("adarank", {"metric": "ndcg@10", "rounds": 100}),
    "lightgbm": ("lightgbm", {}),
}


def _expected(records, label: str, key: str, folds) -> float:
    """Hand-worked ours: per fold the mean over seeds, then the mean over ``folds``."""
    per_fold = [
        np.mean([r.metrics[key] for r in records if r.label == label and r.fold == f])
        for f in folds
    ]
    return float(np.mean(per_fold))


def test_letor3_rows_are_shown_beside_the_same_model_with_the_difference():
    records = _records(RANKERS, seeds=(0, 1))
    report = build_report(records, dataset="ohsumed", metrics=["ndcg@10_letor3", "map_letor3"])
    section = published_section(report)
    by = {(ln.published.model, ln.published.metric, ln.label): ln for ln in section.lines}
    listnet = by[("ListNet", "NDCG@10", "listnet")]
    assert listnet.published == _published("ListNet", "NDCG@10")
    ours = _expected(records, "listnet", "ndcg@10_letor3", FOLDS)
    assert listnet.ours == pytest.approx(ours)
    assert listnet.difference == pytest.approx(ours - _published("ListNet", "NDCG@10").value)
    # AdaRank-MAP is adarank with metric=map, not the NDCG-optimising configuration
    assert ("AdaRank-MAP", "MAP", "adarank-map") in by
    assert not any(k[0] == "AdaRank-MAP" and k[2] == "adarank-ndcg" for k in by)
    # published models without a counterpart among our rows are listed without ours
    ranksvm = by[("RankSVM", "MAP", None)]
    assert math.isnan(ranksvm.ours) and ranksvm.published == _published("RankSVM", "MAP")
    # metrics the report does not show (P@k, NDCG@1 ...) are counted in a note, not shown
    assert {ln.published.metric for ln in section.lines} == {"NDCG@10", "MAP"}
    assert any("metrics this report does not show" in n for n in section.notes)


def test_published_ranksvm_is_shown_beside_both_our_ranksvm_and_ranksvm_letor():
    records = _records(
        {"ranksvm": ("ranksvm", {"C": 1.0}), "ranksvm-letor": ("ranksvm-letor", {"loss": "hinge"})}
    )
    report = build_report(records, dataset="ohsumed", metrics=["ndcg@10_letor3", "map_letor3"])
    section = published_section(report)
    lines = [
        ln
        for ln in section.lines
        if (ln.published.model, ln.published.metric) == ("RankSVM", "NDCG@10")
    ]
    assert sorted(ln.label for ln in lines) == ["ranksvm", "ranksvm-letor"]
    for ln in lines:
        assert ln.ours == pytest.approx(_expected(records, ln.label, "ndcg@10_letor3", FOLDS))
    assert ModelMap("ranksvm", also=("ranksvm-letor",)).text == "ranksvm, ranksvm-letor"
    assert not ModelMap("ranksvm", also=("ranksvm-letor",)).matches("rankboost", {})


def test_no_published_row_is_shown_under_a_convention_the_results_did_not_record():
    records = _records(RANKERS, profiles=())  # run without --convention letor3
    report = build_report(records, dataset="ohsumed", metrics=["ndcg@10", "map"])
    section = published_section(report)
    assert section.lines == []
    assert any(
        "use the letor3 convention, which these results did not record" in n
        and "--convention letor3" in n
        for n in section.notes
    )
    text = format_report(report, "md")
    assert "### Published results for ohsumed" in text
    assert "| ListNet |" not in text and "did not record" in text


def test_only_a_convention_every_run_recorded_counts_as_recorded():
    records = _records(RANKERS)
    for r in records:
        if r.label == "lightgbm" and r.fold == 3:
            r.metrics = {k: v for k, v in r.metrics.items() if not k.endswith("_letor3")}
    report = build_report(records, dataset="ohsumed", metrics=["ndcg@10"])
    section = published_section(report)
    assert section.conventions == ["default"] and section.lines == []


def test_a_five_fold_published_mean_gets_no_value_from_fewer_folds():
    records = _records({"listnet": ("listnet", {})}, folds=(1, 2))
    report = build_report(records, dataset="ohsumed", metrics=["ndcg@10_letor3"])
    section = published_section(report)
    line = next(ln for ln in section.lines if ln.label == "listnet")
    assert math.isnan(line.ours) and line.missing_folds == (3, 4, 5)
    assert any("listnet: no result on fold(s) 3, 4, 5" in n for n in section.notes)


def test_default_convention_rows_compare_one_fold_and_are_marked_test_selected():
    # CatBoost's MQ2008 benchmark: Fold 1 only, default convention, chosen on test
    records = _records(
        {"lightgbm": ("lightgbm", {}), "xgboost-lambdamart": ("xgboost-lambdamart", {})},
        dataset="mq2008",
        profiles=("letor4",),
    )
    report = build_report(records, dataset="mq2008", metrics=["ndcg@10"])
    section = published_section(report)
    line = next(ln for ln in section.lines if ln.published.model == "lgb-pairwise")
    assert line.label == "lightgbm"
    assert line.ours == pytest.approx(_expected(records, "lightgbm", "ndcg@10", (1,)))
    assert any("test-selected" in n for n in section.notes)
    text = format_report(report, "md")
    assert "lgb-pairwise (test-selected)" in text
    # the neural rows of unstated convention are never put beside ours
    assert "ListNet (neural" not in text
    assert any("do not state their convention" in n for n in section.notes)


def test_a_dataset_without_published_rows_adds_nothing_to_the_report():
    records = _records({"listnet": ("listnet", {})}, dataset="synthetic")
    report = build_report(records, dataset="synthetic", metrics=["ndcg@10"])
    assert published_section(report).lines == [] and published_section(report).notes == []
    assert "Published results" not in format_report(report, "md")


def test_model_map_needs_the_defining_parameter_and_checks_optional_ones_only_if_present():
    ada = ModelMap("adarank", (("metric", "map"),))
    assert ada.matches("adarank", {"metric": "MAP"})
    assert not ada.matches("adarank", {"metric": "ndcg@10"})
    assert not ada.matches("adarank", {})  # without the parameter it cannot be AdaRank-MAP
    lgb = ModelMap("lightgbm", if_present=(("objective", "lambdarank"),))
    assert lgb.matches("lightgbm", {}) and lgb.matches("lightgbm", {"objective": "lambdarank"})
    assert not lgb.matches("lightgbm", {"objective": "rank_xendcg"})
    assert not lgb.matches("xgboost-lambdamart", {})


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.links.append(dict(attrs)["href"])


def test_html_report_shows_the_section_with_sources_as_links():
    records = _records(RANKERS)
    report = build_report(records, dataset="ohsumed", metrics=["ndcg@10_letor3"])
    page = format_report(report, "html")
    assert "<h2>Published results for ohsumed</h2>" in page
    parser = _Links()
    parser.feed(page)
    src = _published("ListNet", "NDCG@10").source
    assert src in parser.links
    # the link text is short (repository, commit, file name); the full path is its title
    assert ">honbaa/RankBCA@0908f51 ParallelRankBCAClient.java</a>" in page
    line = next(ln for ln in published_section(report).lines if ln.label == "listnet")
    assert f"<td>{line.ours:.4f}</td>" in page and f"<td>{line.difference:+.4f}</td>" in page


def test_cli_report_with_convention_letor3_prints_published_rows_beside_ours(tmp_path):
    store = ResultStore(tmp_path / "results")
    records = _records({"listnet": ("listnet", {})})
    for r in records:
        store.save(r, per_query=False)
    result = CliRunner().invoke(
        report_command,
        [
            "--results-dir",
            str(tmp_path / "results"),
            "--convention",
            "letor3",
            "--metric",
            "ndcg@10",
            "--wide",  # one table per section: its rows read whole (the split: test_report_width)
        ],
    )
    assert result.exit_code == 0, result.output
    ours = _expected(records, "listnet", "ndcg@10_letor3", FOLDS)
    pub = _published("ListNet", "NDCG@10")
    row = next(
        ln for ln in result.output.splitlines() if ln.startswith("| ListNet | NDCG@10 | letor3")
    )
    assert f"| {pub.value:.4f} | listnet | {ours:.4f} | {ours - pub.value:+.4f} |" in row

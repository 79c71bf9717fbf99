"""``ltr-bench report``'s Markdown tables fit 120 columns (or $COLUMNS) by default: a wider
table is split into tables of the same rows, each repeating the rows' names; ``--wide``
keeps each table whole."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from ltr_bench.cli.report import report_command
from ltr_bench.report.fit import markdown_table
from ltr_bench.report.published import published_section
from ltr_bench.report.published.render import section_markdown
from ltr_bench.report.tables import build_report
from ltr_bench.results import ResultRecord, ResultStore

METRICS = ["ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "ndcg@20", "map", "mrr", "err@10"]
LONG = ["lightgbm", "xgboost-lambdamart", "coordinate-ascent"]


def _records(labels=LONG, dataset="synthetic", metrics=METRICS, n=40) -> list[ResultRecord]:
    rng = np.random.default_rng(0)
    out = []
    for i, label in enumerate(labels):
        for f in (1, 2):
            per_query = {"qid": list(range(n))}
            for m in metrics:
                per_query[m] = np.clip(rng.random(n) * 0.5 + 0.1 * i, 0, 1).tolist()
            out.append(
                ResultRecord(
                    key=f"{label}-{f}",
                    plan_key=f"pk-{label}",
                    config_key=f"ck-{label}",
                    ranker=label,
                    label=label,
                    dataset=dataset,
                    fold=f,
                    seed=0,
                    metrics={m: float(np.mean(per_query[m])) for m in metrics},
                    per_query=per_query,
                    fit_seconds=12.345 + i,
                    score_us_per_doc=17.31 + i,
                    fingerprints={"train": f"tr{f}", "test": f"te{f}"},
                )
            )
    return out


def _tables(text: str) -> list[list[str]]:
    """The Markdown tables of ``text``: runs of lines starting with ``|``."""
    tables: list[list[str]] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("|"):
            if not inside:
                tables.append([])
            tables[-1].append(line)
        inside = line.startswith("|")
    return tables


def test_a_wide_markdown_table_is_split_into_tables_that_fit_repeating_the_names():
    header = ["ranker", "metric", *(f"column {k}" for k in range(8))]
    rows = [["ranker-with-a-long-name-0", "ndcg@10", *("0.1234 ± 0.0567" for _ in range(8))]]
    rows += [["a|b", "map", *("1" for _ in range(8))]]
    lines = markdown_table(header, rows, keep=2, width=80)
    tables = _tables("\n".join(lines))
    assert len(tables) > 1
    assert all(len(line) <= 80 for line in lines)
    seen = []
    for t in tables:
        assert t[0].startswith("| ranker | metric | column ")
        assert t[1].startswith("|---|---:|")  # alignment kept: right from the 2nd column
        assert [row.split(" | ")[0] for row in t[2:]] == ["| ranker-with-a-long-name-0", "| a\\|b"]
        seen += t[0].strip("| ").split(" | ")[2:]
    assert seen == header[2:]  # every column once, in order
    whole = markdown_table(header, rows, keep=2)
    assert len(_tables("\n".join(whole))) == 1 and max(map(len, whole)) > 80


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    store = ResultStore(tmp_path / "results")
    for r in _records():
        store.save(r)
    return store.root


def test_report_tables_fit_120_columns_by_default_and_wide_keeps_them_whole(results):
    out = CliRunner().invoke(report_command, ["--results-dir", str(results)])
    assert out.exit_code == 0, out.output
    tables = _tables(out.stdout)
    assert len(tables) > 2  # the summary split, the paired tests after it
    for t in tables:
        assert max(len(line) for line in t) <= 120, "\n".join(t)
    tests = [t for t in tables if t[0].startswith("| ranker | metric | pairs")]
    summary = [t for t in tables if t[0].startswith("| ranker | ") and t not in tests]
    assert len(summary) > 1  # split: each part repeats the rows' names, in the same order
    names = [[row.split(" | ")[0] for row in t[2:]] for t in summary]
    assert names[0][0] == "| lightgbm (baseline)" and len(names[0]) == len(LONG)
    assert all(n == names[0] for n in names)
    shown = [h for t in summary for h in t[0].strip("| ").split(" | ")]
    assert all(m in shown for m in METRICS) and "fit time (s)" in shown
    assert tests and sum(len(t) - 2 for t in tests) == 2 * len(METRICS) * len(tests)

    wide = CliRunner().invoke(report_command, ["--results-dir", str(results), "--wide"])
    assert wide.exit_code == 0, wide.output
    whole = _tables(wide.stdout)
    assert len(whole) == 2 and max(len(line) for line in whole[0]) > 120


def test_columns_sets_the_width_of_the_report_tables(results, monkeypatch):
    monkeypatch.setenv("COLUMNS", "90")
    out = CliRunner().invoke(report_command, ["--results-dir", str(results)])
    assert out.exit_code == 0, out.output
    assert max(len(line) for t in _tables(out.stdout) for line in t) <= 90


def test_the_published_numbers_beside_ours_fit_the_width():
    metrics = {"ndcg@10": 0.45, "map": 0.44, "ndcg@10_letor3": 0.44, "map_letor3": 0.43}
    records = []
    for label, ranker in (
        ("ranksvm-with-a-rather-long-row-label", "ranksvm"),
        ("listnet", "listnet"),
    ):
        for f in range(1, 6):
            records.append(
                ResultRecord(
                    key=f"{label}-{f}",
                    plan_key=f"pk-{label}",
                    config_key=f"ck-{label}",
                    ranker=ranker,
                    label=label,
                    dataset="ohsumed",
                    fold=f,
                    seed=0,
                    metrics=dict(metrics),
                    fit_seconds=1.0,
                    score_us_per_doc=1.0,
                    fingerprints={"train": f"tr{f}", "test": f"te{f}"},
                )
            )
    report = build_report(records, dataset="ohsumed", metrics=["ndcg@10_letor3", "map_letor3"])
    section = published_section(report)
    assert section.lines
    whole = section_markdown(section)
    assert max(len(line) for t in _tables(whole) for line in t) > 80
    fitted = section_markdown(section, 80)
    tables = _tables(fitted)
    assert len(tables) > 1 and max(len(line) for t in tables for line in t) <= 80
    assert all(t[0].startswith("| published model | metric |") for t in tables)

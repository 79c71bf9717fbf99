"""Tables that fit a terminal (:mod:`ltr_bench.report.fit`) and the commands that print them:
``models``, ``datasets`` and the run summary fit 120 columns (or ``COLUMNS``), keep what a
user copies whole, name what they left out, and show everything with ``--wide``."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from ltr_bench.cli.app import main
from ltr_bench.report.fit import Column, fit_table, left_out_note, table_width
from ltr_bench.report.model_list import ModelRow, format_table

RUN_ID = "0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize(
    ("env", "width"),
    [({}, 120), ({"COLUMNS": "200"}, 200), ({"COLUMNS": "12"}, 120), ({"COLUMNS": "wide"}, 120)],
)
def test_the_width_is_columns_when_sensible_else_120(env, width):
    assert table_width(env) == width


def test_empty_columns_go_first_then_by_rank_and_cut_text_ends_in_an_ellipsis():
    columns = [Column("id"), Column("nothing"), Column("a", drop=1), Column("b", drop=2)]
    columns.append(Column("about", cut=True))
    rows = [[RUN_ID, "-", "a" * 20, "b" * 20, "x" * 80]]
    whole = fit_table(columns, rows)
    assert whole.dropped == [] and len(whole.text.splitlines()[2]) > 120
    fitted = fit_table(columns, rows, width=60)
    lines = fitted.text.splitlines()
    assert fitted.dropped == ["nothing", "a", "b"]  # named in the table's order
    assert lines[0].split() == ["id", "about"]
    assert RUN_ID in lines[2] and lines[2].endswith("…")
    assert max(len(line) for line in lines) == 60
    note = left_out_note(fitted, 60, "--wide")
    assert note is not None and "nothing, a, b" in note and "--wide" in note
    assert left_out_note(whole, 60, "--wide") is None


def test_a_table_that_fits_is_left_whole():
    fitted = fit_table(
        ["name", Column("n", right=True, drop=1)], [["x", "7"], ["yy", "10"]], width=40
    )
    assert fitted.dropped == []
    assert fitted.text.splitlines() == ["name   n", "----  --", "x      7", "yy    10"]


def _row(fold: int, folder: str) -> ModelRow:
    return ModelRow(
        label="lightgbm[num_leaves=63] · clicks pbm eta=1 x10",
        ranker="lightgbm",
        dataset="mq2008",
        variant="",
        fold=fold,
        seed=0,
        metric="ndcg@10",
        value=0.5,
        model_dir=folder,
        present=True,
        run_id=RUN_ID,
        model_uri="models:/m-" + RUN_ID,
    )


def test_the_models_table_fits_120_and_keeps_the_run_id_beside_its_fold(tmp_path):
    folder = str(tmp_path / ("results/" + "x" * 90 + ".model.abc"))
    rows = [_row(1, folder), _row(2, folder)]
    fitted = format_table(rows, width=120)
    lines = fitted.text.splitlines()
    assert max(len(line) for line in lines) <= 120
    header = ["label", "ranker", "dataset", "fold", "seed", "ndcg@10", "run", "id"]
    assert lines[0].split() == header
    assert lines[2].split()[-5:] == ["mq2008", "1", "0", "0.5000", RUN_ID]
    assert lines[3].split()[-5:] == ["mq2008", "2", "0", "0.5000", RUN_ID]
    assert fitted.dropped == ["model folder", "model URI"]  # the ranker fits: it stays
    wide = format_table(rows).text.splitlines()
    assert folder in wide[2] and "models:/m-" + RUN_ID in wide[2]


def test_datasets_fit_120_columns_and_wide_shows_the_sources(tmp_path, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # a data home under it is shown as ~/...
    home = tmp_path / "data"
    fitted = CliRunner().invoke(main, ["datasets", "--data-dir", str(home)])
    assert fitted.exit_code == 0, fitted.output
    assert max(len(line) for line in fitted.stdout.splitlines()) <= 120
    assert "left out to fit 120 columns: source" in fitted.stderr
    assert "missing: expected at ~/data/MQ2008" in fitted.stdout
    wide = CliRunner().invoke(main, ["datasets", "--data-dir", str(home), "--wide"])
    assert "https://" in wide.stdout and "note:" not in wide.stderr
    assert f"missing: expected at {home}" in wide.stdout
    monkeypatch.setenv("COLUMNS", "300")
    roomy = CliRunner().invoke(main, ["datasets", "--data-dir", str(home)])
    assert "https://" in roomy.stdout and "note:" not in roomy.stderr


def test_the_run_summary_leaves_out_the_first_metrics_first():
    from ltr_bench.report.text import summary_table
    from ltr_bench.results import ResultRecord

    metrics = ["ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "map"]
    records = [
        ResultRecord(
            key=f"k{fold}", plan_key="p", ranker="lightgbm", dataset="synthetic", fold=fold,
            seed=0, label="lightgbm", finished="t",
            metrics={m: 0.5 + fold / 100 for m in metrics},
            fit_seconds=0.5 * fold, score_us_per_doc=4.0 * fold,
        )
        for fold in (1, 2, 3, 4, 5)
    ]  # fmt: skip
    text = summary_table(records, metrics, width=120)
    lines = text.splitlines()
    assert lines[0].split() == ["dataset", "ranker", "folds", "ndcg@5", "ndcg@10", "map"] + [
        "fit_s",
        "us/doc",
    ]
    assert "left out to fit 120 columns: ndcg@1, ndcg@3" in lines[-1]
    assert "ndcg@1" in summary_table(records, metrics).splitlines()[0]

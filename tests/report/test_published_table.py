"""report.published.table: the shipped table is valid, and a malformed row is reported with
its file and line; ``ltr-bench published`` lists it (md, csv) and refuses unknown datasets."""

from __future__ import annotations

import csv
import io
import shutil

import pytest
from click.testing import CliRunner

from ltr_bench.cli import main
from ltr_bench.data import list_datasets
from ltr_bench.report.published import (
    COLUMNS,
    MODEL_MAP,
    PublishedTableError,
    load_published,
    table_path,
)
from ltr_bench.report.published.render import format_published


def test_shipped_table_loads_and_every_row_is_valid():
    rows = load_published()
    # the 237 verified rows of the team's list, plus CatBoost's MSLR-WEB10K and Yahoo rows and
    # LightGBM's MSLR-WEB30K and Yahoo rows
    assert len(rows) == 281
    names = {s.name for s in list_datasets()}
    assert {r.dataset for r in rows} <= names
    assert all(0.0 <= r.value <= 1.0 for r in rows)
    assert all(r.source.startswith("https://github.com/") for r in rows)
    # every link pins a commit, so the number can be found again
    assert all("/blob/" in r.source and len(r.source.split("/")[6]) == 40 for r in rows)


def test_shipped_table_is_package_data_next_to_its_loader():
    import ltr_bench.report.published as pkg

    assert table_path().parent == __import__("pathlib").Path(pkg.__file__).resolve().parent
    assert table_path().is_file()


def test_letor3_ohsumed_rows_are_the_four_baselines_with_21_metrics_each():
    rows = [r for r in load_published() if r.dataset == "ohsumed" and r.convention == "letor3"]
    models = {r.model for r in rows}
    assert models == {"RankSVM", "RankBoost", "ListNet", "AdaRank-MAP"}
    assert all(sum(r.model == m for r in rows) == 21 for m in models)
    assert all(r.folds == (1, 2, 3, 4, 5) and r.split == "test" for r in rows)
    ranksvm_map = next(r for r in rows if r.model == "RankSVM" and r.metric == "MAP")
    assert ranksvm_map.metric_key == "map_letor3"


def test_every_mapped_model_name_occurs_in_the_table_or_is_a_documented_alias():
    models = {r.model for r in load_published()}
    aliases = {"AdaRank-NDCG", "Coordinate Ascent", "LambdaMART"}  # no row yet; kept for users
    assert set(MODEL_MAP) - models <= aliases


def _copy_with(tmp_path, line_no: int, replace: dict[str, str]):
    """The shipped table with row ``line_no`` (1-based file line) changed."""
    src = table_path().read_text(encoding="utf-8").splitlines(keepends=True)
    reader = csv.DictReader(io.StringIO("".join([src[0], src[line_no - 1]])))
    row = next(reader)
    row.update(replace)
    buf = io.StringIO()
    w = csv.DictWriter(buf, COLUMNS, lineterminator="\n")
    w.writerow(row)
    src[line_no - 1] = buf.getvalue()
    path = tmp_path / "table.csv"
    path.write_text("".join(src), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "change, message",
    [
        ({"value": "0.4x"}, "column value: '0.4x' is not a number"),
        ({"value": "1.5"}, "column value: 1.5 is not between 0 and 1"),
        ({"dataset": "ohsumd"}, "column dataset: unknown dataset 'ohsumd'. Did you mean: ohsumed"),
        ({"metric": "NDCG@x"}, "column metric:"),
        ({"metric": "ndcg@10_letor3"}, "carries a convention"),
        ({"convention": "letor5"}, "column convention: 'letor5' is not one of"),
        ({"folds": "1-6"}, "column folds: '1-6': the dataset has 5 fold(s)"),
        ({"split": "dev"}, "column split: 'dev' is not one of"),
        ({"source": "honbaa/RankBCA"}, "column source: 'honbaa/RankBCA' is not a link"),
        ({"model": ""}, "column model is empty"),
    ],
)
def test_a_malformed_row_is_reported_with_file_and_line(tmp_path, change, message):
    path = _copy_with(tmp_path, 7, change)
    with pytest.raises(PublishedTableError, match=None) as err:
        load_published(path)
    assert str(err.value).startswith(f"{path}:7: ")
    assert message in str(err.value)
    assert err.value.line == 7 and err.value.path == str(path)


def test_a_row_with_a_surplus_field_or_a_duplicate_is_reported_with_its_line(tmp_path):
    path = tmp_path / "table.csv"
    shutil.copy(table_path(), path)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join([*lines[:4], lines[3].rstrip("\n") + ",extra\n"]), encoding="utf-8")
    with pytest.raises(PublishedTableError, match=rf"^{path}:5: 15 fields, the header has 14"):
        load_published(path)
    path.write_text("".join([*lines[:4], lines[2]]), encoding="utf-8")
    with pytest.raises(PublishedTableError, match=rf"^{path}:5: the same number as line 3"):
        load_published(path)


def test_a_header_without_a_required_column_is_reported_at_line_1(tmp_path):
    path = tmp_path / "table.csv"
    lines = table_path().read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text(lines[0].replace("convention,", "conv,", 1) + lines[1], encoding="utf-8")
    with pytest.raises(PublishedTableError, match=rf"^{path}:1: the header lacks the column"):
        load_published(path)


def test_a_quoted_field_spanning_lines_keeps_the_next_rows_line_numbers(tmp_path):
    path = _copy_with(tmp_path, 2, {"note": "first line\nsecond line"})
    rows = load_published(path)
    assert rows[0].note == "first line\nsecond line" and rows[1].line == 4
    bad = _copy_with(tmp_path, 2, {"note": "a\nb"})
    text = bad.read_text(encoding="utf-8").splitlines(keepends=True)
    text[3] = text[3].replace(",0.4331,", ",oops,", 1)  # file line 4 = the table's 3rd row
    bad.write_text("".join(text), encoding="utf-8")
    with pytest.raises(PublishedTableError, match=rf"^{bad}:4: column value: 'oops'"):
        load_published(bad)


def test_csv_listing_reads_back_to_the_same_rows(tmp_path):
    rows = [r for r in load_published() if r.dataset == "mq2008"]
    path = tmp_path / "out.csv"
    path.write_text(format_published(rows, "csv"), encoding="utf-8")
    again = load_published(path)
    assert [(r.model, r.metric, r.value, r.convention, r.source) for r in again] == [
        (r.model, r.metric, r.value, r.convention, r.source) for r in rows
    ]


def test_cli_published_lists_one_dataset_in_markdown_with_sources():
    result = CliRunner().invoke(main, ["published", "--dataset", "OHSUMED"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.startswith("## Published results for ohsumed (105 rows)")
    assert "| ohsumed | AdaRank-MAP | adarank[metric=map] | MAP | letor3 |" in out
    assert "https://github.com/honbaa/RankBCA/blob/0908f51" in out
    assert "mq2008" not in out


def test_cli_published_csv_has_the_required_columns():
    result = CliRunner().invoke(main, ["published", "--format", "csv"])
    assert result.exit_code == 0, result.output
    reader = csv.DictReader(io.StringIO(result.output))
    assert {"dataset", "split", "model", "metric", "value", "convention", "source"} <= set(
        reader.fieldnames
    )
    assert len(list(reader)) == 281


def test_cli_published_unknown_dataset_exits_2_with_close_matches():
    result = CliRunner().invoke(main, ["published", "--dataset", "mq2009"])
    assert result.exit_code == 2
    assert "unknown dataset 'mq2009'" in result.output
    assert "Did you mean: mq2008, mq2007" in result.output
    assert "Traceback" not in result.output


def test_cli_published_known_dataset_without_rows_says_so_and_lists_none():
    result = CliRunner().invoke(main, ["published", "--dataset", "synthetic", "--format", "csv"])
    assert result.exit_code == 0
    assert "no published results for synthetic" in result.output
    assert result.output.count("\n") == 2  # the note and the CSV header, no rows

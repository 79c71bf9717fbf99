"""Smoke tests of benchmarks/paper_experiments.py at its ``--tiny`` size.

They prove the subcommands run end to end and write a table (with one row per dataset or
ranker), a plot and raw JSON; they assert nothing about the numbers beyond finiteness.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "paper_experiments.py"


@pytest.fixture(scope="module")
def paper():
    spec = importlib.util.spec_from_file_location("paper_experiments", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _table_rows(md: str) -> list[list[str]]:
    """Rows (cells) of the first markdown table in ``md``, header and rule excluded."""
    lines = [ln for ln in md.splitlines() if ln.startswith("|")]
    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]
    first = []
    for i, r in enumerate(rows):
        if i >= 2 and all(set(c) <= {"-"} for c in r):  # a second table's rule: stop
            first.pop()
            break
        first.append(r)
    return first[2:]


def _floats(cells) -> list[float]:
    out = []
    for c in cells:
        for tok in re.findall(r"[-+]?\d+\.\d+|nan|inf", c):
            out.append(float(tok))
    return out


def test_fig2_tiny_writes_one_finite_row_per_gauss_dataset(paper, tmp_path):
    assert paper.main(["fig2", "--tiny", "--out", str(tmp_path), "--cache-dir",
                       str(tmp_path / "cache")]) == 0
    for ext in ("md", "png", "json"):
        assert (tmp_path / f"fig2.{ext}").stat().st_size > 0
    rows = _table_rows((tmp_path / "fig2.md").read_text())
    assert [r[0] for r in rows] == ["gauss-10", "gauss-50", "gauss-100"]
    values = [v for r in rows for v in _floats(r[1:])]
    assert values and all(math.isfinite(v) for v in values)
    raw = json.loads((tmp_path / "fig2.json").read_text())
    assert set(raw["results"]) == {"gauss-10", "gauss-50", "gauss-100"}


def test_table5_tiny_times_every_table4_ranker(paper, tmp_path, shared_data):
    data = shared_data / "OHSUMED-LETOR3-Feature-min"
    if not data.is_dir():
        pytest.skip("OHSUMED data absent")
    assert paper.main(["table5", "--tiny", "--out", str(tmp_path), "--data", str(data)]) == 0
    for ext in ("md", "png", "json"):
        assert (tmp_path / f"table5.{ext}").stat().st_size > 0
    rows = _table_rows((tmp_path / "table5.md").read_text())
    expected = list(paper._t4_rankers(paper.Sizes("tiny"), 0))
    assert [r[0] for r in rows] == expected
    per_doc = [float(r[1]) for r in rows]
    assert all(math.isfinite(v) and v > 0 for v in per_doc)


def test_bad_experiment_name_is_a_usage_error(paper):
    with pytest.raises(SystemExit) as exc:
        paper.main(["fig9"])
    assert exc.value.code == 2

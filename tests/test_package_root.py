"""``ltr_bench`` itself: its lazily imported names and ``python -m ltr_bench``."""

from __future__ import annotations

import subprocess
import sys

import pytest

import ltr_bench


def test_the_root_names_are_the_contracts_own_objects_imported_on_first_use():
    from ltr_bench.ranker import BaseRanker, Ranker, RankerTags
    from ltr_bench.testing import check_ranker

    assert ltr_bench.Ranker is Ranker and ltr_bench.BaseRanker is BaseRanker
    assert ltr_bench.RankerTags is RankerTags and ltr_bench.check_ranker is check_ranker
    assert set(ltr_bench.__all__) >= {"__version__", "check_ranker", "report_progress"}


def test_an_unknown_root_name_is_an_attribute_error_naming_it():
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        _ = ltr_bench.nope


@pytest.mark.subprocess_coverage  # ltr_bench/__main__.py runs in that process only
def test_python_dash_m_ltr_bench_is_the_cli():
    out = subprocess.run(
        [sys.executable, "-m", "ltr_bench", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert ltr_bench.__version__ in out.stdout

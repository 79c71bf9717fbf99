"""Which tests' processes coverage traces (root ``conftest.py``): only those of a test or
module marked ``subprocess_coverage``; the variables are back in the environment for such a
test and gone again after it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_SEES = "import os; print(sorted(k for k in os.environ if k.startswith('COVERAGE_PROCESS_')))"


def _measured() -> bool:
    """This process is measured by coverage with ``patch = ["subprocess"]`` (``--cov``)."""
    coverage = pytest.importorskip("coverage")
    current = coverage.Coverage.current()
    return current is not None and "subprocess" in current.config.patch


def _child_sees() -> str:
    done = subprocess.run([sys.executable, "-c", _SEES], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_processes_of_an_unmarked_test_are_not_traced():
    assert not [k for k in os.environ if k.startswith("COVERAGE_PROCESS_")]
    assert _child_sees() == "[]"


@pytest.mark.subprocess_coverage
def test_the_processes_of_a_marked_test_are_traced_when_the_suite_is_measured():
    if not _measured():
        pytest.skip("coverage of subprocesses is not on (run with --cov)")
    assert "COVERAGE_PROCESS_CONFIG" in _child_sees()


def test_the_variables_are_gone_again_after_a_marked_test():
    assert not [k for k in os.environ if k.startswith("COVERAGE_PROCESS_")]

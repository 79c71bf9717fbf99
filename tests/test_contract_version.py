"""The ranker contract's version: what check_ranker reports, and how ``ltr-bench rankers`` and
the registry treat a plugin built for another version (a clear message, not a fit error)."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest
from click.testing import CliRunner

from ltr_bench import ranker as contract
from ltr_bench.cli.app import main
from ltr_bench.registry import RankerLoadError, contract_mismatch, make_ranker
from ltr_bench.testing import CheckReport, check_ranker
from ltr_bench_baselines.linear import RidgeRanker


class DeclaresCurrent(RidgeRanker):
    contract_version = contract.CONTRACT_VERSION


class DeclaresNewer(RidgeRanker):
    contract_version = contract.CONTRACT_VERSION + 1


class DeclaresText(RidgeRanker):
    contract_version = "1"


def test_the_current_contract_version_is_one_this_ltr_bench_runs():
    assert isinstance(contract.CONTRACT_VERSION, int)
    assert contract.CONTRACT_VERSION in contract.SUPPORTED_CONTRACT_VERSIONS
    assert contract.UNVERSIONED_CONTRACT in contract.SUPPORTED_CONTRACT_VERSIONS


def test_check_ranker_reports_the_version_it_checked_and_the_one_the_ranker_declares():
    undeclared = check_ranker(RidgeRanker())
    assert isinstance(undeclared, CheckReport)
    assert undeclared.contract_version == contract.CONTRACT_VERSION
    assert undeclared.declared_version == contract.UNVERSIONED_CONTRACT
    assert undeclared.checks[0] == "contract_version"
    assert "row_order" in undeclared.checks
    assert f"contract version {contract.CONTRACT_VERSION}" in str(undeclared)
    assert check_ranker(DeclaresCurrent()).declared_version == contract.CONTRACT_VERSION


@pytest.mark.parametrize(
    ("ranker", "says"),
    [(DeclaresNewer(), "newer than this ltr-bench"), (DeclaresText(), "must be an int")],
    ids=["newer", "not-an-int"],
)
def test_check_ranker_fails_a_ranker_whose_declared_version_this_ltr_bench_cannot_run(ranker, says):
    with pytest.raises(AssertionError, match="check 'contract_version' failed") as info:
        check_ranker(ranker)
    assert says in str(info.value)


def test_a_version_no_longer_supported_is_named_with_the_versions_that_are(monkeypatch):
    monkeypatch.setattr(contract, "CONTRACT_VERSION", 3)
    monkeypatch.setattr(contract, "SUPPORTED_CONTRACT_VERSIONS", (2, 3))
    problem = contract_mismatch(DeclaresCurrent)  # declares 1
    assert problem is not None
    assert "built for ranker contract version 1" in problem
    assert "no longer runs" in problem and "2, 3" in problem
    assert contract_mismatch(RidgeRanker) is not None  # undeclared counts as version 1
    assert contract_mismatch(DeclaresNewer) is None  # declares 2: still supported


@pytest.fixture
def old_plugin(tmp_path, monkeypatch):
    """An installed-looking plugin ``fake-old-plugin`` whose rankers declare contract
    versions 1 (``old``) and 99 (``future``), with this ltr-bench moved on to version 2."""
    info = tmp_path / "fake_old_plugin-0.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-old-plugin\nVersion: 0.3\n")
    (info / "entry_points.txt").write_text(
        "[ltr_bench.rankers]\n"
        "old = fake_contract_plugin:OldRanker\n"
        "future = fake_contract_plugin:FutureRanker\n"
    )
    (tmp_path / "fake_contract_plugin.py").write_text(
        textwrap.dedent(
            """
            from ltr_bench_baselines.linear import RidgeRanker

            class OldRanker(RidgeRanker):
                contract_version = 1

            class FutureRanker(RidgeRanker):
                contract_version = 99
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(contract, "CONTRACT_VERSION", 2)
    monkeypatch.setattr(contract, "SUPPORTED_CONTRACT_VERSIONS", (2,))
    importlib.invalidate_caches()
    yield
    sys.modules.pop("fake_contract_plugin", None)
    importlib.invalidate_caches()


def test_rankers_lists_a_plugin_built_for_another_contract_as_unavailable_saying_why(old_plugin):
    result = CliRunner().invoke(main, ["rankers", "--recheck"])
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line for line in result.output.splitlines() if line.strip()}
    assert "unavailable" in rows["old"]
    assert "built for ranker contract version 1" in rows["old"]
    assert "pip install -U fake-old-plugin" in rows["old"]
    assert "unavailable" in rows["future"]
    assert "newer than this ltr-bench" in rows["future"]
    assert "pip install -U ltr-bench" in rows["future"]
    # the built-in rankers ship with the core: they follow its contract whatever they declare
    assert rows["ridge"].split()[-1] == "ok"


def test_a_plugin_built_for_an_old_contract_is_refused_when_it_is_made_not_at_fit(old_plugin):
    with pytest.raises(RankerLoadError, match="built for ranker contract version 1"):
        make_ranker("old")


def test_a_run_naming_a_plugin_built_for_an_old_contract_stops_before_any_data(
    old_plugin, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        main,
        ["run", "--ranker", "old", "--dataset", "synthetic", "--no-mlflow", "--results-dir", "r"],
    )
    assert result.exit_code == 1, result.output
    assert "built for ranker contract version 1" in result.output
    assert "Traceback" not in result.output
    assert not list((tmp_path / "r").rglob("*.json"))  # no cell ran

"""The habits of a maintained library stay wired together: one version for the core and the
plugins with its changelog entry, the PEP 561 markers, the checks CI runs equal to
``scripts/check`` and the pre-commit hooks, the coverage and type-check configuration."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
PLUGINS = sorted(p for p in (REPO / "plugins").iterdir() if (p / "pyproject.toml").exists())


def _pyproject(folder: Path) -> dict:
    return tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_core_and_every_plugin_carry_one_version_with_a_changelog_entry():
    import ltr_bench

    version = _pyproject(REPO)["project"]["version"]
    assert ltr_bench.__version__ == version
    for plugin in PLUGINS:
        assert _pyproject(plugin)["project"]["version"] == version, plugin.name
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## \[?{re.escape(version)}\]? - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M)
    assert "## Unreleased" in changelog  # Keep a Changelog: where the next wave's lines go


def test_every_package_ships_its_py_typed_marker():
    core = _pyproject(REPO)["tool"]["setuptools"]["package-data"]
    assert "py.typed" in core["ltr_bench"] and (REPO / "ltr_bench/py.typed").is_file()
    for plugin in PLUGINS:
        data = _pyproject(plugin)["tool"]["setuptools"]["package-data"]
        ((package, files),) = data.items()
        assert "py.typed" in files and (plugin / package / "py.typed").is_file(), plugin.name


def _commands(path: Path) -> set[str]:
    return {line.strip() for line in path.read_text(encoding="utf-8").splitlines()}


@pytest.mark.parametrize(
    "command",
    ["ruff check .", "ruff format --check .", "mypy", "python -m pytest --cov"],
)
def test_scripts_check_runs_what_ci_runs(command):
    ci = " ".join(_commands(REPO / ".ci" / "run"))
    assert command in ci
    assert command in _commands(REPO / "scripts" / "check")


def test_ci_prints_the_uncovered_lines_of_changed_files_after_the_tests():
    text = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert text.index("python -m pytest --cov") < text.index("scripts/coverage_changed")
    assert text.index("python -m pytest --cov") < text.index("\nmypy\n")


def test_pre_commit_runs_ruff_and_mypy_from_the_project_environment():
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    hooks = {h["id"]: h for repo in config["repos"] for h in repo["hooks"]}
    assert {"ruff-check", "ruff-format", "mypy"} <= set(hooks)
    assert all(h["language"] == "system" for h in hooks.values())  # the pinned tools
    assert hooks["mypy"]["entry"] == "mypy" and hooks["mypy"]["pass_filenames"] is False


def test_the_test_extra_pins_the_type_checker_and_coverage():
    test_extra = _pyproject(REPO)["project"]["optional-dependencies"]["test"]
    pinned = {re.split(r"[=<>!~]", r)[0]: r for r in test_extra}
    for tool in ("mypy", "coverage", "pytest-cov"):
        assert "==" in pinned[tool], pinned[tool]


def test_coverage_measures_branches_of_the_core_the_baselines_and_the_plugins():
    config = _pyproject(REPO)["tool"]["coverage"]
    assert config["run"]["branch"] is True
    assert set(config["run"]["source_pkgs"]) == {
        "ltr_bench",
        "ltr_bench_baselines",
        "ltr_bench_lgmml",
        "ltr_bench_neural",
    }
    assert "subprocess" in config["run"]["patch"]  # the CLI tests' ltr-bench processes
    assert config["report"]["fail_under"] > 0


def test_mypy_is_strict_on_the_public_contract():
    overrides = _pyproject(REPO)["tool"]["mypy"]["overrides"]
    strict = next(o for o in overrides if o.get("disallow_untyped_defs"))
    for module in (
        "ltr_bench.ranker",
        "ltr_bench.registry",
        "ltr_bench.evaluation.*",
        "ltr_bench.testing.*",
        "ltr_bench_lgmml.ranker",
        "ltr_bench_neural.ranker",
    ):
        assert module in strict["module"], module
    assert not any(o.get("ignore_errors") for o in overrides)  # no blanket ignores

"""A plugin whose declared requirements are missing is listed as unavailable with the install
command, from metadata alone: its module (and the missing dependency) is never imported."""

from __future__ import annotations

import importlib
import sys

import pytest
from click.testing import CliRunner

from ltr_bench import registry
from ltr_bench.cli import main
from ltr_bench.registry import RankerLoadError, get_entry

MISSING = "ltr-bench-no-such-package-xyz==1.2.3"


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield tmp_path
    importlib.invalidate_caches()
    for name in [m for m in sys.modules if m.startswith("fake_req_")]:
        del sys.modules[name]


def _distribution(root, dist: str, ranker: str, module: str, requires: list[str]):
    info = root / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    lines = "".join(f"Requires-Dist: {r}\n" for r in requires)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n{lines}")
    (info / "entry_points.txt").write_text(f"[ltr_bench.rankers]\n{ranker} = {module}:R\n")
    # importing the module would record itself: the tests check it never happens
    (root / f"{module}.py").write_text(
        "import sys\nsys.modules.setdefault('fake_req_was_imported', sys)\n"
        "class R:\n    def fit(self): ...\n    def predict(self): ...\n"
    )


def test_missing_requirement_is_reported_with_the_pip_command_without_importing(plugin_dir):
    _distribution(plugin_dir, "fake-req-plugin", "fake-req", "fake_req_mod", [MISSING])
    entry = get_entry("fake-req")
    assert entry.missing_requirements() == [MISSING]
    assert entry.install_hint() == f"pip install {MISSING}"
    with pytest.raises(RankerLoadError, match=r"install it with: pip install ltr-bench-no-such"):
        entry.load()
    assert "fake_req_was_imported" not in sys.modules
    assert "fake_req_mod" not in sys.modules


def test_met_requirements_extras_and_inapplicable_markers_are_not_reported(plugin_dir):
    _distribution(
        plugin_dir,
        "fake-req-ok",
        "fake-req-ok",
        "fake_req_ok_mod",
        ["numpy>=1.0", "nothing-here-xyz; extra == 'docs'", "nothing-xyz; python_version < '3'"],
    )
    entry = get_entry("fake-req-ok")
    assert entry.missing_requirements() == []
    assert entry.install_hint() is None
    assert entry.load().__name__ == "R"


def test_a_too_old_installed_version_counts_as_missing(plugin_dir):
    _distribution(plugin_dir, "fake-req-old", "fake-req-old", "fake_req_old_mod", ["numpy>=999"])
    assert get_entry("fake-req-old").missing_requirements() == ["numpy>=999"]


@pytest.mark.parametrize("flags", [[], ["--no-check"]])
def test_rankers_command_lists_the_plugin_unavailable_and_the_others_ok(plugin_dir, flags):
    _distribution(plugin_dir, "fake-req-plugin", "fake-req", "fake_req_mod", [MISSING])
    registry._scan = None
    result = CliRunner().invoke(main, ["rankers", *flags])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("fake-req "))
    assert f"unavailable: needs {MISSING}; install: pip install {MISSING}" in line
    ridge = next(x for x in result.output.splitlines() if x.startswith("ridge "))
    assert ridge.rstrip().endswith("not checked" if flags else "ok")
    assert "fake_req_was_imported" not in sys.modules

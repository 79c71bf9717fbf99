"""The distributions build into wheels that hold what a user needs, with no setuptools warning.

Each wheel is built the way pip builds it for a user (an isolated build environment with the
``build-system.requires`` of its ``pyproject.toml``), so a deprecated setting or a package left
out of discovery shows up here rather than in a user's install.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from ltrb_processes import untraced_env

REPO = Path(__file__).resolve().parents[1]


PLUGINS = sorted(p.name for p in (REPO / "plugins").iterdir() if (p / "pyproject.toml").exists())


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> tuple[dict[str, Path], str]:
    """The core's and every plugin's wheel from one ``pip wheel`` (pip still builds each
    project in an isolated environment of its own; one pip start-up and index read instead of
    three): project (``"core"`` or the plugin's folder name) -> wheel, and pip's whole log."""
    out = tmp_path_factory.mktemp("wheels")
    projects = {"core": REPO, **{name: REPO / "plugins" / name for name in PLUGINS}}
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(out)]
        + [str(p) for p in projects.values()],
        capture_output=True,
        text=True,
        timeout=600,
        env=untraced_env(),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count("Installing build dependencies: started") == len(projects)
    built = sorted(out.glob("*.whl"))
    assert len(built) == len(projects), built
    by_name = {"core": "ltr_bench-", **{n: f"ltr_bench_{n}-" for n in PLUGINS}}
    found = {k: [w for w in built if w.name.startswith(v)] for k, v in by_name.items()}
    assert all(len(w) == 1 for w in found.values()), found
    return {k: w[0] for k, w in found.items()}, proc.stdout + proc.stderr


@pytest.mark.slow
def test_the_core_wheel_holds_every_wing_the_baselines_and_the_shipped_data(wheels):
    wheel, log = wheels[0]["core"], wheels[1]  # the log of every build: none warns
    assert "BuildBackendWarning" not in log and "SetuptoolsDeprecationWarning" not in log
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in REPO.joinpath("ltr_bench").rglob("__init__.py"):
        assert package.relative_to(REPO).as_posix() in names, package
    assert "ltr_bench_baselines/__init__.py" in names
    assert "ltr_bench/py.typed" in names  # PEP 561: type checkers read the annotations
    shipped = [p for p in (REPO / "ltr_bench/data/builtin").rglob("*") if p.is_file()]
    assert shipped and all(p.relative_to(REPO).as_posix() in names for p in shipped)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "ltr-bench = ltr_bench.cli.app:console_main" in text
    assert "lightgbm = ltr_bench_baselines" in text


@pytest.mark.slow
@pytest.mark.parametrize("plugin", PLUGINS)
def test_every_plugin_wheel_holds_all_its_modules_builds_without_warnings_and_registers(
    plugin, wheels
):
    wheel, log = wheels[0][plugin], wheels[1]
    assert "BuildBackendWarning" not in log and "SetuptoolsDeprecationWarning" not in log
    names = zipfile.ZipFile(wheel).namelist()
    root = REPO / "plugins" / plugin
    modules = [p for p in root.glob("ltr_bench_*/**/*.py")]
    assert modules and all(p.relative_to(root).as_posix() in names for p in modules)
    typed = [p.relative_to(root).as_posix() for p in root.glob("ltr_bench_*/py.typed")]
    assert typed and all(t in names for t in typed)  # PEP 561 marker shipped
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "[ltr_bench.rankers]" in zipfile.ZipFile(wheel).read(entry_points).decode()

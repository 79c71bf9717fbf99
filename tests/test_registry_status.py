"""The status cache of ``ltr-bench rankers`` (:mod:`ltr_bench.registry_status`): a cached "ok"
spares the imports, and never hides a plugin that broke since, a failure is never cached,
a damaged cache is rebuilt, torch is not imported (unless ``neural``'s runtime note must ask a
torch that is not a ``+cpu`` build which device it sees).

The end-to-end tests run the command in a fresh interpreter each time, as a user does: in
this process the modules other tests imported would hide what an import costs or breaks."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from ltrb_processes import untraced_env

from ltr_bench import registry, registry_status
from ltr_bench.registry import RankerEntry

#: neural's runtime note reads a +cpu build from its version; any other build is imported
CPU_TORCH = (registry.installed_version("torch") or "").endswith("+cpu")

GOOD = textwrap.dedent("""
    import os
    with open(os.environ["STATUS_TEST_MARKER"], "a") as f:
        f.write("imported\\n")

    class R:
        def fit(self):
            ...

        def predict(self):
            ...
""")

#: what the probe prints last: statuses and whether sklearn or torch were imported
PROBE = textwrap.dedent("""
    import importlib.abc, json, sys

    class BlockTorch(importlib.abc.MetaPathFinder):
        tried = []

        def find_spec(self, name, path=None, target=None):
            if name == "torch" or name.startswith("torch."):
                self.tried.append(name)
                raise ImportError("torch is blocked in this test")
            return None

    sys.meta_path.insert(0, BlockTorch())
    from ltr_bench.cli import main
    try:
        main(["rankers", *sys.argv[1:]], prog_name="ltr-bench")
    except SystemExit:
        pass
    print("PROBE:" + json.dumps({"sklearn": "sklearn" in sys.modules,
                                  "torch": BlockTorch.tried or "torch" in sys.modules}))
""")


@pytest.fixture
def plugin(tmp_path):
    """A plugin ``fake-status`` (distribution ``fake-status-dist``) on PYTHONPATH whose module
    records every import in a marker file; returns a runner of ``ltr-bench rankers``."""
    site = tmp_path / "site"
    site.mkdir()
    info = site / "fake_status_dist-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-status-dist\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[ltr_bench.rankers]\nfake-status = fake_status_mod:R\n")
    module = site / "fake_status_mod.py"
    module.write_text(GOOD)
    marker = tmp_path / "imports.txt"
    work = tmp_path / "work"
    work.mkdir()
    # never traced, even if this module is marked subprocess_coverage: a traced process
    # writes its data file into its working folder, which `python -c` puts on sys.path, and
    # every folder's mtime is in the cache's key (the next process would find no cached ok)
    env = untraced_env(
        PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        LTR_BENCH_CACHE=str(tmp_path / "cache"),
        STATUS_TEST_MARKER=str(marker),
    )

    def run(*flags):
        out = subprocess.run(
            [sys.executable, "-c", PROBE, *flags],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        rows = {line.split()[0]: line for line in lines[2:-1] if line.strip()}
        probe = json.loads(lines[-1].removeprefix("PROBE:"))
        imports = len(marker.read_text().splitlines()) if marker.exists() else 0
        return rows, probe, imports

    run.module = module
    run.cache = tmp_path / "cache" / registry_status.CACHE_FILE
    return run


def _status(row: str) -> str:
    return row.split(None, 3)[3]


@pytest.mark.slow  # real `ltr-bench rankers` processes, cold and warm
def test_a_damaged_cache_is_rebuilt_a_cached_ok_spares_imports_and_a_broken_plugin_shows(plugin):
    """A damaged cache is ignored and rebuilt; a cached ok spares every import (and a
    ``+cpu`` torch is never imported); a plugin broken after it was cached ok shows
    unavailable at once, the failure is never cached, and the repaired plugin is ok again.

    One chain of fresh processes: each part starts from the cache the part before leaves
    (a cached ok needs a cold run and a warm one, which the rebuild's runs are). The cold
    run starts from a damaged cache rather than none: it must import and store everything
    all the same; a first run without any cache file is checked in process
    (``test_the_cache_keeps_only_ok_and_a_stale_file_voids_it``)."""
    # a cache cut off mid-write (a file's history does not change what is in it: no run
    # needs to write a good one first)
    plugin.cache.parent.mkdir(parents=True)
    plugin.cache.write_text('{"format": 1, "environments": {"x": ')
    rows, probe, imports = plugin()  # cold: every ranker imported, the answers stored
    assert _status(rows["fake-status"]) == "ok" and _status(rows["ridge"]) == "ok"
    assert imports == 1 and probe["sklearn"] and (not probe["torch"] or not CPU_TORCH)
    json.loads(plugin.cache.read_text())  # rewritten whole
    rows, probe, imports = plugin()  # warm: nothing imported
    assert _status(rows["fake-status"]) == "ok" and _status(rows["neural"]).startswith("ok")
    assert imports == 1, "a cached ok imported the plugin again"
    assert not probe["sklearn"], "a warm `ltr-bench rankers` imported scikit-learn"
    assert not probe["torch"] or not CPU_TORCH
    rows, probe, imports = plugin("--recheck")  # forced: imported again
    assert _status(rows["fake-status"]) == "ok" and imports == 2 and probe["sklearn"]
    # the plugin breaks after it was cached ok (the --recheck stored the ok again)
    plugin.module.write_text(GOOD + "\nraise ImportError('broken on purpose')\n")
    rows, probe, imports = plugin()
    status = _status(rows["fake-status"])
    assert status.startswith("unavailable: ") and "broken on purpose" in status
    assert _status(rows["ridge"]) == "ok" and (not probe["torch"] or not CPU_TORCH)
    rows, _, _ = plugin()  # a failure is never cached: still the real answer
    assert "broken on purpose" in _status(rows["fake-status"])
    stored = json.loads(plugin.cache.read_text())["environments"]
    assert all("fake-status" not in r["rankers"] for r in stored.values())
    plugin.module.write_text(GOOD)  # repaired: ok again
    rows, _, _ = plugin()
    assert _status(rows["fake-status"]) == "ok"


# ------------------------------------------------------------------- in process, no imports


@pytest.fixture
def fake_site(tmp_path, monkeypatch):
    yield _fake_site(tmp_path, monkeypatch)
    sys.modules.pop("fake_status_pkg", None)


def _fake_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder and an importable package ``fake_status_pkg`` of ``tmp_path`` on a
    path without the checkout's folders, all undone by ``monkeypatch``."""
    monkeypatch.setenv("LTR_BENCH_CACHE", str(tmp_path / "cache"))
    # the mtime of every sys.path folder is in the key, and the suite's other processes write
    # into the checkout's folders (coverage's data files in its root, __pycache__ folders in
    # the test folders): they are left off the path here, so that only what the test does
    # changes the key
    # (a new list in place of sys.path, restored whole at the end: syspath_prepend on top of
    # it would write this filtered path back into the suite's own list when undone, and the
    # test folders' modules could then no longer be imported by spawned processes)
    root = Path.cwd().resolve()
    kept = [p for p in sys.path if not Path(p or ".").resolve().is_relative_to(root)]
    monkeypatch.setattr(sys, "path", [str(tmp_path), *kept])
    importlib.invalidate_caches()
    pkg = tmp_path / "fake_status_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "class R:\n    def fit(self): ...\n    def predict(self): ...\n"
    )
    return tmp_path


def test_the_fake_site_gives_the_suite_its_whole_path_back(tmp_path):
    """What spawned processes of later tests import from (the test folders) stays on the
    path: the checkout's folders are left off only while a test of this module runs."""
    before = list(sys.path)
    with pytest.MonkeyPatch.context() as mp:
        _fake_site(tmp_path, mp)
        assert str(tmp_path) in sys.path and sys.path != before
    assert sys.path == before


def test_the_key_changes_with_the_plugin_files_and_the_distribution(fake_site):
    entry = RankerEntry("fake", "fake_status_pkg:R", "(import path)", "-")
    key = registry_status._entry_key(entry, {})
    assert registry_status._entry_key(entry, {}) == key
    (fake_site / "fake_status_pkg" / "extra.py").write_text("x = 1\n")  # a file added
    assert registry_status._entry_key(entry, {}) != key
    key = registry_status._entry_key(entry, {})
    other = RankerEntry("fake", "fake_status_pkg:R", "(import path)", "-2")
    assert registry_status._entry_key(other, {}) != key


def test_the_cache_keeps_only_ok_and_a_stale_file_voids_it(fake_site, monkeypatch):
    good = RankerEntry("good", "fake_status_pkg:R", "(import path)", "-")
    bad = RankerEntry("bad", "fake_status_missing_xyz:R", "(import path)", "-")
    assert registry_status.check_statuses([good, bad]) == [
        "ok",
        registry_status.check_statuses([bad])[0],
    ]
    path = registry_status.status_cache_path()
    (record,) = json.loads(path.read_text())["environments"].values()
    assert set(record["rankers"]) == {"good"}
    assert str(fake_site / "fake_status_pkg" / "__init__.py") in record["files"]
    loads = []
    monkeypatch.setattr(RankerEntry, "load", lambda self: loads.append(self.name))
    assert registry_status.check_statuses([good]) == ["ok"] and loads == []  # cached
    os.utime(fake_site / "fake_status_pkg" / "__init__.py", ns=(1, 1))  # an imported file
    assert registry_status.check_statuses([good]) == ["ok"] and loads == ["good"]


def test_the_cache_folder_follows_ltr_bench_cache_then_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("LTR_BENCH_CACHE", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert registry_status.status_cache_path() == tmp_path / "a" / "rankers-status.json"
    monkeypatch.delenv("LTR_BENCH_CACHE")
    assert registry_status.status_cache_path() == tmp_path / "xdg" / "ltr_bench" / (
        "rankers-status.json"
    )
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # the XDG rule
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert registry_status.status_cache_path() == (
        tmp_path / "home" / ".cache" / "ltr_bench" / "rankers-status.json"
    )


def test_an_unwritable_cache_folder_is_no_error(monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("LTR_BENCH_CACHE", str(blocker / "below-a-file"))
    entries = [e for e in registry.list_rankers() if e.name == "ridge"]
    assert registry_status.check_statuses(entries) == ["ok"]


def test_recheck_replaces_a_cached_ok_that_no_longer_holds(fake_site, monkeypatch):
    good = RankerEntry("good", "fake_status_pkg:R", "(import path)", "-")
    assert registry_status.check_statuses([good]) == ["ok"]

    def broken(self):
        raise registry.RankerLoadError("broken in a way the key cannot see")

    monkeypatch.setattr(RankerEntry, "load", broken)
    assert registry_status.check_statuses([good]) == ["ok"]  # the key holds: cached
    (status,) = registry_status.check_statuses([good], recheck=True)
    assert status == "unavailable: broken in a way the key cannot see"
    (status,) = registry_status.check_statuses([good])  # the stale ok is gone
    assert status.startswith("unavailable: ")


def test_a_killed_writers_old_temporary_file_is_removed(fake_site):
    good = RankerEntry("good", "fake_status_pkg:R", "(import path)", "-")
    folder = registry_status.status_cache_path().parent
    folder.mkdir(parents=True)
    old = folder / f".{registry_status.CACHE_FILE}.abc.tmp"
    new = folder / f".{registry_status.CACHE_FILE}.def.tmp"
    old.write_text("{")
    new.write_text("{")  # a writer still at work
    os.utime(old, (1, 1))
    assert registry_status.check_statuses([good], recheck=True) == ["ok"]
    assert not old.exists() and new.exists()

"""``ltr-bench cache list | verify | clear`` on a real cache: what each lists, keeps and removes
(``clear`` deletes folders, so what it leaves matters as much as what it removes)."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner
from ltrb_data_helpers import make_letor_dir

from ltr_bench.cli.app import main
from ltr_bench.data import generated, load_fold


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache with three ``letor`` entries (one per split file of a LETOR folder) and one
    ``generated`` entry (a small synthetic fold, cached although it is below the size that
    is worth caching)."""
    monkeypatch.setattr(generated, "CACHE_MIN_CELLS", 0)
    root = make_letor_dir(tmp_path / "d")
    folder = tmp_path / "cache"
    load_fold(root, 1, cache_dir=folder)
    load_fold("synthetic", 1, cache_dir=folder, options={"n_queries": 12, "docs_per_query": 5})
    return folder, root


def _entries(folder, namespace):
    path = folder / namespace
    return sorted(p for p in path.iterdir() if not p.name.startswith(".")) if path.is_dir() else []


def _run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


def test_cache_list_names_every_entry_with_its_namespace_and_the_total(cache):
    folder, root = cache
    code, out = _run("cache", "list", "--cache-dir", folder)
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0] == f"cache: {folder}"
    assert sum(line.startswith("letor ") for line in lines) == 3
    assert sum(line.startswith("generated ") for line in lines) == 1
    assert any(str(root / "Fold1" / "train.txt") in line for line in lines)
    assert lines[-1].startswith("total ") and lines[-1].endswith(" MiB")


def test_cache_clear_of_one_namespace_keeps_the_other(cache):
    folder, _ = cache
    code, out = _run("cache", "clear", "--namespace", "generated", "--cache-dir", folder)
    assert code == 0, out
    assert out.startswith("removed 1 entry (")
    assert _entries(folder, "generated") == [] and len(_entries(folder, "letor")) == 3
    code, out = _run("cache", "clear", "--cache-dir", folder)
    assert code == 0 and out.startswith("removed 3 entries (")
    assert _entries(folder, "letor") == []


def test_cache_verify_removes_an_entry_whose_source_is_gone_or_whose_arrays_were_damaged(cache):
    folder, root = cache
    letor = _entries(folder, "letor")
    by_source = {json.loads((e / "meta.json").read_text())["source"]: e for e in letor}
    (root / "Fold1" / "test.txt").unlink()  # a source that no longer exists
    vali = by_source[str(root / "Fold1" / "vali.txt")]
    (vali / "meta.json").write_text("{not json")  # an unreadable entry
    code, out = _run("cache", "verify", "--dry-run", "--cache-dir", folder)
    assert code == 1
    assert "no longer exists; would remove" in out and "unreadable; would remove" in out
    assert len(_entries(folder, "letor")) == 3  # --dry-run removed nothing
    code, out = _run("cache", "verify", "--cache-dir", folder)
    assert code == 1 and "2 stale or damaged" in out
    assert _entries(folder, "letor") == [by_source[str(root / "Fold1" / "train.txt")]]
    code, out = _run("cache", "verify", "--cache-dir", folder)
    assert code == 0 and out.startswith("2 entries verified, 0 stale or damaged")
    shutil.rmtree(folder)

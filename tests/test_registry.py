"""Ranker discovery through the ``ltr_bench.rankers`` entry point group."""

from __future__ import annotations

import importlib
import json
import pickle
import subprocess
import sys
import textwrap

import pytest

from ltr_bench import registry
from ltr_bench.registry import (
    BadParameterError,
    RankerLoadError,
    UnknownRankerError,
    get_entry,
    list_rankers,
    load_ranker_class,
    make_ranker,
)

BUILT_IN = {"lightgbm", "xgboost-gbrt", "xgboost-lambdamart", "catboost", "mlr", "rmlr"}


def _fake_distribution(root, dist, entry_points: dict[str, str], modules: dict[str, str]):
    """Write an installed-looking distribution (dist-info + modules) under ``root``."""
    info = root / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    lines = "".join(f"{name} = {target}\n" for name, target in entry_points.items())
    (info / "entry_points.txt").write_text(f"[ltr_bench.rankers]\n{lines}")
    for module, source in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(source))


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    """A folder on sys.path for fake distributions; import caches cleared around the test."""
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield tmp_path
    importlib.invalidate_caches()
    for name in [m for m in sys.modules if m.startswith("fake_plugin_")]:
        del sys.modules[name]


def test_built_in_rankers_are_registered_through_entry_points():
    entries = {e.name: e for e in list_rankers()}
    assert BUILT_IN <= set(entries)
    assert entries["lightgbm"].target == "ltr_bench_baselines.lightgbm:LightGBMRanker"
    assert entries["lightgbm"].distribution == "ltr-bench"
    assert [e.name for e in list_rankers()] == sorted(entries)


def test_listing_rankers_imports_no_ranker_module():
    # in a fresh interpreter, so that modules imported by other tests do not hide an import
    code = textwrap.dedent("""
        import json, sys
        from ltr_bench.registry import list_rankers
        before = set(sys.modules)
        entries = list_rankers()
        new = sorted(set(sys.modules) - before)
        targets = sorted({e.target.split(":")[0] for e in entries})
        print(json.dumps({"names": [e.name for e in entries], "new": new,
                          "targets": targets, "all": sorted(sys.modules)}))
    """)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    result = json.loads(out.stdout)
    assert BUILT_IN <= set(result["names"])
    loaded = set(result["all"])
    for module in result["targets"]:
        assert module not in loaded, f"listing imported ranker module {module}"
    for heavy in ("lightgbm", "xgboost", "ltr_bench_baselines", "mlflow"):
        assert heavy not in loaded, f"listing imported {heavy}"


def test_unknown_name_raises_with_close_matches_and_the_available_names():
    with pytest.raises(UnknownRankerError) as info:
        get_entry("lightgmb")
    err = info.value
    assert err.suggestions[0] == "lightgbm"  # the closest first (lightgbm-dask may follow)
    message = str(err)
    assert message.startswith("unknown ranker 'lightgmb'. Did you mean: lightgbm")
    for name in BUILT_IN:
        assert name in message
    assert isinstance(err, KeyError) and isinstance(err, registry.RegistryError)


def test_suggestions_ignore_case_and_underscores():
    assert get_suggestions("LIGHTGBM")[0] == "lightgbm"
    assert get_suggestions("xgboost_lambdamart")[0] == "xgboost-lambdamart"
    assert get_suggestions("completely-different-thing") == []


def get_suggestions(name):
    with pytest.raises(UnknownRankerError) as info:
        load_ranker_class(name)
    return info.value.suggestions


def test_unknown_ranker_error_survives_pickling():
    err = UnknownRankerError("lightgmb", ["lightgbm", "mlr"])
    back = pickle.loads(pickle.dumps(err))
    assert str(back) == str(err) and back.suggestions == ["lightgbm"]


def test_broken_plugin_is_listed_and_its_load_error_carries_the_original_error(plugin_dir):
    _fake_distribution(
        plugin_dir,
        "fake-plugin",
        {"broken": "fake_plugin_broken:Ranker", "notaranker": "fake_plugin_ok:CONSTANT"},
        {
            "fake_plugin_broken": "raise ImportError('needs the missing package zzz_tensorlib')\n",
            "fake_plugin_ok": "CONSTANT = 3\n",
        },
    )
    entries = {e.name: e for e in list_rankers()}
    assert entries["broken"].distribution == "fake-plugin"
    assert entries["broken"].version == "0.1"
    assert "fake_plugin_broken" not in sys.modules  # listed without importing

    with pytest.raises(RankerLoadError) as info:
        load_ranker_class("broken")
    message = str(info.value)
    assert "ImportError: needs the missing package zzz_tensorlib" in message
    assert "'broken' from fake-plugin 0.1" in message
    assert isinstance(info.value.__cause__, ImportError)

    with pytest.raises(RankerLoadError, match="does not have fit"):
        load_ranker_class("notaranker")

    # the others still work
    from ltr_bench_baselines.lightgbm import LightGBMRanker

    assert load_ranker_class("lightgbm") is LightGBMRanker


def test_a_distribution_with_unreadable_metadata_is_skipped_with_a_warning(plugin_dir):
    _fake_distribution(plugin_dir, "fake-good", {"fake-good": "fake_plugin_good:R"}, {})
    bad = plugin_dir / "fake_bad-0.1.dist-info"
    bad.mkdir()
    (bad / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-bad\nVersion: 0.1\n")
    (bad / "entry_points.txt").write_bytes(b"[ltr_bench.rankers]\nx = fake\xff:R\n")
    with pytest.warns(UserWarning, match=r"fake_bad-0\.1\.dist-info.*UnicodeDecodeError"):
        names = [e.name for e in list_rankers()]
    assert "fake-good" in names and "lightgbm" in names


def test_a_name_registered_twice_warns_and_keeps_the_first(plugin_dir):
    first, second = plugin_dir / "a", plugin_dir / "b"
    first.mkdir()
    second.mkdir()
    _fake_distribution(first, "fake-one", {"fake-dup": "fake_plugin_one:R"}, {})
    _fake_distribution(second, "fake-two", {"fake-dup": "fake_plugin_two:R"}, {})
    sys.path[:0] = [str(first), str(second)]
    try:
        importlib.invalidate_caches()
        with pytest.warns(UserWarning, match="'fake-dup' is registered twice"):
            entry = get_entry("fake-dup")
        assert entry.distribution == "fake-one"
    finally:
        sys.path.remove(str(first))
        sys.path.remove(str(second))


def test_make_ranker_applies_parameters_and_rejects_unknown_ones_listing_valid_ones():
    ranker = make_ranker("lightgbm", {"n_estimators": 7, "num_leaves": 3})
    assert ranker.get_params()["n_estimators"] == 7 and ranker.num_leaves == 3
    with pytest.raises(BadParameterError) as info:
        make_ranker("lightgbm", {"num_trees": 7})
    message = str(info.value)
    assert "has no parameter(s) num_trees" in message
    assert "n_estimators" in message and "num_leaves" in message
    with pytest.raises(UnknownRankerError):
        make_ranker("lightgmb")


def test_a_misspelt_parameter_gets_a_close_match_suggestion():
    with pytest.raises(BadParameterError, match=r"did you mean: num_leafs -> num_leaves\?"):
        make_ranker("lightgbm", {"num_leafs": 7})


def test_an_import_path_names_a_ranker_that_is_not_installed():
    entry = get_entry("ltrb_fake_rankers:LinearRanker")
    assert entry.distribution == "(import path)" and entry.target == entry.name
    with pytest.raises(UnknownRankerError):
        get_entry("not a path:Ranker")


NOTED_PLUGIN = """
    class Ranker:
        def fit(self, X, y, *, qid, eval_set=None):
            return self

        def predict(self, X, *, qid=None):
            return X[:, 0]


    def note():
        return "engine 1.0,\\n  device auto -> cpu"


    def broken_note():
        raise RuntimeError("no driver")
"""


def test_rankers_shows_the_runtime_note_a_plugin_registers_and_survives_a_failing_one(plugin_dir):
    from click.testing import CliRunner

    from ltr_bench.cli import main

    names = ("fake-noted", "fake-failing-note", "fake-silent")
    _fake_distribution(
        plugin_dir, "fake-runtime", dict.fromkeys(names, "fake_plugin_noted:Ranker"),
        {"fake_plugin_noted": NOTED_PLUGIN},
    )  # fmt: skip
    with (plugin_dir / "fake_runtime-0.1.dist-info" / "entry_points.txt").open("a") as f:
        f.write(
            "[ltr_bench.runtime]\nfake-noted = fake_plugin_noted:note\n"
            "fake-failing-note = fake_plugin_noted:broken_note\n"
        )
    # a note for a ranker of another distribution is not that ranker's note
    _fake_distribution(plugin_dir, "fake-intruder", {}, {})
    with (plugin_dir / "fake_intruder-0.1.dist-info" / "entry_points.txt").open("a") as f:
        f.write("[ltr_bench.runtime]\nfake-silent = fake_plugin_noted:note\n")
    importlib.invalidate_caches()

    result = CliRunner().invoke(main, ["rankers"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line for line in result.stdout.splitlines()[2:]}
    assert rows["fake-noted"].endswith(" ok (engine 1.0, device auto -> cpu)")
    assert rows["fake-failing-note"].endswith(" ok (runtime unknown (RuntimeError: no driver))")
    assert rows["fake-silent"].endswith(" ok")
    assert rows["lightgbm"].endswith(" ok")  # the built-in rankers register no note
    quick = CliRunner().invoke(main, ["rankers", "--no-check"], catch_exceptions=False)
    assert "engine" not in quick.stdout  # --no-check imports nothing, not even a note

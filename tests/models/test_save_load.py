"""The saved-model format: the manifest, the refusals with the file and the cause, the atomic
writer, the preprocessing a loaded model applies, and the state codec of the root contract."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ltr_bench.data.normalise import query_level_norm
from ltr_bench.model_state import decode_state, encode_state, read_state, write_state
from ltr_bench.models import (
    FORMAT_VERSION,
    MANIFEST,
    ModelLoadError,
    ModelSaveError,
    load_model,
    save_model,
)
from ltr_bench.models.manifest import file_digests
from ltr_bench.ranker import BaseRanker, RankerInputError, can_save
from ltr_bench.registry import make_ranker


def _data(seed=0, n_q=12, docs=6, f=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_q * docs, f)) * 3 + 1
    qid = np.repeat(np.arange(n_q), docs)
    y = rng.integers(0, 3, n_q * docs)
    return X, y, qid


@pytest.fixture
def ridge_model(tmp_path):
    X, y, qid = _data()
    ranker = make_ranker("ridge").fit(X, y, qid=qid)
    folder = save_model(ranker, tmp_path / "m", ranker_name="ridge", data_fingerprint="abc")
    return ranker, folder, X, qid


def test_the_manifest_names_the_ranker_its_version_params_features_and_fingerprint(ridge_model):
    ranker, folder, X, _ = ridge_model
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["format_version"] == FORMAT_VERSION
    assert manifest["ranker"] == "ridge"
    assert manifest["distribution"] == "ltr-bench" and manifest["distribution_version"]
    assert manifest["n_features"] == X.shape[1]
    assert manifest["data_fingerprint"] == "abc"
    assert manifest["preprocessing"] == {
        "query_norm": False,
        "query_dim": None,
        "feature_transform": "none",
    }
    assert manifest["params"]["alpha_grid"] == {"__tuple__": list(ranker.alpha_grid)}
    assert load_model(folder).manifest["params"] == ranker.get_params(deep=False)
    assert set(manifest["files"]) == {"native/state.json", "native/state.npz"}


def test_a_loaded_model_predicts_the_same_scores_bit_for_bit(ridge_model):
    ranker, folder, X, qid = ridge_model
    loaded = load_model(folder)
    assert np.array_equal(loaded.predict(X, qid), ranker.predict(X, qid=qid))
    assert loaded.ranker.get_params() == ranker.get_params()


def test_a_missing_folder_or_manifest_is_refused_naming_the_file(tmp_path):
    with pytest.raises(ModelLoadError, match="does not exist"):
        load_model(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelLoadError, match=r"empty/manifest.json is missing"):
        load_model(tmp_path / "empty")


def test_a_damaged_native_file_is_refused_naming_it(ridge_model):
    _, folder, _, _ = ridge_model
    path = folder / "native" / "state.npz"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ModelLoadError, match=r"state.npz is damaged: its SHA-256"):
        load_model(folder)
    path.write_bytes(bytes(data[:-10]))
    with pytest.raises(ModelLoadError, match=r"state.npz is damaged: .* bytes"):
        load_model(folder)
    path.unlink()
    with pytest.raises(ModelLoadError, match=r"state.npz is missing"):
        load_model(folder)


def test_a_damaged_manifest_is_refused_naming_it(ridge_model):
    _, folder, _, _ = ridge_model
    (folder / MANIFEST).write_text('{"format": "ltr-bench-model", "format_v')
    with pytest.raises(ModelLoadError, match=r"manifest.json is damaged: not valid JSON"):
        load_model(folder)


def test_a_model_from_a_newer_format_is_refused_saying_to_upgrade(ridge_model):
    _, folder, _, _ = ridge_model
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["format_version"] = FORMAT_VERSION + 1
    (folder / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(ModelLoadError, match=r"newer ltr-bench .*upgrade"):
        load_model(folder)


def test_a_ranker_whose_plugin_is_not_installed_is_refused_naming_the_distribution(ridge_model):
    _, folder, _, _ = ridge_model
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest.update(ranker="gone-ranker", distribution="ltr-bench-gone", distribution_version="9")
    (folder / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(ModelLoadError, match=r"'gone-ranker' \(written by ltr-bench-gone 9\)"):
        load_model(folder)


def test_a_manifest_naming_an_import_path_is_refused_without_importing_it(ridge_model):
    _, folder, _, _ = ridge_model
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["ranker"] = "ltrb_never_imported_module:Ranker"
    (folder / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(ModelLoadError, match="import path"):
        load_model(folder)
    assert "ltrb_never_imported_module" not in sys.modules


class _Unsaveable(BaseRanker):
    def fit(self, X, y, *, qid, eval_set=None):
        self.w_ = 1.0
        return self

    def predict(self, X, *, qid=None):
        return np.asarray(X)[:, 0] * self.w_


def test_a_ranker_without_the_hooks_cannot_be_saved_and_says_why(tmp_path):
    X, y, qid = _data()
    assert not can_save(_Unsaveable) and can_save(make_ranker("ridge"))
    with pytest.raises(ModelSaveError, match="does not implement save_native"):
        save_model(_Unsaveable().fit(X, y, qid=qid), tmp_path / "m", ranker_name="ridge")
    assert not (tmp_path / "m").exists()


def test_an_unfitted_ranker_is_refused_and_leaves_no_folder(tmp_path):
    with pytest.raises(ModelSaveError, match="is not fitted: call fit"):
        save_model(make_ranker("ridge"), tmp_path / "m", ranker_name="ridge")
    assert list(tmp_path.iterdir()) == []


def test_saving_over_a_model_replaces_it_and_over_a_foreign_folder_is_refused(tmp_path):
    X, y, qid = _data()
    first = make_ranker("ridge", {"alpha": 1.0}).fit(X, y, qid=qid)
    second = make_ranker("ridge", {"alpha": 100.0}).fit(X, y, qid=qid)
    save_model(first, tmp_path / "m", ranker_name="ridge")
    save_model(second, tmp_path / "m", ranker_name="ridge")
    assert np.array_equal(load_model(tmp_path / "m").predict(X, qid), second.predict(X))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]  # no temporary left
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(ModelSaveError, match="not empty and holds no saved model"):
        save_model(first, tmp_path / "mine", ranker_name="ridge")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_query_norm_in_the_manifest_is_applied_before_predict(tmp_path):
    X, y, qid = _data()
    Xn = query_level_norm(X, qid)
    ranker = make_ranker("ridge").fit(Xn, y, qid=qid)
    save_model(ranker, tmp_path / "m", ranker_name="ridge", preprocessing={"query_norm": True})
    loaded = load_model(tmp_path / "m")
    assert np.array_equal(loaded.predict(X, qid), ranker.predict(Xn))
    with pytest.raises(RankerInputError, match="pass qid"):
        loaded.predict(X)
    with pytest.raises(RankerInputError, match="3 features, but the model .* fitted on 4"):
        loaded.predict(X[:, :3], qid)


def test_the_query_block_width_comes_from_the_declared_tag(tmp_path):
    X, y, qid = _data(f=6)
    ranker = make_ranker("ridge", {"query_dim": 3}).fit(X, y, qid=qid)
    save_model(ranker, tmp_path / "m", ranker_name="ridge")
    assert load_model(tmp_path / "m").preprocessing["query_dim"] == 3
    with pytest.raises(ModelSaveError, match="unknown preprocessing key"):
        save_model(ranker, tmp_path / "m", ranker_name="ridge", preprocessing={"norm": 1})


def test_the_state_codec_keeps_arrays_scalars_tuples_and_odd_dicts_exactly():
    state = {
        "a": np.arange(6, dtype=np.float32).reshape(2, 3),
        "s": np.float64(0.1) / 3,
        "t": (1, "x", None),
        "f": {0.5: 1.0, 2.0: float("nan")},
        "m": {"__array__": "not an array"},
        "x": 1 / 3,
    }
    arrays: dict = {}
    back = decode_state(json.loads(json.dumps(encode_state(state, arrays))), arrays)
    assert back["a"].dtype == np.float32 and np.array_equal(back["a"], state["a"])
    assert type(back["s"]) is np.float64 and back["s"] == state["s"]
    assert back["t"] == (1, "x", None) and back["m"] == state["m"] and back["x"] == 1 / 3
    assert back["f"][0.5] == 1.0 and np.isnan(back["f"][2.0])
    with pytest.raises(TypeError, match="object array"):
        encode_state({"o": np.array([object()])}, {})


def test_a_pickled_npz_is_refused_on_reading(tmp_path):
    write_state(tmp_path, {"a": np.zeros(2)})
    with open(tmp_path / "state.npz", "wb") as fh:
        np.savez(fh, a0=np.array([{"evil": 1}], dtype=object))
    with pytest.raises(ValueError, match="allow_pickle"):
        read_state(tmp_path)


_WRITER = textwrap.dedent(
    """
    import os, sys, time
    import numpy as np
    from ltr_bench.registry import make_ranker
    from ltr_bench.models import save_model
    import ltr_bench.models.writer as writer

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)); qid = np.repeat(np.arange(10), 4); y = rng.integers(0, 2, 40)
    r = make_ranker("ridge").fit(X, y, qid=qid)
    save_model(r, sys.argv[1], ranker_name="ridge")
    real = writer._fsync_tree
    def slow(root):
        real(root)
        print("written", flush=True)
        time.sleep(60)  # killed here: everything is written, nothing renamed yet
    writer._fsync_tree = slow
    save_model(make_ranker("ridge", {"alpha": 7.0}).fit(X, y, qid=qid), sys.argv[1],
               ranker_name="ridge")
    """
)


@pytest.mark.slow  # a Python process that imports the ranker stack
def test_a_kill_while_writing_leaves_the_old_whole_model_and_the_next_save_cleans_up(tmp_path):
    target = tmp_path / "m"
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(target)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "written"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert any(p.name.startswith(".m.tmp-") for p in tmp_path.iterdir())
    loaded = load_model(target)  # the first model, whole
    assert loaded.manifest["params"]["alpha"] != 7.0
    X, y, qid = _data(f=3)
    save_model(make_ranker("ridge").fit(X, y, qid=qid), target, ranker_name="ridge")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


def test_a_state_file_can_set_only_fitted_attributes(ridge_model):
    _, folder, _, _ = ridge_model
    state = folder / "native" / "state.json"
    body = json.loads(state.read_text())
    body["predict"] = 1
    state.write_text(json.dumps(body))
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["files"]["native/state.json"] = file_digests(folder)["native/state.json"]
    (folder / MANIFEST).write_text(json.dumps(manifest))  # rewritten to match the edit
    with pytest.raises(ModelLoadError, match="'predict' is not a fitted attribute"):
        load_model(folder)


def test_a_native_file_taken_out_of_the_manifest_is_refused_not_loaded_unchecked(ridge_model):
    _, folder, _, _ = ridge_model
    state = folder / "native" / "state.json"
    state.write_text(state.read_text().replace("[", "[ ", 1))  # edited
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["files"].pop("native/state.json")  # and taken out of the checked list
    (folder / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(ModelLoadError, match=r"native/state.json is not listed in the model's"):
        load_model(folder)

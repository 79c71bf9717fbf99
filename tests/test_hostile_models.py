"""Issue 39's corpus: what a hostile or unlucky user does to kept models and ``predict``.

Each case of :data:`CASES` is (name, setup, exit code, message fragment, check): ``setup(env)``
prepares a copy of a kept LightGBM model (``env.model``, in the results store ``env.store``)
and returns the argv of one ``ltr-bench`` command (run in-process); the command must exit
with the code, print the fragment, print no traceback; then ``check(env, output)`` asserts
what must still hold (the model and the data intact, nothing outside the model folder
opened, a message that discloses nothing about a link's target).

"Nothing outside the folder opened" is observed, not inferred from the message: the targets
outside the folder are watched with Linux inotify (every ``open`` of them or of their folder,
by Python or by a library's C code, is an event), and one of them is a named pipe, whose
blocking open would hang the command.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import socket
import stat
from pathlib import Path

import numpy as np
import pytest
from test_hostile_cases import make_env

from ltr_bench.models import MANIFEST, load_model
from ltr_bench.models.manifest import file_digests
from ltr_bench.results import ResultStore
from ltr_bench.run.cells import expand_plan
from ltr_bench.run.harness import run_plan
from ltr_bench.run.plan import DatasetChoice, Plan, RankerChoice

LIGHTGBM = {"n_estimators": 5, "num_leaves": 3, "min_data_in_leaf": 2}


class OpenWatch:
    """Linux inotify on every folder under ``root``: :meth:`events` lists what was opened
    or read there since :meth:`start` (None when inotify is not available)."""

    IN_ACCESS, IN_OPEN = 0x1, 0x20

    def __init__(self, root: Path):
        self.root = root
        self.fd = -1
        try:
            self.libc = ctypes.CDLL(None, use_errno=True)
            self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError):
            self.libc = None

    def start(self) -> None:
        if self.fd < 0:
            return
        for folder in [self.root, *(p for p in self.root.rglob("*") if p.is_dir())]:
            if not folder.is_symlink():
                self.libc.inotify_add_watch(self.fd, bytes(folder), self.IN_OPEN | self.IN_ACCESS)
        self.events()  # nothing before the command counts

    def events(self) -> list[str] | None:
        if self.fd < 0:
            return None
        out: list[str] = []
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return out
            offset = 0
            while offset < len(data):
                _, mask, _, size = (int.from_bytes(data[offset + i : offset + i + 4], "little")
                                    for i in (0, 4, 8, 12))  # fmt: skip
                name = data[offset + 16 : offset + 16 + size].rstrip(b"\0").decode()
                out.append(f"{name or '<folder>'} (mask {mask:#x})")
                offset += 16 + size

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)


@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    """A results store holding one kept LightGBM model of the corpus's tiny LETOR folder."""
    from test_reliability import make_folder

    root = tmp_path_factory.mktemp("kept")
    data = make_folder(root / "data")
    plan = Plan(
        rankers=[RankerChoice("lightgbm", dict(LIGHTGBM))],
        datasets=[DatasetChoice(str(data), {})],
        folds=[1],
        threads=1,
    )
    expanded = expand_plan(plan, score_repeats=1, keep_models=root / "res")
    report = run_plan(expanded, ResultStore(root / "res"))
    assert not report.failed, [r.error for r in report.failed]
    return root / "res", Path(report.records[0].model_dir).name


@pytest.fixture
def env(tmp_path, monkeypatch, fake_rankers, kept):
    e = make_env(tmp_path, monkeypatch, fake_rankers)
    store, name = kept
    e.store = tmp_path / "res"
    shutil.copytree(store, e.store, symlinks=True)
    e.model = e.store / name
    e.native = e.model / "native"
    e.outside = tmp_path / "outside"
    e.outside.mkdir()
    e.watch = OpenWatch(e.outside)
    yield e
    e.watch.close()


def _predict(e, *extra):
    return ["predict", "--model", e.model, "--data", e.data / "test.txt", *extra]


def _manifest(e) -> dict:
    return json.loads((e.model / MANIFEST).read_text())


def _write_manifest(e, manifest: dict) -> None:
    (e.model / MANIFEST).write_text(json.dumps(manifest))


# ------------------------------------------------------------- links and special files


def _watched(setup):
    """``setup``, then the outside folder watched from here on."""

    def run(e):
        argv = setup(e)
        e.watch.start()
        return argv

    return run


@_watched
def _native_linked_out(e):
    """native/model.txt a link to an outside file with exactly its bytes (size and SHA-256
    match the manifest: only the link gives it away)."""
    target = e.outside / "model.txt"
    shutil.copyfile(e.native / "model.txt", target)
    (e.native / "model.txt").unlink()
    (e.native / "model.txt").symlink_to(target)
    return _predict(e)


@_watched
def _native_linked_to_a_bigger_file(e):
    target = e.outside / "secret.txt"
    target.write_bytes(b"s" * 123457)  # its size must not be told
    (e.native / "model.txt").unlink()
    (e.native / "model.txt").symlink_to(target)
    return _predict(e)


@_watched
def _native_linked_to_a_pipe(e):
    os.mkfifo(e.outside / "pipe")
    (e.native / "model.txt").unlink()
    (e.native / "model.txt").symlink_to(e.outside / "pipe")
    return _predict(e)


@_watched
def _native_folder_linked_out(e):
    shutil.copytree(e.native, e.outside / "native")
    shutil.rmtree(e.native)
    e.native.symlink_to(e.outside / "native")
    return _predict(e)


@_watched
def _manifest_linked_out(e):
    shutil.copyfile(e.model / MANIFEST, e.outside / MANIFEST)
    (e.model / MANIFEST).unlink()
    (e.model / MANIFEST).symlink_to(e.outside / MANIFEST)
    return _predict(e)


def _pipe_as(relative: str):
    @_watched
    def setup(e):
        (e.model / relative).unlink()
        os.mkfifo(e.model / relative)  # opened for reading, it would block
        return _predict(e)

    return setup


@_watched
def _device_as_native(e):
    (e.native / "model.txt").unlink()
    try:  # /dev/null's numbers; creating a device needs privileges
        os.mknod(e.native / "model.txt", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("this process may not create a device node")
    return _predict(e)


@_watched
def _socket_as_native(e):
    (e.native / "model.txt").unlink()
    here = os.getcwd()
    os.chdir(e.native)  # a relative name: socket paths are limited to ~107 bytes
    try:
        e.sock = socket.socket(socket.AF_UNIX)
        e.sock.bind("model.txt")
    finally:
        os.chdir(here)
    return _predict(e)


@_watched
def _folder_as_native(e):
    (e.native / "model.txt").unlink()
    (e.native / "model.txt").mkdir()
    return _predict(e)


@_watched
def _unlisted_native(e):
    (e.native / "extra.bin").write_bytes(b"\0" * 16)
    return _predict(e)


@_watched
def _state_taken_out_of_the_manifest(e):
    state = e.native / "state.json"
    state.write_text(state.read_text().replace("{", "{ ", 1))  # edited
    manifest = _manifest(e)
    manifest["files"].pop("native/state.json")  # and no longer checked
    _write_manifest(e, manifest)
    return _predict(e)


@_watched
def _hard_link_with_the_listed_bytes(e):
    """A hard link is the folder's own regular file: its bytes are what the manifest
    promises, so it loads (the decision documented in docs/models.md)."""
    outside = e.outside / "model.txt"
    shutil.copyfile(e.native / "model.txt", outside)
    (e.native / "model.txt").unlink()
    os.link(outside, e.native / "model.txt")
    return _predict(e)


@_watched
def _hard_link_with_other_bytes(e):
    outside = e.outside / "model.txt"
    outside.write_text((e.native / "model.txt").read_text().replace("tree", "TREE", 1))
    (e.native / "model.txt").unlink()
    os.link(outside, e.native / "model.txt")
    return _predict(e)


def _nothing_outside_opened(e, out):
    events = e.watch.events()
    assert events in (None, []), f"opened outside the model folder: {events}"


def _the_link_target_untold(e, out):
    _nothing_outside_opened(e, out)
    assert "123457" not in out and "secret" not in out


def _ranked(e, out):
    assert "ranked" in out


# ------------------------------------------------------------------ the manifest itself


def _manifest_with(**changes):
    def setup(e):
        _write_manifest(e, {**_manifest(e), **changes})
        return _predict(e)

    return setup


def _listed_model_txt(field: str, value):
    def setup(e):
        manifest = _manifest(e)
        manifest["files"]["native/model.txt"][field] = value
        _write_manifest(e, manifest)
        return _predict(e)

    return setup


def _manifest_file_entry(name: str):
    def setup(e):
        manifest = _manifest(e)
        manifest["files"][name] = manifest["files"]["native/model.txt"]
        _write_manifest(e, manifest)
        return _predict(e)

    return setup


def _manifest_text(text: str):
    def setup(e):
        (e.model / MANIFEST).write_text(text)
        return _predict(e)

    return setup


def _model_intact(e, out):
    assert load_model(e.model).n_features == 3


# ----------------------------------------------------------------------- predict outputs


def _data_kept(e, out):
    assert (e.data / "test.txt").read_text().startswith("0 qid:200 ")


def _model_and_data_kept(e, out):
    _data_kept(e, out)
    _model_intact(e, out)


def _one_file_twice(e):
    return _predict(e, "--output", e.cwd / "same.txt", "--scores", e.cwd / "same.txt")


def _nothing_written(e, out):
    assert not (e.cwd / "same.txt").exists()


def _into_another_model(e):
    other = e.root / "other-model"
    shutil.copytree(e.model, other)
    return _predict(e, "--output", other / "native" / "run.txt")


def _onto_a_record(e):
    (record,) = e.store.glob("*[0-9a-f].json")
    e.record_text = record.read_text()
    return _predict(e, "--output", record)


def _record_kept(e, out):
    (record,) = e.store.glob("*[0-9a-f].json")
    assert record.read_text() == e.record_text


def _onto_the_mlflow_store(e):
    db = e.cwd / "mlflow_runs" / "mlflow.db"
    db.parent.mkdir()
    db.write_bytes(b"SQLite format 3\0")
    return _predict(e, "--scores", db)


# --------------------------------------------------------------- predict labels, messages


def _file_with(lines):
    def setup(e):
        path = e.cwd / "rows.txt"
        path.write_text("\n".join(lines) + "\n")
        return ["predict", "--model", e.model, "--data", path]

    return setup


_ROWS = [f"{q % 3} qid:{q // 4} 1:0.{q} 2:0.5 3:0.25" for q in range(8)]


def _max_label_below(e):
    return _predict(e, "--max-label", "1")  # the test split's labels go up to 2


def _max_label_on_a_split(e):
    return ["predict", "--model", e.model, "--data", f"{e.data}:1:test", "--max-label", "2"]


def _no_dataset_advice(e, out):
    assert "this dataset" not in out and "n_features" not in out and ".query" not in out


def _split(which: str):
    def setup(e):
        return ["predict", "--model", e.model, "--data", f"{e.data}:1:{which}"]

    return setup


def _run_of(*extra):
    def setup(e):
        argv = ["run", "--ranker", "ridge", "--dataset", e.data, "--no-mlflow"]
        argv += ["--results-dir", "res2", *extra]
        return argv

    return setup


def _skipped_without_model(e):
    argv = _run_of()(e)
    code, out = e.run(*argv, "--keep-models", "none")
    assert code == 0, out
    return argv


def _orphan_of_a_killed_force(e):
    argv = _run_of()(e)
    code, out = e.run(*argv)
    assert code == 0, out
    (record,) = (e.cwd / "res2").glob("*[0-9a-f].json")
    e.orphan = e.cwd / "res2" / f"{record.stem}.model.0123456789ab"
    e.orphan.mkdir()  # its model written, the --force run killed before its record
    (e.orphan / "manifest.json").write_text("{}")
    return argv


def _orphan_removed(e, out):
    assert not e.orphan.exists()
    (record,) = (e.cwd / "res2").glob("*[0-9a-f].json")
    assert Path(json.loads(record.read_text())["model_dir"]).is_dir()


def _fine(e, out):
    pass


SMALL = ("n_queries=30", "docs_per_query=6", "n_features=5", "n_informative=3")


def _synthetic_model(e, *options) -> Path:
    """A ridge model kept by ``run`` on fold 1 of a small synthetic dataset."""
    argv = ["run", "--ranker", "ridge", "--dataset", "synthetic", "--folds", "1", "--no-mlflow"]
    for option in (*SMALL, *options):
        argv += ["--dataset-option", option]
    code, out = e.run(*argv, "--results-dir", "syn")
    assert code == 0, out
    (model,) = (e.cwd / "syn").glob("*.model.*")
    return model


def _predict_split(split: str, *options, model_options=()):
    def setup(e):
        model = _synthetic_model(e, *model_options)
        argv = ["predict", "--model", model, "--data", f"synthetic:{split}"]
        argv += [o for o in options if o.startswith("--")]
        for option in (*SMALL, *(o for o in options if not o.startswith("--"))):
            argv += ["--dataset-option", option]
        return argv

    return setup


def _no_data_warning(e, out):
    assert "warning" not in out, out


LINK = "is a symbolic link, not a regular file"
DAMAGED = "the model's manifest"
CASES = [
    # links and special files: exit 1, the file named, nothing outside the folder opened
    ("a listed native file linked outside the folder", _native_linked_out, 1,
     f"native/model.txt {LINK}", _nothing_outside_opened),
    ("a listed link does not tell the target's size", _native_linked_to_a_bigger_file, 1,
     f"native/model.txt {LINK}", _the_link_target_untold),
    ("a listed native file linked to an outside pipe", _native_linked_to_a_pipe, 1,
     f"native/model.txt {LINK}", _nothing_outside_opened),
    ("a native folder linked outside", _native_folder_linked_out, 1,
     "native is a symbolic link, not a folder", _nothing_outside_opened),
    ("a manifest linked outside", _manifest_linked_out, 1, f"manifest.json {LINK}",
     _nothing_outside_opened),
    ("a named pipe as a native file", _pipe_as("native/model.txt"), 1,
     "native/model.txt is a named pipe", _nothing_outside_opened),
    ("a named pipe as the manifest", _pipe_as(MANIFEST), 1, "manifest.json is a named pipe",
     _nothing_outside_opened),
    ("a device as a native file", _device_as_native, 1,
     "native/model.txt is a character device", _nothing_outside_opened),
    ("a socket as a native file", _socket_as_native, 1, "native/model.txt is a socket",
     _nothing_outside_opened),
    ("a folder as a native file", _folder_as_native, 1, "native/model.txt is a folder",
     _nothing_outside_opened),
    ("a native file the manifest does not list", _unlisted_native, 1,
     "native/extra.bin is not listed in the model's manifest", _nothing_outside_opened),
    ("an edited state.json taken out of the manifest", _state_taken_out_of_the_manifest, 1,
     "native/state.json is not listed in the model's manifest", _nothing_outside_opened),
    ("a hard link with the listed bytes loads", _hard_link_with_the_listed_bytes, 0,
     "ranked", _ranked),
    ("a hard link with other bytes", _hard_link_with_other_bytes, 1,
     "native/model.txt is damaged: its SHA-256", _fine),
    # the manifest itself: exit 1, "the model's manifest" and the field
    ("manifest n_features negative", _manifest_with(n_features=-3), 1,
     "n_features is -3, not a feature count", _fine),
    ("manifest n_features text", _manifest_with(n_features="3"), 1,
     "n_features is '3', not a feature count", _fine),
    ("manifest n_features huge", _manifest_with(n_features=10**12), 1,
     f"{DAMAGED} ", _fine),
    ("manifest format_version text", _manifest_with(format_version="1"), 1,
     "format_version '1' is not a version", _fine),
    ("manifest file size negative", _listed_model_txt("bytes", -1), 1,
     "bytes is -1, not a size", _fine),
    ("manifest sha256 not hex", _listed_model_txt("sha256", "xyz"), 1,
     "sha256 is 'xyz', not 64 hex digits", _fine),
    ("manifest file entry absolute", _manifest_file_entry("/etc/passwd"), 1,
     "files entry '/etc/passwd': not a path inside native/", _fine),
    ("manifest file entry climbing out", _manifest_file_entry("native/../../x"), 1,
     "not a path inside native/", _fine),
    ("manifest params not decodable", _manifest_with(params={"__array__": "a0"}), 1,
     "'params' holds a value that cannot be decoded", _fine),
    ("manifest data_fingerprint a number", _manifest_with(data_fingerprint=5), 1,
     "data_fingerprint is not a text", _fine),
    ("manifest query_dim text", _manifest_with(preprocessing={"query_dim": "x"}), 1,
     "query_dim must be a positive int", _fine),
    ("manifest nested too deep", _manifest_text("[" * 100000 + "]" * 100000), 1,
     f"{DAMAGED} ", _fine),
    ("manifest integer of 5000 digits", _manifest_text('{"format": ' + "9" * 5000 + "}"), 1,
     f"{DAMAGED} ", _fine),
    # predict's outputs never replace its inputs: exit 2, everything kept
    ("predict --output onto the data", lambda e: _predict(e, "--output", e.data / "test.txt"),
     2, "would replace the data (--data)", _model_and_data_kept),
    ("predict --scores onto the model's model.txt",
     lambda e: _predict(e, "--scores", e.native / "model.txt"), 2,
     "would be written into the model's folder", _model_and_data_kept),
    ("predict --output onto the manifest",
     lambda e: _predict(e, "--output", e.model / MANIFEST), 2,
     "would be written into the model's folder", _model_and_data_kept),
    ("predict --output onto a result record", _onto_a_record, 2,
     "would be written into the results store", _record_kept),
    ("predict --output and --scores one file", _one_file_twice, 2, "are one file",
     _nothing_written),
    ("predict --qrels onto the data", lambda e: _predict(e, "--qrels", e.data / "test.txt"),
     2, "would replace the data (--data)", _model_and_data_kept),
    ("predict --output into another model folder", _into_another_model, 2,
     "would be written into the model folder", _model_and_data_kept),
    ("predict --scores onto the MLflow store", _onto_the_mlflow_store, 2,
     "would replace the MLflow store", _model_and_data_kept),
    # labels and messages
    ("predict --max-label below the largest label", _max_label_below, 2,
     "--max-label 1 is below the largest label", _fine),
    ("predict --max-label above 1000", lambda e: _predict(e, "--max-label", "1001"), 2,
     "labels up to 1000", _fine),
    ("predict --max-label on a dataset split", _max_label_on_a_split, 2,
     "--max-label applies to a file", _fine),
    ("predict a label above 1000", _file_with([*_ROWS, "2000 qid:9 1:1 2:1 3:1"]), 1,
     "rows.txt:9: the label 2000 is outside the allowed range", _no_dataset_advice),
    ("predict a label beyond 64 bits", _file_with([*_ROWS, f"1{'0' * 25} qid:9 1:1"]), 1,
     "rows.txt:9: the label", _no_dataset_advice),
    ("predict a feature beyond the model's", _file_with([*_ROWS, "1 qid:9 1:1 4:1"]), 2,
     "rows.txt:9: feature index 4 is beyond the 3 features the model in", _no_dataset_advice),
    ("predict a line without qid", _file_with([*_ROWS, "1 1:1 2:1 3:1"]), 1,
     "it reads no '.query' file", _fine),
    ("predict the model's own test split", _split("test"), 0, "ranked", _fine),
    ("predict the model's training split says so", _split("train"), 0,
     "is the split the model was fitted on", _fine),
    ("predict another fold's test split: a leak", _predict_split("2:test"), 0,
     "queries of synthetic fold 2 test were in the training or validation data of the model "
     "(fitted on fold 1): these metrics are a leak", _fine),
    ("predict a split of another feature count", _predict_split("1:test", "n_features=6"), 2,
     "synthetic fold 1 test: the rows have 6 features, but the model in", _fine),
    ("predict a split of another seed", _predict_split("1:test", "--seed=7"), 0,
     "no fold of this dataset, as loaded now, has the model's test split", _fine),
    ("a click-trained model on its own test split", _predict_split(
        "1:test", model_options=("clicks=pbm",)), 0, "ranked", _no_data_warning),
    ("a click-trained model with its click options", _predict_split(
        "1:test", "clicks=pbm", model_options=("clicks=pbm",)), 0, "ranked",
     _no_data_warning),
    # kept models on a re-run
    ("a cell kept with --keep-models none says it has no model", _skipped_without_model, 0,
     "it has no kept model (it was run with --keep-models none", _fine),
    ("a model left by a killed --force run is removed", _orphan_of_a_killed_force, 0,
     "finished earlier, skipped", _orphan_removed),
]  # fmt: skip


def _hung(signum, frame):
    raise TimeoutError("the command hung (a blocking open of a named pipe?)")


@pytest.mark.parametrize("name,setup,code,fragment,check", CASES, ids=[c[0] for c in CASES])
def test_hostile_model_case_exits_with_its_code_and_message_and_keeps_what_it_must(
    env, name, setup, code, fragment, check
):
    argv = setup(env)
    previous = signal.signal(signal.SIGALRM, _hung)  # interrupts a blocked open()
    signal.alarm(120)
    try:
        exit_code, out = env.run(*argv)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert exit_code == code, out
    assert fragment in out, out
    assert "Traceback (most recent call last)" not in out, out
    check(env, out)


def test_every_link_and_special_file_case_was_watched_by_inotify_here(env):
    # the corpus's "nothing outside opened" rests on inotify seeing an open: prove it does
    if env.watch.fd < 0:
        pytest.skip("no inotify here")
    (env.outside / "seen.txt").write_text("x")
    env.watch.start()
    (env.outside / "seen.txt").read_text()
    assert any("seen.txt" in e for e in env.watch.events())


def test_a_model_folder_rewritten_consistently_still_loads_only_its_listed_files(env):
    # a manifest rewritten to list an extra file (bytes and SHA-256 right) loads: the
    # check is what the manifest lists, and what is loaded is exactly that
    (env.native / "extra.bin").write_bytes(b"\1" * 8)
    manifest = _manifest(env)
    manifest["files"] = file_digests(env.model)
    _write_manifest(env, manifest)
    assert load_model(env.model).n_features == 3


def test_a_full_temporary_folder_is_named_and_the_model_not_loaded_from_a_partial_copy(
    env, monkeypatch, tiny_tmpfs
):
    import tempfile

    from ltr_bench.models import ModelLoadError

    monkeypatch.setattr(tempfile, "tempdir", str(tiny_tmpfs))  # full to the last block
    with pytest.raises(ModelLoadError, match="could not be copied to a private folder"):
        load_model(env.model)
    assert sorted(p.name for p in tiny_tmpfs.iterdir()) == ["filler"]  # the copy removed


# ------------------------------------- consistent manifest, wrong-shaped or mismatched arrays
# Each folder's manifest is rewritten after the change (sizes and SHA-256 right), so only the
# loaded model's own checks (ltr_bench.models.loading.check_loaded, the tree rankers'
# load_native) can refuse it: exit 1, named, before any work, never a traceback.


def _relisted(folder: Path) -> None:
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["files"] = file_digests(folder)
    (folder / MANIFEST).write_text(json.dumps(manifest))


def _ridge_with(change, n_features: int = 3, command: str = "predict"):
    """A ridge model of ``n_features`` whose state ``change(state)`` rewrites; the argv of
    ``predict`` (on the corpus's 3-feature rows) or ``export``."""

    def setup(e):
        from ltr_bench.model_state import read_state, write_state
        from ltr_bench.models import save_model
        from ltr_bench.registry import make_ranker
        from ltr_bench.testing.data import make_check_data

        X, y, qid = make_check_data(0, n_queries=8, n_features=n_features)
        folder = save_model(
            make_ranker("ridge").fit(X, y, qid=qid), e.root / "ridge", ranker_name="ridge"
        )
        state = read_state(folder / "native")
        change(state)
        write_state(folder / "native", state)
        _relisted(folder)
        if command == "export":
            return ["export", "--model", folder, "--output", e.cwd / "out.onnx"]
        return ["predict", "--model", folder, "--data", e.data / "test.txt"]

    return setup


def _set(name: str, value):
    def change(state):
        state[name] = value(state[name])

    return change


def _nan_at_0(coef):
    coef = coef.copy()
    coef[0] = np.nan
    return coef


def _lightgbm_file_of(n_features: int):
    """The kept LightGBM folder (3 features) with a LightGBM model file of ``n_features``."""

    def setup(e):
        import lightgbm as lgb

        rng = np.random.default_rng(0)
        X = rng.random((60, n_features))
        booster = lgb.train(
            {"objective": "regression", "verbose": -1, "min_data_in_leaf": 2},
            lgb.Dataset(X, X[:, -1]),
            num_boost_round=2,
        )
        booster.save_model(str(e.native / "model.txt"))
        _relisted(e.model)
        return _predict(e)

    return setup


def _no_onnx_written(e, out):
    assert not (e.cwd / "out.onnx").exists()


AGREE = "files do not agree with each other or with its manifest"
SHAPE_CASES = [
    ("a ridge coef of 10 values for 46 features (export)",
     _ridge_with(_set("coef_", lambda c: c[:10]), 46, "export"), 1,
     f"{AGREE}: scoring a probe of 4 rows of 46 features failed: ValueError", _no_onnx_written),
    ("a ridge coef of 2 values for 3 features", _ridge_with(_set("coef_", lambda c: c[:2])),
     1, "scoring a probe of 4 rows of 3 features failed", _fine),
    ("a 46x46 ridge coef (export)",
     _ridge_with(_set("coef_", lambda c: np.tile(c, (c.size, 1))), 46, "export"), 1,
     "probe of 4 rows of 46 features", _no_onnx_written),
    ("a 3x3 ridge coef", _ridge_with(_set("coef_", lambda c: np.tile(c, (c.size, 1)))), 1,
     "probe of 4 rows of 3 features", _fine),
    ("a NaN ridge weight", _ridge_with(_set("coef_", _nan_at_0)), 1,
     "scored NaN or infinite: NaN or infinite learned values in coef_ (1 of 3)", _fine),
    ("a NaN ridge weight (export)", _ridge_with(_set("coef_", _nan_at_0), 3, "export"), 1,
     "scored NaN or infinite: NaN or infinite learned values in coef_ (1 of 3)", _no_onnx_written),
    ("an infinite scaler mean", _ridge_with(_set("scaler_", lambda s: {
        **s, "fitted": {**s["fitted"], "mean_": np.full(3, np.inf)}})), 1,
     "learned values in scaler_.mean_ (3 of 3)", _fine),
    ("a fitted state of 5 features under a manifest of 3",
     _ridge_with(_set("n_features_in_", lambda n: 5)), 1,
     "the fitted state says 5 features, the manifest 3", _fine),
    ("an 8-feature LightGBM file in a 3-feature model's folder", _lightgbm_file_of(8), 1,
     "native/model.txt is a model of 8 features, but the fitted state says 3", _fine),
    ("a 46-feature LightGBM file in a 3-feature model's folder", _lightgbm_file_of(46), 1,
     "native/model.txt is a model of 46 features", _fine),
]  # fmt: skip


@pytest.mark.parametrize(
    "name,setup,code,fragment,check", SHAPE_CASES, ids=[c[0] for c in SHAPE_CASES]
)
def test_a_consistent_manifest_over_mismatched_arrays_is_refused_before_any_work(
    env, name, setup, code, fragment, check
):
    exit_code, out = env.run(*setup(env))
    assert exit_code == code, out
    assert fragment in out, out
    assert "Traceback (most recent call last)" not in out, out
    check(env, out)


@pytest.mark.parametrize("name", ["xgboost-gbrt", "catboost"])
def test_a_library_model_file_of_another_width_is_refused_for_every_tree_library(tmp_path, name):
    from ltr_bench.models import ModelLoadError, save_model
    from ltr_bench.registry import make_ranker
    from ltr_bench.testing.data import make_check_data

    folders = {}
    for n in (3, 5):
        X, y, qid = make_check_data(0, n_queries=8, n_features=n)
        ranker = make_ranker(name, {"n_estimators": 3}).fit(X, y, qid=qid)
        folders[n] = save_model(ranker, tmp_path / str(n), ranker_name=name)
    (file,) = (p.name for p in (folders[3] / "native").iterdir() if p.name.startswith("model."))
    shutil.copyfile(folders[5] / "native" / file, folders[3] / "native" / file)
    _relisted(folders[3])
    with pytest.raises(ModelLoadError, match=f"native/{file} is a model of 5 features"):
        load_model(folders[3])

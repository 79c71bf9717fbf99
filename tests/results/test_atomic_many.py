"""Several files written atomically with their fsyncs together (``atomic_write_many``,
``fsync_all``): each file whole or absent, every one fsynced before any is renamed, renamed
in the order given, nothing left behind by a failure."""

from __future__ import annotations

import errno
import os
import stat

import pytest

from ltr_bench.results import files


def test_every_file_is_written_whole_and_keeps_an_existing_files_mode(tmp_path):
    old = tmp_path / "a.csv"
    old.write_text("old\n")
    os.chmod(old, 0o640)
    out = files.atomic_write_many(
        [(old, b"x,y\n1,2\n"), (tmp_path / "sub" / "b.json", b'{"k": 1}\n')]
    )
    assert out == [old, tmp_path / "sub" / "b.json"]
    assert old.read_bytes() == b"x,y\n1,2\n" and stat.S_IMODE(old.stat().st_mode) == 0o640
    assert (tmp_path / "sub" / "b.json").read_bytes() == b'{"k": 1}\n'
    assert sorted(p.name for p in tmp_path.rglob("*.tmp")) == []


def test_all_files_are_fsynced_before_the_first_rename_and_renamed_in_order(tmp_path, monkeypatch):
    events: list[tuple[str, object]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src, dst):
        events.append(("replace", os.path.basename(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    names = ["k.per_query.csv", "k.run.txt", "k.json"]
    files.atomic_write_many([(tmp_path / n, n.encode()) for n in names])
    monkeypatch.undo()
    synced = [str(p) for kind, p in events[:3] if kind == "fsync"]
    assert len(set(synced)) == 3  # one per file, all before the first rename
    assert all(os.path.basename(p).endswith(".tmp") for p in synced)  # the temporary files
    assert events[3:] == [("replace", n) for n in names]  # the record last


def test_a_failed_fsync_renames_nothing_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    target = tmp_path / "k.json"
    target.write_text("the old record\n")
    real_fsync = os.fsync
    seen: list[int] = []

    def fsync(fd):
        seen.append(fd)
        if len(seen) == 2:
            raise OSError(errno.EIO, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError, match="Input/output"):
        files.atomic_write_many([(tmp_path / "k.per_query.csv", b"new"), (target, b"new")])
    monkeypatch.undo()
    assert target.read_text() == "the old record\n"  # untouched
    assert not (tmp_path / "k.per_query.csv").exists()
    assert list(tmp_path.glob(".*.tmp")) == []


def test_fsync_all_syncs_every_descriptor_from_threads(tmp_path, monkeypatch):
    import threading

    fds = [os.open(tmp_path / f"f{i}", os.O_WRONLY | os.O_CREAT) for i in range(5)]
    seen: dict[int, str] = {}
    real_fsync = os.fsync

    def fsync(fd):
        seen[fd] = threading.current_thread().name
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    try:
        files.fsync_all(fds)
    finally:
        for fd in fds:
            os.close(fd)
    assert sorted(seen) == sorted(fds)
    assert len(set(seen.values())) > 1  # not one after the other on the caller's thread

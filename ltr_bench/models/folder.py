"""Reading a model folder that may come from anyone: only regular files inside it, only the
files its manifest lists, each checked by size and SHA-256 before a library sees it.

A model folder is what a colleague sends or an MLflow artifact store returns, so its tree is
not trusted. The folder itself is opened once (``O_DIRECTORY``: the path the user gave, which
may be a link to a folder) and everything in it is reached from that descriptor, one name at
a time, never following a link (``O_NOFOLLOW``, ``dir_fd``):

* each entry is first ``lstat``-ed, so a symbolic link (wherever it points), a named pipe, a
  device, a socket or a folder where a file belongs is refused by its name without being
  opened (opening a pipe would block, a device could act); nothing outside the folder is
  opened, not even stat-ed through a link, so a message never tells anything about it;
* a file is then opened with ``O_NOFOLLOW | O_NONBLOCK`` and ``fstat``-ed: it must be the same
  regular file (device and inode) the ``lstat`` saw, so an entry swapped between the two is
  refused too; its size is compared with the manifest's *before* a byte is read;
* its bytes are read once from that descriptor, hashed, and written to a private copy
  (:func:`copy_listed`, a folder of this process's own, mode 0700); the ranker's
  ``load_native`` reads the copy, never the model folder. What the library loads is exactly
  the bytes that were checked: no check-then-open race, whatever happens to the folder
  meanwhile.

Only files the manifest lists are copied, and every entry under ``native/`` must be one of
them (or a folder on the way to one): a file added to or removed from the manifest's
``files`` (an edited ``state.json`` taken out of the list) is refused by name.

A hard link is a regular file of the folder (its own entry, not a pointer to a path): it is
read like any other file and must have the size and SHA-256 the manifest records.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from ltr_bench.models.manifest import FORMAT, MANIFEST, NATIVE, ModelLoadError
from ltr_bench.results.files import file_kind

__all__ = [
    "MAX_MANIFEST_BYTES",
    "copy_listed",
    "enclosing_model",
    "open_folder",
    "read_member",
    "unlisted_entries",
    "verify_listed",
]

#: the largest manifest read (parameters, extras and the file list; a real one is a few KiB)
MAX_MANIFEST_BYTES = 16 << 20
_CHUNK = 1 << 20
_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)


def _not_allowed(path: Path, mode: int, wanted: str) -> ModelLoadError:
    return ModelLoadError(
        f"{path} is {file_kind(mode)}, not {wanted}: a model folder holds only regular files and "
        "folders of its own (no links out of it, no pipes or devices); refusing to load it"
    )


def open_folder(folder: Path) -> int:
    """A descriptor of the model folder ``folder`` (the caller closes it)."""
    try:
        return os.open(folder, _FLAGS | os.O_DIRECTORY)
    except FileNotFoundError:
        raise ModelLoadError(f"model folder {folder} does not exist") from None
    except NotADirectoryError:
        raise ModelLoadError(f"model folder {folder} is not a folder") from None
    except OSError as exc:
        raise ModelLoadError(f"model folder {folder} cannot be read: {exc.strerror}") from None


def _lstat(name: str, dir_fd: int, path: Path) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ModelLoadError(f"{path} cannot be read: {exc.strerror}") from None


def _open_dir(name: str, dir_fd: int, path: Path) -> int:
    """The sub-folder ``name`` of ``dir_fd``, never through a link; ModelLoadError otherwise."""
    st = _lstat(name, dir_fd, path)
    if st is None:
        raise ModelLoadError(f"{path} is missing")
    if not stat.S_ISDIR(st.st_mode):
        raise _not_allowed(path, st.st_mode, "a folder")
    try:
        fd = os.open(name, _FLAGS | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError as exc:  # ELOOP / ENOTDIR: replaced by a link or a file since the lstat
        raise ModelLoadError(f"{path} cannot be opened as a folder: {exc.strerror}") from None
    if (os.fstat(fd).st_dev, os.fstat(fd).st_ino) != (st.st_dev, st.st_ino):
        os.close(fd)
        raise ModelLoadError(f"{path} changed while it was being opened; refusing to load it")
    return fd


def _open_file(root_fd: int, folder: Path, rel: str, missing: str) -> tuple[int, int]:
    """(descriptor, size) of the regular file ``rel`` (``a/b/c``) under ``root_fd``, reached
    one component at a time without following a link. ``missing``: the message's tail when
    it does not exist."""
    parts = rel.split("/")
    fds: list[int] = []
    try:
        cur = root_fd
        for i, part in enumerate(parts[:-1]):
            cur = _open_dir(part, cur, folder.joinpath(*parts[: i + 1]))
            fds.append(cur)
        path = folder / rel
        st = _lstat(parts[-1], cur, path)
        if st is None:
            raise ModelLoadError(f"{path} is missing{missing}")
        if not stat.S_ISREG(st.st_mode):
            raise _not_allowed(path, st.st_mode, "a regular file")
        try:
            fd = os.open(parts[-1], _FLAGS | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=cur)
        except OSError as exc:
            raise ModelLoadError(f"{path} cannot be opened: {exc.strerror}") from None
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            os.close(fd)
            raise ModelLoadError(f"{path} changed while it was being opened; refusing to load it")
        return fd, now.st_size
    finally:
        for fd_ in fds:
            os.close(fd_)


def read_member(root_fd: int, folder: Path, rel: str, *, limit: int, missing: str = "") -> bytes:
    """The bytes of the regular file ``rel`` of the folder (see the module); a file larger
    than ``limit`` bytes is refused without being read."""
    fd, size = _open_file(root_fd, folder, rel, missing)
    try:
        if size > limit:
            raise ModelLoadError(
                f"{folder / rel} is {size} bytes, more than the {limit} a model's "
                f"{Path(rel).name} may have; refusing to read it"
            )
        return _read_all(fd, folder / rel)
    finally:
        os.close(fd)


def _read_all(fd: int, path: Path) -> bytes:
    out = bytearray()
    try:
        while chunk := os.read(fd, _CHUNK):
            out += chunk
    except OSError as exc:
        raise ModelLoadError(f"{path} cannot be read: {exc.strerror}") from None
    return bytes(out)


def _copy_checked(
    root_fd: int, folder: Path, rel: str, recorded: dict, manifest_path: Path, dest: Path | None
) -> None:
    """Check the listed file ``rel`` against its ``recorded`` size and SHA-256 (the size
    before reading) and, with ``dest``, write its bytes to ``dest/rel`` as they are read."""
    path = folder / rel
    fd, size = _open_file(root_fd, folder, rel, f" (listed in {manifest_path})")
    out = None
    try:
        if size != recorded["bytes"]:
            raise ModelLoadError(
                f"{path} is damaged: {size} bytes, but {recorded['bytes']} were written"
            )
        if dest is not None:
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            out = open(target, "xb")  # noqa: SIM115 - closed in finally
        digest = hashlib.sha256()
        read = 0
        try:
            while chunk := os.read(fd, _CHUNK):
                read += len(chunk)
                if read > size:  # grew since the fstat: stop reading
                    break
                digest.update(chunk)
                if out is not None:
                    out.write(chunk)
        except OSError as exc:
            raise ModelLoadError(f"{path} cannot be read: {exc.strerror}") from None
        if read != size or digest.hexdigest() != recorded["sha256"]:
            raise ModelLoadError(f"{path} is damaged: its SHA-256 differs from the one written")
    finally:
        os.close(fd)
        if out is not None:
            out.close()


def verify_listed(root_fd: int, folder: Path, files: dict, manifest_path: Path) -> None:
    """Check every file the manifest lists (``files``: checked entries, see
    :func:`ltr_bench.models.manifest.check_files`) and that nothing else is under
    ``native/``; raises :class:`ModelLoadError` naming the first file that is wrong."""
    _check_unlisted(root_fd, folder, files, manifest_path)
    for rel, recorded in files.items():
        _copy_checked(root_fd, folder, rel, recorded, manifest_path, None)


def copy_listed(root_fd: int, folder: Path, files: dict, manifest_path: Path, dest: Path) -> None:
    """:func:`verify_listed`, writing each file's checked bytes to ``dest`` (same relative
    paths) as they are read: what the ranker then loads from ``dest`` is exactly what was
    checked. ``dest`` is the caller's private folder."""
    _check_unlisted(root_fd, folder, files, manifest_path)
    for rel, recorded in files.items():
        _copy_checked(root_fd, folder, rel, recorded, manifest_path, dest)


def _check_unlisted(root_fd: int, folder: Path, files: dict, manifest_path: Path) -> None:
    extra = unlisted_entries(root_fd, folder, files)
    if extra:
        raise ModelLoadError(
            f"{extra[0]} is not listed in the model's manifest {manifest_path} (its 'files'): "
            "the folder was changed after the model was saved; refusing to load it"
        )


def unlisted_entries(root_fd: int, folder: Path, files: Iterable[str]) -> list[Path]:
    """Entries under ``native/`` that are neither a listed file nor a folder on the way to
    one (walked without following links; a missing ``native/`` has none)."""
    listed = set(files)
    ways = {"/".join(rel.split("/")[:i]) for rel in listed for i in range(1, rel.count("/") + 1)}
    found: list[Path] = []

    def walk(dir_fd: int, rel: str) -> None:
        try:
            names = sorted(os.listdir(dir_fd))
        except OSError as exc:
            raise ModelLoadError(f"{folder / rel} cannot be read: {exc.strerror}") from None
        for name in names:
            sub = f"{rel}/{name}"
            if sub in listed:
                continue
            if sub not in ways:
                found.append(folder / sub)
                continue
            fd = _open_dir(name, dir_fd, folder / sub)
            try:
                walk(fd, sub)
            finally:
                os.close(fd)

    st = _lstat(NATIVE, root_fd, folder / NATIVE)
    if st is None:
        return found
    fd = _open_dir(NATIVE, root_fd, folder / NATIVE)
    try:
        walk(fd, NATIVE)
    finally:
        os.close(fd)
    return found


def enclosing_model(path) -> Path | None:
    """The model folder ``path`` lies in (itself or a folder above it holding an ltr-bench
    model manifest), or None: what a command must never write into (the model would no
    longer match its manifest). Links are resolved first, as a writer follows them."""
    target = Path(os.path.realpath(path))
    for folder in (target, *target.parents):
        manifest = folder / MANIFEST
        try:
            st = os.stat(manifest, follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_MANIFEST_BYTES:
                continue
            fd = os.open(manifest, _FLAGS | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            doc = json.loads(_read_all(fd, manifest))
        except (ModelLoadError, ValueError, RecursionError):
            continue
        finally:
            os.close(fd)
        if isinstance(doc, dict) and doc.get("format") == FORMAT:
            return folder
    return None

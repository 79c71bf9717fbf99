"""The parsed-data cache: memory-mappable raw arrays, written atomically.

Layout: ``<cache dir>/<namespace>/<key>/`` holds one raw little-endian binary file per array
(``X.f8``, ``y.i8``, ...) and ``meta.json`` (shapes, dtypes, fingerprints, warnings, what
the entry was built from). Arrays come back as read-only memory maps, so reloading a 2.5 GB
MSLR-WEB30K training matrix costs page-table set-up, not a copy. An entry is built in a
temporary sibling folder and moved into place with one ``os.replace``: a crash or a kill
leaves either no entry or a complete one; the temporary folders of processes that died are
removed by the next write in the same namespace.

Entries are checked when loaded: ``load_entry(..., verify=...)`` recomputes what the entry
recorded about itself (the split fingerprints, see :func:`ltr_bench.folds.fingerprint_arrays`)
from the arrays actually mapped, and an entry that cannot be read or no longer matches (a disk
error, an edit in place) is discarded with a :class:`~ltr_bench.data.errors.DataWarning` and
rebuilt from the source; it is never used. This costs one sha256 pass over the arrays per load
(about 1 GB/s).

Source-file keys (:func:`source_signature`): resolved absolute path, size, ``st_mtime_ns``
and sha256 of the first and last MiB. Hashing whole files would be the purest content key,
but a full sha256 of MSLR-WEB30K (about 3.3 GB per fold as text) costs seconds on every run,
which is the same order as the whole reload; size + mtime change on every ordinary write,
copy or re-extraction, and the head/tail hash catches a replaced file with a preserved mtime
and size in the regions where format changes show (headers, truncation). The one change it
can miss is an in-place edit in the middle of a file that keeps its size and resets its mtime
by hand. For that case every entry also records the sha256 of its whole source files
(``source_sha256``), and ``ltr-bench cache verify`` re-hashes the sources and discards the
entries whose sources changed (:func:`verify_entries`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ltr_bench.data.errors import DataWarning
from ltr_bench.environment import process_alive

__all__ = [
    "CACHE_VERSION",
    "CacheEntry",
    "cache_key",
    "discard_entry",
    "file_sha256",
    "iter_entries",
    "load_entry",
    "remove_stale_temporaries",
    "source_signature",
    "write_entry",
]

#: Bump when the parser or the entry format changes: old entries are then simply not found.
CACHE_VERSION = 1

_EDGE = 1 << 20


def source_signature(path) -> dict:
    """Identity of a source file for cache keys: path, size, mtime_ns, head/tail sha256."""
    path = Path(path).resolve()
    st = path.stat()
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        h.update(fh.read(_EDGE))
        if st.st_size > 2 * _EDGE:
            fh.seek(st.st_size - _EDGE)
        h.update(fh.read(_EDGE))
    return {
        "path": str(path),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "edges_sha256": h.hexdigest(),
    }


def file_sha256(path) -> str:
    """sha256 of a whole file (its bytes on disk, compressed or not), read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_EDGE), b""):
            h.update(block)
    return h.hexdigest()


def cache_key(parts: dict) -> str:
    """sha256 of the canonical JSON of ``parts`` plus :data:`CACHE_VERSION`."""
    blob = json.dumps({"v": CACHE_VERSION, **parts}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:40]


def _entry_dir(cache_dir: Path, namespace: str, key: str) -> Path:
    return Path(cache_dir) / namespace / key


def _map(path: Path, dtype: str, shape) -> np.ndarray:
    shape = tuple(int(s) for s in shape)
    if int(np.prod(shape)) == 0:
        return np.empty(shape, dtype=dtype)
    mm = np.memmap(path, dtype=np.dtype(dtype), mode="r", shape=shape, order="C")
    # A plain ndarray view of the map: same pages, no np.memmap subclass surprises downstream.
    return mm.view(np.ndarray)


def discard_entry(folder: Path, why: str) -> None:
    """Remove a damaged entry, saying so (a :class:`DataWarning` naming the folder)."""
    warnings.warn(
        f"parsed-data cache entry {folder} is damaged ({why}); it is discarded and "
        "rebuilt from the source files",
        DataWarning,
        stacklevel=3,
    )
    shutil.rmtree(folder, ignore_errors=True)


def _read_entry(d: Path) -> tuple[dict, dict]:
    meta = json.loads((d / "meta.json").read_text())
    arrays = {}
    for name, a in meta["arrays"].items():
        f = d / a["file"]
        expected = int(np.prod([int(x) for x in a["shape"]])) * np.dtype(a["dtype"]).itemsize
        if f.stat().st_size != expected:
            raise ValueError(f"{f.name} holds {f.stat().st_size} bytes, expected {expected}")
        arrays[name] = _map(f, a["dtype"], a["shape"])
    return arrays, meta


def load_entry(
    cache_dir,
    namespace: str,
    key: str,
    *,
    verify: Callable[[dict, dict], str | None] | None = None,
) -> tuple[dict, dict] | None:
    """``(arrays, meta)`` of a complete entry, arrays memory-mapped read-only; else None.

    ``verify(arrays, meta)`` returns None when the entry is sound, else what is wrong. An
    entry that exists but cannot be read, or fails ``verify``, is discarded
    (:func:`discard_entry`) and None is returned, so the caller rebuilds it.
    """
    d = _entry_dir(cache_dir, namespace, key)
    if not d.is_dir():
        return None
    try:
        arrays, meta = _read_entry(d)
        problem = verify(arrays, meta) if verify is not None else None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        problem = f"unreadable: {type(exc).__name__}: {str(exc)[:200]}"
    if problem:
        discard_entry(d, problem)
        return None
    return arrays, meta


@dataclass
class CacheEntry:
    """One entry as listed by :func:`iter_entries`: its folder, namespace, meta (None when
    unreadable) and size on disk in bytes."""

    folder: Path
    namespace: str
    meta: dict | None
    size: int


def iter_entries(cache_dir) -> Iterator[CacheEntry]:
    """Every complete entry folder under ``cache_dir`` (temporary folders excluded)."""
    root = Path(cache_dir)
    if not root.is_dir():
        return
    for ns in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for d in sorted(p for p in ns.iterdir() if p.is_dir() and not p.name.startswith(".")):
            try:
                meta = json.loads((d / "meta.json").read_text())
            except (OSError, ValueError):
                meta = None
            size = sum(f.stat().st_size for f in d.iterdir() if f.is_file())
            yield CacheEntry(d, ns.name, meta, size)


def remove_stale_temporaries(folder: Path, *, min_age: float = 3600.0) -> list[Path]:
    """Remove ``.tmp-<key>-<pid>-<id>`` folders under ``folder`` left by processes that no
    longer run (or, for foreign names, older than ``min_age`` seconds); returns them."""
    removed: list[Path] = []
    folder = Path(folder)
    if not folder.is_dir():
        return removed
    for p in folder.iterdir():
        if not (p.name.startswith(".tmp-") and p.is_dir()):
            continue
        parts = p.name.split("-")
        try:
            stale = not process_alive(int(parts[2]))
        except (IndexError, ValueError):
            try:
                stale = time.time() - p.stat().st_mtime > min_age
            except OSError:
                continue
        if stale:
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
    return removed


class EntryWriter:
    """Collects the files of a cache entry in its temporary folder (see :func:`write_entry`)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.arrays: dict[str, dict] = {}

    def path(self, name: str, dtype) -> Path:
        """File that will hold array ``name``; register its shape with :meth:`declare`."""
        return self.folder / f"{name}.{np.dtype(dtype).str.lstrip('<>|=')}"

    def declare(self, name: str, dtype, shape) -> None:
        self.arrays[name] = {
            "file": self.path(name, dtype).name,
            "dtype": np.dtype(dtype).newbyteorder("<").str,
            "shape": [int(s) for s in shape],
        }

    def save(self, name: str, array: np.ndarray) -> None:
        """Write a whole in-memory array."""
        arr = np.ascontiguousarray(array)
        arr = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
        with open(self.path(name, arr.dtype), "wb") as fh:
            fh.write(arr.tobytes())
        self.declare(name, arr.dtype, arr.shape)

    def open_map(self, name: str, dtype, shape) -> np.ndarray:
        """A writable memory map for array ``name`` (filled in place, e.g. chunk by chunk)."""
        self.declare(name, dtype, shape)
        p = self.path(name, dtype)
        if int(np.prod(shape)) == 0:
            p.touch()
            return np.empty(shape, dtype=dtype)
        return np.memmap(p, dtype=np.dtype(dtype).newbyteorder("<"), mode="w+", shape=tuple(shape))


def write_entry(
    cache_dir, namespace: str, key: str, build: Callable[[EntryWriter], dict]
) -> tuple[dict, dict]:
    """Build an entry atomically and return it loaded ``(arrays, meta)``.

    ``build(writer)`` writes arrays through ``writer`` and returns extra metadata (JSON-able).
    The folder is renamed into place only when ``build`` returned; on any exception the
    temporary folder is removed. If another process finished the same entry first, its copy
    is kept (both are identical by construction of the key).
    """
    final = _entry_dir(cache_dir, namespace, key)
    final.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(final.parent)
    tmp = final.parent / f".tmp-{key}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        writer = EntryWriter(tmp)
        extra = build(writer)
        meta = {"version": CACHE_VERSION, "arrays": writer.arrays, **extra}
        with open(tmp / "meta.json", "w") as fh:
            json.dump(meta, fh, indent=1, default=str)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.replace(tmp, final)
        except OSError:
            # Another process finished this entry first (keep it), or a damaged entry is in
            # the way (replace it).
            try:
                _read_entry(final)
                sound = True
            except (OSError, ValueError, KeyError, TypeError):
                sound = False
            if not sound:
                shutil.rmtree(final, ignore_errors=True)
                os.replace(tmp, final)
            else:
                shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    loaded = load_entry(cache_dir, namespace, key)
    if loaded is None:  # pragma: no cover - only if the folder vanished under us
        raise OSError(f"cache entry {final} could not be read back")
    return loaded

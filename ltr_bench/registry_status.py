"""Whether each registered ranker imports, for ``ltr-bench rankers``: the real check, cached.

The real check is :meth:`~ltr_bench.registry.RankerEntry.load` (import the plugin's module,
look for ``fit`` and ``predict``). Every ranker imports scikit-learn, which costs about a
second, so an "ok" is remembered in ``rankers-status.json`` in the user's cache folder
(``$LTR_BENCH_CACHE``, else ``$XDG_CACHE_HOME/ltr_bench``, else ``~/.cache/ltr_bench``) and
reused while nothing that could change the answer has changed:

* **the environment**: the Python executable, its version, ``sys.path`` and the modification
  time of every ``sys.path`` folder (installing, upgrading or removing any distribution adds
  or removes an entry there, which changes that time);
* **every file the checks imported**: path, size and ``mtime_ns`` of the file of every module
  loaded when the answers were recorded (the plugins, scikit-learn, SciPy, ltr_bench itself);
  one changed or missing file makes every cached answer void;
* **per ranker**: its name, ``module:attribute``, distribution name and version, the
  installed version of each requirement its distribution declares, and path, size and
  ``mtime_ns`` of every file of the plugin's top-level package (a file added there counts).

Only "ok" is cached: a ranker that fails is imported again on every call, so its error is
always current. A missing, unreadable or damaged cache file is ignored and rewritten; the file
is replaced atomically. What the key cannot see (an edit that keeps a file's size and
modification time, an environment variable a plugin reads at import) is what
``ltr-bench rankers --recheck`` is for: it imports every ranker and rewrites the cache.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from ltr_bench.registry import RankerEntry, RankerLoadError, installed_version

__all__ = ["CACHE_FILE", "check_statuses", "status_cache_path"]

CACHE_FILE = "rankers-status.json"
FORMAT = 1
#: records kept in the file, one per environment (the most recently written)
KEEP = 8


def status_cache_path() -> Path:
    """``$LTR_BENCH_CACHE/rankers-status.json``, else under ``$XDG_CACHE_HOME/ltr_bench``
    (an absolute path, as the XDG specification asks), else under ``~/.cache/ltr_bench``."""
    root = os.environ.get("LTR_BENCH_CACHE")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = xdg if xdg and os.path.isabs(xdg) else os.path.join("~", ".cache")
        root = os.path.join(base, "ltr_bench")
    return Path(root).expanduser() / CACHE_FILE


def check_statuses(entries: list[RankerEntry], *, recheck: bool = False) -> list[str]:
    """``"ok"`` or ``"unavailable: <why>"`` for each entry, in order. A cached "ok" is used
    when its key still holds (module docstring); every other entry is imported (``recheck``:
    every entry, and this environment's record is replaced whatever it held), and the cache
    is rewritten when a new "ok" was found or a stale one dropped."""
    path = status_cache_path()
    cached = {} if recheck else _read(path, _environment())
    memo: dict = {}  # within one call: entries share distributions and packages
    keys = {e.name: _entry_key(e, memo) for e in entries}
    statuses, fresh = [], {}
    for e in entries:
        hit = cached.get("rankers", {}).get(e.name)
        if isinstance(hit, dict) and hit.get("key") == keys[e.name] and hit.get("status") == "ok":
            statuses.append("ok")
            continue
        try:
            e.load()
        except RankerLoadError as exc:
            statuses.append(f"unavailable: {exc}")
            continue
        statuses.append("ok")
        fresh[e.name] = {"key": keys[e.name], "status": "ok"}
    before = cached.get("rankers", {})
    after = {name: r for name, r in before.items() if name not in keys}  # not asked about
    after.update(fresh)
    after.update(
        (e.name, before[e.name])
        for e, status in zip(entries, statuses)
        if status == "ok" and e.name not in fresh
    )
    if recheck or after != before:  # a new ok, or a stale or failing one dropped
        files = {**cached.get("files", {}), **_loaded_files()}
        _write(path, {"rankers": after, "files": files})
    return statuses


# ------------------------------------------------------------------------------- the keys


def _environment() -> list:
    """The interpreter and the import path with each folder's ``mtime_ns`` (JSON values)."""
    stamps = []
    for entry in sys.path:
        try:
            stamps.append([entry, os.stat(entry or ".").st_mtime_ns])
        except OSError:
            stamps.append([entry, None])
    return [sys.executable, sys.version, sys.implementation.cache_tag, stamps]


#: what a file that cannot be read contributes to a key instead of [size, mtime_ns]
_NO_STAMP: list[Any] = [None]


def _stamp(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _loaded_files() -> dict[str, list[int]]:
    """Path -> [size, mtime_ns] of the file of every module imported in this process."""
    files = {}
    for module in list(sys.modules.values()):
        name = getattr(module, "__file__", None)
        if isinstance(name, str):
            name = os.path.abspath(name)
            stamp = _stamp(name)
            if stamp is not None:  # e.g. a module inside a zip file: nothing to compare
                files[name] = stamp
    return files


def _entry_key(e: RankerEntry, memo: dict) -> str:
    module = e.target.split(":", 1)[0]
    parts = [
        e.name,
        e.target,
        e.distribution,
        e.version,
        _requirement_versions(e.distribution, memo),
        _package_files(module.split(".", 1)[0], memo),
    ]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _requirement_versions(distribution: str, memo: dict) -> list:
    """[requirement as declared, installed version or None] for each ``Requires-Dist``."""
    key = ("requires", distribution)
    if key not in memo:
        try:
            requires = metadata.distribution(distribution).requires or []
        except Exception:  # "(import path)", or unreadable metadata
            requires = []
        out = []
        for text in requires:
            name = text.split(";", 1)[0].strip()
            for sep in "<>=!~[ (":
                name = name.split(sep, 1)[0]
            out.append([text, installed_version(name)])
        memo[key] = out
    return memo[key]


def _package_files(top: str, memo: dict) -> list:
    """[relative path, size, mtime_ns] of every file of top-level package or module ``top``
    (``__pycache__`` and hidden folders skipped), found without importing it."""
    key = ("package", top)
    if key not in memo:
        try:
            spec = importlib.util.find_spec(top)  # a top-level name: finds, imports nothing
        except (ImportError, ValueError):
            spec = None
        roots = []
        if spec is not None:
            roots = list(spec.submodule_search_locations or []) or [spec.origin or ""]
        out: list[list[Any]] = [[top, str(spec.origin) if spec else None]]
        for root in roots:
            if os.path.isfile(root):
                out.append([root, *(_stamp(root) or _NO_STAMP)])
                continue
            for folder, dirs, names in os.walk(root):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
                for name in sorted(names):
                    full = os.path.join(folder, name)
                    out.append([full, *(_stamp(full) or _NO_STAMP)])
        memo[key] = out
    return memo[key]


# ------------------------------------------------------------------------------ the file


def _environment_id(environment: list) -> str:
    return hashlib.sha256(json.dumps(environment).encode()).hexdigest()[:16]


def _load(path: Path) -> dict:
    """The file's records, one per environment id; ``{}`` when missing or damaged."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except Exception:  # a damaged cache is ignored and rebuilt, never an error
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return {}
    records = data.get("environments")
    return records if isinstance(records, dict) else {}


def _read(path: Path, environment: list) -> dict:
    """This environment's cached answers if its record is sound and every file it lists is
    unchanged; ``{}`` otherwise (missing, damaged, another format, or stale)."""
    try:
        record = _load(path).get(_environment_id(environment))
        if not isinstance(record, dict) or record.get("environment") != environment:
            return {}
        files, rankers = record["files"], record["rankers"]
        if not isinstance(files, dict) or not isinstance(rankers, dict):
            return {}
        for name, stamp in files.items():
            if _stamp(name) != stamp:
                return {}
        return {"files": files, "rankers": rankers}
    except Exception:  # a damaged cache is ignored and rebuilt, never an error
        return {}


def _write(path: Path, content: dict) -> None:
    """Store ``content`` as the record of the environment as it is now (after the checks,
    which may have added a ``__pycache__`` folder to a ``sys.path`` folder, and after the
    cache folder was made), keeping the records of the :data:`KEEP` - 1 other environments
    written most recently (``ltr-bench`` and ``python -m ltr_bench`` differ in
    ``sys.path[0]``; several virtual environments may share one cache folder). The file is
    replaced atomically (a temporary file in the same folder, then ``os.replace``; temporary
    files older than an hour, left by a writer that was killed, are removed); a cache that
    cannot be written is silently skipped."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        environment = _environment()
        records = _load(path)
        records.pop(_environment_id(environment), None)
        others = sorted(
            (r for r in records.items() if isinstance(r[1], dict)),
            key=lambda r: r[1].get("written") if isinstance(r[1].get("written"), float) else 0.0,
        )[-(KEEP - 1) :]
        record = {"environment": environment, "written": time.time(), **content}
        records = {**dict(others), _environment_id(environment): record}
        fd, tmp = tempfile.mkstemp(prefix=f".{CACHE_FILE}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"format": FORMAT, "environments": records}, f, separators=(",", ":"))
        os.replace(tmp, path)
        tmp = None
        for stale in path.parent.glob(f".{CACHE_FILE}.*.tmp"):  # left by a killed writer
            if time.time() - stale.stat().st_mtime > 3600:
                stale.unlink()
    except OSError:
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass

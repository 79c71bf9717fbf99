"""Writing an exported file atomically and removing what a killed export left:
:func:`write_locked`.

Like :func:`ltr_bench.results.atomic_write_bytes` (a temporary sibling
``.<name>.<random>.tmp``, fsync, rename), but the temporary file is ``flock``-ed while it is
written. An export killed (SIGKILL, a power cut) before its rename leaves a complete hidden
``.tmp`` that nothing would ever remove; the lock tells such a file (no holder: its writer is
gone, the kernel let go of the lock) from one a concurrent export is still writing (locked),
so the next export of the same file removes only the stale ones.
"""

from __future__ import annotations

import fcntl
import os
import re
import stat
from pathlib import Path

__all__ = ["remove_stale_temps", "write_locked"]


def _temp_pattern(target: Path) -> re.Pattern[str]:
    """The names :func:`tempfile.mkstemp` gives with our prefix and suffix (8 characters of
    ``[a-z0-9_]``)."""
    return re.compile(re.escape(f".{target.name}.") + r"[a-z0-9_]{8}" + re.escape(".tmp"))


def remove_stale_temps(target: Path) -> list[Path]:
    """Remove the temporary siblings of ``target`` that no live writer holds (see the
    module); returns them. Links, folders and files of other names are never touched."""
    pattern = _temp_pattern(target)
    removed: list[Path] = []
    try:
        names = os.listdir(target.parent)
    except OSError:
        return removed
    for name in names:
        if not pattern.fullmatch(name):
            continue
        path = target.parent / name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue  # a link, or gone meanwhile
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # a live export is writing it
            os.unlink(path)
            removed.append(path)
        except OSError:
            continue
        finally:
            os.close(fd)
    return removed


def write_locked(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically with a locked temporary file
    (:func:`~ltr_bench.results.atomic_write_bytes` with ``locked=True``: a link's target is
    written, a character device directly, a missing folder is created; an existing file
    keeps its permission bits, a new one gets the umask's), after removing the stale
    temporary siblings of ``path``. Returns the path written; raises ``OSError``."""
    from ltr_bench.results.files import atomic_write_bytes, write_target

    target, direct = write_target(Path(path))  # through a link: its target
    if not direct:  # a character device (/dev/stdout) is written as it is
        remove_stale_temps(target)
    return atomic_write_bytes(target, data, locked=True)

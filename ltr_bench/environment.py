"""Where a result was computed: package versions, git commits, CPU, platform.

Captured once per process (:func:`environment` is cached) and stored in every
:class:`~ltr_bench.results.ResultRecord`, so a number can always be traced to the code and
machine that produced it. Versions come from installed distribution metadata; nothing is
imported to read them.
"""

from __future__ import annotations

import functools
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from ltr_bench.timing import cpu_count

__all__ = ["environment", "environment_soon", "process_alive"]


def process_alive(pid: int) -> bool:
    """Whether a process with this id runs on this machine (signal 0: nothing is sent).
    A process of another user counts as alive; ``pid <= 0`` (a process group) as not."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists, owned by someone else
        return True
    return True


def _git_commit(path: Path) -> str | None:
    """Commit of the git work tree containing ``path`` (``+dirty`` if modified), else None."""
    try:
        head = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
        if head.returncode != 0:
            return None
        commit = head.stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(path), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        if dirty.returncode == 0 and dirty.stdout.strip():
            commit += "+dirty"
        return commit
    except (OSError, subprocess.SubprocessError):
        return None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


#: distributions whose versions a record keeps; the XGBoost module comes from ``xgboost`` or
#: from its CPU build ``xgboost-cpu`` (ltr-bench depends on the latter), whichever is installed
_VERSIONED = (
    "ltr-bench",
    "numpy",
    "scipy",
    "scikit-learn",
    "lightgbm",
    "xgboost",
    "xgboost-cpu",
    "catboost",
    "mlflow",
)


@functools.cache
def environment(cwd: str | None = None) -> dict[str, Any]:
    """Where a record was computed: package versions, git commits, CPU, thread count.

    Versions come from installed distribution metadata (nothing is imported). ``git_commit``
    is the commit of the repository holding the working directory, ``ltr_bench_git_commit``
    the one holding the ltr_bench sources (``None`` outside a git checkout).
    """
    from importlib import metadata

    versions: dict[str, str | None] = {"python": platform.python_version()}
    for dist in _VERSIONED:
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    here = Path(cwd) if cwd else Path.cwd()
    return {
        "versions": versions,
        "git_commit": _git_commit(here),
        "ltr_bench_git_commit": _git_commit(Path(__file__).resolve().parent),
        "cpu_model": _cpu_model(),
        "cpu_count": cpu_count(),
        "platform": platform.platform(),
        "hostname": platform.node(),
    }


def environment_soon():
    """Start computing :func:`environment` (of the working directory) on a thread and return
    a function that waits for it. ``run`` calls it before importing the rankers: the four
    ``git`` subprocesses (~40-65 ms) then run while the run imports, not before its first
    cell; waiting before the cells start keeps the thread away from the stages."""
    import threading

    thread = threading.Thread(target=environment, name="ltr-bench-environment", daemon=True)
    thread.start()
    return thread.join

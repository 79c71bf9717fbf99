"""Timing one ``ltr-bench`` command as a user waits for it, for the scripts of this folder
(``bench_overhead.py``, ``bench_overhead_turns.py``, ``bench_keep_models.py``,
``bench_dask_cells.py``): wall time from its start to its exit, the CPU seconds of it and of
every process it started (orphans included), the wait after its last line of output, and the
stage time its records count."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

STAGES = ("setup", "fit", "score", "evaluate")


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


#: with ``--reference CHECKOUT``: the parts run a second time on that checkout's code
REFERENCE: list[Path] = []


def cli() -> list[str]:
    exe = Path(sys.executable).with_name("ltr-bench")
    if REFERENCE or not exe.exists():
        return [sys.executable, "-m", "ltr_bench"]
    return [str(exe)]


#: CPU seconds (user + system) of the last :func:`timed` command and all its descendant
#: processes (orphans included, see :func:`_subreaper`): less sensitive to a shared
#: machine's load than wall time
LAST_CPU = [0.0]


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux), so that their CPU
    time is counted too: a local Dask cluster's workers are forked from a forkserver that
    outlives the ``ltr-bench`` process by a moment and is never waited for by it."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # SUBREAPER
    except (OSError, AttributeError):
        return False


SUBREAPER = _subreaper()


def _reap(timeout: float = 10.0) -> None:
    """Wait for the orphans of the last command (reparented here) to exit."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.02)


def timed(args: list[str], cwd: Path, env: dict) -> float:
    cpu = _children_cpu()
    t = time.perf_counter()
    proc = subprocess.run(cli() + args, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    _reap()
    LAST_CPU[0] = _children_cpu() - cpu
    if proc.returncode != 0:
        raise SystemExit(f"ltr-bench {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return wall


#: seconds from the last line the command printed on stdout (the summary table: the user
#: has the results) to its exit, for the last :func:`timed` command: the wait at exit
LAST_WAIT = [0.0]


def timed_lines(args: list[str], cwd: Path, env: dict) -> float:
    """:func:`timed`, reading the command's stdout as it comes: also sets
    :data:`LAST_WAIT`. Wall = from the command's start to its exit (what a user waits for)."""
    import threading

    cpu = _children_cpu()
    t = time.perf_counter()
    proc = subprocess.Popen(
        cli() + args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    err: list[str] = []
    drain = threading.Thread(target=lambda: err.append(proc.stderr.read()), daemon=True)
    drain.start()
    last = t
    for _line in proc.stdout:
        last = time.perf_counter()
    proc.wait()
    wall = time.perf_counter() - t
    LAST_WAIT[0] = t + wall - last
    drain.join()
    _reap()
    LAST_CPU[0] = _children_cpu() - cpu
    if proc.returncode != 0:
        raise SystemExit(f"ltr-bench {' '.join(args)} failed ({proc.returncode}):\n{err}")
    return wall


def records(results: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(results.glob("*.json"))]


def stage_seconds(recs: list[dict]) -> float:
    """Setup + fit + score + evaluate of every record, plus each fold's load once."""
    total = sum(r["stage_seconds"].get(s, 0.0) for r in recs for s in STAGES)
    loads = {
        (r["dataset"], r["fold"], r["seed"]): r["stage_seconds"].get("load", 0.0) for r in recs
    }
    return total + sum(loads.values())

"""Fit wall time, scoring time per document, peak memory, thread pinning.

What the numbers mean (they are recorded with every result):

``fit_seconds``
    Wall-clock seconds (:func:`time.perf_counter`) of one ``fit`` call, validation split
    included when the ranker uses it.
``score_us_per_doc``
    ``median(t_1..t_R) / n_docs * 1e6``: one untimed warm-up ``predict`` on the test split
    (its scores are the ones evaluated), then ``R`` timed calls (``R = 5`` by default, fewer
    when ``R`` calls would exceed ``max_seconds``; at least one). The median makes a single
    disturbed call (another process, a GC pause) harmless. Each call is the ranker's whole
    ``predict`` on the test split's ``X`` (float64, C-contiguous) and ``qid``: its input
    checks, any conversion or copy, its thread-pool handling and the model's arithmetic,
    inside the cell's thread limit (``--threads``: set once around fit and scoring; without
    it a ranker that limits its BLAS pools in ``predict`` sets them per call, about 25 µs
    each, see :func:`thread_limit`). The built-in rankers
    make the first three small beside the model (``ltr_bench.predict_input``;
    ``benchmarks/bench_scoring.py`` measures each against its bare library call).
``query_ms_p50`` / ``query_ms_p99``
    What one query costs: after the bulk timing, the test split is scored again one query
    per ``predict`` call (the rows of one query, a view of the split, and its ``qid``) for
    up to ``max_queries`` queries (200 by default, spread evenly over the split in its
    order) or until ``max_seconds`` (5 s) of such calls have run, at least one query. Each
    call's wall time from the call to its return, in milliseconds: the 50th and 99th
    percentiles (numpy's linear interpolation, so with fewer than 100 queries the p99 lies
    between the two slowest). It includes everything a caller pays for one query: the input
    checks, any conversion, the model, the thread-pool handling of the ranker's ``predict``
    (inside the cell's own thread limit, as above), and nothing of the harness. The model
    is warm (the bulk calls ran just before); each query is called once. Its scores are
    never evaluated. ``query_latency_queries`` is the number of queries timed (0 in records
    from before it was measured, or when a one-query call failed: a warning says why). The
    cell's ``stage_seconds["score"]`` includes these calls.
``peak_rss_mb``
    Peak resident set size of the whole process during the measured block (fit + scoring),
    in MiB (2**20 bytes). It includes everything the process holds: the loaded fold, the
    Python interpreter and libraries, the model. On Linux the kernel's own high-water mark
    (``VmHWM``) is reset at the start of the block (``/proc/self/clear_refs``) and read at
    the end, so short spikes are not missed; where that is not possible, a thread samples RSS
    with psutil every ``interval`` seconds and spikes shorter than that can be missed.
    Either way the value is the maximum of what was seen, never below the RSS at entry.
``ranker_peak_mb``
    ``peak_rss_mb`` minus the RSS when the block started (the loaded data, the interpreter,
    MLflow and everything else the process already held): what fitting and scoring the
    ranker added at their peak, the number to compare between rankers.
``load_avg``
    The machine's 1-minute load average (``os.getloadavg``) when a cell starts and ends; a
    value well above the thread count means other work shared the cores, and its timings
    are suspect.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

__all__ = [
    "PeakMemory",
    "QueryLatency",
    "load_average",
    "ScoreTiming",
    "Stopwatch",
    "thread_limit",
    "time_queries",
    "time_scoring",
]

_MIB = float(1 << 20)


class Stopwatch:
    """``with Stopwatch() as sw: ...`` then ``sw.seconds`` (perf_counter wall time)."""

    def __init__(self) -> None:
        self.seconds = float("nan")
        self._start = 0.0

    def __enter__(self) -> Stopwatch:
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.seconds = time.perf_counter() - self._start


@dataclass
class ScoreTiming:
    """Result of :func:`time_scoring`.

    scores: output of the warm-up call (float64, shape (n_docs,)).
    seconds: each timed call's wall time; median_seconds: their median;
    us_per_doc: ``median_seconds / n_docs * 1e6`` (NaN when n_docs == 0).
    """

    scores: np.ndarray
    warmup_seconds: float
    seconds: list[float]
    median_seconds: float
    us_per_doc: float

    @property
    def repeats(self) -> int:
        return len(self.seconds)


def time_scoring(
    predict: Callable[[], np.ndarray], n_docs: int, *, repeats: int = 5, max_seconds: float = 30.0
) -> ScoreTiming:
    """Time ``predict()`` (a closure over the test split): warm-up, then ``repeats`` timed calls.

    The number of timed calls is ``min(repeats, max(1, floor(max_seconds / warmup_seconds)))``
    so a slow scorer on a huge test split is timed once rather than for minutes.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    t0 = time.perf_counter()
    scores = predict()
    warm = time.perf_counter() - t0
    n = repeats
    if warm > 0 and warm * repeats > max_seconds:
        n = max(1, int(max_seconds // warm))
    seconds = []
    for _ in range(n):
        t0 = time.perf_counter()
        predict()
        seconds.append(time.perf_counter() - t0)
    med = statistics.median(seconds)
    per_doc = med / n_docs * 1e6 if n_docs > 0 else float("nan")
    return ScoreTiming(
        scores=scores, warmup_seconds=warm, seconds=seconds, median_seconds=med, us_per_doc=per_doc
    )


@dataclass
class QueryLatency:
    """Result of :func:`time_queries`: ``seconds`` of each timed one-query call (in the
    order called), their 50th / 99th percentiles in milliseconds (NaN when none)."""

    seconds: list[float]
    p50_ms: float
    p99_ms: float

    @property
    def n_queries(self) -> int:
        return len(self.seconds)


def time_queries(
    predict: Callable[[int, int], object],
    bounds: np.ndarray,
    *,
    max_queries: int = 200,
    max_seconds: float = 5.0,
) -> QueryLatency:
    """Time ``predict(a, b)`` (scoring rows ``a:b``, one query) for up to ``max_queries``
    queries of the split whose query blocks start at ``bounds[:-1]`` (``bounds`` from
    :func:`ltr_bench.ranker.query_boundaries`), chosen evenly over the split, stopping once
    the timed calls add up to ``max_seconds`` (at least one call). See the module for what
    the numbers include."""
    n_q = len(bounds) - 1
    if n_q < 1 or max_queries < 1:
        return QueryLatency([], float("nan"), float("nan"))
    picks = np.unique(np.linspace(0, n_q - 1, min(n_q, max_queries)).round().astype(np.int64))
    seconds: list[float] = []
    total = 0.0
    for i in picks:
        a, b = int(bounds[i]), int(bounds[i + 1])
        t0 = time.perf_counter()
        predict(a, b)
        dt = time.perf_counter() - t0
        seconds.append(dt)
        total += dt
        if total >= max_seconds:
            break
    p50, p99 = np.percentile(np.asarray(seconds) * 1e3, [50, 99])
    return QueryLatency(seconds, float(p50), float(p99))


def _read_vm_hwm() -> int | None:
    """The kernel's peak-RSS mark of this process in bytes (Linux), else None."""
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _reset_vm_hwm() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0: write 5 to /proc/self/clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _current_rss() -> int:
    try:
        import psutil

        return int(psutil.Process().memory_info().rss)
    except Exception:  # psutil missing or unsupported platform
        return 0


def load_average() -> float | None:
    """The 1-minute load average, or None where the platform has none."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


class PeakMemory:
    """Context manager measuring the process's peak RSS inside the block (see module doc).

    ``peak_bytes`` / ``peak_mb`` (MiB) after exit; ``method`` says how ("vmhwm" or
    "sampling"). Not reentrant: the kernel mark is process-wide, so do not nest two monitors
    (the inner reset would hide the outer block's earlier peak).
    """

    def __init__(self, interval: float = 0.02) -> None:
        self.interval = interval
        self.peak_bytes = 0
        self.entry_bytes = 0
        self.method = "sampling"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._hwm = False

    @property
    def peak_mb(self) -> float:
        return self.peak_bytes / _MIB

    @property
    def above_entry_mb(self) -> float:
        """Peak minus the RSS at entry: what the block itself added at its peak (MiB)."""
        return max(0, self.peak_bytes - self.entry_bytes) / _MIB

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            rss = _current_rss()
            if rss > self.peak_bytes:
                self.peak_bytes = rss

    def __enter__(self) -> PeakMemory:
        self._hwm = _reset_vm_hwm() and _read_vm_hwm() is not None
        self.method = "vmhwm" if self._hwm else "sampling"
        self.peak_bytes = self.entry_bytes = _current_rss()
        self._stop.clear()
        self._thread = None
        if not self._hwm:  # the kernel mark sees every spike; sample only without it
            self._thread = threading.Thread(target=self._sample, name="ltr-bench-rss", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.peak_bytes = max(self.peak_bytes, _current_rss())
        if self._hwm:
            hwm = _read_vm_hwm()
            if hwm is not None:
                self.peak_bytes = max(self.peak_bytes, hwm)


@contextlib.contextmanager
def thread_limit(n_threads: int | None) -> Iterator[None]:
    """Limit BLAS/OpenMP thread pools (threadpoolctl) to ``n_threads`` inside the block.

    ``None`` changes nothing. A ranker's own thread parameter (``RankerTags.thread_param``)
    is set separately by the harness; this catches numpy/scipy BLAS calls and OpenMP pools
    that a ranker does not expose as a parameter.

    Inside a block of the same limit (the harness limits a whole cell; a ranker's
    ``predict`` limits each call) nothing is done: setting and restoring every pool costs
    about 25 µs, more than a linear model's arithmetic for one query.
    """
    if n_threads is None:
        yield
        return
    n = int(n_threads)
    active = _active_limits()
    if active and active[-1] == n:
        yield
        return
    controller = _controller()
    if controller is None:  # pragma: no cover - threadpoolctl is a dependency
        yield
        return
    with controller.limit(limits=n):
        active.append(n)
        try:
            yield
        finally:
            active.pop()


#: per thread: the limits of the enclosing ``thread_limit`` blocks, innermost last
_local = threading.local()


def _active_limits() -> list[int]:
    stack = getattr(_local, "limits", None)
    if stack is None:
        stack = _local.limits = []
    return stack


#: (number of loaded modules when it was made, the ThreadpoolController)
_controller_cache: tuple | None = None


def _controller():
    """threadpoolctl's ``ThreadpoolController``, kept while no module was imported since it
    was made: building one scans every loaded shared library (about 4 ms, paid by every
    tuning trial otherwise), and a newly loaded BLAS/OpenMP library comes with an import."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency
        return None
    global _controller_cache
    if _controller_cache is None or _controller_cache[0] != len(sys.modules):
        controller = ThreadpoolController()
        _controller_cache = (len(sys.modules), controller)
    return _controller_cache[1]


def cpu_count() -> int:
    """Logical CPUs this process may use (affinity-aware where the OS tells)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1

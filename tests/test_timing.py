"""Timing: fit wall time, per-document scoring time, peak memory, thread limits."""

from __future__ import annotations

import time

import numpy as np
import pytest

from ltr_bench import timing
from ltr_bench.timing import PeakMemory, Stopwatch, thread_limit, time_scoring


class FakeClock:
    """perf_counter replacement: each predict call advances it by the next duration."""

    def __init__(self, durations):
        self.now = 100.0
        self.durations = list(durations)
        self.calls = 0

    def perf_counter(self):
        return self.now

    def predict(self):
        self.now += self.durations[self.calls]
        self.calls += 1
        return np.full(4, float(self.calls))


def test_score_time_is_the_median_of_the_timed_calls_per_document(monkeypatch):
    # warm-up 9 s (excluded), then 1, 5, 2, 4, 3 s -> median 3 s over 1000 docs = 3000 us
    clock = FakeClock([9.0, 1.0, 5.0, 2.0, 4.0, 3.0])
    monkeypatch.setattr(timing.time, "perf_counter", clock.perf_counter)
    t = time_scoring(clock.predict, 1000, repeats=5, max_seconds=1000)
    assert clock.calls == 6 and t.repeats == 5
    assert t.warmup_seconds == 9.0 and t.seconds == [1.0, 5.0, 2.0, 4.0, 3.0]
    assert t.median_seconds == 3.0 and t.us_per_doc == pytest.approx(3000.0)
    assert np.all(t.scores == 1.0)  # the warm-up call's scores are the evaluated ones


def test_slow_scoring_is_timed_fewer_times_but_at_least_once(monkeypatch):
    clock = FakeClock([10.0] * 10)
    monkeypatch.setattr(timing.time, "perf_counter", clock.perf_counter)
    assert time_scoring(clock.predict, 10, repeats=5, max_seconds=30).repeats == 3
    clock = FakeClock([100.0] * 10)
    monkeypatch.setattr(timing.time, "perf_counter", clock.perf_counter)
    assert time_scoring(clock.predict, 10, repeats=5, max_seconds=30).repeats == 1


def test_scoring_zero_documents_gives_nan_and_bad_repeats_is_an_error():
    assert np.isnan(time_scoring(lambda: np.zeros(0), 0, repeats=1).us_per_doc)
    with pytest.raises(ValueError, match="repeats"):
        time_scoring(lambda: np.zeros(1), 1, repeats=0)


def test_stopwatch_measures_wall_time():
    with Stopwatch() as sw:
        time.sleep(0.05)
    assert 0.04 <= sw.seconds < 5


def _allocate_and_free(mib: int) -> None:
    block = np.ones(mib * (1 << 20) // 8)  # np.ones touches every page
    block[::4096] += 1.0
    time.sleep(0.1)  # longer than the sampling interval
    del block


@pytest.mark.parametrize("kernel_mark", [True, False])
def test_peak_memory_sees_a_freed_allocation_inside_the_block(monkeypatch, kernel_mark):
    if not kernel_mark:
        monkeypatch.setattr(timing, "_reset_vm_hwm", lambda: False)
    before = timing._current_rss()
    with PeakMemory(interval=0.01) as mem:
        _allocate_and_free(150)
    after = timing._current_rss()
    assert mem.method == ("vmhwm" if kernel_mark and timing._read_vm_hwm() else "sampling")
    assert mem.peak_bytes >= before + 140 * (1 << 20)
    assert mem.peak_bytes > after + 100 * (1 << 20)  # freed, yet the peak remembers it
    assert mem.peak_mb == pytest.approx(mem.peak_bytes / (1 << 20))


def test_peak_memory_of_a_quiet_block_is_about_the_current_rss():
    with PeakMemory() as mem:
        pass
    rss = timing._current_rss()
    assert abs(mem.peak_bytes - rss) < 50 * (1 << 20)


def test_thread_limit_caps_blas_pools_and_none_changes_nothing():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    before = [p["num_threads"] for p in threadpoolctl.threadpool_info()]
    with thread_limit(None):
        assert [p["num_threads"] for p in threadpoolctl.threadpool_info()] == before
    with thread_limit(1):
        assert all(p["num_threads"] == 1 for p in threadpoolctl.threadpool_info())
    assert [p["num_threads"] for p in threadpoolctl.threadpool_info()] == before

"""Time and peak memory of ``query_level_norm`` (the dataset option ``query_norm``) against
the whole-array version it replaced, in the same process.

Data: a generated MSLR-WEB10K-fold-sized split, ``--queries`` queries (default 6,000) of
60-180 documents (mean 120: about 720,000 rows) x 136 features, float64 (about 780 MB).
Reference: the same formula on the whole array at once (``X - repeat(min)``, ``repeat(range)``:
two temporaries of the array's size beside the output). Both outputs are checked to be equal.
Peak memory is ``tracemalloc``'s peak of numpy's allocations above the input.

    python benchmarks/bench_query_norm.py [--queries 6000]

Timings are wall-clock on a shared machine: compare the ratios within one run; the load
average is printed beside them.
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc

import numpy as np

from ltr_bench.data.normalise import query_level_norm


def whole_array(X: np.ndarray, qid: np.ndarray) -> np.ndarray:
    """The reference: per-query min-max over the whole array in one go."""
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    counts = np.diff(np.r_[starts, qid.size])
    lo = np.minimum.reduceat(X, starts, axis=0)
    span = np.repeat(np.maximum.reduceat(X, starts, axis=0) - lo, counts, axis=0)
    out = X - np.repeat(lo, counts, axis=0)
    np.divide(out, span, out=out, where=span > 0)
    out[span <= 0] = 0.0
    return out


def measure(fn, X, qid) -> tuple[np.ndarray, float, float]:
    tracemalloc.start()
    t0 = time.perf_counter()
    out = fn(X, qid)
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return out, seconds, peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=6000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    sizes = rng.integers(60, 181, size=args.queries)
    qid = np.repeat(np.arange(args.queries, dtype=np.int64), sizes)
    X = rng.normal(size=(qid.size, 136)) * rng.uniform(0.1, 1e4, size=136)
    print(f"{qid.size:,} rows x 136 features ({X.nbytes / 2**20:.0f} MiB), {args.queries} queries")
    ref, t_ref, m_ref = measure(whole_array, X, qid)
    del ref
    out, t_new, m_new = measure(query_level_norm, X, qid)
    assert np.array_equal(out, whole_array(X, qid)), "outputs differ"
    print(f"whole array (reference): {t_ref:6.2f} s  peak {m_ref:7.0f} MiB")
    print(f"query_level_norm:        {t_new:6.2f} s  peak {m_new:7.0f} MiB")
    print(f"ratio new/reference:     time {t_new / t_ref:.2f}  peak memory {m_new / m_ref:.2f}")
    print(f"load average: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()

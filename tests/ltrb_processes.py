"""Running ``ltr-bench`` in real subprocesses for tests with signals, kills and concurrent
runs: one environment builder for every such test."""

from __future__ import annotations

import os
from pathlib import Path

TESTS = Path(__file__).resolve().parent

#: a fake ranker whose fit takes 0.7 s: time to stop a run half-way
SLOW_RANKER = """
import time
from ltrb_fake_rankers import LinearRanker

class SlowRanker(LinearRanker):
    def fit(self, X, y, *, qid, eval_set=None):
        time.sleep(0.7)
        return super().fit(X, y, qid=qid, eval_set=eval_set)
"""


def subprocess_env(tmp_path: Path, modules: dict[str, str], **extra: str) -> dict[str, str]:
    """The environment of a ``python -m ltr_bench.cli`` subprocess: each ``modules`` entry
    (module name -> source) written to ``tmp_path/mods`` and importable beside the tests'
    helpers (``ltrb_fake_rankers``), a data cache of its own, one BLAS thread, no
    ``MLFLOW_TRACKING_URI`` from the caller, and ``extra`` variables."""
    mods = tmp_path / "mods"
    mods.mkdir(exist_ok=True)
    for name, source in modules.items():
        (mods / f"{name}.py").write_text(source)
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(mods), str(TESTS)]),
        LTR_BENCH_CACHE=str(tmp_path / "cache"),
        OMP_NUM_THREADS="1",
        **extra,
    )
    env.pop("MLFLOW_TRACKING_URI", None)
    return env

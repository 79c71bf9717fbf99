"""ltr-bench: a learning-to-rank benchmarking framework.

The package is a root contract and wings, one per job; data flows one way,
``cli -> run -> (data, rankers, evaluation) -> results -> tracking / report``, with ``tune``
reading results back (``tests/test_architecture.py`` keeps the direction true):

* the root: the contract every ranker implements (:mod:`.ranker`), the entry-point registry
  (:mod:`.registry`), ``check_ranker`` for plugin authors (:mod:`.testing`), errors, folds,
  timing, progress and the machine description. Imports no wing.
* :mod:`.data`: datasets (specs, the LETOR reader, cache, generated data, downloads).
* :mod:`.evaluation`: pure metrics, metric keys, convention profiles, paired statistics.
* :mod:`.run`: plans, cells, the harness and executors.
* :mod:`.results`: the one shape of a finished cell and the local store.
* :mod:`.tracking`: the only wing that talks to MLflow.
* :mod:`.tune`: Optuna studies with an equal budget.
* :mod:`.report`: tables, paired tests, HTML, plots.
* :mod:`.cli`: the click commands.

``import ltr_bench`` stays cheap: the names below are imported on first use, so the CLI lists
rankers without importing any of them.
"""

__version__ = "0.4.0"

_LAZY = {
    "Ranker": "ltr_bench.ranker",
    "BaseRanker": "ltr_bench.ranker",
    "RankerTags": "ltr_bench.ranker",
    "check_ranker": "ltr_bench.testing",
    "report_progress": "ltr_bench.progress",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ltr_bench' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value

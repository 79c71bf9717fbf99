"""ltr-bench: a learning-to-rank benchmarking framework.

Public entry points: :mod:`ltr_bench.ranker` (the contract), :mod:`ltr_bench.metrics`
(NDCG, MAP, MRR, ERR, P@k), :mod:`ltr_bench.data` (datasets), :mod:`ltr_bench.testing`
(``check_ranker`` for plugin authors). Submodules are imported lazily by the user so that
``import ltr_bench`` stays cheap (the CLI lists rankers without importing any of them).
"""

__version__ = "0.1.0"

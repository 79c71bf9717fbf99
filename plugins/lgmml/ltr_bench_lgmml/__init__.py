"""L-GMML (Su, King, Lyu, SIGIR 2017) as an ltr-bench ranker plugin.

Registered as ``lgmml`` in the ``ltr_bench.rankers`` entry point group. Modules, one concept
each: :mod:`.gmml` (closed form), :mod:`.local_metrics` (sampling, m metrics),
:mod:`.anchors` (ideal candidate documents), :mod:`.scoring` (Eq. 13, batched),
:mod:`.warp` (Eq. 14-21), :mod:`.listwise` (ListNet on the weights, our extension),
:mod:`.ndcg` (NDCG of one query, batched over candidates), :mod:`.diagnostics` (what
``fitted_info`` reports), :mod:`.preprocessing` (feature scaling), :mod:`.ranker`.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ltr-bench-lgmml")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

from .ranker import LGMMLRanker  # noqa: E402

__all__ = ["LGMMLRanker", "__version__"]

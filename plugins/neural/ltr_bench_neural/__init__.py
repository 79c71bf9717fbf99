"""ltr-bench-neural: differentiable rankers in PyTorch, registered as the ranker ``neural``.

The package imports no torch at import time: ``ltr-bench rankers`` and plan validation read
the registries (``scorers.SCORERS``, ``losses.LOSSES``, ``design``) and the ranker's
parameters without it; torch is imported by ``fit`` and ``predict`` only.

Modules: ``ranker`` (:class:`~ltr_bench_neural.ranker.NeuralRanker`, parameters and
validation), ``training`` (the optimisation loop), ``batching`` (queries -> padded tensors),
``weights`` (the element-wise W of Eq. 8 and pairwise V of Eq. 9), ``groups`` (the group-level
functionals of Table 2), ``scorers/`` (rank functionals f), ``losses/`` (rank losses).
"""

__version__ = "0.1.0"

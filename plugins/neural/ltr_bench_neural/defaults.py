"""Defaults that depend on the loss or the scorer (readable without torch).

``optimizer="auto"`` (the default) and ``l2=None`` are resolved here, once per fit, into the
values the trainer uses (recorded in ``fitted_info``):

- ``optimizer``: ``adam`` (mini-batches of ``batch_size`` queries) for ``neuralndcg``, whose
  every evaluation runs Sinkhorn scaling on [B, L, L] matrices: under full-batch L-BFGS its
  line search repeats that on every list several times per iteration (691 s against 8.5 s
  for ``listnet`` on an MQ2008 fold); ``adam`` too for ``unbiased="dla"``, whose alternating
  propensity steps L-BFGS's line search cannot follow; ``lbfgs`` (the design paper's) for
  every other loss.
- ``neuralndcg`` under the resolved mini-batch default also gets ``max_iter`` =
  :data:`NEURALNDCG_AUTO_MAX_ITER` Sinkhorn rounds unless ``loss_args`` gives it, and
  ``batch_size`` 64 (the ranker's default): the best mean validation NDCG@10 over
  batches of 32 / 64 / 128 and 3 / 5 / 10 / 50 rounds on two MQ2008-shaped folds, chosen
  again after Sinkhorn became matrix-vector products (:mod:`ltr_bench_neural.losses._sinkhorn`);
  that fit takes 1.7-2.0x the CPU time of ``listnet``'s L-BFGS default (3.85x before).
- ``l2``: 1e-2 for the query-by-example scorers ``bilinear``/``distance`` (a few hundred
  query points and no validation split to stop on: 1e-4 overfits, see the neural page),
  1e-4 for the others.

Every value was chosen on validation data (docs/rankers/neural.md, "Default path").
"""

from __future__ import annotations

import copy

AUTO = "auto"
#: Sinkhorn rounds of ``neuralndcg`` when its optimizer is the resolved default
NEURALNDCG_AUTO_MAX_ITER = 5
#: the mini-batch default's losses
MINIBATCH_LOSSES = ("neuralndcg",)
L2_BY_SCORER = {"bilinear": 1e-2, "distance": 1e-2}
L2_DEFAULT = 1e-4


def _loss_function(loss) -> str | None:
    from ltr_bench_neural.losses import resolve

    try:
        spec, _ = resolve(loss)
    except (ValueError, TypeError):
        return None
    return spec.module


def resolved_optimizer(ranker) -> str:
    """The optimizer a fit uses: ``ranker.optimizer``, or the loss's default for ``auto``."""
    if ranker.optimizer != AUTO:
        return ranker.optimizer
    if getattr(ranker, "unbiased", None) == "dla":
        return "adam"
    return "adam" if _loss_function(ranker.loss) in MINIBATCH_LOSSES else "lbfgs"


def resolved_l2(ranker) -> float:
    if ranker.l2 is not None:
        return float(ranker.l2)
    return L2_BY_SCORER.get(ranker.scorer, L2_DEFAULT)


def resolve(ranker):
    """``ranker`` itself when nothing is left to resolve, else a shallow copy with
    ``optimizer``, ``l2`` and the loss's default arguments filled in (the fit's values)."""
    if ranker.optimizer != AUTO and ranker.l2 is not None:
        return ranker
    out = copy.copy(ranker)
    out.optimizer = resolved_optimizer(ranker)
    out.l2 = resolved_l2(ranker)
    if ranker.optimizer == AUTO and _loss_function(ranker.loss) == "neuralndcg":
        args = dict(ranker.loss_args or {})
        args.setdefault("max_iter", NEURALNDCG_AUTO_MAX_ITER)
        out.loss_args = args
    return out

"""What a plan's click data is checked for before anything is loaded (exit 2), ranker by
ranker: labels a ranker cannot take, positions a ranker needs, propensities a ranker weights
by, and clicks aggregated in a way no position correction can undo.

Called by :func:`ltr_bench.run.cells.expand_plan` with each dataset variant's resolved click
configuration (:func:`ltr_bench.clicks.options.resolve_click_options`; None without clicks)
and the rankers' tags (:class:`ltr_bench.ranker.RankerTags`) as they will run on it.
"""

from __future__ import annotations

from ltr_bench.clicks.options import has_propensity
from ltr_bench.run.plan import PlanError

__all__ = [
    "check_aggregate",
    "check_click_labels",
    "check_propensities",
    "refuse_positions_without_clicks",
]


def check_click_labels(clicks, label_limits, where: str) -> None:
    """Refuse click data whose labels can exceed what a ranker accepts
    (``RankerTags.max_label``): click counts go up to ``sessions`` with ``aggregate=count``,
    clicked-or-not is 0/1 with ``aggregate=any``."""
    if not clicks:
        return
    from ltr_bench.evaluation.ranked import MAX_LABEL

    top = int(clicks["sessions"]) if clicks["aggregate"] == "count" else 1
    # the validation clicks are scored by ltr-bench's metrics too (model selection, tuning)
    limits = [*label_limits, ("ltr-bench's metrics (gain 2^label - 1)", MAX_LABEL)]
    over = [(label, limit) for label, limit in limits if top > limit]
    if over:
        names = ", ".join(f"{label} (labels up to {limit})" for label, limit in over)
        raise PlanError(
            f"{where}: with aggregate=count and sessions={top} the click labels (click "
            f"counts) go up to {top}, more than {names} accepts: use sessions <= "
            f"{min(limit for _, limit in over)}, aggregate=any (clicked at least once, 0/1), "
            "or the linear gain of click labels (leave the ranker's gain parameter unset)"
        )


def check_aggregate(clicks, position_rankers: list[str], where: str) -> None:
    """Refuse a position-correcting learner on clicks aggregated as clicked-at-least-once
    over several sessions.

    Every correction here (inverse propensities, true or estimated; DLA; the libraries'
    position-debiased lambdarank) models a click as examined-and-attracted,
    ``P(click at k) = theta_k alpha(y)``, so that counts have ``E[c] = S theta_k alpha(y)``
    over ``S`` sessions and ``E[c / theta_k] = S alpha(y)``: the position factor cancels.
    With ``aggregate=any`` the label is ``1[c > 0]``, whose expectation
    ``1 - (1 - theta_k alpha(y))^S`` is not proportional to ``theta_k``: dividing by
    ``theta_k`` leaves ``(1 - (1 - theta_k alpha)^S) / theta_k``, which still depends on the
    rank (for ``S = 10``, ``alpha = 0.5``: 0.999 at ``theta = 1``, 4.0 at ``theta = 0.1``,
    against ``S alpha = 5`` for both), so the learner would be biased without a word. With
    one session ``1[c > 0] = c`` and nothing is lost."""
    if not clicks or not position_rankers:
        return
    if clicks["aggregate"] == "any" and int(clicks["sessions"]) > 1:
        names = ", ".join(map(repr, position_rankers))
        raise PlanError(
            f"{where}: {names} correct(s) clicks for their position, which needs click counts: "
            f"with aggregate=any over sessions={clicks['sessions']} a label is 1[count > 0], "
            "whose expectation 1 - (1 - theta_k alpha)^S is not proportional to the "
            "examination probability theta_k, so dividing by it leaves a position bias. Use "
            "aggregate=count (the default) or sessions=1"
        )


def check_propensities(clicks, propensity_rankers: list[str], where: str) -> None:
    """Refuse a learner that weights by the true propensities on clicks whose model gives
    some shown row none (or 0)."""
    if clicks and propensity_rankers and not has_propensity(clicks):
        raise PlanError(
            f"{where}: {', '.join(map(repr, propensity_rankers))} weight(s) each click by "
            f"its true examination propensity, but click model {clicks['model']['name']!r} "
            "has none for some shown rows (no examination step, or 0 below a document of "
            "the top grade as in the cascade family): use pbm, base-cascade or dcm "
            "(lam > 0), a method that learns the propensities (neural.unbiased=dla), or "
            "estimated ones (propensity=em or randomisation)"
        )


def refuse_positions_without_clicks(position_rankers: list[str], where: str, display: str):
    """The plan runs learners from click positions and none of its datasets has clicks."""
    names = ", ".join(repr(r) for r in position_rankers)
    verb = "learns" if len(position_rankers) == 1 else "learn"
    raise PlanError(
        f"{where}: {names} {verb} from the positions of simulated clicks (unbiased), "
        f"but dataset {display} has no click options: add clicks=<model> (e.g. "
        "--dataset-option clicks=pbm) or leave unbiased off"
    )

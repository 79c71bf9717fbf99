"""The valid range of every loss argument, checked before any data is loaded (no torch).

A value outside its range can flip a loss (``lambdaloss`` with ``sigma < 0``, ``rmse`` with
``no_of_levels < 0``, ``wpll`` with ``gamma < 0`` reward the reversed ranking) or make it
constant (``gamma = 0``), and would train a useless ranker with exit 0. :data:`ARG_RULES`
holds one :class:`Arg` per argument of every loss in
:data:`ltr_bench_neural.losses.LOSSES` (a test checks that none is missing);
:func:`arg_problem` says what is wrong with one value, and
:func:`ltr_bench_neural.losses.check_loss_args` raises it.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

__all__ = ["ARG_RULES", "Arg", "arg_problem", "number_fits"]


@dataclass(frozen=True)
class Arg:
    """One argument's rule: ``kind`` "real" (a finite number), "int", "bool" or "choice";
    ``low`` (inclusive, or exclusive with ``low_open``) for numbers; ``choices``; ``none``:
    None is accepted (the trainer fills it from the data or another parameter)."""

    kind: str
    low: float | None = None
    low_open: bool = False
    choices: tuple = ()
    none: bool = False

    def text(self) -> str:
        if self.kind == "choice":
            what = "one of " + ", ".join(repr(c) for c in self.choices)
        elif self.kind == "bool":
            what = "true or false"
        else:
            what = "a finite number" if self.kind == "real" else "an integer"
            if self.low is not None:
                what += f" {'>' if self.low_open else '>='} {self.low:g}"
        return what + (" or None" if self.none else "")


def _positive(none: bool = False) -> Arg:
    return Arg("real", 0.0, low_open=True, none=none)


def _at_least(low: int, none: bool = False) -> Arg:
    return Arg("int", low, none=none)


#: LambdaLoss's weighing schemes, torch-free for the argument checks (``lambdaloss`` uses them)
WEIGHING_SCHEMES = (
    "rankNet",
    "ndcgLoss1",
    "ndcgLoss2",
    "ndcgLoss2++",
    "lambdaRank",
    "rankNetWeightedByGTDiff",
    "rankNetWeightedByGTDiffPowed",
)

_SMOOTH = {"temperature": _positive(none=True)}
_MRF = {"gamma": _positive(none=True), "n_levels": _at_least(2, none=True)}

ARG_RULES: dict[str, dict[str, Arg]] = {
    "softmax": {"target": Arg("choice", choices=("best", "labels"))},
    "smooth-ndcg": _SMOOTH,
    "smooth-err": {**_SMOOTH, "max_label": _at_least(1, none=True)},
    "smooth-mrr": _SMOOTH,
    "pointwise": {},
    "pl": {},
    "rpl": {},
    "wpll": _MRF,
    "pair-quadratic": {},
    "pair-hinge": {},
    "pair-exp": {},
    "pair-logistic": {},
    "wub": _MRF,
    "listmle": {"ties": Arg("choice", choices=("random", "first"))},
    "lambdaloss": {
        "weighing_scheme": Arg("choice", choices=WEIGHING_SCHEMES),
        "k": _at_least(1, none=True),
        "sigma": _positive(),
        "mu": Arg("real", 0.0),  # weight of the ndcgLoss2 term in ndcgLoss2++
        "reduction": Arg("choice", choices=("sum", "mean")),
        "reduction_log": Arg("choice", choices=("binary", "natural")),
    },
    "approxndcg": {"alpha": _positive()},
    "neuralndcg": {
        "temperature": _positive(),
        "powered_relevancies": Arg("bool"),
        "k": _at_least(1, none=True),
        "stochastic": Arg("choice", choices=(False,)),  # the Gumbel variant is not provided
        "max_iter": _at_least(1),
        "tol": _positive(),
    },
    "bce": {"logits": Arg("bool")},
    "ordinal": {"n": _at_least(1, none=True)},
    "rmse": {"no_of_levels": _positive(none=True)},  # m in (y - m s)^2; m < 0 flips it
}


def number_fits(
    value: Any,
    *,
    integer: bool = False,
    low: float | None = None,
    low_open: bool = False,
    high: float | None = None,
    high_open: bool = False,
) -> bool:
    """``value`` is a finite real number (an integral one with ``integer``; a bool is none)
    within ``low`` / ``high`` (inclusive, or exclusive with ``*_open``). ``1e400`` in JSON
    reads as inf and an int too large for a float does not fit either."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    if integer and not isinstance(value, numbers.Integral):
        return False
    try:
        x = float(value)
    except OverflowError:  # an int too large for a float
        return False
    if not math.isfinite(x):
        return False
    if low is not None and not (x > low if low_open else x >= low):
        return False
    return high is None or (x < high if high_open else x <= high)


def _fits(rule: Arg, value: Any) -> bool:
    if value is None:
        return rule.none
    if rule.kind == "bool":
        return isinstance(value, bool)
    if rule.kind == "choice":
        return any(type(value) is type(c) and value == c for c in rule.choices)
    return number_fits(value, integer=rule.kind == "int", low=rule.low, low_open=rule.low_open)


def arg_problem(loss: str, key: str, value: Any) -> str | None:
    """What is wrong with ``value`` for argument ``key`` of loss ``loss`` (the loss's
    registered name), or None when it is valid (or the argument has no rule)."""
    rule = ARG_RULES.get(loss, {}).get(key)
    if rule is None or _fits(rule, value):
        return None
    return f"must be {rule.text()}, got {value!r}"

"""Rank losses: the registry, readable without importing torch.

A loss is ``loss(scores, y, mask, *, weights=None, **loss_args) -> scalar tensor``: scores
[B, L], graded labels y [B, L] (padding -1), mask bool [B, L] (True = real document); the
value is the mean over the batch's B queries of each query's loss (its docstring gives the
formula). ``weights`` is None (all ones), an element-wise W [B, L] (Eq. 8) or a pairwise
V [B, L, L] (Eq. 9), as the loss's ``weights`` kind says. A query with one document, or with
all labels 0, gives a finite loss (usually a constant) and finite gradients.

``LOSSES`` maps a name to its :class:`LossSpec`. ``spec.args`` are the accepted
``loss_args`` with defaults; names in ``spec.data_args`` left at None are filled by the
trainer from the training split (``max_label``: the largest training label; ``n_levels``:
``max_label + 1``, the paper's |L|, at least 2). Where a loss of the allRank issue is the
same function, it is registered here once and the other name is an alias (``ALIASES``).
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class LossSpec:
    module: str  # module under ltr_bench_neural.losses
    function: str
    args: dict[str, Any] = field(default_factory=dict)
    weights: str = "none"  # "none" (only weight=one), "element" (Eq. 8) or "pair" (Eq. 9)
    pairwise_memory: bool = False  # builds [B, L, L] tensors: batches are bounded by B*L*L
    data_args: tuple[str, ...] = ()
    equation: str = ""

    def function_object(self):
        return getattr(
            importlib.import_module(f"ltr_bench_neural.losses.{self.module}"), self.function
        )


_PAIR: dict[str, Any] = dict(weights="pair", pairwise_memory=True)

LOSSES: dict[str, LossSpec] = {
    "softmax": LossSpec(
        "listwise", "softmax_loss", {"target": "best"}, equation="Eq. 5 (multiclass logistic)"
    ),
    "smooth-ndcg": LossSpec(
        "smooth",
        "smooth_ndcg_loss",
        {"temperature": None},
        pairwise_memory=True,
        equation="Eqs. 6-7 with NDCG",
    ),
    "smooth-err": LossSpec(
        "smooth",
        "smooth_err_loss",
        {"temperature": None, "max_label": None},
        pairwise_memory=True,
        data_args=("max_label",),
        equation="Eqs. 6-7 with ERR",
    ),
    "smooth-mrr": LossSpec(
        "smooth",
        "smooth_mrr_loss",
        {"temperature": None},
        pairwise_memory=True,
        equation="Eqs. 6-7 with MRR",
    ),
    "pointwise": LossSpec(
        "elementwise", "pointwise_loss", weights="element", equation="Eq. 8, (r_i - f_i)^2"
    ),
    "pl": LossSpec("elementwise", "pl_loss", weights="element", equation="Eq. 11 (WPL)"),
    "rpl": LossSpec("elementwise", "rpl_loss", weights="element", equation="Eq. 13 (RPL)"),
    "wpll": LossSpec(
        "mrf",
        "wpll_loss",
        {"gamma": None, "n_levels": None},
        weights="element",
        data_args=("n_levels",),
        equation="Eq. 16 (MRF pseudo-likelihood)",
    ),
    "pair-quadratic": LossSpec(
        "pairwise", "pair_quadratic_loss", **_PAIR, equation="Eq. 9, Table 3"
    ),
    "pair-hinge": LossSpec("pairwise", "pair_hinge_loss", **_PAIR, equation="Eq. 9, Table 3"),
    "pair-exp": LossSpec("pairwise", "pair_exp_loss", **_PAIR, equation="Eq. 9, Table 3"),
    "pair-logistic": LossSpec("pairwise", "pair_logistic_loss", **_PAIR, equation="Eq. 9, Table 3"),
    "wub": LossSpec(
        "mrf",
        "wub_loss",
        {"gamma": None, "n_levels": None},
        **_PAIR,
        data_args=("n_levels",),
        equation="Eq. 18 (MRF pairwise upper bound)",
    ),
}

# allRank's losses (issue 23); each spec's args equal its function's keyword defaults
LOSSES.update(
    {
        "listmle": LossSpec("listmle", "listmle", {"ties": "random"}, equation="ListMLE"),
        "lambdaloss": LossSpec(
            "lambdaloss",
            "lambdaloss",
            {
                "weighing_scheme": "ndcgLoss2++",
                "k": None,
                "sigma": 1.0,
                "mu": 10.0,
                "reduction": "sum",
                "reduction_log": "binary",
            },
            pairwise_memory=True,
            equation="LambdaLoss (Wang et al. 2018)",
        ),
        "approxndcg": LossSpec(
            "approxndcg", "approxndcg", {"alpha": 1.0}, pairwise_memory=True, equation="ApproxNDCG"
        ),
        "neuralndcg": LossSpec(
            "neuralndcg",
            "neuralndcg",
            {
                "temperature": 1.0,
                "powered_relevancies": True,
                "k": None,
                "stochastic": False,
                "max_iter": 50,
                "tol": 1e-6,
            },
            pairwise_memory=True,
            equation="NeuralNDCG (NeuralSort + Sinkhorn)",
        ),
        "bce": LossSpec("pointwise_allrank", "bce", {"logits": True}, equation="BCE"),
        "ordinal": LossSpec(
            "pointwise_allrank", "ordinal", {"n": None}, equation="allRank ordinal"
        ),
        "rmse": LossSpec("pointwise_allrank", "rmse", {"no_of_levels": None}, equation="RMSE"),
    }
)

#: other names of the same function (name -> (loss, fixed loss_args)). allRank's ``ranknet``
#: is ``pair-logistic`` with V = 1 (allRank averages over the batch's pairs, we sum per
#: query and average over queries); ``listnet`` is ``softmax`` with the softmax of the
#: labels as target (ListNet's top-one cross-entropy, allRank's ``listNet``).
ALIASES: dict[str, tuple[str, dict[str, Any]]] = {
    "ranknet": ("pair-logistic", {}),
    "listnet": ("softmax", {"target": "labels"}),
}


def resolve(name: str) -> tuple[LossSpec, dict[str, Any]]:
    """``(spec, fixed args)`` of a loss name or alias; ``ValueError`` with close matches."""
    if name in LOSSES:
        return LOSSES[name], {}
    if name in ALIASES:
        base, fixed = ALIASES[name]
        return LOSSES[base], dict(fixed)
    names = sorted([*LOSSES, *ALIASES])
    close = difflib.get_close_matches(str(name), names, n=3, cutoff=0.5)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    raise ValueError(f"unknown loss {name!r}.{hint} Choose from: {', '.join(names)}.")


def check_loss_args(name: str, loss_args: dict | None) -> dict[str, Any]:
    """The loss's arguments: defaults, then the alias's fixed ones, then ``loss_args``.
    Unknown keys raise ``ValueError`` naming the accepted ones and close matches; a value
    outside its range (:data:`ltr_bench_neural.losses.arguments.ARG_RULES`) raises
    ``ValueError`` naming the loss, the argument, the range and the value."""
    spec, fixed = resolve(name)
    given = dict(loss_args or {})
    unknown = sorted(set(given) - set(spec.args))
    if unknown:
        hints = []
        for key in unknown:
            close = difflib.get_close_matches(key, list(spec.args), n=1, cutoff=0.5)
            if close:
                hints.append(f"{key} -> {close[0]}?")
        accepted = ", ".join(sorted(spec.args)) or "none"
        raise ValueError(
            f"loss {name!r} has no loss_args {', '.join(unknown)}"
            + (f" (did you mean: {', '.join(hints)})" if hints else "")
            + f"; it accepts: {accepted}"
        )
    from ltr_bench_neural.losses.arguments import arg_problem

    base = name if name in LOSSES else ALIASES[name][0]
    for key, value in given.items():
        problem = arg_problem(base, key, value)
        if problem:
            raise ValueError(f"loss {name!r}: loss_args {key}: {problem}")
    return {**spec.args, **fixed, **given}

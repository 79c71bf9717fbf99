"""The design axes that are not a scorer or a loss, as plain tables (no torch import).

Weights (the design paper, Tables 8 and 9). pi_i is the *true* position of object i, from
the labels: ``pi_i = 1 + #{j : r_j > r_i}`` (competition ranking: tied objects share the
best position of their tie group, so weights never depend on the input row order).
``|L|`` is the number of label levels, ``max training label + 1`` (at least 2).
``R_i = (2^r_i - 1) / (2^|L| - 1)`` (the paper's normalised gain), ``eta_i = 1 / log2(1 + pi_i)``
(the NDCG discount; base 2 so that eta_1 = 1 -- a constant factor against the natural log).
"""

from __future__ import annotations

import difflib

#: element-wise W_i of Eq. 8 (Table 8): name -> formula
ELEMENT_WEIGHTS: dict[str, str] = {
    "one": "W_i = 1",
    "rating": "W_i = r_i",
    "sqrt-rating": "W_i = sqrt(r_i)",
    "gain": "W_i = (2^r_i - 1) / (2^|L| - 1)",
    "inv-pos": "W_i = 1 / pi_i",
    "inv-log-pos": "W_i = 1 / log2(1 + pi_i)",
}

#: pairwise V_ij of Eq. 9 (Table 9): name -> formula (N_q = the query's number of objects)
PAIR_WEIGHTS: dict[str, str] = {
    "one": "V_ij = 1",
    "inv-nq": "V_ij = 1 / N_q",
    "rating-diff": "V_ij = |r_i - r_j|",
    "rating-diff/nq": "V_ij = |r_i - r_j| / N_q",
    "ndcg-delta/max": "V_ij = |(R_i - R_j)(eta_i - eta_j)| / NDCGMax_q",
    "ndcg-delta": "V_ij = |(R_i - R_j)(eta_i - eta_j)|",
    "gain-diff": "V_ij = |R_i - R_j|",
    "gain-diff/nq": "V_ij = |R_i - R_j| / N_q",
}

#: group-level functionals of Table 2 (f-bar over the K objects of one rating)
GROUPS: dict[str, str] = {
    "none": "no grouping: every object is its own item",
    "min": "min_j f(o_j)",
    "max": "max_j f(o_j)",
    "mean": "(1/K) sum_j f(o_j)",
    "geomean": "log((1/K) sum_j exp f(o_j))  (Table 2's 'geometric mean' of the worths exp f)",
}

OPTIMIZERS = ("lbfgs", "adam", "adamw", "sgd")
ACTIVATIONS = ("sigmoid", "tanh")
DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("float32", "float64")


def weights_for(kind: str) -> dict[str, str]:
    """The weight table of a loss whose ``weights`` kind is ``"element"``, ``"pair"`` or
    ``"none"`` (only ``one``)."""
    if kind == "element":
        return ELEMENT_WEIGHTS
    if kind == "pair":
        return PAIR_WEIGHTS
    return {"one": "no weighting"}


def unknown_choice(what: str, value, choices) -> str:
    """``"unknown <what> 'x'. Did you mean: ...? Choose from: ..."``."""
    choices = list(choices)
    text = f"unknown {what} {value!r}."
    if isinstance(value, str):
        close = difflib.get_close_matches(value, choices, n=3, cutoff=0.5)
        if close:
            text += f" Did you mean: {', '.join(close)}?"
    return text + f" Choose from: {', '.join(choices)}."

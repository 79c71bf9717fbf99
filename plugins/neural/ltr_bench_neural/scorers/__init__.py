"""Rank functionals f (scorers): the registry, readable without importing torch.

A scorer is a ``torch.nn.Module`` with ``forward(X, mask) -> scores``: ``X`` float
[B, L, d] (a padded batch of B queries, documents in input order), ``mask`` bool [B, L]
(True for real documents) and ``scores`` [B, L] (entries at padding are ignored downstream).
One scorer per file; each file defines ``build(ctx, **scorer_args) -> nn.Module``, where
``ctx`` is a :class:`ScorerContext`.

``SCORERS`` maps a name to its :class:`ScorerSpec`: where ``build`` lives, the accepted
``scorer_args`` with defaults, whether it needs the query block of query-by-example rows
(``needs_query_block``) and whether a document's score depends on the other documents of its
list (``listwise``; such scorers need ``qid`` at predict time).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class ScorerSpec:
    module: str  # module under ltr_bench_neural.scorers holding build(ctx, **args)
    args: dict[str, Any] = field(default_factory=dict)  # accepted scorer_args -> default
    needs_query_block: bool = False
    listwise: bool = False
    summary: str = ""

    def build_function(self):
        return importlib.import_module(f"ltr_bench_neural.scorers.{self.module}").build


@dataclass
class ScorerContext:
    """What a scorer's ``build`` may use. ``X_train`` is the standardised training matrix
    (n_docs, d) as float64 numpy and ``y_train`` its labels (the quadratic scorer selects
    second-order products on them); ``query_dim`` is the width of the query block or None."""

    n_features: int
    X_train: np.ndarray
    y_train: np.ndarray
    query_dim: int | None
    dim: int
    activation: str
    tau: float
    rho: float
    generator: Any  # torch.Generator: the only source of random initial values
    dtype: Any  # torch dtype


SCORERS: dict[str, ScorerSpec] = {
    "linear": ScorerSpec("linear", summary="f(x) = a0 + w'x"),
    "quadratic": ScorerSpec(
        "quadratic",
        summary="Eq. 4: f3(x) = a0 + w'x + x'Cx over the products kept by rho",
    ),
    "bilinear": ScorerSpec(
        "bilinear",
        needs_query_block=True,
        summary="Eq. 2: f1(y, z) = sigma(Ay)'Bz",
    ),
    "distance": ScorerSpec(
        "distance",
        needs_query_block=True,
        summary="Eq. 3: f2(y, z) = -||Ay - Bz||^2 / tau",
    ),
    # allRank's models (issue 23); the defaults are read by mlp.py / transformer.py
    "mlp": ScorerSpec(
        "mlp",
        args={
            "sizes": [64, 32],
            "activation": "ReLU",
            "dropout": 0.0,
            "input_norm": False,
            "d_output": 1,
            "output_activation": None,
        },
        summary="allRank fc_model + post_model: an MLP scoring each document",
    ),
    "transformer": ScorerSpec(
        "transformer",
        args={
            "sizes": [96],
            "activation": None,
            "input_norm": False,
            "fc_dropout": 0.0,
            "N": 2,
            "h": 1,
            "d_ff": 384,
            "dropout": 0.1,
            "positional_encoding": None,
            "max_indices": 512,
            "d_output": 1,
            "output_activation": None,
        },
        listwise=True,
        summary="allRank's context-aware ranker: self-attention over the documents of a query",
    ),
}

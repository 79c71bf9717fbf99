"""Building blocks shared by the ``mlp`` and ``transformer`` scorers (allRank's model parts).

* :class:`FCBlock` is allRank's ``fc_model``: optional LayerNorm of the input, then for each
  size ``h_k`` in ``sizes``: ``x <- dropout(activation(W_k x + b_k))``.
* :class:`OutputLayer` is allRank's ``post_model``: ``out = output_activation(W x + b)`` with
  ``d_output`` outputs; a scorer returns [B, L] when ``d_output == 1`` and [B, L, d_output]
  otherwise (the ``ordinal`` loss reads one output per threshold). The ranking score of a
  multi-output model is the sum of its outputs (allRank's ``OutputLayer.score``), see
  :func:`ranking_scores`.
* Activations are named as the classes of ``torch.nn`` (``ReLU``, ``Tanh``, ``Sigmoid``,
  ``GELU``, ...; case-insensitive), as in allRank's configs; ``None`` means identity.

Initial weights: Xavier-uniform for every matrix, drawn from the run's generator (allRank
initialises with Glorot too), biases 0, so one seed gives one model.
"""

from __future__ import annotations

import difflib

import torch
from torch import nn

__all__ = ["FCBlock", "OutputLayer", "activation_module", "init_weights", "ranking_scores"]


def _activation_names() -> dict[str, str]:
    import torch.nn.modules.activation as acts

    return {
        name.lower(): name
        for name in acts.__all__
        if isinstance(getattr(acts, name, None), type)
        and issubclass(getattr(acts, name), nn.Module)
        and name not in ("MultiheadAttention",)
    }


def activation_module(name: str | None, what: str = "activation") -> nn.Module:
    """``torch.nn.<name>()`` for an activation named as in allRank's configs; None: identity.

    Raises ValueError naming the close matches for an unknown name.
    """
    if name is None:
        return nn.Identity()
    known = _activation_names()
    if not isinstance(name, str) or name.lower() not in known:
        close = difflib.get_close_matches(str(name).lower(), list(known), n=3, cutoff=0.5)
        hint = f" Did you mean: {', '.join(known[c] for c in close)}?" if close else ""
        raise ValueError(
            f"unknown {what} {name!r}.{hint} Use a torch.nn activation class name, e.g. "
            "ReLU, Tanh, Sigmoid, GELU, LeakyReLU, or null for none"
        )
    return getattr(nn, known[name.lower()])()


def check_sizes(sizes, what: str = "sizes") -> list[int]:
    """Validate a list of positive layer widths."""
    if isinstance(sizes, int) and not isinstance(sizes, bool):
        sizes = [sizes]
    if not isinstance(sizes, (list, tuple)) or not all(
        isinstance(s, int) and not isinstance(s, bool) and s >= 1 for s in sizes
    ):
        raise ValueError(f"{what} must be a list of positive integers, got {sizes!r}")
    return list(sizes)


def check_dropout(p, what: str = "dropout") -> float:
    if p is None:
        return 0.0
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p < 1.0:
        raise ValueError(f"{what} must be a probability in [0, 1), got {p!r}")
    return float(p)


class FCBlock(nn.Module):
    """allRank's ``fc_model``: [B, L, d_in] -> [B, L, sizes[-1]] (d_in when sizes is empty)."""

    def __init__(self, d_in: int, sizes, activation, dropout, input_norm: bool, dtype):
        super().__init__()
        sizes = check_sizes(sizes)
        self.input_norm = nn.LayerNorm(d_in, dtype=dtype) if input_norm else nn.Identity()
        widths = [d_in, *sizes]
        self.layers = nn.ModuleList(
            nn.Linear(a, b, dtype=dtype) for a, b in zip(widths[:-1], widths[1:], strict=True)
        )
        self.activation = activation_module(activation)
        self.dropout = nn.Dropout(check_dropout(dropout))
        self.output_size = widths[-1]

    def forward(self, x):
        x = self.input_norm(x)
        for layer in self.layers:
            x = self.dropout(self.activation(layer(x)))
        return x


class OutputLayer(nn.Module):
    """allRank's ``post_model``: [B, L, d] -> [B, L] (d_output 1) or [B, L, d_output]."""

    def __init__(self, d_in: int, d_output: int, output_activation, dtype):
        super().__init__()
        if isinstance(d_output, bool) or not isinstance(d_output, int) or d_output < 1:
            raise ValueError(f"d_output must be a positive integer, got {d_output!r}")
        self.linear = nn.Linear(d_in, d_output, dtype=dtype)
        self.activation = activation_module(output_activation, "output_activation")
        self.d_output = d_output

    def forward(self, x):
        out = self.activation(self.linear(x))
        return out.squeeze(-1) if self.d_output == 1 else out


def ranking_scores(out: torch.Tensor) -> torch.Tensor:
    """[B, L] scores from a scorer's output: itself, or the sum over a multi-output's last axis."""
    return out if out.ndim == 2 else out.sum(dim=-1)


def init_weights(module: nn.Module, generator) -> None:
    """Xavier-uniform matrices and zero biases, drawn from ``generator`` (reproducible)."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p, generator=generator)
            elif name.endswith("bias"):
                p.zero_()

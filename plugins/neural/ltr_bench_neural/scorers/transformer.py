"""The ``transformer`` scorer: allRank's context-aware self-attention ranker.

Pobrotyn et al., "Context-Aware Learning to Rank with Self-Attention" (2020). For the L
documents of one query (padding masked out of the attention)::

    h0 = FC(x)                                # allRank's fc_model (input block), d_model wide
    h0 = sqrt(d_model) * h0 + PE(position)    # only with positional_encoding (fixed|learned)
    h  = LayerNorm(Encoder_N(h0))             # N pre-norm encoder layers: h heads, d_ff, dropout
    score = output_activation(w'h + b)        # allRank's post_model

Each encoder layer is ``x + Dropout(MHA(LN(x)))`` then ``x + Dropout(FF(LN(x)))`` with
``FF = Linear(d_ff) -> ReLU -> Dropout -> Linear(d_model)`` (allRank's layer; built from
``torch.nn.TransformerEncoderLayer(norm_first=True)``; torch's LayerNorm divides by the
biased standard deviation inside the root, allRank's by the unbiased one outside it, a
difference of O(1/d_model)). A document's score depends on the other documents of its list,
so every document of a query is scored together, in input order, however long the list
(``slate_length`` bounds training lists only). Without positional encoding the scorer is
permutation-equivariant: permuting a list permutes its scores.

scorer_args: ``sizes`` (fc widths; the last is d_model, default [96]), ``activation`` (fc
activation, default none as in allRank's configs), ``input_norm``, ``fc_dropout``
(default 0), ``N`` (layers, 2), ``h`` (heads, 1; must divide d_model), ``d_ff`` (384),
``dropout`` (0.1), ``positional_encoding`` (null, "fixed" or "learned"), ``max_indices``
(positions with their own encoding, 512), ``d_output`` (1), ``output_activation`` (none).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ltr_bench_neural.scorers import SCORERS
from ltr_bench_neural.scorers._blocks import (
    FCBlock,
    OutputLayer,
    check_dropout,
    init_weights,
)

TRANSFORMER_ARGS: dict[str, object] = SCORERS["transformer"].args


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"transformer {name} must be a positive integer, got {value!r}")
    return value


class PositionalEncoding(nn.Module):
    """allRank's encodings of the input position p = 0, 1, ...: ``fixed`` (sinusoidal,
    Vaswani et al.) or ``learned`` (an embedding). Positions >= max_indices share one
    encoding (zeros for ``fixed``)."""

    def __init__(self, strategy: str, d_model: int, max_indices: int, dtype):
        super().__init__()
        if strategy not in ("fixed", "learned"):
            raise ValueError(
                f"positional_encoding must be null, 'fixed' or 'learned', got {strategy!r}"
            )
        self.strategy = strategy
        self.max_indices = _positive_int("max_indices", max_indices)
        self.scale = math.sqrt(d_model)
        if strategy == "fixed":
            pos = torch.arange(max_indices, dtype=torch.float64)[:, None]
            div = torch.exp(
                torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(1e4) / d_model)
            )
            pe = torch.zeros(max_indices + 1, d_model, dtype=torch.float64)
            pe[:-1, 0::2] = torch.sin(pos * div)
            pe[:-1, 1::2] = torch.cos(pos * div)[:, : d_model // 2]
            self.register_buffer("pe", pe.to(dtype))
        else:
            self.embedding = nn.Embedding(max_indices + 1, d_model, dtype=dtype)

    def forward(self, x, mask):
        idx = torch.arange(x.shape[1], device=x.device).clamp(max=self.max_indices)
        idx = idx.expand(x.shape[0], -1).masked_fill(~mask, self.max_indices)
        enc = self.pe[idx] if self.strategy == "fixed" else self.embedding(idx)
        return self.scale * x + enc


class TransformerScorer(nn.Module):
    """[B, L, d] with mask [B, L] -> [B, L] (or [B, L, d_output])."""

    def __init__(self, n_features: int, *, dtype, **args):
        super().__init__()
        a = {**TRANSFORMER_ARGS, **args}
        self.fc = FCBlock(
            n_features, a["sizes"], a["activation"], a["fc_dropout"], bool(a["input_norm"]), dtype
        )
        d_model = self.fc.output_size
        heads = _positive_int("h", a["h"])
        if d_model % heads:
            raise ValueError(
                f"transformer: the number of heads h={heads} must divide d_model={d_model} "
                "(the last of `sizes`, or the feature count when sizes is empty)"
            )
        layer = nn.TransformerEncoderLayer(
            d_model,
            heads,
            dim_feedforward=_positive_int("d_ff", a["d_ff"]),
            dropout=check_dropout(a["dropout"]),
            activation="relu",
            batch_first=True,
            norm_first=True,
            dtype=dtype,
        )
        self.encoder = nn.TransformerEncoder(
            layer,
            _positive_int("N", a["N"]),
            norm=nn.LayerNorm(d_model, dtype=dtype),
            enable_nested_tensor=False,
        )
        pe = a["positional_encoding"]
        if isinstance(pe, dict):  # allRank's {"strategy": ..., "max_indices": ...}
            a["max_indices"] = pe.get("max_indices", a["max_indices"])
            pe = pe.get("strategy")
        self.position = (
            None if pe is None else PositionalEncoding(pe, d_model, a["max_indices"], dtype)
        )
        self.output = OutputLayer(d_model, a["d_output"], a["output_activation"], dtype)
        self.d_model, self.heads, self.d_ff, self.n_layers = d_model, heads, a["d_ff"], a["N"]

    def forward(self, X, mask):
        h = self.fc(X)
        if self.position is not None:
            h = self.position(h, mask)
        h = self.encoder(h, src_key_padding_mask=~mask)
        return self.output(h)

    def activation_bytes(self, batch_size: int, list_length: int, itemsize: int = 4) -> int:
        """Rough bytes of the activations kept for backward in one training step.

        Per layer: the attention matrices ``B h L^2`` (scores, softmax, dropout mask: ~3
        copies) plus ``B L (2 d_ff + 8 d_model)`` for the feed-forward and residual paths.
        An estimate to refuse hopeless settings before training, not an exact figure.
        """
        B, L = batch_size, list_length
        per_layer = 3 * B * self.heads * L * L + B * L * (2 * self.d_ff + 8 * self.d_model)
        return int(itemsize * (self.n_layers * per_layer + 4 * B * L * self.d_model))

    def check_training_memory(self, batches, ranker, device, available: int | None = None):
        """Refuse a fit whose largest training batch would not fit in memory (estimated
        with :meth:`activation_bytes` against the free memory of ``device``, before any
        step), naming the settings to lower."""
        if not batches:
            return
        B = max(int(b.X.shape[0]) for b in batches)
        L = max(int(b.X.shape[1]) for b in batches)
        itemsize = batches[0].X.element_size()
        need = self.activation_bytes(B, L, itemsize)
        if available is None:
            available = _available_bytes(device)
        if available is None or need <= 0.8 * available:
            return
        gib = 2.0**30
        raise MemoryError(
            f"transformer: one training batch of {B} queries x {L} documents needs about "
            f"{need / gib:.1f} GiB of activations (N={self.n_layers} layers, h={self.heads} "
            f"heads, d_ff={self.d_ff}, d_model={self.d_model}), more than the "
            f"{available / gib:.1f} GiB free on {device}: lower batch_size (now "
            f"{ranker.batch_size}) or slate_length (now {ranker.slate_length}; the longest "
            f"training list has {L} documents), or N, h, d_ff"
        )


def _available_bytes(device) -> int | None:
    if getattr(device, "type", str(device)) == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil ships with ltr-bench
        return None
    return int(psutil.virtual_memory().available)


def build(ctx, **args) -> nn.Module:
    unknown = sorted(set(args) - set(TRANSFORMER_ARGS))
    if unknown:
        raise ValueError(
            f"unknown transformer scorer_args {unknown}; known: {', '.join(TRANSFORMER_ARGS)}"
        )
    model = TransformerScorer(ctx.n_features, dtype=ctx.dtype, **args)
    init_weights(model, ctx.generator)
    return model

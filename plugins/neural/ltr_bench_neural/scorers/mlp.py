"""The ``mlp`` scorer: allRank's fully connected model (``fc_model`` + ``post_model``).

    h = FC(x)                   # LayerNorm (input_norm), then Linear -> activation -> dropout
                                # for each width in `sizes`
    score = output_activation(w'h + b)     # d_output = 1 -> [B, L]; d_output = n -> [B, L, n]

Each document is scored on its own features (no context): a "pointwise scoring function"
trained with any list loss. scorer_args: ``sizes`` (hidden widths, default [64, 32]),
``activation`` (a torch.nn class name, default ReLU; null for none), ``dropout`` (default 0),
``input_norm`` (LayerNorm of the input, default false), ``d_output`` (default 1),
``output_activation`` (default none).
"""

from __future__ import annotations

from torch import nn

from ltr_bench_neural.scorers import SCORERS
from ltr_bench_neural.scorers._blocks import FCBlock, OutputLayer, init_weights

MLP_ARGS: dict[str, object] = SCORERS["mlp"].args


class MLPScorer(nn.Module):
    """[B, L, d] -> [B, L] (or [B, L, d_output]); ``mask`` is accepted and not needed."""

    def __init__(
        self,
        n_features: int,
        *,
        sizes,
        activation,
        dropout,
        input_norm,
        d_output,
        output_activation,
        dtype,
    ):
        super().__init__()
        self.fc = FCBlock(n_features, sizes, activation, dropout, bool(input_norm), dtype)
        self.output = OutputLayer(self.fc.output_size, d_output, output_activation, dtype)

    def forward(self, X, mask=None):
        return self.output(self.fc(X))


def build(ctx, **args) -> nn.Module:
    unknown = sorted(set(args) - set(MLP_ARGS))
    if unknown:
        raise ValueError(f"unknown mlp scorer_args {unknown}; known: {', '.join(MLP_ARGS)}")
    merged = {**MLP_ARGS, **args}
    model = MLPScorer(ctx.n_features, dtype=ctx.dtype, **merged)
    init_weights(model, ctx.generator)
    return model

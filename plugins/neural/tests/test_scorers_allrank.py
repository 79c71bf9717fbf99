"""The allRank-style scorers: shapes, masking, permutation equivariance, bad settings."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ltr_bench_neural.scorers import ScorerContext  # noqa: E402
from ltr_bench_neural.scorers import mlp as mlp_module  # noqa: E402
from ltr_bench_neural.scorers import transformer as transformer_module  # noqa: E402
from ltr_bench_neural.scorers._blocks import ranking_scores  # noqa: E402

D = 6


def ctx(seed=0, dtype=torch.float64):
    return ScorerContext(
        n_features=D,
        X_train=np.zeros((1, D)),
        y_train=np.zeros(1),
        query_dim=None,
        dim=4,
        activation="sigmoid",
        tau=1.0,
        rho=0.0,
        generator=torch.Generator().manual_seed(seed),
        dtype=dtype,
    )


def build(kind, seed=0, **args):
    module = {"mlp": mlp_module, "transformer": transformer_module}[kind]
    model = module.build(ctx(seed), **args)
    return model.eval()


def padded_batch(lengths, seed=0, garbage=0.0):
    gen = torch.Generator().manual_seed(seed)
    L = max(lengths)
    X = torch.randn(len(lengths), L, D, generator=gen, dtype=torch.float64)
    mask = torch.arange(L)[None, :] < torch.tensor(lengths)[:, None]
    X = torch.where(mask[:, :, None], X, torch.full_like(X, garbage))
    return X, mask


@pytest.mark.parametrize("kind", ["mlp", "transformer"])
def test_scores_have_one_value_per_document_and_d_output_adds_an_axis(kind):
    X, mask = padded_batch([5, 3])
    assert build(kind)(X, mask).shape == (2, 5)
    out = build(kind, d_output=4, output_activation="Sigmoid")(X, mask)
    assert out.shape == (2, 5, 4) and bool(((out > 0) & (out < 1)).all())
    assert ranking_scores(out).shape == (2, 5)


@pytest.mark.parametrize("kind", ["mlp", "transformer"])
def test_padding_never_changes_the_scores_of_real_documents(kind):
    model = build(kind, dropout=0.0)
    X, mask = padded_batch([5, 3], garbage=0.0)
    X2 = X.clone()
    X2[~mask] = 1e3  # garbage in the padded slots
    X3 = torch.cat([X, torch.full((2, 4, D), -7.0, dtype=X.dtype)], dim=1)  # longer padding
    m3 = torch.cat([mask, torch.zeros(2, 4, dtype=torch.bool)], dim=1)
    with torch.no_grad():
        a, b, c = model(X, mask), model(X2, mask), model(X3, m3)[:, :5]
    assert torch.allclose(a[mask], b[mask], atol=1e-12)
    assert torch.allclose(a[mask], c[mask], atol=1e-12)
    alone = model(X[1:, :3], mask[1:, :3])  # the short query on its own, no padding at all
    assert torch.allclose(alone[0], a[1, :3], atol=1e-12)


def test_transformer_without_positional_encoding_is_permutation_equivariant():
    model = build("transformer", N=2, h=2, sizes=[8], dropout=0.0)
    X, mask = padded_batch([7])
    perm = torch.randperm(7, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        s = model(X, mask)
        s_perm = model(X[:, perm], mask)
    assert torch.allclose(s_perm, s[:, perm], atol=1e-12)
    # ... and the context matters: a document's score changes when its neighbours change
    with torch.no_grad():
        s_other = model(torch.cat([X[:, :3], -X[:, 3:]], dim=1), mask)
    assert not torch.allclose(s_other[:, :3], s[:, :3], atol=1e-6)


@pytest.mark.parametrize("strategy", ["fixed", "learned"])
def test_positional_encoding_makes_the_score_depend_on_the_position(strategy):
    model = build("transformer", positional_encoding=strategy, max_indices=16, dropout=0.0)
    X, mask = padded_batch([5])
    perm = torch.tensor([4, 3, 2, 1, 0])
    with torch.no_grad():
        assert not torch.allclose(model(X[:, perm], mask), model(X, mask)[:, perm], atol=1e-6)
    allrank_style = build(
        "transformer", positional_encoding={"strategy": strategy, "max_indices": 16}
    )
    assert allrank_style.position.strategy == strategy


def test_one_seed_gives_one_model_and_another_seed_another():
    X, mask = padded_batch([4])
    with torch.no_grad():
        a = build("transformer", seed=1)(X, mask)
        b = build("transformer", seed=1)(X, mask)
        c = build("transformer", seed=2)(X, mask)
    assert torch.equal(a, b) and not torch.allclose(a, c)


def test_mlp_is_allranks_fc_model_then_output_layer():
    model = build("mlp", sizes=[3], activation="Tanh", input_norm=True)
    X, mask = padded_batch([2])
    layer, out = model.fc.layers[0], model.output.linear
    with torch.no_grad():
        x = torch.nn.functional.layer_norm(X, (D,), eps=1e-5)
        expected = out(torch.tanh(layer(x))).squeeze(-1)
        assert torch.allclose(model(X, mask), expected, atol=1e-12)


@pytest.mark.parametrize(
    ("kind", "args", "match"),
    [
        ("mlp", {"activation": "Relu6x"}, "unknown activation 'Relu6x'"),
        ("mlp", {"activation": "relu6"}, None),  # torch.nn.ReLU6, any case
        ("mlp", {"sizes": [0]}, "positive integers"),
        ("mlp", {"dropout": 1.5}, "dropout"),
        ("mlp", {"hidden": 3}, "unknown mlp scorer_args"),
        ("transformer", {"h": 5, "sizes": [8]}, "must divide d_model=8"),
        ("transformer", {"positional_encoding": "rotary"}, "fixed' or 'learned"),
        ("transformer", {"output_activation": "Sigmoidd"}, "Did you mean: Sigmoid"),
        ("transformer", {"N": 0}, "N must be a positive integer"),
    ],
)
def test_bad_scorer_settings_are_refused_with_a_message(kind, args, match):
    if match is None:
        build(kind, **args)
        return
    with pytest.raises(ValueError, match=match):
        build(kind, **args)

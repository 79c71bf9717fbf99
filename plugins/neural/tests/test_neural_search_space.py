"""NeuralRanker.search_space: a space per scorer/optimizer/loss that parses, resolves against
the ranker's parameters, and fits at its bounds; the width/depth/dropout shortcuts and the
temperature reaching each loss's own smoothing argument."""

from __future__ import annotations

import numpy as np
import pytest

from ltr_bench.testing import make_check_data
from ltr_bench.tune.search_space import parse_spec, resolve_space, search_space_of
from ltr_bench_neural.ranker import NeuralRanker
from ltr_bench_neural.search_space import temperature_loss_args

SCORERS = ["linear", "quadratic", "mlp", "transformer"]


@pytest.mark.parametrize("optimizer", ["lbfgs", "adam", "sgd"])
@pytest.mark.parametrize("scorer", SCORERS + ["bilinear", "distance"])
def test_every_configuration_declares_a_space_that_parses_and_resolves(scorer, optimizer):
    ranker = NeuralRanker(scorer=scorer, optimizer=optimizer, loss="neuralndcg")
    space = resolve_space("neural", ranker)
    assert {"l2", "patience", "temperature"} <= set(space)
    assert ("lr" in space) == (optimizer != "lbfgs")
    assert ("batch_size" in space) == (optimizer != "lbfgs")
    for name, spec in space.items():
        parse_spec(name, spec, where="NeuralRanker.search_space")
    if scorer in ("mlp", "transformer"):
        assert {"width", "depth", "dropout"} <= set(space)


def test_the_class_declares_the_defaults_space_and_fixed_parameters_are_not_searched():
    assert search_space_of(NeuralRanker) == NeuralRanker().search_space()
    ranker = NeuralRanker(scorer="mlp", optimizer="adam", lr=0.01)
    space = resolve_space("neural", ranker, fixed={"lr": 0.01})
    assert "lr" not in space and "width" in space


def test_a_loss_without_a_smoothing_scale_or_with_it_in_loss_args_does_not_search_temperature():
    assert "temperature" not in NeuralRanker(loss="listnet").search_space()
    given = NeuralRanker(loss="approxndcg", loss_args={"alpha": 2.0})
    assert "temperature" not in given.search_space()


def _bounds(space, end):
    out = {}
    for name, spec in space.items():
        if isinstance(spec, list):
            out[name] = spec[0] if end == "low" else spec[-1]
        else:
            out[name] = spec[end]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("end", ["low", "high"])
@pytest.mark.parametrize("scorer", ["mlp", "transformer", "quadratic"])
def test_every_bound_of_the_space_fits_on_tiny_data(scorer, end):
    X, y, q = make_check_data()
    base = NeuralRanker(scorer=scorer, optimizer="adam", loss="neuralndcg", random_state=0)
    params = _bounds(base.search_space(), end)
    params["epochs"] = 2
    ranker = NeuralRanker(
        scorer=scorer, optimizer="adam", loss="neuralndcg", random_state=0, **params
    )
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a high rho keeps no product on this data: linear
        ranker.fit(X, y, qid=q, eval_set=(X, y, q))
    assert np.isfinite(ranker.predict(X, qid=q)).all()


def test_width_and_depth_set_the_mlp_and_transformer_sizes():
    X, y, q = make_check_data()
    d = X.shape[1]
    mlp = NeuralRanker(scorer="mlp", width=8, depth=3, optimizer="adam", epochs=1).fit(X, y, qid=q)
    assert mlp.fitted_info()["n_parameters"] == (d * 8 + 8) + 2 * (8 * 8 + 8) + 8 + 1
    tr = NeuralRanker(scorer="transformer", width=16, depth=1, optimizer="adam", epochs=1)
    tr.fit(X, y, qid=q)
    blocks = [m for m in tr.model_.modules() if type(m).__name__ == "TransformerEncoderLayer"]
    assert len(blocks) == 1 and blocks[0].linear1.out_features == 64


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(scorer="linear", width=8), r"width: the shortcut\(s\) apply to the mlp"),
        (dict(scorer="mlp", depth=2, scorer_args={"sizes": [4]}), r"depth and scorer_args.sizes"),
        (dict(scorer="mlp", dropout=1.0), r"dropout must be a number in \[0.0, 1.0\)"),
        (dict(scorer="mlp", width=0), r"width must be an integer >= 1"),
    ],
)
def test_bad_shortcuts_are_refused_without_data(params, match):
    with pytest.raises(ValueError, match=match):
        NeuralRanker(**params).validate_params()


def test_temperature_reaches_each_loss_as_its_own_argument_and_the_default_changes_nothing():
    from ltr_bench_neural.losses import check_loss_args, resolve

    def args(loss, **kw):
        r = NeuralRanker(loss=loss, **kw)
        spec, _ = resolve(loss)
        return temperature_loss_args(r, spec, check_loss_args(loss, r.loss_args))

    assert args("neuralndcg", temperature=0.5)["temperature"] == 0.5
    assert args("approxndcg", temperature=0.5)["alpha"] == 2.0
    assert args("lambdaloss", temperature=0.25)["sigma"] == 4.0
    assert args("approxndcg")["alpha"] == 1.0 and args("neuralndcg")["temperature"] == 1.0
    assert args("approxndcg", temperature=0.5, loss_args={"alpha": 3.0})["alpha"] == 3.0


def test_shortcuts_are_not_searched_beside_the_scorer_args_they_would_set():
    mlp = NeuralRanker(scorer="mlp", scorer_args={"sizes": [64, 32], "dropout": 0.1})
    assert not {"width", "depth", "dropout"} & set(mlp.search_space())
    tr = NeuralRanker(scorer="transformer", scorer_args={"N": 1, "h": 2})
    assert {"width", "dropout"} <= set(tr.search_space()) and "depth" not in tr.search_space()

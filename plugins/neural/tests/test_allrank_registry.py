"""allRank names in the registries: declared args match the functions, aliases are one function."""

from __future__ import annotations

import inspect
import math

import pytest

torch = pytest.importorskip("torch")

from ltr_bench_neural.losses import LOSSES, check_loss_args, resolve  # noqa: E402
from ltr_bench_neural.scorers import SCORERS  # noqa: E402

ALLRANK_LOSSES = ("listmle", "lambdaloss", "approxndcg", "neuralndcg", "bce", "ordinal", "rmse")


@pytest.mark.parametrize("name", ALLRANK_LOSSES)
def test_declared_loss_args_are_the_functions_keyword_defaults(name):
    spec = LOSSES[name]
    params = inspect.signature(spec.function_object()).parameters
    defaults = {
        k: p.default for k, p in params.items() if p.kind is p.KEYWORD_ONLY and k != "weights"
    }
    assert spec.args == defaults


def test_ranknet_is_pair_logistic_and_listnet_is_softmax_on_label_softmax():
    ranknet, fixed = resolve("ranknet")
    assert ranknet is LOSSES["pair-logistic"] and fixed == {}
    listnet, fixed = resolve("listnet")
    assert listnet is LOSSES["softmax"] and fixed == {"target": "labels"}
    assert check_loss_args("listnet", None)["target"] == "labels"


def test_listnet_alias_computes_listnets_top_one_cross_entropy():
    scores, labels = [0.3, -1.2, 2.0], [2.0, 0.0, 1.0]
    s = torch.tensor([scores + [0.0]], dtype=torch.float64)
    y = torch.tensor([labels + [-1.0]], dtype=torch.float64)
    spec, fixed = resolve("listnet")
    got = spec.function_object()(s, y, y >= 0, **check_loss_args("listnet", None))
    zs, zy = sum(map(math.exp, scores)), sum(map(math.exp, labels))
    expected = -sum(math.exp(t) / zy * math.log(math.exp(v) / zs) for v, t in zip(scores, labels))
    assert float(got) == pytest.approx(expected, rel=1e-12)


def test_ranknet_alias_equals_lambdaloss_ranknet_scheme_in_natural_log():
    s = torch.tensor([[0.3, -1.2, 2.0, 0.7]], dtype=torch.float64)
    y = torch.tensor([[2.0, 0.0, 1.0, 0.0]], dtype=torch.float64)
    m = y >= 0
    ranknet = resolve("ranknet")[0].function_object()(s, y, m)
    lam = LOSSES["lambdaloss"].function_object()(
        s, y, m, weighing_scheme="rankNet", reduction_log="natural"
    )
    assert float(ranknet) == pytest.approx(float(lam), rel=1e-12)


@pytest.mark.parametrize("name", ["mlp", "transformer"])
def test_scorer_defaults_come_from_the_registry(name):
    module = __import__(f"ltr_bench_neural.scorers.{name}", fromlist=["build"])
    constant = {"mlp": "MLP_ARGS", "transformer": "TRANSFORMER_ARGS"}[name]
    assert getattr(module, constant) is SCORERS[name].args
    assert SCORERS["transformer"].listwise and not SCORERS["mlp"].listwise

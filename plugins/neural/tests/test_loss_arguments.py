"""Issue 33, item 3: every loss argument has its valid range, checked before any data is
loaded; values that flip a loss (the ranker would learn the reversed ranking with exit 0) or
make it constant are refused, naming the loss, the argument, the range and the value."""

from __future__ import annotations

import pytest

from ltr_bench_neural.losses import ALIASES, LOSSES, check_loss_args
from ltr_bench_neural.losses.arguments import ARG_RULES, WEIGHING_SCHEMES, arg_problem
from ltr_bench_neural.ranker import NeuralRanker


def test_every_argument_of_every_loss_has_a_rule_and_its_default_is_valid():
    assert set(ARG_RULES) == set(LOSSES)
    for name, spec in LOSSES.items():
        assert set(ARG_RULES[name]) == set(spec.args), name
        for key, default in spec.args.items():
            assert arg_problem(name, key, default) is None, (name, key, default)
    for alias, (base, fixed) in ALIASES.items():
        for key, value in fixed.items():
            assert arg_problem(base, key, value) is None, (alias, key)


def test_the_weighing_schemes_listed_without_torch_are_the_losses_own():
    pytest.importorskip("torch")
    from ltr_bench_neural.losses import lambdaloss

    assert WEIGHING_SCHEMES == lambdaloss.WEIGHING_SCHEMES
    assert lambdaloss.WEIGHING_SCHEMES is WEIGHING_SCHEMES  # one list, not a copy to keep equal


FLIPS = [  # issue 33's cases, and their relatives
    ("lambdaloss", {"sigma": -1}, "sigma: must be a finite number > 0, got -1"),
    ("lambdaloss", {"mu": -10.0}, "mu: must be a finite number >= 0"),
    ("rmse", {"no_of_levels": -1}, "no_of_levels: must be a finite number > 0 or None"),
    ("wpll", {"gamma": -5}, "gamma: must be a finite number > 0 or None, got -5"),
    ("wub", {"gamma": 0}, "gamma: must be a finite number > 0"),
    ("approxndcg", {"alpha": -1.0}, "alpha: must be a finite number > 0"),
    ("smooth-ndcg", {"temperature": -0.5}, "temperature: must be a finite number > 0"),
    ("neuralndcg", {"temperature": float("inf")}, "temperature: must be a finite number > 0"),
    ("neuralndcg", {"max_iter": 0}, "max_iter: must be an integer >= 1"),
    ("neuralndcg", {"tol": -1e-6}, "tol: must be a finite number > 0"),
    ("lambdaloss", {"k": 0}, "k: must be an integer >= 1 or None"),
    ("lambdaloss", {"k": 2.5}, "k: must be an integer >= 1 or None"),
    ("lambdaloss", {"reduction": "max"}, "reduction: must be one of 'sum', 'mean'"),
    ("ordinal", {"n": 0}, "n: must be an integer >= 1 or None"),
    ("wpll", {"n_levels": 1}, "n_levels: must be an integer >= 2 or None"),
    ("smooth-err", {"max_label": True}, "max_label: must be an integer >= 1 or None"),
    ("bce", {"logits": "yes"}, "logits: must be true or false, got 'yes'"),
    ("listmle", {"ties": "last"}, "ties: must be one of 'random', 'first'"),
    ("listnet", {"target": "labels"}, None),  # an alias: its own fixed target may be repeated
]


@pytest.mark.parametrize("loss,args,fragment", FLIPS, ids=[f"{c[0]}-{c[1]}" for c in FLIPS])
def test_a_loss_argument_out_of_its_range_is_refused_before_any_data(loss, args, fragment):
    if fragment is None:
        check_loss_args(loss, args)
        return
    with pytest.raises(ValueError, match=f"loss {loss!r}: loss_args "):
        check_loss_args(loss, args)
    with pytest.raises(ValueError) as err:  # the ranker's pre-data check, no fit
        NeuralRanker(loss=loss, loss_args=args).validate_params()
    assert fragment in str(err.value), str(err.value)


def test_values_at_the_edge_of_their_range_are_accepted():
    for loss, args in [
        ("lambdaloss", {"sigma": 1e-3, "mu": 0.0, "k": 1}),
        ("wpll", {"gamma": 1e-9, "n_levels": 2}),
        ("rmse", {"no_of_levels": 4}),
        ("neuralndcg", {"max_iter": 1, "stochastic": False}),
    ]:
        check_loss_args(loss, args)

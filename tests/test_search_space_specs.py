"""ltr_bench.tune.search_space: spec forms, their checks, declared spaces and plan overrides.

(Named ..._specs so its module name differs from plugins/lgmml/tests/test_search_space.py:
both test folders are collected in one session without __init__.py files.)"""

from __future__ import annotations

import pytest

from ltr_bench.registry import make_ranker
from ltr_bench.tune.search_space import (
    SearchSpaceError,
    parse_spec,
    resolve_space,
    search_space_of,
    suggest,
)


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"low": 10, "high": 1}, "above high"),
        ({"low": 0, "high": 1, "log": True}, "needs low > 0"),
        ({"low": 1}, "give low and high"),
        ({"lo": 1, "high": 2}, "unknown key 'lo'"),
        ({"choices": []}, "non-empty list"),
        ({"choices": [1, 1]}, "listed twice"),
        ({"low": "a", "high": 2}, "finite number"),
        ("7..255", "expected a range"),
    ],
)
def test_bad_search_space_specs_name_the_parameter_and_the_problem(spec, message):
    with pytest.raises(SearchSpaceError, match=message) as err:
        parse_spec("num_leaves", spec, where="plan.toml: tuning.lightgbm")
    assert "plan.toml: tuning.lightgbm.num_leaves" in str(err.value)


def test_spec_forms_map_to_optuna_distributions():
    import optuna.distributions as od

    assert parse_spec("a", {"low": 7, "high": 255, "log": True}, where="w") == od.IntDistribution(
        7, 255, log=True
    )
    assert parse_spec("a", {"low": 0.01, "high": 1}, where="w") == od.FloatDistribution(0.01, 1)
    assert parse_spec("a", ["l2", "zscore"], where="w") == od.CategoricalDistribution(
        ["l2", "zscore"]
    )


def test_a_plan_override_replaces_removes_and_checks_parameters():
    lgbm = make_ranker("lightgbm", {})
    space = resolve_space(
        "lightgbm",
        lgbm,
        override={"num_leaves": {"low": 7, "high": 15}, "n_estimators": False},
        fixed={"learning_rate": 0.1},
    )
    assert space["num_leaves"] == {"low": 7, "high": 15}
    assert "n_estimators" not in space and "learning_rate" not in space
    with pytest.raises(SearchSpaceError, match="'num_leafs' is not a parameter of lightgbm"):
        resolve_space(
            "lightgbm",
            lgbm,
            override={"num_leafs": {"low": 7, "high": 15}},
            where="plan.toml: tuning",
        )


def test_every_builtin_ranker_declares_a_valid_search_space():
    for name in (
        "lightgbm",
        "xgboost-gbrt",
        "xgboost-lambdamart",
        "catboost",
        "mlr",
        "rmlr",
        "ridge",
        "listnet",
        "lgmml",
    ):
        assert resolve_space(name, make_ranker(name, {})), name


class _Declared:
    """A ranker stand-in declaring its space by a classmethod, with two parameters."""

    @classmethod
    def search_space(cls):
        return {"alpha": {"low": 0.1, "high": 10.0}}

    def get_params(self, deep=False):
        return {"alpha": 1.0, "beta": 2}


def test_a_space_declared_by_classmethod_is_read_and_fixed_parameters_leave_it():
    assert search_space_of(_Declared) == {"alpha": {"low": 0.1, "high": 10.0}}
    assert resolve_space("d", _Declared(), override={"beta": [1, 2]}, fixed={"alpha": 3.0}) == {
        "beta": [1, 2]
    }
    with pytest.raises(SearchSpaceError, match=r"tuning\.d: nothing to tune"):
        resolve_space("d", _Declared(), fixed={"alpha": 3.0})


def test_a_space_that_is_not_a_dict_names_the_ranker_attribute():
    class Bad:
        SEARCH_SPACE = [("alpha", [1, 2])]

    with pytest.raises(SearchSpaceError, match=r"Bad\.SEARCH_SPACE must be a dict"):
        search_space_of(Bad)


def test_suggest_draws_each_kind_inside_its_distribution_and_records_it():
    import optuna

    dists = {
        "n": parse_spec("n", {"low": 3, "high": 9, "step": 3}, where="w"),
        "lr": parse_spec("lr", {"low": 0.01, "high": 0.3, "log": True}, where="w"),
        "norm": parse_spec("norm", ["l2", "zscore"], where="w"),
    }
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for _ in range(20):
        trial = study.ask()
        values = {k: suggest(trial, k, d) for k, d in dists.items()}
        assert values["n"] in (3, 6, 9) and isinstance(values["n"], int)
        assert 0.01 <= values["lr"] <= 0.3 and values["norm"] in ("l2", "zscore")
        assert trial.distributions == dists
        study.tell(trial, 0.0)


def test_the_search_space_names_are_still_importable_from_ltr_bench_tuning():
    from ltr_bench.tune import search_space
    from ltr_bench.tune import study as tuning

    for name in ("SearchSpaceError", "parse_spec", "resolve_space", "search_space_of"):
        assert getattr(tuning, name) is getattr(search_space, name), name
        assert name in tuning.__all__, name


@pytest.mark.parametrize(
    "spec",
    [{"low": 0, "high": 10, "step": 3}, {"low": 0.0, "high": 1.0, "step": 0.3}],
)
def test_a_step_that_does_not_divide_the_range_is_refused_with_the_nearest_bounds(spec):
    with pytest.raises(SearchSpaceError, match="does not divide the range"):
        parse_spec("p", spec, where="tuning.x")


def test_a_step_that_divides_the_range_within_rounding_is_accepted():
    dist = parse_spec("p", {"low": 0.0, "high": 0.3, "step": 0.1}, where="tuning.x")
    assert dist.step == 0.1 and dist.high == pytest.approx(0.3)


class _Params:
    """A stand-in ranker with a real parameter ``alpha`` (default 1.0) and an integer one."""

    def __init__(self, alpha=1.0, n_leaves=31):
        self.alpha, self.n_leaves = alpha, n_leaves

    def get_params(self, deep=True):
        return {"alpha": self.alpha, "n_leaves": self.n_leaves}


def test_integer_bounds_for_a_real_parameter_search_reals():
    import optuna.distributions as od

    space = resolve_space(
        "x", _Params(), override={"alpha": {"low": 0, "high": 2, "step": 1}, "n_leaves": False}
    )
    assert space["alpha"] == {"low": 0.0, "high": 2.0, "step": 1.0}
    dist = parse_spec("alpha", space["alpha"], where="tuning.x")
    assert isinstance(dist, od.FloatDistribution)
    space = resolve_space(
        "x", _Params(), override={"alpha": {"low": 0, "high": 1}, "n_leaves": {"low": 2, "high": 9}}
    )
    assert isinstance(parse_spec("alpha", space["alpha"], where="t"), od.FloatDistribution)
    assert isinstance(parse_spec("n_leaves", space["n_leaves"], where="t"), od.IntDistribution)


def test_real_bounds_for_an_integer_parameter_are_refused():
    with pytest.raises(SearchSpaceError, match="n_leaves is an integer parameter"):
        resolve_space("x", _Params(), override={"n_leaves": {"low": 7.5, "high": 255.0}})


class _ReplacesDefaults:
    """A ranker that, like ``neural`` beside a config, would train another value for a
    parameter left at its default (so it refuses one given equal to it)."""

    SEARCH_SPACE = {
        "kind": ["a", "b"],
        "depth": {"low": 1, "high": 5},
        "rate": {"low": 0.1, "high": 1.0},
    }

    def __init__(self, kind="a", depth=3, rate=0.5):
        self.kind, self.depth, self.rate = kind, depth, rate

    def get_params(self, deep=False):
        return {"kind": self.kind, "depth": self.depth, "rate": self.rate}

    def check_user_params(self, user_params):
        for name, value in user_params.items():
            if value == self.__init__.__defaults__[list(self.get_params()).index(name)]:
                raise ValueError(f"{name}={value!r} would have no effect")


def test_a_searched_value_that_equals_a_default_the_ranker_would_replace_is_refused():
    with pytest.raises(
        SearchSpaceError,
        match=r"tuning\.r\.kind: a trial that draws the "
        r"default 'a' would train another value \(kind='a' would have no effect\)",
    ):
        resolve_space("r", _ReplacesDefaults())
    with pytest.raises(SearchSpaceError, match=r"tuning\.r\.depth: .* default 3"):
        resolve_space("r", _ReplacesDefaults(), override={"kind": ["b"]})
    # choices and integer ranges without the default, and a continuous range, are searched
    space = resolve_space(
        "r", _ReplacesDefaults(), override={"kind": ["b"], "depth": {"low": 4, "high": 5}}
    )
    assert set(space) == {"kind", "depth", "rate"}
    assert resolve_space(
        "r",
        _ReplacesDefaults(),
        override={"kind": ["b"], "depth": {"low": 2, "high": 4, "step": 2}, "rate": False},
    ) == {"kind": ["b"], "depth": {"low": 2, "high": 4, "step": 2}}

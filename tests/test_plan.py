"""Benchmark plans: TOML config validation and command-line value parsing."""

from __future__ import annotations

import pytest

from ltr_bench.run.plan import (
    DatasetChoice,
    PlanError,
    RankerChoice,
    load_plan,
    parse_assignment,
    parse_folds,
    parse_value,
    plan_from_dict,
)

FULL = """\
seed = 3
folds = [1, 3]
threads = 2
metrics = ["ndcg@10", "map"]
data_dir = "/data/ltr"

[rankers.lightgbm]
num_leaves = 31
learning_rate = 0.05

[rankers.xgboost-gbrt]

[datasets.synthetic]
n_queries = 50

[datasets."/some/folder"]
"""


@pytest.mark.parametrize(
    "text, value",
    [
        ("31", 31),
        ("-2", -2),
        ("0.05", 0.05),
        ("1e-3", 1e-3),
        ("true", True),
        ("True", True),
        ("false", False),
        ("none", None),
        ("None", None),
        ("null", None),
        ("gbtree", "gbtree"),
        ('"31"', "31"),
        ("[1, 2]", [1, 2]),
        ("inf", float("inf")),
        ("a=b", "a=b"),
        ("2024-01-01", "2024-01-01"),
    ],
)
def test_parse_value_reads_numbers_bools_none_lists_and_keeps_other_text(text, value):
    assert parse_value(text) == value
    assert type(parse_value(text)) is type(value)


def test_parse_assignment_splits_name_key_and_value():
    assert parse_assignment("lightgbm.num_leaves=31", option="--param") == (
        "lightgbm",
        "num_leaves",
        31,
    )
    assert parse_assignment("xgboost-gbrt.learning_rate=0.1", option="--param") == (
        "xgboost-gbrt",
        "learning_rate",
        0.1,
    )
    assert parse_assignment("n_queries=5", option="--dataset-option", scoped=False) == (
        None,
        "n_queries",
        5,
    )
    assert parse_assignment("lightgbm.objective=a=b", option="--param")[2] == "a=b"


@pytest.mark.parametrize(
    "text, match",
    [
        ("lightgbm.num_leaves", "expected NAME.key=value"),
        ("num_leaves=31", "expected NAME.key=value"),
        ("lightgbm.=31", "not a valid parameter name"),
        ("lightgbm.num-leaves=3", "not a valid parameter name"),
    ],
)
def test_malformed_param_assignments_name_the_option(text, match):
    with pytest.raises(PlanError, match=match) as info:
        parse_assignment(text, option="--param")
    assert str(info.value).startswith("--param")


def test_parse_folds():
    assert parse_folds("all") is None and parse_folds("ALL") is None
    assert parse_folds("1,3") == [1, 3] and parse_folds(" 2 ") == [2]
    for bad in ("0", "1,x", "1,1", "", "-1"):
        with pytest.raises(PlanError):
            parse_folds(bad)


def test_a_full_config_file_becomes_a_plan(tmp_path):
    path = tmp_path / "plan.toml"
    path.write_text(FULL)
    plan = load_plan(path)
    assert plan.seed == 3 and plan.folds == [1, 3] and plan.threads == 2
    assert plan.metrics == ("ndcg@10", "map") and plan.data_dir == "/data/ltr"
    assert plan.rankers == [
        RankerChoice("lightgbm", {"num_leaves": 31, "learning_rate": 0.05}),
        RankerChoice("xgboost-gbrt", {}),
    ]
    assert plan.datasets == [
        DatasetChoice("synthetic", {"n_queries": 50}),
        DatasetChoice("/some/folder", {}),
    ]
    assert plan.source == str(path)
    again = plan_from_dict(
        {k: v for k, v in plan.to_dict().items() if k != "source" and v is not None},
        source=str(path),
    )
    assert again == plan


def test_list_shorthand_and_defaults():
    plan = plan_from_dict({"rankers": ["lightgbm", "mlr"], "datasets": ["synthetic"]})
    assert [r.name for r in plan.rankers] == ["lightgbm", "mlr"]
    assert plan.seed == 0 and plan.folds is None and plan.metrics is None


@pytest.mark.parametrize(
    "text, match",
    [
        ("sed = 1\n[rankers.a]\n[datasets.b]\n", "key 'sed' is not a plan setting"),
        ("[rankers.a]\n", r"missing \[datasets\]"),
        ('seed = "x"\n[rankers.a]\n[datasets.b]\n', "key 'seed': expected an integer"),
        ("seed = true\n[rankers.a]\n[datasets.b]\n", "key 'seed': expected an integer"),
        ("folds = [0]\n[rankers.a]\n[datasets.b]\n", "key 'folds'"),
        ('folds = "1,1"\n[rankers.a]\n[datasets.b]\n', "listed twice"),
        ("threads = 0\n[rankers.a]\n[datasets.b]\n", "key 'threads'"),
        ('metrics = "ndcg@10"\n[rankers.a]\n[datasets.b]\n', "key 'metrics'"),
        ("rankers = []\n[datasets.b]\n", "key 'rankers'"),
        ('rankers = ["a", "a"]\n[datasets.b]\n', "listed twice"),
        ("rankers = { a = 1 }\n[datasets.b]\n", r"key 'rankers'\.a: expected a table"),
    ],
)
def test_invalid_config_files_are_errors_naming_file_and_key(tmp_path, text, match):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(PlanError, match=match) as info:
        load_plan(path)
    assert str(path) in str(info.value)


def test_toml_syntax_errors_name_file_and_line(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text("seed = 1\n[rankers.lightgbm\n")
    with pytest.raises(PlanError, match=r"broken\.toml: invalid TOML: .*line 2"):
        load_plan(path)


def test_missing_config_file_is_a_plan_error(tmp_path):
    with pytest.raises(PlanError, match="cannot read config file"):
        load_plan(tmp_path / "nope.toml")


def test_labelled_configurations_of_one_ranker_and_seeds_round_trip(tmp_path):
    path = tmp_path / "plan.toml"
    path.write_text(
        'seeds = [0, 2]\n[rankers.lightgbm]\n[rankers."lightgbm big"]\n'
        'ranker = "lightgbm"\nnum_leaves = 255\n[datasets.synthetic]\n'
    )
    plan = load_plan(path)
    assert plan.rankers == [
        RankerChoice("lightgbm", {}),
        RankerChoice("lightgbm", {"num_leaves": 255}, "lightgbm big"),
    ]
    assert plan.all_seeds() == (0, 2) and plan.seed == 0
    again = plan_from_dict(
        {k: v for k, v in plan.to_dict().items() if k != "source" and v is not None},
        source=str(path),
    )
    assert again == plan


@pytest.mark.parametrize(
    "doc, match",
    [
        ({"seed": 1, "seeds": [1, 2]}, "either seed or seeds"),
        ({"seeds": [1, 1]}, "listed twice"),
        ({"seeds": []}, "expected a list of seeds"),
    ],
)
def test_bad_seed_lists_are_rejected(doc, match):
    with pytest.raises(PlanError, match=match):
        plan_from_dict({"rankers": ["a"], "datasets": ["b"], **doc})


def test_seed_count_and_list_parse_from_the_command_line():
    from ltr_bench.run.plan import parse_seeds

    assert parse_seeds("3") == (0, 1, 2) and parse_seeds("4,7") == (4, 7)
    with pytest.raises(PlanError, match="--seeds"):
        parse_seeds("a,b")


@pytest.mark.parametrize(
    "text, value",
    [
        ("{max_bin = 63}", {"max_bin": 63}),
        ('{"max_bin": 63, "extra_trees": true}', {"max_bin": 63, "extra_trees": True}),
        ("{broken", "{broken"),
    ],
)
def test_structured_values_from_the_command_line_become_dicts(text, value):
    assert parse_value(text) == value
    name, key, parsed = parse_assignment(f"lightgbm.extra_params={text}", option="--param")
    assert (name, key, parsed) == ("lightgbm", "extra_params", value)


def test_run_ranker_list_keeps_commas_inside_a_labels_brackets(tmp_path):
    from ltr_bench.run.plan_options import CommandLine, build_plan

    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(
        '[rankers."lgbm[num_leaves=63,learning_rate=0.05]"]\n'
        'ranker = "lightgbm"\nnum_leaves = 63\nlearning_rate = 0.05\n\n'
        "[rankers.ridge]\n\n[datasets.synthetic]\n"
    )
    plan = build_plan(
        CommandLine(
            config=str(plan_file), rankers=("lgbm[num_leaves=63,learning_rate=0.05],ridge",)
        )
    )
    assert [r.display for r in plan.rankers] == ["lgbm[num_leaves=63,learning_rate=0.05]", "ridge"]
    assert plan.rankers[0].params == {"num_leaves": 63, "learning_rate": 0.05}


def test_run_ranker_list_with_an_unclosed_bracket_is_a_usage_error_naming_the_option():
    from ltr_bench.errors import UsageError
    from ltr_bench.run.plan_options import CommandLine, build_plan

    with pytest.raises(UsageError, match=r"^--ranker lightgbm\[num_leaves=63: 1 '\[' not"):
        build_plan(CommandLine(rankers=("lightgbm[num_leaves=63",)))

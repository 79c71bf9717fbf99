"""config_label: the one label of a configuration, everywhere results are shown."""

from __future__ import annotations

import pytest

from ltr_bench.results.labels import config_label, row_label, value_text, variant_text


def test_the_defaults_are_the_bare_ranker_name():
    assert config_label("lightgbm") == config_label("lightgbm", {}) == "lightgbm"


def test_set_parameters_are_listed_in_the_order_given():
    label = config_label("lightgbm", {"num_leaves": 7, "learning_rate": 0.05})
    assert label == "lightgbm[num_leaves=7,learning_rate=0.05]"


def test_a_named_configuration_keeps_its_name():
    assert config_label("lightgbm", {"num_leaves": 255}, "lightgbm big") == "lightgbm big"


@pytest.mark.parametrize(
    "value, text",
    [
        ("YetiRank", "YetiRank"),
        (0.05, "0.05"),
        (True, "true"),
        ([64, 32], "[64,32]"),
        ({"max_bin": 63, "a": 1}, '{"a":1,"max_bin":63}'),
        (None, "None"),
    ],
)
def test_values_read_as_written_and_never_as_null(value, text):
    assert value_text(value) == text


def test_a_row_on_the_dataset_as_it_is_is_named_by_its_label_alone():
    assert row_label("lightgbm", {}, {"name": "synthetic"}) == "lightgbm"
    assert row_label("lightgbm[num_leaves=7]") == "lightgbm[num_leaves=7]"


def test_a_click_row_says_its_click_model_arguments_and_sessions_in_words():
    assert row_label("lightgbm", {"clicks": "pbm", "eta": 1}) == "lightgbm · clicks pbm eta=1 x10"
    assert variant_text({"clicks": "cascade", "sessions": 300}) == "clicks cascade x300"


def test_the_resolved_click_configuration_orders_arguments_before_protocol_options():
    identity = {
        "clicks": {
            "model": {"name": "pbm", "args": {"eta": 1.0, "eps": 0.1}},
            "sessions": 100,
            "aggregate": "any",
            "logging_fraction": 0.1,
        }
    }
    options = {"aggregate": "any", "clicks": "pbm", "logging_fraction": 0.1, "eta": 1}
    assert (
        variant_text(options, identity)
        == "clicks pbm eta=1 aggregate=any logging_fraction=0.1 x100"
    )


def test_two_click_configurations_that_differ_in_one_protocol_option_get_different_names():
    a = row_label("ridge", {"clicks": "pbm", "logging_fraction": 0.1})
    b = row_label("ridge", {"clicks": "pbm", "logging_fraction": 0.5})
    assert a != b


def test_an_allrank_click_model_section_is_named_by_its_name_and_other_options_follow():
    section = {"name": "base-cascade", "args": {"eta": 1}}
    assert variant_text({"click_model": section}) == "clicks base-cascade eta=1 x10"
    assert variant_text({"query_norm": True}) == "query_norm=true"

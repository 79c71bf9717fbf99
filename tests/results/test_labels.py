"""config_label: the one label of a configuration, everywhere results are shown."""

from __future__ import annotations

import pytest

from ltr_bench.results.labels import config_label, value_text


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

"""The click dataset options: resolved with defaults, and every option that does not apply
refused with what is wrong (exit code 2) before any data is touched."""

from __future__ import annotations

import pytest

from ltr_bench.clicks.options import SIMULATION_VERSION, data_options, resolve_click_options
from ltr_bench.clicks.registry import ClickOptionError


def test_no_click_option_means_no_clicks_and_data_options_pass_through():
    assert resolve_click_options({"n_queries": 50}, kind="generated") is None
    assert data_options({"n_queries": 50, "clicks": "pbm", "eta": 2}) == {"n_queries": 50}


def test_the_spelling_of_the_issue_resolves_with_every_default():
    opts = {"clicks": "pbm", "eta": "1", "sessions": "10"}  # as --dataset-option gives them
    assert resolve_click_options(opts, kind="letor") == {
        "model": {"name": "pbm", "args": {"eta": 1.0, "eps": 0.1}},
        "sessions": 10,
        "top_k": 10,
        "aggregate": "count",
        "logging_ranker": resolve_click_options(opts, kind="path")["logging_ranker"],
        "logging_fraction": 0.01,
        "simulation": SIMULATION_VERSION,
    }


@pytest.mark.parametrize(
    "options,fragment",
    [
        ({"clicks": "pbm"}, "query-by-example"),  # kind="qbe" below
        ({"clicks": "pmb"}, "Did you mean 'pbm'"),
        ({"clicks": "pbm", "eta": -0.5}, "eta=-0.5 must be >= 0"),
        ({"clicks": "pbm", "eps": 1.5}, "eps=1.5 must be in [0.0, 1.0]"),
        ({"clicks": "pbm", "logging_fraction": 0}, "(0, 1]"),
        ({"clicks": "pbm", "logging_fraction": 1.01}, "(0, 1]"),
        ({"clicks": "pbm", "logging_fraction": "x"}, "(0, 1]"),
        ({"clicks": "pbm", "sessions": 0}, "sessions=0 must be >= 1"),
        ({"clicks": "pbm", "top_k": -1}, "top_k=-1 must be >= 0"),
        ({"clicks": "pbm", "aggregate": "cout"}, "Did you mean 'count'"),
        ({"clicks": "pbm", "logging_ranker": "ridg"}, "ridge"),
        ({"eta": 1}, "no click model"),
        ({"clicks": "pbm", "click_model": "pbm"}, "not both"),
        ({"clicks": "diverse-clicks"}, "missing argument(s) dedicated_click_model"),
        ({"click_model": "/no/such/file.json"}, "neither JSON text nor a JSON file"),
    ],
)
def test_an_option_that_does_not_apply_is_refused_with_what_is_wrong(options, fragment):
    kind = "qbe" if fragment == "query-by-example" else "generated"
    with pytest.raises(ClickOptionError) as err:
        resolve_click_options(options, kind=kind)
    assert fragment in str(err.value)
    assert err.value.exit_code == 2


@pytest.mark.parametrize(
    "options, positive",
    [
        ({"clicks": "pbm"}, True),
        ({"clicks": "pbm", "eta": 0}, True),
        ({"clicks": "dcm"}, True),
        ({"clicks": "base-cascade", "eta": 1, "threshold": 2}, True),
        ({"clicks": "cascade"}, False),  # 0 below a document of the top grade
        ({"clicks": "dbn"}, False),
        ({"clicks": "dcm", "lam": 0}, False),
        ({"clicks": "random", "n_clicks": 1}, False),  # no examination step
    ],
)
def test_has_propensity_says_whether_every_shown_row_gets_a_positive_one(options, positive):
    from ltr_bench.clicks.options import has_propensity

    assert has_propensity(resolve_click_options(options, kind="generated")) is positive

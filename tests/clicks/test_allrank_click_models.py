"""allRank's click models by their names and arguments, against their documented behaviour,
and allRank's ``click_model`` config sections read unchanged."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ltr_bench.clicks.models import ShownLists
from ltr_bench.clicks.options import resolve_click_options
from ltr_bench.clicks.registry import ClickOptionError, build_click_model

RNG = np.random.default_rng


def _sample(spec, y, X=None, sessions=1, seed=0, ymax=4):
    y = np.asarray(y, dtype=np.int64)[None, :]
    feats = None if X is None else (lambda q: np.asarray(X, dtype=np.float64))
    model = build_click_model(spec)
    return model.sample(ShownLists(y=y, max_label=ymax, features=feats), RNG(seed), sessions)[:, 0]


def test_random_clicks_exactly_n_positions_uniformly():
    c = _sample({"name": "random", "args": {"n_clicks": 2}}, [0, 1, 2, 3, 4], sessions=20_000)
    assert np.all(c.sum(axis=1) == 2)
    np.testing.assert_allclose(c.mean(axis=0), 2 / 5, atol=0.02)


def test_fixed_clicks_the_listed_positions_only():
    c = _sample({"name": "FixedClickModel", "args": {"click_positions": [0, 3, 9]}}, [0] * 5)
    assert c[0].tolist() == [True, False, False, True, False]


def test_only_relevant_clicks_at_or_above_the_threshold():
    c = _sample({"name": "only-relevant", "args": {"relevancy_threshold": 2}}, [0, 2, 1, 4])
    assert c[0].tolist() == [False, True, False, True]


def test_base_cascade_observes_with_one_over_rank_to_the_eta():
    spec = {"name": "base-cascade", "args": {"eta": 1, "threshold": 1}}
    c = _sample(spec, [3, 3, 0, 3], sessions=40_000)
    np.testing.assert_allclose(c.mean(axis=0), [1, 1 / 2, 0, 1 / 4], atol=0.01)
    assert np.all(_sample({**spec, "args": {"eta": 1, "threshold": 0}}, [0, 0])), "y*obs >= 0"


def test_max_clicks_keeps_the_first_clicks_from_the_top():
    inner = {"name": "only-relevant", "args": {"relevancy_threshold": 1}}
    c = _sample(
        {"name": "max-clicks", "args": {"click_model": inner, "max_clicks": 2}}, [1, 0, 2, 3]
    )
    assert c[0].tolist() == [True, False, True, False]


def test_conditioned_combines_with_all_or_any():
    a = {"name": "fixed", "args": {"click_positions": [0, 1]}}
    b = {"name": "fixed", "args": {"click_positions": [1, 2]}}
    both = {"name": "conditioned", "args": {"click_models": [a, b], "combiner": "numpy.all"}}
    either = {"name": "conditioned", "args": {"click_models": [a, b], "combiner": "any"}}
    assert _sample(both, [0] * 4)[0].tolist() == [False, True, False, False]
    assert _sample(either, [0] * 4)[0].tolist() == [True, True, True, False]


def test_multiple_picks_one_model_per_session_with_its_probability():
    a = {"name": "fixed", "args": {"click_positions": [0]}}
    b = {"name": "fixed", "args": {"click_positions": [1]}}
    spec = {"name": "multiple", "args": {"click_models": [a, b], "probabilities": [0.3, 0.7]}}
    c = _sample(spec, [0, 0, 0], sessions=20_000)
    assert np.all(c.sum(axis=1) == 1)
    assert c[:, 0].mean() == pytest.approx(0.3, abs=0.015)


def test_everything_but_duplicates_skips_a_document_close_to_one_above():
    X = [[0.0, 0.0], [5.0, 0.0], [0.0, 0.1], [9.0, 9.0]]
    spec = {"name": "everything-but-duplicates", "args": {"duplicate_margin": 0.5}}
    assert _sample(spec, [0] * 4, X)[0].tolist() == [True, True, False, True]


def test_diverse_clicks_drops_a_click_too_close_to_a_kept_click():
    X = [[0.0, 0.0], [0.0, 0.1], [10.0, 0.0], [20.0, 0.0]]
    inner = {"name": "only-relevant", "args": {"relevancy_threshold": 1}}
    spec = {"name": "diverse-clicks", "args": {"dedicated_click_model": inner, "q_percentile": 0.1}}
    # the 10 % quantile of the six pairwise distances is about 5: docs 0 and 1 are duplicates
    assert _sample(spec, [1, 1, 0, 1], X)[0].tolist() == [True, False, False, True]


def test_allranks_own_config_section_is_read_unchanged(tmp_path):
    section = {
        "name": "allrank.click_models.cascade_models.DiverseClicksModel",
        "args": {
            "dedicated_click_model": {
                "name": "allrank.click_models.cascade_models.BaseCascadeModel",
                "args": {"eta": 1, "threshold": 2},
            },
            "q_percentile": 0.5,
        },
    }
    config = tmp_path / "local_config_click_model.json"
    config.write_text(json.dumps({"model": {}, "click_model": section}))
    for value in (str(config), json.dumps(section), section):
        resolved = resolve_click_options({"click_model": value}, kind="generated")
        assert resolved["model"]["name"] == "diverse-clicks"
        inner = resolved["model"]["args"]["dedicated_click_model"]
        assert inner == {"name": "base-cascade", "args": {"eta": 1.0, "threshold": 2.0}}


@pytest.mark.parametrize(
    "spec,fragment",
    [
        ({"name": "BaseCascadeModle", "args": {}}, "'base-cascade'"),
        ({"name": "base-cascade", "args": {"eta": 1}}, "missing argument(s) threshold"),
        ({"name": "base-cascade", "args": {"eta": -1, "threshold": 1}}, "eta=-1"),
        ({"name": "random", "args": {"n_click": 1}}, "Did you mean 'n_clicks'"),
        (
            {"name": "multiple", "args": {"click_models": ["pbm"], "probabilities": [0.5]}},
            "sum to 1",
        ),
        ({"name": "conditioned", "args": {"click_models": ["pbm"], "combiner": "xor"}}, "'all'"),
    ],
)
def test_a_bad_click_model_is_refused_with_what_is_wrong(spec, fragment):
    with pytest.raises(ClickOptionError, match=None) as err:
        build_click_model(spec)
    assert fragment in str(err.value)
    assert err.value.exit_code == 2

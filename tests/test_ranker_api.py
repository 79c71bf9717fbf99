"""ltr_bench.ranker: run settings reach rankers only through declared tags; the one split of
query-by-example rows; tags and fitted_info defaults."""

from __future__ import annotations

import numpy as np
import pytest

from ltr_bench.ranker import (
    BaseRanker,
    RankerInputError,
    RankerTags,
    apply_run_settings,
    split_query_document,
    tags_of,
)


class Declared(BaseRanker):
    """Seed, threads and query-block width under names no guesser would pick."""

    def __init__(
        self,
        rng_seed=None,
        workers=None,
        block=None,
        random_state=None,
        n_jobs=None,
        query_dim=None,
    ):
        self.rng_seed = rng_seed
        self.workers = workers
        self.block = block
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.query_dim = query_dim

    def ranker_tags(self):
        return RankerTags(seed_param="rng_seed", thread_param="workers", query_dim_param="block")


class Undeclared(Declared):
    """The same parameters (including the conventional names), no tags declared."""

    def ranker_tags(self):
        return RankerTags()


# --------------------------------------------------------------------------- apply_run_settings


def test_run_settings_go_to_the_declared_parameters_and_are_returned():
    ranker = Declared()
    updates = apply_run_settings(ranker, seed=7, threads=2, query_dim=13, user_params={})
    assert updates == {"rng_seed": 7, "workers": 2, "block": 13}
    params = ranker.get_params()
    assert (params["rng_seed"], params["workers"], params["block"]) == (7, 2, 13)
    # the conventionally named parameters are not touched: nothing is guessed from names
    assert (params["random_state"], params["n_jobs"], params["query_dim"]) == (None,) * 3


def test_undeclared_ranker_gets_nothing_even_with_conventional_parameter_names():
    ranker = Undeclared()
    assert apply_run_settings(ranker, seed=7, threads=2, query_dim=13, user_params={}) == {}
    assert all(v is None for v in ranker.get_params().values())


def test_parameters_the_user_set_are_not_overridden():
    ranker = Declared(rng_seed=3, workers=4)
    updates = apply_run_settings(
        ranker, seed=7, threads=2, query_dim=13, user_params={"rng_seed": 3, "workers": 4}
    )
    assert updates == {"block": 13}
    assert ranker.get_params()["rng_seed"] == 3 and ranker.get_params()["workers"] == 4
    # a plain collection of names works too
    other = Declared(block=5)
    assert apply_run_settings(other, seed=1, threads=None, query_dim=13, user_params=["block"]) == {
        "rng_seed": 1
    }
    assert other.block == 5


def test_settings_that_are_none_are_skipped():
    ranker = Declared(workers=4)
    # no query block (plain LETOR data), library-default threads
    assert apply_run_settings(ranker, seed=0, threads=None, query_dim=None, user_params={}) == {
        "rng_seed": 0
    }
    assert ranker.workers == 4 and ranker.block is None


class NamesAMissingParameter(Declared):
    def ranker_tags(self):
        return RankerTags(seed_param="seed")


def test_a_tag_naming_a_missing_parameter_is_an_error_naming_the_tag():
    with pytest.raises(ValueError, match=r"RankerTags.seed_param='seed' is not a parameter"):
        apply_run_settings(
            NamesAMissingParameter(), seed=0, threads=None, query_dim=None, user_params={}
        )


class BadTags(Declared):
    def ranker_tags(self):
        return {"seed_param": "rng_seed"}


def test_tags_that_are_not_ranker_tags_are_an_error_not_the_defaults():
    with pytest.raises(TypeError, match="must return ltr_bench.ranker.RankerTags"):
        apply_run_settings(BadTags(), seed=0, threads=1, query_dim=None, user_params={})
    with pytest.raises(TypeError, match="BadTags"):
        tags_of(BadTags())


def test_an_object_without_ranker_tags_has_the_defaults():
    class Duck:
        def get_params(self, deep=True):
            return {}

    assert tags_of(Duck()) == RankerTags()
    assert apply_run_settings(Duck(), seed=1, threads=1, query_dim=3, user_params={}) == {}


# --------------------------------------------------------------------------- tags


def test_query_dependent_is_derived_from_query_dim_param():
    assert RankerTags(query_dim_param="block").query_dependent is True
    assert RankerTags().query_dependent is False
    assert RankerTags(seed_param="s", query_dim_param="q").declared_params() == {
        "seed_param": "s",
        "query_dim_param": "q",
    }


def test_default_tags_and_fitted_info_declare_nothing():
    assert RankerTags() == RankerTags(
        requires_qid_at_predict=False,
        uses_eval_set=False,
        deterministic=True,
        thread_param=None,
        seed_param=None,
        query_dim_param=None,
    )
    assert BaseRanker().ranker_tags() == RankerTags()
    assert BaseRanker().fitted_info() == {}


# --------------------------------------------------------------------------- split


def test_split_gives_the_query_block_first_and_the_document_block_second():
    X = np.arange(24, dtype=np.float64).reshape(4, 6)
    Q, D = split_query_document(X, 3)
    np.testing.assert_array_equal(Q, X[:, [0, 1, 2]])
    np.testing.assert_array_equal(D, X[:, [3, 4, 5]])
    assert np.shares_memory(Q, X) and np.shares_memory(D, X)  # views, no copies


def test_split_without_query_dim_returns_no_query_block():
    X = np.ones((3, 5))
    Q, D = split_query_document(X, None)
    assert Q is None and D is X


@pytest.mark.parametrize(
    "X, query_dim, message",
    [
        (
            np.ones((4, 6)),
            4,
            r"query_dim=4 means rows \[query \(4\), document \(4\)\] of width 8, "
            r"but X has 6 columns",
        ),
        (np.ones((4, 7)), 3, "width 6, but X has 7 columns"),
        (np.ones(6), 3, "X has no columns"),
        (np.ones((4, 6)), 0, "query_dim must be a positive integer or None, got 0"),
        (np.ones((4, 6)), 1.5, "query_dim must be a positive integer"),
        (np.ones((4, 6)), True, "query_dim must be a positive integer"),
    ],
)
def test_split_errors_name_query_dim_and_the_width(X, query_dim, message):
    with pytest.raises(RankerInputError, match=message):
        split_query_document(X, query_dim)


def test_split_errors_use_the_rankers_parameter_name():
    with pytest.raises(ValueError, match=r"^block=2 means"):
        split_query_document(np.ones((2, 3)), 2, param="block")


def test_mlr_and_lgmml_split_rows_the_same_way():
    # both rankers reject the same wrong width with the shared message
    from ltr_bench_baselines.mlr import MLRRanker
    from ltr_bench_lgmml import LGMMLRanker

    X = np.random.default_rng(0).normal(size=(6, 5))
    y, qid = np.array([1, 0, 0, 1, 0, 0]), np.repeat([1, 2], 3)
    for ranker in (MLRRanker(query_dim=2), LGMMLRanker(query_dim=2, n_metrics=2)):
        with pytest.raises(RankerInputError, match="query_dim=2 means .* width 4, but X has 5"):
            ranker.fit(X, y, qid=qid)

"""check_ranker must pass a correct ranker and catch each kind of contract violation.

Every broken ranker below breaks exactly one rule of the contract; each test asserts that
``check_ranker`` raises AssertionError and that the first failing check is the one that
guards that rule (so the message points the plugin author at the right problem).
"""

from __future__ import annotations

import numpy as np
import pytest

from ltr_bench.model_state import load_fitted_state, save_fitted_state
from ltr_bench.ranker import BaseRanker, RankerTags, check_ranking_input, query_boundaries
from ltr_bench.testing import check_ranker, make_check_data, parametrize_with_checks, ranker_checks


class RidgeRanker(BaseRanker):
    """A correct ranker: ridge regression of the labels on [X, 1]."""

    def __init__(self, alpha=1.0, random_state=None):
        self.alpha = alpha
        self.random_state = random_state

    def fit(self, X, y, *, qid, eval_set=None):
        X, y, qid = check_ranking_input(X, y, qid)
        if eval_set is not None:
            check_ranking_input(*eval_set, n_features=X.shape[1])
        A = np.hstack([X, np.ones((len(X), 1))])
        self.coef_ = np.linalg.solve(A.T @ A + self.alpha * np.eye(A.shape[1]), A.T @ y)
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X, *, qid=None):
        self._check_fitted("coef_")
        X, _, _ = check_ranking_input(
            X, None, qid, n_features=self.n_features_in_, require_qid=False
        )
        return X @ self.coef_[:-1] + self.coef_[-1]

    def save_native(self, folder) -> dict:
        return save_fitted_state(self, folder)

    @classmethod
    def load_native(cls, folder, manifest):
        return load_fitted_state(cls, folder, manifest)


def _expect_failure(ranker, check_name):
    with pytest.raises(AssertionError) as info:
        check_ranker(ranker)
    message = str(info.value)
    assert message.startswith(f"check_ranker: check {check_name!r} failed for "), message
    assert type(ranker).__name__ in message
    return message


# --------------------------------------------------------------------------- passing


def test_correct_ridge_ranker_passes_quick_and_full_suites():
    check_ranker(RidgeRanker())
    check_ranker(RidgeRanker(alpha=0.1), quick=False)


def test_ranker_checks_lists_named_callables_that_each_pass_on_a_correct_ranker():
    checks = ranker_checks(RidgeRanker())
    names = [name for name, _ in checks]
    assert len(names) == len(set(names))
    for expected in (
        "fit_returns_self",
        "row_order",
        "no_input_mutation",
        "deterministic",
        "degenerate_queries",
        "predict_before_fit_raises",
    ):
        assert expected in names
    assert "query_dependent_rows" not in names  # tag not set
    for _, check in checks:
        check()


class PerQueryCenteredRanker(RidgeRanker):
    """Correct, but needs qid at predict: scores are centred within each query."""

    def ranker_tags(self):
        return RankerTags(requires_qid_at_predict=True)

    def predict(self, X, *, qid=None):
        if qid is None:
            raise ValueError("qid is required")
        scores = super().predict(X)
        b = query_boundaries(np.asarray(qid))
        for i in range(len(b) - 1):
            scores[b[i] : b[i + 1]] -= scores[b[i] : b[i + 1]].mean()
        return scores


def test_qid_dependent_ranker_passes_and_skips_the_predict_without_qid_check():
    ranker = PerQueryCenteredRanker()
    assert "predict_without_qid" not in [n for n, _ in ranker_checks(ranker)]
    check_ranker(ranker)


class QueryByExampleRanker(RidgeRanker):
    """Correct query-dependent ranker: ridge on |query - document| when query_dim is set."""

    fits_with_query_dim = 0

    def __init__(self, alpha=1.0, random_state=None, query_dim=None):
        super().__init__(alpha=alpha, random_state=random_state)
        self.query_dim = query_dim

    def ranker_tags(self):
        return RankerTags(query_dim_param="query_dim")

    def _features(self, X):
        X = np.asarray(X, dtype=np.float64)
        if self.query_dim is None:
            return X
        d = self.query_dim
        return np.abs(X[:, :d] - X[:, d : 2 * d])

    def fit(self, X, y, *, qid, eval_set=None):
        if self.query_dim is not None:
            type(self).fits_with_query_dim += 1
        if eval_set is not None:
            eval_set = (self._features(eval_set[0]), *eval_set[1:])
        return super().fit(self._features(X), y, qid=qid, eval_set=eval_set)

    def predict(self, X, *, qid=None):
        return super().predict(self._features(X), qid=qid)


def test_query_dependent_ranker_is_also_fitted_on_query_document_rows():
    QueryByExampleRanker.fits_with_query_dim = 0
    check_ranker(QueryByExampleRanker())
    assert QueryByExampleRanker.fits_with_query_dim == 1


class NoisyRanker(RidgeRanker):
    """Unseeded noise, honestly declared with deterministic=False."""

    def ranker_tags(self):
        return RankerTags(deterministic=False)

    def fit(self, X, y, *, qid, eval_set=None):
        super().fit(X, y, qid=qid, eval_set=eval_set)
        self.coef_ = self.coef_ + np.random.default_rng().normal(0, 1e-3, self.coef_.shape)
        return self


def test_nondeterministic_ranker_that_declares_it_passes():
    check_ranker(NoisyRanker())


def test_check_data_is_reproducible_with_unsorted_contiguous_queries_and_graded_labels():
    X1, y1, q1 = make_check_data(3)
    X2, y2, q2 = make_check_data(3)
    assert np.array_equal(X1, X2) and np.array_equal(y1, y2) and np.array_equal(q1, q2)
    heads = q1[query_boundaries(q1)[:-1]]
    assert np.unique(heads).size == heads.size  # contiguous
    assert not np.all(np.diff(heads) > 0)  # not sorted, so sorting by qid is caught
    assert set(np.unique(y1)) == {0, 1, 2, 3}


def test_check_ranker_does_not_fit_or_change_the_given_ranker():
    ranker = RidgeRanker(alpha=2.0)
    check_ranker(ranker)
    assert not hasattr(ranker, "coef_")
    assert ranker.get_params() == {"alpha": 2.0, "random_state": None}


# --------------------------------------------------------------------------- failing


class FitReturnsNone(RidgeRanker):
    def fit(self, X, y, *, qid, eval_set=None):
        super().fit(X, y, qid=qid, eval_set=eval_set)


def test_fit_not_returning_self_fails_fit_returns_self():
    _expect_failure(FitReturnsNone(), "fit_returns_self")


class SortedScores(RidgeRanker):
    def predict(self, X, *, qid=None):
        return np.sort(super().predict(X, qid=qid))


def test_scores_returned_sorted_fail_row_order():
    _expect_failure(SortedScores(), "row_order")


class SortsRowsByQid(RidgeRanker):
    """allRank's habit: regroups rows by query id and returns scores in that order."""

    def predict(self, X, *, qid=None):
        scores = super().predict(X)
        if qid is None:
            return scores
        return scores[np.argsort(np.asarray(qid), kind="stable")]


def test_scores_returned_in_query_id_order_fail_row_order():
    _expect_failure(SortsRowsByQid(), "row_order")


class PositionBonus(RidgeRanker):
    """Adds a small bonus by position inside the query: depends on row order."""

    def predict(self, X, *, qid=None):
        scores = super().predict(X)
        if qid is not None:
            b = query_boundaries(np.asarray(qid))
            for i in range(len(b) - 1):
                scores[b[i] : b[i + 1]] += 1e-3 * np.arange(b[i + 1] - b[i])
        return scores


def test_scores_depending_on_row_position_fail_row_order():
    _expect_failure(PositionBonus(), "row_order")


class StandardisesXInPlace(RidgeRanker):
    def fit(self, X, y, *, qid, eval_set=None):
        X = np.asarray(X)
        X -= X.mean(axis=0)
        return super().fit(X, y, qid=qid, eval_set=eval_set)


def test_fit_that_modifies_x_in_place_fails_no_input_mutation():
    message = _expect_failure(StandardisesXInPlace(), "no_input_mutation")
    assert "modified the caller's X array" in message


class ClipsInPlace(RidgeRanker):
    """Writes into X without changing its values: only read-only input exposes it."""

    def fit(self, X, y, *, qid, eval_set=None):
        X = np.asarray(X)
        np.clip(X, -1e300, 1e300, out=X)
        return super().fit(X, y, qid=qid, eval_set=eval_set)


def test_fit_that_writes_into_inputs_fails_read_only_input():
    message = _expect_failure(ClipsInPlace(), "read_only_input")
    assert "read-only" in message


class GlobalRandomNoise(RidgeRanker):
    """Claims determinism but draws from an unseeded generator."""

    def fit(self, X, y, *, qid, eval_set=None):
        super().fit(X, y, qid=qid, eval_set=eval_set)
        self.coef_ = self.coef_ + np.random.default_rng().normal(0, 1e-3, self.coef_.shape)
        return self


def test_unseeded_randomness_fails_deterministic():
    _expect_failure(GlobalRandomNoise(), "deterministic")


class WarmStartsAcrossFits(RidgeRanker):
    """Keeps state between fits: a refit averages with the previous model."""

    def fit(self, X, y, *, qid, eval_set=None):
        previous = getattr(self, "coef_", None)
        super().fit(X, y, qid=qid, eval_set=eval_set)
        if previous is not None:
            self.coef_ = (self.coef_ + 2 * previous) / 3 + 0.1
        return self


def test_state_leaking_between_fits_fails_deterministic():
    _expect_failure(WarmStartsAcrossFits(), "deterministic")


class PairwiseNeedsTwoDocs(RidgeRanker):
    """Reads the second document of each query: IndexError on a one-document query."""

    def fit(self, X, y, *, qid, eval_set=None):
        b = query_boundaries(np.asarray(qid))
        for i in range(len(b) - 1):
            rows = np.arange(b[i], b[i + 1])
            _ = rows[1]
        return super().fit(X, y, qid=qid, eval_set=eval_set)


def test_crash_on_one_document_query_fails_degenerate_queries():
    message = _expect_failure(PairwiseNeedsTwoDocs(), "degenerate_queries")
    assert "IndexError" in message


class StandardisesLabelsPerQuery(RidgeRanker):
    """Divides by the per-query label spread: 0/0 on an all-zero-label query."""

    def fit(self, X, y, *, qid, eval_set=None):
        y = np.asarray(y, dtype=np.float64).copy()
        b = query_boundaries(np.asarray(qid))
        with np.errstate(invalid="ignore", divide="ignore"):
            for i in range(len(b) - 1):
                block = y[b[i] : b[i + 1]]
                y[b[i] : b[i + 1]] = (block - block.mean()) / (block.max() - block.min())
        X = np.asarray(X, dtype=np.float64)
        A = np.hstack([X, np.ones((len(X), 1))])
        self.coef_ = np.linalg.lstsq(A, y, rcond=None)[0]
        self.n_features_in_ = X.shape[1]
        return self


def test_nan_scores_after_an_all_zero_label_query_fail_degenerate_queries():
    message = _expect_failure(StandardisesLabelsPerQuery(), "degenerate_queries")
    assert "NaN" in message or "LinAlgError" in message


class UncheckedPredict(RidgeRanker):
    def predict(self, X, *, qid=None):
        return np.asarray(X, dtype=np.float64) @ self.coef_[:-1]


def test_predict_before_fit_without_a_clear_message_fails():
    message = _expect_failure(UncheckedPredict(), "predict_before_fit_raises")
    assert "AttributeError" in message


class ReturnsFloat32(RidgeRanker):
    def predict(self, X, *, qid=None):
        return super().predict(X, qid=qid).astype(np.float32)


def test_float32_scores_fail_predict_output():
    _expect_failure(ReturnsFloat32(), "predict_output")


class ReturnsList(RidgeRanker):
    def predict(self, X, *, qid=None):
        return list(super().predict(X, qid=qid))


def test_list_scores_fail_predict_output():
    _expect_failure(ReturnsList(), "predict_output")


class ConvertsParamInInit(RidgeRanker):
    def __init__(self, alpha=1.0, random_state=None):
        self.alpha = [alpha]  # stores a new object, not the argument
        self.random_state = random_state

    def fit(self, X, y, *, qid, eval_set=None):
        self.alpha = self.alpha[0] if isinstance(self.alpha, list) else self.alpha
        return super().fit(X, y, qid=qid, eval_set=eval_set)


def test_init_that_converts_its_arguments_fails_init_stores_params():
    _expect_failure(ConvertsParamInInit(), "init_stores_params")


class SetsExtraAttributeInInit(RidgeRanker):
    def __init__(self, alpha=1.0, random_state=None):
        super().__init__(alpha=alpha, random_state=random_state)
        self.cache = {}


def test_init_that_sets_non_parameter_attributes_fails_init_stores_params():
    _expect_failure(SetsExtraAttributeInInit(), "init_stores_params")


class LearnedStateWithoutUnderscore(RidgeRanker):
    def fit(self, X, y, *, qid, eval_set=None):
        super().fit(X, y, qid=qid, eval_set=eval_set)
        self.weights = self.coef_
        return self


def test_learned_attribute_without_trailing_underscore_fails_learned_attributes():
    _expect_failure(LearnedStateWithoutUnderscore(), "learned_attributes")


class FitOverwritesParameter(RidgeRanker):
    def fit(self, X, y, *, qid, eval_set=None):
        self.alpha = max(self.alpha, 5.0)
        return super().fit(X, y, qid=qid, eval_set=eval_set)


def test_fit_that_changes_a_parameter_fails_learned_attributes():
    ranker = FitOverwritesParameter(alpha=1.0)
    message = _expect_failure(ranker, "learned_attributes")
    assert "alpha" in message


class RejectsEvalSet(RidgeRanker):
    def fit(self, X, y, *, qid):
        return super().fit(X, y, qid=qid)


def test_fit_without_eval_set_argument_fails_eval_set_accepted():
    checks = dict(ranker_checks(RejectsEvalSet()))
    with pytest.raises(AssertionError, match=r"'eval_set_accepted' failed .*TypeError"):
        checks["eval_set_accepted"]()


class UsesEvalSetButUndeclared(RidgeRanker):
    """Refits on train + validation when given eval_set, without declaring uses_eval_set."""

    def fit(self, X, y, *, qid, eval_set=None):
        if eval_set is not None:
            Xv, yv, qv = eval_set
            X, y, qid = np.vstack([X, Xv]), np.r_[y, yv], np.r_[qid, np.asarray(qv) + 10**6]
        return super().fit(X, y, qid=qid)


def test_undeclared_use_of_eval_set_fails_eval_set_ignored():
    _expect_failure(UsesEvalSetButUndeclared(), "eval_set_ignored")


class UsesEvalSetDeclared(UsesEvalSetButUndeclared):
    def ranker_tags(self):
        return RankerTags(uses_eval_set=True)


def test_declared_use_of_eval_set_passes_and_skips_eval_set_ignored():
    assert "eval_set_ignored" not in [n for n, _ in ranker_checks(UsesEvalSetDeclared())]
    check_ranker(UsesEvalSetDeclared())


class QidOnlyAtPredictButUndeclared(RidgeRanker):
    """Needs qid at predict but does not say so in its tags."""

    def predict(self, X, *, qid=None):
        if qid is None:
            raise ValueError("qid is required")
        return super().predict(X, qid=qid)


def test_undeclared_need_for_qid_at_predict_fails_predict_without_qid():
    _expect_failure(QidOnlyAtPredictButUndeclared(), "predict_without_qid")


class ThreadTagNamesNoParameter(RidgeRanker):
    def ranker_tags(self):
        return RankerTags(thread_param="n_threads")


def test_thread_tag_naming_a_missing_parameter_fails_tags():
    _expect_failure(ThreadTagNamesNoParameter(), "tags")


class QueryDimTagNamesNoParameter(RidgeRanker):
    def ranker_tags(self):
        return RankerTags(query_dim_param="query_dim")


def test_query_dim_tag_naming_a_missing_parameter_fails_tags_and_query_dependent_rows():
    message = _expect_failure(QueryDimTagNamesNoParameter(), "tags")
    assert "query_dim_param='query_dim'" in message
    checks = dict(ranker_checks(QueryDimTagNamesNoParameter()))
    with pytest.raises(AssertionError, match=r"'query_dependent_rows' failed .*query_dim"):
        checks["query_dependent_rows"]()


class SeedTagNamesNoParameter(RidgeRanker):
    def ranker_tags(self):
        return RankerTags(seed_param="seed")


def test_seed_tag_naming_a_missing_parameter_fails_tags():
    message = _expect_failure(SeedTagNamesNoParameter(), "tags")
    assert "seed_param='seed'" in message


class FileTagNamesNoParameter(RidgeRanker):
    def ranker_tags(self):
        return RankerTags(file_params=("config",))


def test_file_params_naming_a_missing_parameter_fails_tags():
    message = _expect_failure(FileTagNamesNoParameter(), "tags")
    assert "file_params names 'config'" in message


class RenamedQueryDimRanker(QueryByExampleRanker):
    """Correct: the query-block width arrives through a parameter not called query_dim."""

    def __init__(self, alpha=1.0, random_state=None, block=None):
        RidgeRanker.__init__(self, alpha=alpha, random_state=random_state)
        self.block = block

    def ranker_tags(self):
        return RankerTags(query_dim_param="block")

    @property
    def query_dim(self):  # what QueryByExampleRanker._features reads
        return self.block


def test_query_by_example_check_sets_the_parameter_the_tags_name():
    assert "query_dependent_rows" in [n for n, _ in ranker_checks(RenamedQueryDimRanker())]
    RenamedQueryDimRanker.fits_with_query_dim = 0
    check_ranker(RenamedQueryDimRanker())
    assert RenamedQueryDimRanker.fits_with_query_dim == 1


class RejectsQueryDim(QueryByExampleRanker):
    """Declares a query-dim parameter, but fit fails once it is set."""

    def fit(self, X, y, *, qid, eval_set=None):
        if self.query_dim is not None:
            raise ValueError("query-by-example rows are not supported")
        return super().fit(X, y, qid=qid, eval_set=eval_set)


def test_declared_query_dim_that_fit_rejects_fails_query_dependent_rows():
    message = _expect_failure(RejectsQueryDim(), "query_dependent_rows")
    assert "not supported" in message


class SeededNoise(RidgeRanker):
    """Correct: randomness from its declared seed parameter ``seed`` (None = unseeded)."""

    def __init__(self, alpha=1.0, seed=None):
        self.alpha = alpha
        self.seed = seed

    def ranker_tags(self):
        return RankerTags(seed_param="seed")

    def fit(self, X, y, *, qid, eval_set=None):
        super().fit(X, y, qid=qid, eval_set=eval_set)
        rng = np.random.default_rng(self.seed)
        self.coef_ = self.coef_ + rng.normal(0, 1e-3, self.coef_.shape)
        return self


def test_unseeded_ranker_with_a_declared_seed_param_is_pinned_and_passes_deterministic():
    # seed=None would be unseeded; the suite pins the declared seed parameter (not one named
    # random_state) to 0, as the harness sets it, so the deterministic check passes
    check_ranker(SeededNoise())


class SeededNoiseUndeclared(SeededNoise):
    """Same ranker without declaring its seed parameter: nothing seeds it."""

    def ranker_tags(self):
        return RankerTags()


def test_undeclared_seed_parameter_fails_deterministic():
    _expect_failure(SeededNoiseUndeclared(), "deterministic")


class InfoWithNumpyInt(RidgeRanker):
    def fitted_info(self):
        return {"n_coef": np.int64(self.coef_.size)}


class InfoWithNaN(RidgeRanker):
    def fitted_info(self):
        return {"norm": float("nan")}


class InfoWithNone(RidgeRanker):
    def fitted_info(self):
        return {"best": None}


class InfoWithIntKey(RidgeRanker):
    def fitted_info(self):
        return {1: 2}


class InfoNotADict(RidgeRanker):
    def fitted_info(self):
        return [("n_coef", 3)]


@pytest.mark.parametrize(
    "ranker, word",
    [
        (InfoWithNumpyInt(), "int64"),
        (InfoWithNaN(), "not finite"),
        (InfoWithNone(), "None"),
        (InfoWithIntKey(), "key 1"),
        (InfoNotADict(), "not dict"),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, BaseRanker) else v,
)
def test_fitted_info_that_is_not_a_dict_of_json_scalars_fails_fitted_info(ranker, word):
    message = _expect_failure(ranker, "fitted_info")
    assert word in message


class InfoOk(RidgeRanker):
    def fitted_info(self):
        return {
            "n_coef": int(self.coef_.size),
            "norm": float(np.linalg.norm(self.coef_)),
            "solver": "solve",
            "converged": True,
        }


def test_fitted_info_of_json_scalars_passes_and_default_is_empty():
    check_ranker(InfoOk())
    assert RidgeRanker().fitted_info() == {}


# --------------------------------------------------------------------------- parametrize


@parametrize_with_checks([RidgeRanker(alpha=0.5), QueryByExampleRanker()])
def test_parametrize_with_checks_runs_each_check_as_its_own_test(ranker, check):
    check(ranker)


def test_parametrize_with_checks_ids_name_the_ranker_and_the_check():
    mark = parametrize_with_checks([RidgeRanker(alpha=0.5), PerQueryCenteredRanker()])
    assert mark.name == "parametrize"
    argnames, values = mark.args
    assert argnames == "ranker, check"
    ids = mark.kwargs["ids"]
    assert len(ids) == len(values) == len(set(ids))
    assert "RidgeRanker(alpha=0.5)-row_order" in ids
    assert "PerQueryCenteredRanker()-fit_returns_self" in ids
    assert "PerQueryCenteredRanker()-predict_without_qid" not in ids  # tag-dependent
    assert [i.rsplit("-", 1)[1] for i in ids if i.startswith("RidgeRanker")] == [
        n for n, _ in ranker_checks(RidgeRanker(alpha=0.5))
    ]


def test_parametrized_check_reports_failures_and_refuses_another_ranker():
    _, values = parametrize_with_checks([SortedScores()]).args
    by_name = {check.name: (ranker, check) for ranker, check in values}
    ranker, check = by_name["row_order"]
    with pytest.raises(AssertionError, match="check_ranker: check 'row_order' failed"):
        check(ranker)
    with pytest.raises(ValueError, match="ranker_checks"):
        check(RidgeRanker())

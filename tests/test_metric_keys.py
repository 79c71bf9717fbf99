"""Tests for ltr_bench.evaluation.metric_keys: the metric table and the one metric-key type.

Expected spellings are written out literally here, not derived from the module, so a change
of the grammar has to change these tests too.
"""

from __future__ import annotations

import pytest

from ltr_bench.evaluation import metric_keys
from ltr_bench.evaluation.metrics import (
    CONVENTIONS,
    DEFAULT_METRICS,
    METRIC_TABLE,
    METRICS_HELP,
    VALID_FORMS,
    MetricKey,
    evaluate_conventions,
    metric_display,
    metric_key_or_none,
    parse_metric,
    record_metric_keys,
)
from ltr_bench.evaluation.ranked import RankedQueries

# (spelling, name, k, empty, canonical text, MLflow key, display)
SPELLINGS = [
    ("ndcg@10", "ndcg", 10, "1", "ndcg@10", "ndcg_at_10", "NDCG@10"),
    ("NDCG@10", "ndcg", 10, "1", "ndcg@10", "ndcg_at_10", "NDCG@10"),
    (" Ndcg@10 ", "ndcg", 10, "1", "ndcg@10", "ndcg_at_10", "NDCG@10"),
    (
        "ndcg@10_empty0",
        "ndcg",
        10,
        "0",
        "ndcg@10_empty0",
        "ndcg_at_10_empty0",
        "NDCG@10 (empty query = 0)",
    ),
    ("ndcg_at_10", "ndcg", 10, "1", "ndcg@10", "ndcg_at_10", "NDCG@10"),
    (
        "ndcg_at_10_empty0",
        "ndcg",
        10,
        "0",
        "ndcg@10_empty0",
        "ndcg_at_10_empty0",
        "NDCG@10 (empty query = 0)",
    ),
    (
        "NDCG@10 (empty query = 0)",
        "ndcg",
        10,
        "0",
        "ndcg@10_empty0",
        "ndcg_at_10_empty0",
        "NDCG@10 (empty query = 0)",
    ),
    ("map", "map", None, "1", "map", "map", "MAP"),
    ("MAP", "map", None, "1", "map", "map", "MAP"),
    ("map_empty0", "map", None, "0", "map_empty0", "map_empty0", "MAP (empty query = 0)"),
    ("map@5", "map", 5, "1", "map@5", "map_at_5", "MAP@5"),
    ("mrr", "mrr", None, "1", "mrr", "mrr", "MRR"),
    (
        "mrr_at_3_empty0",
        "mrr",
        3,
        "0",
        "mrr@3_empty0",
        "mrr_at_3_empty0",
        "MRR@3 (empty query = 0)",
    ),
    ("err@10", "err", 10, "1", "err@10", "err_at_10", "ERR@10"),
    ("p@5", "p", 5, "1", "p@5", "p_at_5", "P@5"),
    ("P_AT_5", "p", 5, "1", "p@5", "p_at_5", "P@5"),
    ("p@5_empty0", "p", 5, "1", "p@5", "p_at_5", "P@5"),  # P@k has one convention only
    ("recall@10", "recall", 10, "1", "recall@10", "recall_at_10", "Recall@10"),
    ("Recall@10", "recall", 10, "1", "recall@10", "recall_at_10", "Recall@10"),
    (
        "recall_at_10_empty0",
        "recall",
        10,
        "0",
        "recall@10_empty0",
        "recall_at_10_empty0",
        "Recall@10 (empty query = 0)",
    ),
]


@pytest.mark.parametrize("spelling, name, k, empty, text, mlflow, display", SPELLINGS)
def test_parse_reads_every_spelling_and_prints_each_canonical_form(
    spelling, name, k, empty, text, mlflow, display
):
    key = MetricKey.parse(spelling)
    assert (key.name, key.k, key.empty) == (name, k, empty)
    assert (key.text, key.mlflow_key, key.display, str(key)) == (text, mlflow, display, text)
    assert key.base == text.removesuffix("_empty0")
    assert parse_metric(spelling) == (name, k)  # the old interface accepts the suffix too


def every_key():
    """Every table row with a cutoff where allowed and without where allowed, both
    conventions."""
    for spec in METRIC_TABLE.values():
        cutoffs = {"required": (1, 10), "optional": (None, 7), "forbidden": (None,)}
        for k in cutoffs[spec.cutoff]:
            for empty in ("1", "0"):
                yield MetricKey(spec.name, k, empty)


@pytest.mark.parametrize("key", sorted(set(every_key()), key=str), ids=str)
def test_every_spelling_of_every_key_parses_back_to_the_same_key(key):
    for spelling in (
        key.text,
        key.mlflow_key,
        key.display,
        key.text.upper(),
        key.mlflow_key.upper(),
        f"  {key.display}  ",
    ):
        assert MetricKey.parse(spelling) == key, spelling
    assert MetricKey.parse(key.base) == key.with_empty("1")
    assert key.with_empty("0").with_empty(1) == key.with_empty(1.0) == key.with_empty("1")
    assert hash(MetricKey.parse(key.text)) == hash(key)


@pytest.mark.parametrize(
    "junk",
    [
        "ndcg",
        "err",
        "p",
        "recall",
        "ndcg@0",
        "ndcg@x",
        "auc",
        "ndcg@-1",
        "map@",
        "",
        "   ",
        "ndcg@10_empty1",
        "ndcg@10_empty0_empty0",
        "ndcg@ 10",
        "ndcg@10 (empty query = 0)_empty0",
        "ndcg_at_",
        "ndcg@1.5",
        "ndcg@10_",
        "recall_empty0",
        "ndcg@10 (empty query = 1)",
        "knn_error",
        "fit_seconds",
    ],
)
def test_parse_rejects_junk_naming_it_and_listing_the_valid_forms(junk):
    with pytest.raises(
        ValueError, match="ndcg@k, map, map@k, mrr, mrr@k, err@k, p@k, recall@k"
    ) as info:
        MetricKey.parse(junk)
    assert repr(junk) in str(info.value)
    assert metric_key_or_none(junk) is None


@pytest.mark.parametrize("not_text", [10, None, ("ndcg", 10)])
def test_parse_rejects_non_strings_naming_the_type(not_text):
    with pytest.raises(ValueError, match="must be a string"):
        MetricKey.parse(not_text)


@pytest.mark.parametrize(
    "fields, message",
    [
        (("auc", 3), "unknown metric 'auc'"),
        (("ndcg",), "needs a cutoff k, e.g. ndcg@10"),
        (("ndcg", 0), "k must be an integer >= 1, got 0"),
        (("ndcg", True), "k must be an integer >= 1, got True"),
        (("ndcg", 2.0), "k must be an integer >= 1, got 2.0"),
        (("ndcg", 10, "2"), r"empty must be one of \('1', '0'\)"),
        (("ndcg", 10, 0), r"empty must be one of \('1', '0'\)"),
    ],
)
def test_constructor_rejects_fields_the_table_does_not_allow(fields, message):
    with pytest.raises(ValueError, match=message):
        MetricKey(*fields)


def test_with_empty_rejects_values_other_than_the_two_conventions():
    with pytest.raises(ValueError, match="empty must be one of"):
        MetricKey("ndcg", 10).with_empty(0.5)


def test_precision_has_a_single_key_whatever_convention_is_asked():
    assert MetricKey("p", 5, "0") == MetricKey("p", 5) == MetricKey.parse("P@5_empty0")
    assert MetricKey("p", 5).with_empty("0").text == "p@5"
    assert MetricKey("p", 5).convention == "P@k of a query without relevant documents = 0"
    assert MetricKey("map", None, "0").convention == "query without relevant documents = 0"


def test_empty_query_is_the_value_evaluate_needs_for_the_key():
    assert MetricKey.parse("ndcg@3").empty_query == 1.0
    assert MetricKey.parse("ndcg@3_empty0").empty_query == 0.0


# ---- the keys a record holds ---------------------------------------------------------
def test_record_metric_keys_lists_default_convention_first_and_folds_duplicates():
    got = record_metric_keys(["NDCG@10", "p@5", "ndcg_at_10", "map_empty0", "recall@3"])
    assert got == (
        "ndcg@10",
        "p@5",
        "map",
        "recall@3",
        "ndcg@10_empty0",
        "map_empty0",
        "recall@3_empty0",
    )
    assert record_metric_keys("mrr") == ("mrr", "mrr_empty0")


def test_record_metric_keys_rejects_bad_or_no_metrics():
    with pytest.raises(ValueError, match="unknown metric 'ndgc@10'"):
        record_metric_keys(["ndcg@10", "ndgc@10"])
    with pytest.raises(ValueError, match="no metric requested"):
        record_metric_keys([])


def test_every_key_a_record_holds_parses_to_itself_and_has_its_mlflow_twin():
    requested = (*DEFAULT_METRICS, "p@5", "recall@10", "map@10", "mrr@5")
    keys = record_metric_keys(requested)
    assert len(keys) == len(set(keys))
    means, per_query = evaluate_conventions(
        [2, 0, 1, 0, 0, 1], [0.9, 0.8, 0.1, 0.4, 0.3, 0.3], [1, 1, 1, 2, 2, 2], requested
    )
    assert tuple(means) == keys and tuple(per_query) == ("qid", *keys)
    mlflow_keys = set()
    for text in keys:
        key = MetricKey.parse(text)
        assert key.text == text
        assert MetricKey.parse(key.mlflow_key) == key
        mlflow_keys.add(key.mlflow_key)
    assert len(mlflow_keys) == len(keys)  # no two record keys share an MLflow key
    for m in DEFAULT_METRICS:
        assert m in keys and MetricKey.parse(m).with_empty("0").text in keys


# ---- the table and what derives from it ----------------------------------------------
def test_every_table_row_has_a_kernel_forms_a_convention_text_and_a_parsable_display():
    assert list(METRIC_TABLE) == ["ndcg", "map", "mrr", "err", "p", "recall"]
    assert VALID_FORMS == ("ndcg@k", "map", "map@k", "mrr", "mrr@k", "err@k", "p@k", "recall@k")
    for name, spec in METRIC_TABLE.items():
        assert spec.name == name and spec.cutoff in ("required", "optional", "forbidden")
        assert callable(getattr(RankedQueries, spec.kernel)), spec.kernel
        assert all(form in METRICS_HELP for form in spec.forms)
        for field in (spec.formula, spec.empty_query, spec.ties, spec.beyond_query):
            assert field and field in CONVENTIONS[name]
        assert spec.beyond_query in CONVENTIONS["k_larger_than_query"]
        assert spec.display in CONVENTIONS["empty_query"]
        assert spec.display.lower() == name  # so the display spelling parses


def test_metric_display_names_metrics_and_leaves_other_measures_alone():
    assert metric_display("ndcg_at_10_empty0") == "NDCG@10 (empty query = 0)"
    assert metric_display("recall@5") == "Recall@5"
    assert metric_display("knn_error") == "knn_error"
    assert metric_display("fit_seconds") == "fit_seconds"


def test_metric_keys_module_is_what_metrics_reexports():
    assert metric_keys.MetricKey is MetricKey
    assert metric_keys.CONVENTIONS is CONVENTIONS

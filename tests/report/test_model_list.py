"""The rows of ``ltr-bench models`` (:mod:`ltr_bench.report.model_list`): which records are
models, where their MLflow ids come from, which metric is shown, the order, and the three
formats."""

from __future__ import annotations

import csv
import io
import json

from ltr_bench.report.model_list import format_rows, headline_metric, model_rows, select
from ltr_bench.results import ResultRecord


def _rec(key, label="lightgbm", fold=1, *, ranker="lightgbm", model=True, **kw) -> ResultRecord:
    kw.setdefault("metrics", {"ndcg@10": 0.5 + fold / 100, "map": 0.4})
    return ResultRecord(
        key=key, plan_key="p" + label, ranker=ranker, dataset=kw.pop("dataset", "synthetic"),
        fold=fold, seed=0, label=label, finished=f"t{key}",
        model_dir=f"/res/{key}.model.abc" if model else None, **kw,
    )  # fmt: skip


def test_only_finished_records_with_a_kept_model_are_models_and_filters_take_any_name():
    clicks = _rec("c", dataset_options={"clicks": "pbm", "eta": 1})
    records = [
        _rec("a"),
        _rec("b", model=False),
        _rec("f", status="failed"),
        clicks,
        _rec("r", "ridge", ranker="ridge"),
    ]
    assert [r.key for r in select(records)] == ["a", "c", "r"]
    assert [r.key for r in select(records, rankers=["ridge"])] == ["r"]
    assert [r.key for r in select(records, rankers=["lightgbm · clicks pbm eta=1 x10"])] == ["c"]
    assert [r.key for r in select(records, datasets=["mslr30k"])] == []


def test_ids_held_by_a_record_win_and_the_store_fills_in_the_others():
    held = _rec("a", mlflow={"run_id": "r-held", "model_uri": "models:/m-held"})
    other = _rec("b", fold=2)
    found = {
        ("a", "ta"): {"run_id": "r-store-a"},
        ("b", "tb"): {"run_id": "r-store-b", "model_uri": "models:/m-b"},
        ("b", "t-older-fit"): {"run_id": "r-stale"},  # another finish time: another record
    }
    rows = model_rows([other, held], found)
    assert [(r.key, r.run_id, r.model_uri) for r in rows] == [
        ("a", "r-held", "models:/m-held"),
        ("b", "r-store-b", "models:/m-b"),
    ]


def test_the_metric_is_ndcg10_else_the_first_requested_and_may_be_chosen_per_dataset():
    assert headline_metric(_rec("a")) == "ndcg@10"
    qbe = _rec("q", metrics={"map": 0.3}, extra_metrics={"knn_error": 0.1})
    qbe.metrics_requested = ["knn_error", "map"]
    assert headline_metric(qbe) == "knn_error"
    rows = model_rows([_rec("a"), _rec("m", dataset="mq2008")], metric={"synthetic": "map"})
    assert [(r.metric, r.value) for r in rows] == [("ndcg@10", 0.51), ("map", 0.4)]


def test_rows_are_in_natural_label_order_then_seed_and_fold():
    records = [
        _rec("x", "lgmml[n_metrics=10]", 2),
        _rec("y", "lgmml[n_metrics=2]", 2),
        _rec("z", "lgmml[n_metrics=2]", 1),
    ]
    assert [r.key for r in model_rows(records)] == ["z", "y", "x"]


def test_formats_carry_the_same_fields_and_a_missing_value_is_null_in_json(tmp_path):
    folder = tmp_path / "res" / "k.model.abc"
    folder.mkdir(parents=True)
    rec = _rec("k", mlflow={"run_id": "r1", "model_uri": "models:/m-1"})
    rec.model_dir = str(folder)
    odd = _rec("o", "ridge", ranker="ridge", metrics={"map": float("nan")})
    rows = model_rows([rec, odd])
    docs = json.loads(format_rows(rows, "json"))
    assert docs[0]["run_id"] == "r1" and docs[0]["present"] is True
    assert docs[1]["value"] is None and docs[1]["present"] is False
    parsed = list(csv.DictReader(io.StringIO(format_rows(rows, "csv"))))
    assert [p["key"] for p in parsed] == ["k", "o"] and set(parsed[0]) == set(docs[0])
    table = format_rows(rows, "table", cwd=tmp_path).splitlines()
    assert table[0].split()[5] == "metric"  # two metrics: each row says which
    assert "res/k.model.abc" in table[2] and "ndcg@10 0.5100" in table[2]
    assert (
        "(missing)" in table[3]
        and "map nan" in table[3]
        and table[3].split()[-2:]
        == [
            "-",
            "-",
        ]
    )

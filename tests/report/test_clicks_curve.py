"""The clicks curve: the metric on the true test labels against the size of the click log, one
line per learner and debiasing, the skylines as lines, error bars over folds; and the curve's
plan (experiments/clicks_curve_synthetic.toml) run at a tiny size."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ltr_bench.report.clicks_curve import clicks_curve, curve_csv, curve_markdown
from ltr_bench.report.tables import build_report
from ltr_bench.results import ResultRecord
from ltr_bench.results.labels import row_label_without

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PLAN = Path(__file__).resolve().parents[2] / "experiments" / "clicks_curve_synthetic.toml"


def _clicks(sessions):
    model = {"name": "pbm", "args": {"eta": 1.0, "eps": 0.1}}
    return {"model": model, "sessions": sessions, "top_k": 10, "aggregate": "count"}


def _record(label, fold, value, sessions=None):
    identity = {"name": "toy"} | ({"clicks": _clicks(sessions)} if sessions else {})
    options = {"clicks": "pbm", "eta": 1, "sessions": sessions} if sessions else {}
    v = np.full(4, value)
    return ResultRecord(
        key=f"{label}-{sessions}-{fold}",
        plan_key=f"pk-{label}-{sessions}",
        config_key=f"ck-{label}-{sessions}",
        ranker=label.split()[0],
        label=label,
        dataset="toy",
        fold=fold,
        seed=0,
        metrics={"ndcg@10": value},
        per_query={"qid": list(range(4)), "ndcg@10": v.tolist()},
        fit_seconds=1.0,
        score_us_per_doc=1.0,
        fingerprints={"train": f"tr{sessions}{fold}", "test": f"te{fold}"},
        dataset_identity=identity,
        dataset_options=options,
    )


VALUES = {  # label -> sessions (None: skyline) -> value per fold 1, 2, 3
    "lightgbm": {None: [0.80, 0.82, 0.84], 10: [0.60, 0.62, 0.67], 100: [0.70, 0.71, 0.72]},
    "lightgbm unbiased": {10: [0.58, 0.61, 0.64], 100: [0.74, 0.75, 0.79]},
}


def _report():
    records = [
        _record(label, fold, v, sessions)
        for label, by in VALUES.items()
        for sessions, values in by.items()
        for fold, v in enumerate(values, start=1)
    ]
    return build_report(records, dataset="toy", metrics=["ndcg@10"])


def test_curve_has_a_line_per_learner_points_per_log_size_and_the_skyline():
    curve = clicks_curve(_report())
    assert curve is not None and curve.axis == "sessions" and curve.xs == [10, 100]
    lines = {line.label: line for line in curve.lines}
    assert set(lines) == {
        "lightgbm · clicks pbm eta=1",
        "lightgbm unbiased · clicks pbm eta=1",
        "lightgbm · skyline",
    }
    assert lines["lightgbm · skyline"].skyline
    for label, by in VALUES.items():
        for sessions, values in by.items():
            name = f"{label} · " + ("skyline" if sessions is None else "clicks pbm eta=1")
            mean, sd, n = lines[name].points[sessions]
            assert mean == pytest.approx(np.mean(values))
            assert sd == pytest.approx(np.std(values, ddof=1))
            assert n == 3


def test_curve_table_has_the_same_numbers():
    curve = clicks_curve(_report())
    text = curve_markdown(curve)
    assert "| line | 10 | 100 | true labels |" in text
    cells = [
        f"{np.mean(v):.4f} ± {np.std(v, ddof=1):.4f}"
        for v in (VALUES["lightgbm unbiased"][10], VALUES["lightgbm unbiased"][100])
    ]
    assert f"| lightgbm unbiased · clicks pbm eta=1 | {cells[0]} | {cells[1]} |  |" in text
    assert "lightgbm · skyline |  |  | 0.8200 ± 0.0200 |" in text
    rows = curve_csv(curve).splitlines()
    assert rows[0] == "line,axis,x,metric,mean,sd,folds"
    assert len(rows) == 1 + 5  # 2 + 2 click points, 1 skyline


def test_curve_over_the_number_of_logged_training_queries():
    """When the sessions are the same everywhere, the next log-size option that varies is the
    axis: here ``train_queries``, a data option of the records."""
    records = []
    for n, value in ((50, 0.6), (500, 0.7)):
        for fold in (1, 2):
            r = _record("lightgbm", fold, value + fold / 100, 10)
            r.dataset_options = {**r.dataset_options, "train_queries": n}
            r.dataset_identity = {**r.dataset_identity, "options": {"train_queries": n}}
            r.config_key, r.plan_key, r.key = f"ck{n}", f"pk{n}", f"k{n}{fold}"
            r.fingerprints = {"train": f"tr{n}{fold}", "test": f"te{fold}"}
            records.append(r)
    curve = clicks_curve(build_report(records, dataset="toy", metrics=["ndcg@10"]))
    assert curve is not None and curve.axis == "train_queries" and curve.xs == [50, 500]
    (line,) = curve.lines
    assert line.label == "lightgbm · clicks pbm eta=1 x10"
    assert line.points[500][0] == pytest.approx(0.715)


def test_no_curve_from_one_log_size():
    records = [_record("lightgbm", f, 0.6, 10) for f in (1, 2)]
    assert clicks_curve(build_report(records, dataset="toy", metrics=["ndcg@10"])) is None


def test_line_name_leaves_the_axis_out_of_the_variant():
    identity = {"clicks": _clicks(30)}
    options = {"clicks": "pbm", "eta": 1, "sessions": 30, "top_k": 5}
    assert row_label_without("neural ips", options, identity, "sessions") == (
        "neural ips · clicks pbm eta=1 top_k=5"
    )


def _tiny_plan(tmp_path: Path) -> Path:
    """The curve's plan with every size cut down: a few queries, two log sizes, few rounds."""
    doc = tomllib.loads(PLAN.read_text(encoding="utf-8"))
    doc["folds"] = [1]
    doc["metrics"] = ["ndcg@10"]
    for table in doc["datasets"].values():
        table["n_queries"] = 60
    doc["sweep"]["synthetic clicks"]["sessions"] = [3, 30]
    for table in doc["rankers"].values():
        if table.get("ranker", "") == "neural":
            table["epochs"] = 3
        else:
            table["n_estimators"] = 5

    def value(v):
        if isinstance(v, str):
            return f'"{v}"'
        return str(v).lower() if isinstance(v, bool) else str(v)

    lines = [f"folds = {doc['folds']}", 'metrics = ["ndcg@10"]', "threads = 1"]
    for section in ("rankers", "datasets", "sweep"):
        for name, table in doc[section].items():
            lines.append(f'[{section}."{name}"]')
            lines += [
                f"{k} = {value(v) if not isinstance(v, list) else v}" for k, v in table.items()
            ]
    path = tmp_path / "plan.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow
def test_the_curve_plan_runs_at_a_tiny_size_and_report_draws_it(tmp_path):
    from ltr_bench.cli import main

    plan, results, plots = _tiny_plan(tmp_path), tmp_path / "res", tmp_path / "plots"
    run = CliRunner().invoke(
        main,
        ["run", "--config", str(plan), "--results-dir", str(results), "--no-mlflow"],
        catch_exceptions=False,
    )
    assert run.exit_code == 0, run.output
    assert "does not run on synthetic (true labels)" in run.output
    report = CliRunner().invoke(
        main,
        # --wide: each table whole, its rows read as one line (the split: test_report_width)
        ["report", "--results-dir", str(results), "--dataset", "synthetic", "--plots", str(plots)]
        + ["--wide"],
        catch_exceptions=False,
    )
    assert report.exit_code == 0, report.output
    assert (plots / "synthetic_clicks_curve.png").stat().st_size > 10_000
    assert "| line | 3 | 30 | true labels |" in report.output
    rankers = tomllib.loads(PLAN.read_text(encoding="utf-8"))["rankers"]
    for name, table in rankers.items():  # every learner and debiasing is a line of the curve
        label = name if "ranker" in table else f"{name}[n_estimators=5]"  # unnamed: its params
        assert f"| {label} · clicks pbm eta=1 n_queries=60 |" in report.output
    # the skylines: every learner that needs no click positions also ran on the true labels
    skylines = [t for t in rankers.values() if t.get("unbiased") in (None, "naive")]
    assert report.output.count("· skyline |") == len(skylines) == 5

"""The ``ltr-bench`` command line: exit codes, messages, output, help."""

from __future__ import annotations

import json

import ltrb_fake_rankers as fakes
import pytest
from click.testing import CliRunner

from ltr_bench.cli import main

TINY = [
    "--dataset-option",
    "n_queries=30",
    "--dataset-option",
    "docs_per_query=6",
    "--dataset-option",
    "n_features=5",
    "--dataset-option",
    "n_informative=3",
]


@pytest.fixture
def cli(tmp_path, monkeypatch, fake_rankers):
    """Run ``ltr-bench ARGS`` in-process with the temporary folder as working directory."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)

    def invoke(*args):
        return CliRunner().invoke(main, list(args), catch_exceptions=False)

    invoke.work = work
    return invoke


def _run(cli, *extra):
    return cli("run", "--dataset", "synthetic", "--folds", "1,2", "--no-mlflow", *TINY, *extra)


def test_run_prints_a_summary_table_on_stdout_and_progress_on_stderr(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # every column (at 120 the first metrics are left out)
    result = _run(cli, "--ranker", "fake-linear,fake-other")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split()[:4] == ["dataset", "ranker", "folds", "ndcg@1"]
    # rows may carry "(!)" and note lines follow when the machine was loaded (flags)
    rows = [l.replace(" (!)", "").split()[:3] for l in lines[2:] if l.startswith("synthetic")]
    assert rows == [["synthetic", "fake-linear", "1,2"], ["synthetic", "fake-other", "1,2"]]
    # the options every row shares are said once, not in each row's name
    assert lines[4] == (
        "dataset options (every row of synthetic): docs_per_query=6 n_features=5 "
        "n_informative=3 n_queries=30"
    )
    assert all(l.startswith("(!) ") for l in lines[5:])
    assert "±" in lines[2]
    # progress names each row plainly: its label and the dataset options it ran with
    tiny = "docs_per_query=6 n_features=5 n_informative=3 n_queries=30"
    assert f"[1/4] fake-linear · {tiny} on synthetic fold 1: ndcg@10" in result.stderr
    assert (cli.work / "mlflow_runs" / "results").is_dir()
    assert not (cli.work / "mlflow_runs" / "mlflow.db").exists()  # --no-mlflow


def test_output_json_has_one_record_per_ranker_and_fold(cli):
    result = _run(cli, "--ranker", "fake-linear,fake-other", "--output", "out.json")
    assert result.exit_code == 0, result.output
    records = json.loads((cli.work / "out.json").read_text())
    assert [(r["ranker"], r["fold"]) for r in records] == [
        ("fake-linear", 1),
        ("fake-other", 1),
        ("fake-linear", 2),
        ("fake-other", 2),
    ]
    for r in records:
        assert {"ranker", "fold", "metrics", "fit_seconds", "score_us_per_doc"} <= set(r)
        assert {"ndcg@10", "ndcg@10_empty0", "map", "mrr", "err@10"} <= set(r["metrics"])
        assert 0.0 <= r["metrics"]["ndcg@10"] <= 1.0 and r["fit_seconds"] > 0
        assert r["params"]["random_state"] == 0


def test_second_run_resumes_and_force_recomputes(cli):
    assert _run(cli, "--ranker", "fake-linear").exit_code == 0
    fakes.FITS.clear()
    result = _run(cli, "--ranker", "fake-linear")
    assert result.exit_code == 0 and fakes.FITS == []
    assert result.stderr.count("finished earlier, skipped") == 2
    assert "fake-linear" in result.stdout  # the summary still covers the skipped cells
    assert _run(cli, "--ranker", "fake-linear", "--force").exit_code == 0
    assert len(fakes.FITS) == 2


def test_params_and_seed_reach_the_ranker(cli):
    result = _run(
        cli,
        "--ranker",
        "fake-linear",
        "--param",
        "fake-linear.scale=0.25",
        "--seed",
        "11",
        "--threads",
        "1",
        "--output",
        "o.json",
    )
    assert result.exit_code == 0, result.output
    assert {(f["params"]["scale"], f["random_state"], f["n_jobs"]) for f in fakes.FITS} == {
        (0.25, 11, 1)
    }


def test_a_failing_ranker_exits_1_after_the_other_cells_finish(cli):
    result = _run(cli, "--ranker", "fake-failing,fake-linear", "--output", "o.json")
    assert result.exit_code == 1
    assert "FAILED in fit: ValueError: fake failure" in result.stderr
    assert "2 of 4 cell(s) failed" in result.stderr and "failures.log" in result.stderr
    assert "Traceback (most recent" not in result.output
    records = json.loads((cli.work / "o.json").read_text())
    assert sorted((r["ranker"], r["status"]) for r in records) == [
        ("fake-failing", "failed"),
        ("fake-failing", "failed"),
        ("fake-linear", "ok"),
        ("fake-linear", "ok"),
    ]
    log = cli.work / "mlflow_runs" / "results" / "failures.log"
    assert "Traceback" in log.read_text()


def test_ctrl_c_exits_130_with_a_resume_message_and_the_rerun_resumes(cli):
    fakes.INTERRUPT_AT_FIT = 2
    result = _run(cli, "--ranker", "fake-linear")
    assert result.exit_code == 130
    assert "interrupted; 1 cell(s) finished and saved" in result.stderr
    assert "re-run the same command to resume" in result.stderr
    assert "Traceback (most recent" not in result.output
    fakes.reset()
    result = _run(cli, "--ranker", "fake-linear")
    assert result.exit_code == 0 and len(fakes.FITS) == 1


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["--ranker", "fake-lineer"], 2, "unknown ranker 'fake-lineer'. Did you mean: fake-linear"),
        (
            ["--ranker", "fake-linear", "--param", "fake-linear.depth=3"],
            2,
            "--param: ranker 'fake-linear' has no parameter(s) depth",
        ),
        (
            ["--ranker", "fake-linear", "--param", "fake-linear.scale"],
            2,
            "--param 'fake-linear.scale': expected NAME.key=value",
        ),
        (
            ["--ranker", "fake-linear", "--param", "fake-other.scale=1"],
            2,
            "ranker 'fake-other' is not part of this run",
        ),
        (["--ranker", "fake-linear", "--param", "nosuch.scale=1"], 2, "unknown ranker 'nosuch'"),
        (["--ranker", "fake-linear", "--folds", "1,x"], 2, "--folds"),
        (["--ranker", "fake-linear", "--folds", "7"], 2, "has no fold 7"),
        (["--ranker", "fake-linear", "--metrics", "ndcg@10,auc"], 2, "unknown metric 'auc'"),
        (
            ["--ranker", "fake-linear", "--dataset-option", "colour=red"],
            2,
            "no dataset of this run has an option 'colour'",
        ),
        (["--dataset", "synthetic"], 2, "no ranker given"),
        (["--ranker", "fake-broken"], 1, "could not be loaded"),
    ],
)
def test_bad_invocations_give_one_clear_message_and_no_traceback(cli, args, code, message):
    result = cli(
        "run",
        "--no-mlflow",
        *(["--dataset", "synthetic"] if "--dataset" not in args else []),
        *args,
    )
    assert result.exit_code == code, result.output
    assert message in result.stderr
    assert "Traceback (most recent" not in result.output
    assert fakes.FITS == []


def test_unknown_dataset_exits_2_with_suggestions(cli):
    result = cli("run", "--no-mlflow", "--ranker", "fake-linear", "--dataset", "synthetc")
    assert result.exit_code == 2
    assert "unknown dataset 'synthetc'. Did you mean: synthetic" in result.stderr
    assert "Traceback (most recent" not in result.output


def test_missing_downloaded_data_exits_1_saying_where_to_get_it(cli, tmp_path):
    empty = tmp_path / "no-data"
    empty.mkdir()
    result = cli(
        "run",
        "--no-mlflow",
        "--ranker",
        "fake-linear",
        "--dataset",
        "ohsumed",
        "--data-dir",
        str(empty),
    )
    assert result.exit_code == 1
    assert str(empty) in result.stderr and "Traceback (most recent" not in result.output
    assert "microsoft.com" in result.stderr.lower() or "download" in result.stderr.lower()


def test_config_file_runs_and_unknown_keys_exit_2_naming_key_and_file(cli):
    good = cli.work / "plan.toml"
    good.write_text(
        "seed = 5\nfolds = [2]\n[rankers.fake-linear]\nscale = 2.0\n"
        "[datasets.synthetic]\nn_queries = 30\ndocs_per_query = 6\n"
        "n_features = 5\nn_informative = 3\n"
    )
    result = cli("run", "--no-mlflow", "--config", str(good), "--output", "o.json")
    assert result.exit_code == 0, result.output
    records = json.loads((cli.work / "o.json").read_text())
    assert [(r["fold"], r["seed"], r["params"]["scale"]) for r in records] == [(2, 5, 2.0)]
    # command-line options override the file
    result = cli("run", "--no-mlflow", "--config", str(good), "--seed", "6", "--output", "o.json")
    assert json.loads((cli.work / "o.json").read_text())[0]["seed"] == 6

    bad = cli.work / "bad.toml"
    bad.write_text("seed = 1\nfold = [1]\n[rankers.fake-linear]\n[datasets.synthetic]\n")
    result = cli("run", "--config", str(bad))
    assert result.exit_code == 2
    assert "bad.toml: key 'fold' is not a plan setting" in result.stderr
    bad.write_text("[rankers.fake-linear]\ndepth = 3\n[datasets.synthetic]\n")
    result = cli("run", "--no-mlflow", "--config", str(bad))
    assert result.exit_code == 2 and "[rankers.fake-linear]" in result.stderr
    assert "depth" in result.stderr
    bad.write_text("[rankers.fake-linear]\n[datasets.synthetic]\ncolour = 1\n")
    result = cli("run", "--no-mlflow", "--config", str(bad))
    assert (
        result.exit_code == 2 and "[datasets.synthetic]: unknown option(s) colour" in result.stderr
    )
    result = cli("run", "--config", str(cli.work / "missing.toml"))
    assert result.exit_code == 2 and "does not exist" in result.stderr
    assert fakes.FITS and all(f["random_state"] in (5, 6) for f in fakes.FITS)


def test_rankers_lists_name_distribution_version_and_status(cli):
    result = cli("rankers")
    assert result.exit_code == 0
    rows = {line.split()[0]: line for line in result.stdout.splitlines()[2:]}
    assert rows["fake-linear"].split()[1:4] == ["ltrb-fakes", "0.1", "ok"]
    assert "unavailable:" in rows["fake-broken"]
    assert "ltrb_fake_rankers_missing_module" in rows["fake-broken"]
    assert rows["lightgbm"].split()[1] == "ltr-bench"
    quick = cli("rankers", "--no-check")
    assert quick.exit_code == 0 and "not checked" in quick.stdout


def test_datasets_lists_present_missing_and_sources(cli, tmp_path):
    result = cli("datasets", "--wide", "--data-dir", str(tmp_path / "home"))
    assert result.exit_code == 0
    rows = {line.split()[0]: line for line in result.stdout.splitlines()[3:]}
    assert "built-in" in rows["synthetic"]
    assert "missing: expected at " + str(tmp_path / "home") in rows["ohsumed"]
    assert "http" in rows["mslr30k"]


@pytest.mark.parametrize("command", [[], ["run"], ["rankers"], ["datasets"], ["ui"]])
def test_help_for_every_command(command):
    result = CliRunner().invoke(main, [*command, "--help"])
    assert result.exit_code == 0
    assert result.output.startswith("Usage: ")


def test_no_arguments_to_run_is_a_usage_error(cli):
    result = cli("run")
    assert result.exit_code == 2 and "no ranker given" in result.stderr


def _write_letor(path, rows):
    path.write_text("".join(f"{y} qid:{q} 1:{a} 2:{b}\n" for y, q, a, b in rows))


def test_a_folder_of_letor_files_is_a_dataset(cli):
    folder = cli.work / "MyData"
    folder.mkdir()
    _write_letor(
        folder / "train.txt",
        [(2, 1, 0.5, 1.0), (0, 1, 0.1, 0.2), (1, 2, 0.3, 0.3), (0, 2, 0.0, 0.9)],
    )
    _write_letor(folder / "vali.txt", [(1, 3, 0.2, 0.1), (0, 3, 0.4, 0.4)])
    _write_letor(
        folder / "test.txt",
        [(1, 4, 0.9, 0.1), (0, 4, 0.1, 0.8), (2, 5, 0.7, 0.7), (0, 5, 0.2, 0.3), (1, 5, 0.5, 0.5)],
    )
    result = cli(
        "run",
        "--no-mlflow",
        "--ranker",
        "fake-linear",
        "--dataset",
        str(folder),
        "--output",
        "o.json",
    )
    assert result.exit_code == 0, result.output
    (rec,) = json.loads((cli.work / "o.json").read_text())
    assert rec["dataset"] == "MyData" and rec["fold"] == 1
    assert fakes.FITS[0]["n"] == 4 and fakes.FITS[0]["eval_set"]
    missing = cli(
        "run", "--no-mlflow", "--ranker", "fake-linear", "--dataset", str(cli.work / "Nope")
    )
    assert missing.exit_code == 1 and "does not exist" in missing.stderr


def test_progress_lines_are_throttled_when_stderr_is_not_a_terminal():
    import io

    from ltr_bench.cli.console import Console

    stream = io.StringIO()
    console = Console(stream, min_interval=60.0)
    for i in range(100):
        console.status(f"round {i}")
    console.status("forced", force=True)
    console.line("done")
    assert stream.getvalue().splitlines() == ["round 0", "forced", "done"]


def test_a_configuration_with_set_parameters_is_named_by_them_in_summary_records_and_mlflow(cli):
    first = cli("run", "--ranker", "fake-linear", "--dataset", "synthetic", "--folds", "1", *TINY)
    second = cli(
        "run",
        "--ranker",
        "fake-linear",
        "--param",
        "fake-linear.scale=2",
        "--dataset",
        "synthetic",
        "--folds",
        "1",
        *TINY,
    )
    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    assert "fake-linear[scale=2]" in second.stdout and "null" not in second.stdout
    records = [json.loads(p.read_text()) for p in (cli.work / "mlflow_runs/results").glob("*.json")]
    assert sorted(r["label"] for r in records) == ["fake-linear", "fake-linear[scale=2]"]
    import mlflow

    from ltr_bench.tracking import default_tracking_uri

    client = mlflow.MlflowClient(default_tracking_uri())
    names = {
        run.info.run_name
        for exp in client.search_experiments()
        for run in client.search_runs([exp.experiment_id], "tags.ltr_bench_role = 'parent'")
    }
    tiny = "docs_per_query=6 n_features=5 n_informative=3 n_queries=30"
    assert names == {
        f"fake-linear · {tiny} @ synthetic",
        f"fake-linear[scale=2] · {tiny} @ synthetic",
    }

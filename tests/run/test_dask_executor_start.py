"""How a local Dask cluster starts (``ltr_bench/run/dask_executor.py``): a cluster that
cannot start is a clear error, before any cell runs."""

from __future__ import annotations


def test_a_local_cluster_that_cannot_start_is_reported_and_no_cell_is_lost(tmp_path, monkeypatch):
    import distributed
    from click.testing import CliRunner

    from ltr_bench.cli import main

    def no_cluster(*args, **kwargs):
        raise OSError("[Errno 98] Address already in use")

    monkeypatch.setattr(distributed, "LocalCluster", no_cluster)
    command = [
        "run",
        "--ranker",
        "ridge",
        "--dataset",
        "synthetic",
        "--dataset-option",
        "n_queries=60",
        "--folds",
        "1,2",
        "--no-mlflow",
        "--results-dir",
        str(tmp_path / "results"),
    ]
    failed = CliRunner().invoke(main, [*command, "--workers", "2"])
    assert failed.exit_code == 1, failed.output
    assert "could not start a local Dask cluster of 2 worker(s)" in failed.output
    assert "Address already in use" in failed.output
    assert "Traceback" not in failed.output
    assert not list((tmp_path / "results").glob("*.json"))  # nothing half-written
    # the same command in process computes every cell
    again = CliRunner().invoke(main, command)
    assert again.exit_code == 0, again.output
    assert len(list((tmp_path / "results").glob("*.json"))) == 2

"""A bad value or key given by ``--sweep`` is blamed on ``--sweep``, not on
``--dataset-option`` (which the user did not give for it); refused before any work."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from ltr_bench.cli import main


@pytest.mark.parametrize(
    ("sweep", "fragment"),
    [
        ("synthetic.n_querys=10,20", "--sweep synthetic.n_querys: unknown option(s) n_querys"),
        ("synthetic.clicks=pbm,nope", "--sweep synthetic.clicks (variant"),
    ],
)
def test_a_bad_sweep_value_names_sweep(tmp_path, monkeypatch, sweep, fragment):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LTR_BENCH_CACHE", str(tmp_path / "cache"))
    args = ["run", "--ranker", "ridge", "--dataset", "synthetic", "--sweep", sweep]
    args += ["--dataset-option", "n_informative=2", "--no-mlflow", "--results-dir", "res"]
    result = CliRunner().invoke(main, args)
    assert not (result.exception and not isinstance(result.exception, SystemExit)), result.output
    assert result.exit_code == 2, result.output
    assert fragment in result.output and "--dataset-option" not in result.output, result.output
    assert not (tmp_path / "res").exists() or not list((tmp_path / "res").glob("*.json"))

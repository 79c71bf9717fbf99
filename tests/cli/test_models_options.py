"""``ltr-bench models`` options name what the user gave: a ``--ranker`` or ``--dataset`` name
that matches nothing is refused by name (close matches suggested) even beside one that
matches, and an unknown ``--best`` metric is blamed on ``--best``."""

from __future__ import annotations

from click.testing import CliRunner

from ltr_bench.cli import main


def _models(logged, *args):
    result = CliRunner().invoke(
        main, ["models", "--results-dir", str(logged.root), "--no-mlflow", *args]
    )
    assert not (result.exception and not isinstance(result.exception, SystemExit)), result.output
    return result


def test_a_ranker_name_that_matches_nothing_is_refused_beside_one_that_does(logged_models):
    result = _models(logged_models, "--ranker", "lightgbm,lightgbn")
    assert result.exit_code == 2, result.output
    assert "--ranker lightgbn: no kept model matches" in result.stderr
    assert "did you mean: lightgbm" in result.stderr
    result = _models(logged_models, "--dataset", "synthetic,nope")
    assert result.exit_code == 2 and "--dataset nope" in result.stderr, result.output


def test_an_unknown_best_metric_names_best(logged_models):
    result = _models(logged_models, "--best", "ndcg@77")
    assert result.exit_code == 2, result.output
    assert "--best ndcg@77" in result.stderr and "--metric" not in result.stderr

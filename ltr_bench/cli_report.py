"""``ltr-bench report``: compare rankers on one dataset from what MLflow holds (no retraining).

Registered in :mod:`ltr_bench.cli` with ``main.add_command(report_command)``. The command
only parses options and prints; the reading is :func:`ltr_bench.tracking.fetch_fold_results`,
the table and tests :mod:`ltr_bench.report`, the figures :mod:`ltr_bench.plots`.

Exit codes (as the other commands): 0 ok; 1 nothing to report or the results cannot be
compared (no store, no runs for the dataset, runs on different data, MLflow unreachable,
plots could not be logged); 2 bad invocation (unknown metric, ranker or baseline, bad
option value).
"""

from __future__ import annotations

from pathlib import Path

import click

from .report import FORMATS, TESTS

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _split(values: tuple[str, ...]) -> list[str]:
    return [p.strip() for v in values for p in v.split(",") if p.strip()]


def _fail(ctx: click.Context, message: str, code: int):
    click.echo(f"Error: {message}", err=True)
    ctx.exit(code)


@click.command("report", context_settings=_CONTEXT)
@click.option("--dataset", required=True, metavar="NAME",
              help="Dataset whose results to compare (the MLflow experiment ltr-bench/NAME).")
@click.option("--metric", "metrics", multiple=True, metavar="M[,M...]",
              help="Metrics to show and test, e.g. ndcg@10,map (also ndcg@10_empty0). "
                   "Default: every default metric the runs recorded.")
@click.option("--baseline", default=None, metavar="RANKER",
              help="Row the others are tested against (default lightgbm when present, else "
                   "the first row).")
@click.option("--ranker", "rankers", multiple=True, metavar="NAME[,NAME...]",
              help="Only these rankers (names, or row labels like lightgbm[num_leaves=31]).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="md", show_default=True,
              help="md: Markdown table and legend; csv: one line per ranker and quantity; "
                   "html: a standalone page.")
@click.option("--output", default=None, type=click.Path(dir_okay=False),
              help="Write the report here instead of stdout.")
@click.option("--plots", "plots_dir", default=None, type=click.Path(file_okay=False),
              help="Write PNG figures here (NDCG@k against k, accuracy against training "
                   "time, the metric per fold) and attach them to the parent MLflow runs.")
@click.option("--no-log-plots", is_flag=True,
              help="With --plots: do not attach the figures to the MLflow runs.")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.05, show_default=True, help="Significance level after Holm.")
@click.option("--test", type=click.Choice(TESTS), default="both", show_default=True,
              help="Which paired test must be significant to mark a win or loss.")
@click.option("--tracking-uri", default=None, metavar="URI",
              help="MLflow store (else $MLFLOW_TRACKING_URI, else "
                   "sqlite:///<cwd>/mlflow_runs/mlflow.db).")
@click.pass_context
def report_command(ctx: click.Context, dataset, metrics, baseline, rankers, fmt, output,
                   plots_dir, no_log_plots, alpha, test, tracking_uri) -> None:
    """Rankers x metrics table (mean ± std over folds, fit and scoring time) with paired
    significance tests against a baseline, from the results logged in MLflow.

    Per-query values are paired by (fold, query id) over the folds every ranker has; the
    paired t-test and Wilcoxon signed-rank test are Holm-corrected over all rankers x
    metrics. Nothing is retrained.

    Exit codes: 0 ok, 1 nothing to report / results not comparable / MLflow failed,
    2 bad invocation.
    """
    from .report import ReportError, build_report, format_report
    from .tracking import TrackingError, fetch_fold_results, log_parent_artifacts

    click.echo(f"reading the {dataset} runs ...", err=True)
    try:
        runs = fetch_fold_results(dataset, tracking_uri)
    except TrackingError as exc:
        _fail(ctx, str(exc), EXIT_FAILED)
    try:
        report = build_report(runs, dataset=dataset, metrics=_split(metrics) or None,
                              baseline=baseline, rankers=_split(rankers) or None,
                              alpha=alpha, test=test)
        text = format_report(report, fmt)
    except ReportError as exc:
        _fail(ctx, str(exc), EXIT_USAGE if exc.usage else EXIT_FAILED)

    if output:
        from .harness import _atomic_write

        _atomic_write(Path(output), text)
        click.echo(f"report written to {output}", err=True)
    else:
        click.echo(text, nl=False)

    code = EXIT_OK
    if plots_dir:
        from .plots import write_plots

        try:
            paths = write_plots(report, plots_dir)
        except (OSError, ValueError) as exc:
            _fail(ctx, f"--plots {plots_dir}: {exc}", EXIT_FAILED)
        for p in paths:
            click.echo(f"plot written to {p}", err=True)
        if not no_log_plots:
            parents = sorted({pid for row in report.rows for pid in row.parent_run_ids})
            try:
                for pid in parents:
                    log_parent_artifacts(pid, paths, tracking_uri=tracking_uri)
                click.echo(f"plots attached to {len(parents)} parent run(s) under report/",
                           err=True)
            except TrackingError as exc:
                click.echo(f"Error: {exc} (the PNG files are written)", err=True)
                code = EXIT_FAILED
    ctx.exit(code)

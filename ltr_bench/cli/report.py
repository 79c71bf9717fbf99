"""``ltr-bench report``: compare finished results (from MLflow or the local results folder).

The command only parses options and prints; the reading is
:func:`ltr_bench.tracking.fetch_fold_results` (MLflow) or
:class:`ltr_bench.results.ResultStore` (``--results-dir``), the statistics
:func:`ltr_bench.report.tables.build_report`, the rendering :mod:`ltr_bench.report.text`.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from ltr_bench.cli import options
from ltr_bench.errors import EXIT_FAILED, EXIT_OK
from ltr_bench.evaluation.metric_keys import METRICS_HELP

CONTEXT = options.CONTEXT
#: --pareto-time -> the record's field on the plot's cost axis
PARETO_TIME = {
    "us-per-doc": "score_us_per_doc",
    "query-p50": "query_ms_p50",
    "query-p99": "query_ms_p99",
}


def _records(
    dataset: str | None, results_dir: str | None, tracking_uri: str | None, set_aside=None
):
    """(dataset, records) from the local results folder or from MLflow. Damaged records
    (files or artifacts) are left out and named in ``set_aside`` (a list of notes), with
    the repair: re-running their command logs a damaged MLflow copy again from the local
    results (nothing recomputed) and computes a damaged local result again."""
    from ltr_bench.report.tables import ReportError

    if results_dir is not None:
        from ltr_bench.results import ResultStore

        store = ResultStore(results_dir)
        if not store.root.is_dir():
            raise ReportError(f"--results-dir {results_dir}: no such folder", usage=True)
        records = store.records()
        datasets = sorted({r.dataset for r in records})
        where = f"the results folder {store.root}"
    else:
        from ltr_bench.tracking import fetch_fold_results, list_datasets_in_store

        datasets = list_datasets_in_store(tracking_uri) if dataset is None else [dataset]
        records = None
        where = "the MLflow store"
    if dataset is None:
        if len(datasets) != 1:
            raise ReportError(
                f"--dataset is needed: {where} has results for "
                + (", ".join(datasets) if datasets else "no dataset"),
                usage=bool(datasets),
            )
        dataset = datasets[0]
    if records is None:
        click.echo(f"reading the {dataset} runs ...", err=True)
        damaged: list = []
        records = fetch_fold_results(dataset, tracking_uri, damaged=damaged)
        if set_aside is not None:
            set_aside += [
                f"set aside (damaged): {d}; re-run its command to log it again from the local "
                "results (nothing is recomputed)"
                for d in damaged
            ]
    else:
        records = [r for r in records if r.dataset == dataset]
        for r in records:
            store.per_query(r)
        records = [r for r in records if store.get(r.key) is r]  # CSVs found damaged: out
        if set_aside is not None:
            set_aside += [
                f"{n}; re-run its command to compute it again (the damaged file is kept beside)"
                for n in store.damage_notes()
            ]
        if not records:
            raise ReportError(
                f"no results for dataset {dataset!r} in {where}; datasets with "
                f"results: {', '.join(datasets) or 'none'}"
            )
    return dataset, records


@click.command("report", cls=options.Command, context_settings=CONTEXT)
@click.option(
    "--dataset",
    default=None,
    metavar="NAME[,NAME...]",
    help="Dataset whose results to compare (default: the only one there is). "
    "Several: rank the configurations over them (Friedman, Nemenyi, "
    "critical-difference diagram with --plots).",
)
@click.option(
    "--all-datasets", is_flag=True, help="Rank the configurations over every dataset with results."
)
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    metavar="M[,M...]",
    help="Metrics to show and test, e.g. ndcg@10,map,knn_error. "
    + METRICS_HELP
    + " Default: every default metric the runs recorded.",
)
@click.option(
    "--baseline",
    default=None,
    metavar="ROW",
    help="Row the others are tested against: its name as the report shows it, or a label or "
    "ranker that names one row (default: LightGBM's default configuration on the dataset as "
    "it is, else the default configuration run first, else the row run first; a note says "
    "which was taken and why when another reading was possible).",
)
@click.option(
    "--ranker",
    "rankers",
    multiple=True,
    metavar="NAME[,NAME...]",
    help="Only these rankers (names, or row labels like lightgbm[num_leaves=31]); "
    "a comma inside a label's [...] does not split the list.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("md", "csv", "html")),
    default="md",
    show_default=True,
    help="md: Markdown table and legend; csv: one line per ranker and quantity; "
    "html: a standalone page.",
)
@click.option(
    "--output",
    default=None,
    type=click.Path(dir_okay=False),
    help="Write the report here instead of stdout.",
)
@click.option(
    "--plots",
    "plots_dir",
    default=None,
    type=click.Path(file_okay=False),
    help="Write PNG figures here (NDCG@k against k, accuracy against training "
    "time, the metric per fold) and attach them (with --format html, the page report.html "
    "too) to the parent MLflow runs under report/.",
)
@click.option(
    "--pareto-time",
    type=click.Choice(["us-per-doc", "query-p50", "query-p99"]),
    default="us-per-doc",
    show_default=True,
    help="The cost axis of the quality-against-scoring-cost plot (with --plots): "
    "microseconds per document in bulk, or the 50th / 99th percentile of one query's "
    "predict call (ms).",
)
@click.option(
    "--no-log-plots",
    is_flag=True,
    help="With --plots: do not attach the figures (and with --format html the page) to "
    "the MLflow runs.",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Significance level after Holm.",
)
@click.option(
    "--test",
    type=click.Choice(("both", "ttest", "wilcoxon")),
    default="both",
    show_default=True,
    help="Which paired test must be significant to mark a win or loss.",
)
@click.option(
    "--convention",
    default=None,
    metavar="PROFILE",
    help="Show the metrics under a convention profile recorded with `run "
    "--convention` (letor4, letor3, trec, nonempty).",
)
@click.option(
    "--wide",
    is_flag=True,
    help="Each Markdown table whole, however wide (otherwise a table wider than $COLUMNS, "
    "else 120 columns, is split into tables of the same rows, each repeating the rows' names).",
)
@options.tracking_uri
@click.option(
    "--results-dir",
    default=None,
    type=click.Path(file_okay=False),
    help="Read the local results folder instead of MLflow (the report is the "
    "same; e.g. after `run --no-mlflow`).",
)
@click.option(
    "--register",
    "register_name",
    default=None,
    metavar="NAME",
    help="Register the best configuration's kept models (one version per fold run; best "
    "by mean ndcg@10, else the first --metric) as registered model NAME in MLflow's "
    "Model registry, with the metrics and the comparison it won in each description (and "
    "the comparison in NAME's). A model NAME holds already is not registered again; NAME "
    "never mixes datasets or feature counts.",
)
@click.pass_context
def report_command(
    ctx: click.Context,
    dataset,
    all_datasets,
    metrics,
    baseline,
    rankers,
    fmt,
    output,
    plots_dir,
    pareto_time,
    no_log_plots,
    alpha,
    test,
    convention,
    wide,
    tracking_uri,
    results_dir,
    register_name,
) -> None:
    """Rankers x metrics table (mean ± std over folds and seeds, fit and scoring time) with
    paired significance tests against a baseline, from finished results.

    Markdown tables wider than $COLUMNS (else 120) are split into tables of the same rows,
    each repeating the row's name (--wide: one table each, however wide).

    Per-query values are paired by (fold, seed, query id) over the units every ranker has;
    the paired t-test and Wilcoxon signed-rank test are Holm-corrected over all rankers x
    metrics. Nothing is retrained.

    Exit codes: 0 ok, 1 nothing to report / results not comparable / MLflow failed,
    2 bad invocation.
    """
    from ltr_bench.report.tables import ReportError, build_report
    from ltr_bench.report.text import format_report
    from ltr_bench.results import write_output
    from ltr_bench.results.files import reason_of
    from ltr_bench.results.labels import split_names  # here: `ltr-bench --help` needs no numpy

    # every list option is checked before anything is read (reading MLflow takes a while)
    if register_name is not None and (results_dir is not None or all_datasets):
        raise ReportError(
            "--register takes the models of one dataset's runs in MLflow (not with "
            "--results-dir or --all-datasets)",
            usage=True,
        )

    if output or plots_dir:  # what the report reads is never replaced by what it writes
        from ltr_bench.cli.options import report_inputs
        from ltr_bench.cli.outputs import check_output_paths

        check_output_paths(
            [(output, "--output"), (plots_dir, "--plots")],
            report_inputs(results_dir, tracking_uri),
            folders={"--plots"},
        )
    names = split_names((dataset,), option="--dataset") if dataset else []
    if register_name is not None and len(names) > 1:
        raise ReportError(
            "--register takes the models of one dataset's runs: give one --dataset (a "
            "registered model's versions must all take the same input)",
            usage=True,
        )
    ranker_names = split_names(rankers, option="--ranker") or None
    wanted = split_names(metrics, option="--metric") or None
    if all_datasets or len(names) > 1:
        ctx.exit(
            _multi(
                names,
                all_datasets,
                wanted,
                ranker_names,
                output,
                plots_dir,
                alpha,
                tracking_uri,
                results_dir,
                options.width(wide),
            )
        )
    set_aside: list[str] = []
    dataset, records = _records(names[0] if names else None, results_dir, tracking_uri, set_aside)
    if convention is not None:
        from ltr_bench.evaluation.conventions import profile_keys
        from ltr_bench.evaluation.metrics import DEFAULT_METRICS
        from ltr_bench.run.plan import parse_conventions

        parse_conventions(convention)
        wanted = profile_keys(wanted or DEFAULT_METRICS, convention)
    report = build_report(
        records,
        dataset=dataset,
        metrics=wanted,
        baseline=baseline,
        rankers=ranker_names,
        alpha=alpha,
        test=test,
        set_aside=set_aside,
    )
    if report.baseline_note:  # also under the table; said here so that --register's is seen
        click.echo(f"note: {report.baseline_note}", err=True)
    paths: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="ltr-bench-plots-") as tmp:
        if plots_dir or fmt == "html":  # the HTML page embeds the figures
            from ltr_bench.report.plots import write_plots

            try:
                paths = write_plots(report, plots_dir or tmp)
                from ltr_bench.report.clicks_curve import write_clicks_curve

                paths += write_clicks_curve(report, plots_dir or tmp)  # several log sizes
                if plots_dir:
                    from ltr_bench.report.plots import write_pareto_plots

                    paths += write_pareto_plots(
                        report,
                        plots_dir,
                        metric=("ndcg@10" if "ndcg@10" in report.metrics else report.metrics[0]),
                        score_time_key=PARETO_TIME[pareto_time],
                    )
            except (OSError, ValueError) as exc:
                reason = reason_of(exc) if isinstance(exc, OSError) else exc
                click.echo(f"Error: --plots {plots_dir}: {reason}", err=True)
                ctx.exit(EXIT_FAILED)
        text = format_report(report, fmt, plots=paths, width=options.width(wide))
    if fmt == "md":  # rows trained on click logs of several sizes: the curve's numbers
        from ltr_bench.report.clicks_curve import clicks_curve, curve_markdown

        curve = clicks_curve(report)
        if curve is not None:
            text += "\n" + curve_markdown(curve, options.width(wide))
    if output:
        write_output(output, text, what="--output")
        click.echo(f"report written to {output}", err=True)
    else:
        click.echo(text, nl=False)

    code = EXIT_OK
    if plots_dir:
        for p in paths:
            click.echo(f"plot written to {p}", err=True)
        parents = sorted({pid for row in report.rows for pid in row.parent_run_ids})
        if parents and not no_log_plots:
            from ltr_bench.tracking import TrackingError, log_parent_artifacts

            try:
                with tempfile.TemporaryDirectory(prefix="ltr-bench-report-") as tmp:
                    attached = list(paths)
                    if fmt == "html":  # the page goes with its figures
                        attached.append(Path(tmp) / "report.html")
                        attached[-1].write_text(text, encoding="utf-8")
                    for pid in parents:
                        log_parent_artifacts(pid, attached, tracking_uri=tracking_uri)
                click.echo(
                    f"plots{' and report.html' if fmt == 'html' else ''} attached to "
                    f"{len(parents)} parent run(s) under report/",
                    err=True,
                )
            except TrackingError as exc:
                click.echo(f"Error: {exc} (the PNG files are written)", err=True)
                code = EXIT_FAILED
    if register_name is not None:
        _register(report, register_name, tracking_uri)
    ctx.exit(code)


def _register(report, name: str, tracking_uri) -> None:
    """``--register``: the best row's fold runs, each as a version of ``name`` (a model
    registered there already is said, not registered again)."""
    from ltr_bench.report.register import best_row, model_description, version_descriptions
    from ltr_bench.tracking.models import register_in_store

    row = best_row(report)
    pairs = version_descriptions(report, row)
    logged = [(rec, str((rec.mlflow or {}).get("run_id") or ""), text) for rec, text in pairs]
    logged = [(rec, run_id, text) for rec, run_id, text in logged if run_id]
    versions = register_in_store(
        tracking_uri,
        name,
        [(r, t) for _, r, t in logged],
        dataset=report.dataset,
        description=model_description(report, row),
    )
    for (run_id, version, new), (rec, _, _) in zip(versions, logged):
        what = f"{row.label} fold {rec.fold}" + (f" seed {rec.seed}" if rec.seed else "")
        if new:
            click.echo(f"registered {name} version {version}: {what} (run {run_id})", err=True)
        else:
            click.echo(
                f"{name} version {version} already holds {what} (run {run_id}): not "
                "registered again",
                err=True,
            )


def _multi(
    names,
    all_datasets,
    wanted,
    rankers,
    output,
    plots_dir,
    alpha,
    tracking_uri,
    results_dir,
    width=None,
) -> int:
    """``report --dataset a,b,...`` / ``--all-datasets``: :mod:`ltr_bench.report.multi`.
    ``wanted`` and ``rankers``: the split ``--metric`` and ``--ranker`` names (or None);
    ``width``: the table's (None: whole)."""
    from ltr_bench.report.multi import build_multi_report, format_multi, plot_cd_diagram
    from ltr_bench.report.tables import ReportError, build_report
    from ltr_bench.results import write_output

    if all_datasets:
        if names:
            raise ReportError("give --dataset or --all-datasets, not both", usage=True)
        if results_dir is not None:
            from ltr_bench.results import ResultStore

            names = sorted({r.dataset for r in ResultStore(results_dir).records()})
        else:
            from ltr_bench.tracking import list_datasets_in_store

            names = list_datasets_in_store(tracking_uri)
    wanted = wanted or []
    metric = wanted[0] if wanted else "ndcg@10"
    if len(wanted) > 1:
        click.echo(f"note: across datasets only the first metric is ranked ({metric})", err=True)
    reports = {}
    for name in names:
        dataset, records = _records(name, results_dir, tracking_uri)
        reports[dataset] = build_report(
            records, dataset=dataset, metrics=[metric], rankers=rankers, alpha=alpha
        )
    multi = build_multi_report(reports, metric=reports[next(iter(reports))].metrics[0], alpha=alpha)
    text = format_multi(multi, width)
    if plots_dir:
        path = plot_cd_diagram(multi, Path(plots_dir) / "critical_difference.png")
        text += f"\n![critical-difference diagram]({path})\n"
        click.echo(f"plot written to {path}", err=True)
    if output:
        write_output(output, text, what="--output")
        click.echo(f"report written to {output}", err=True)
    else:
        click.echo(text, nl=False)
    return EXIT_OK

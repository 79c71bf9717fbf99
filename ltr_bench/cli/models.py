"""``ltr-bench models``: list the kept models (one row per finished cell whose model was kept),
with the MLflow fold run id and model URI that ``predict --model`` takes.

Parsing and printing only: the rows are :mod:`ltr_bench.report.model_list`, the best
configuration is :func:`ltr_bench.report.register.choose_best` (what ``report --register``
picks), the MLflow ids are looked up in the store by
:func:`ltr_bench.tracking.lookup.fold_models` (read-only): a note beside a record
(``ResultRecord.mlflow``) is shown only with ``--no-mlflow``, or where the store confirms it.
"""

from __future__ import annotations

from pathlib import Path

import click

from ltr_bench.cli import options
from ltr_bench.errors import EXIT_FAILED, EXIT_OK, LtrBenchError, UsageError

CONTEXT = options.CONTEXT


@click.command("models", cls=options.Command, context_settings=CONTEXT)
@click.option(
    "--dataset",
    "datasets",
    multiple=True,
    metavar="NAME[,NAME...]",
    help="Only the models of these datasets.",
)
@click.option(
    "--ranker",
    "rankers",
    multiple=True,
    metavar="NAME[,NAME...]",
    help="Only these rankers: a ranker's name, a configuration's label "
    "(lightgbm[num_leaves=31]) or a row's name (lightgbm · clicks pbm eta=1 x10).",
)
@click.option(
    "--best",
    default=None,
    is_flag=False,
    flag_value="",
    metavar="[METRIC]",
    help="Only the fold models of each dataset's best configuration: the one `ltr-bench "
    "report --register` registers (highest mean ndcg@10; with METRIC, by METRIC as `report "
    "--metric METRIC --register`). With --ranker, the best of those.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("table", "csv", "json")),
    default="table",
    show_default=True,
    help="table: aligned columns; csv: every field, one line per model; json: a list of objects.",
)
@options.wide
@options.results_dir
@options.tracking_uri
@click.option(
    "--no-mlflow",
    is_flag=True,
    help="Do not read the MLflow store (ids as noted beside the records when they were "
    "logged, unconfirmed).",
)
@click.pass_context
def models_command(
    ctx, datasets, rankers, best, fmt, wide, results_dir, tracking_uri, no_mlflow
) -> None:
    """List the kept models: row name, ranker, dataset, fold, seed, a metric, the model
    folder, and (once logged to MLflow) the fold run id and model URI.

    Any of the folder, run id (runs:/<run id>/model) or model URI is what `ltr-bench predict
    --model` takes. The table goes to stdout, notes to stderr. The table fits 120 columns
    (or $COLUMNS): the model URI, the folder, the ranker and the seed are left out in that
    order where needed (--wide, csv or json show every column).

    Exit codes: 0 ok, 1 no kept model / MLflow could not be read, 2 bad invocation (an
    option that names nothing kept).
    """
    from ltr_bench.report.model_list import format_rows, format_table, model_rows, select
    from ltr_bench.results import ResultStore
    from ltr_bench.results.labels import split_names

    wanted_datasets = split_names(datasets, option="--dataset") or None
    wanted_rankers = split_names(rankers, option="--ranker") or None
    root = Path(results_dir) if results_dir else Path.cwd() / "mlflow_runs" / "results"
    store = ResultStore(root)
    if not root.is_dir():
        raise LtrBenchError(
            f"no results folder at {root}: run `ltr-bench run ...` in this folder first, "
            "or give --results-dir"
        )
    records = store.records()
    for note in store.damage_notes():
        click.echo(f"note: {note}", err=True)
    kept = select(records)
    chosen = select(records, datasets=wanted_datasets, rankers=wanted_rankers)
    if not kept:
        raise LtrBenchError(
            f"no kept model in {root} (runs with --keep-models none keep none; "
            "`ltr-bench run` keeps every fitted model by default)"
        )
    if not chosen:
        raise UsageError(_nothing_matches(kept, wanted_datasets, wanted_rankers))
    _check_each_name(kept, wanted_datasets, wanted_rankers)
    found: dict = {}
    code = EXIT_OK
    if not no_mlflow:  # every id shown is confirmed by the store: never a note's word alone
        code = _look_up(chosen if best is None else select(records), tracking_uri, found)
    metric = None
    if best is not None:
        chosen, metric = _best(records, chosen, found, best or None, wanted_rankers, no_mlflow)
    rows = model_rows(chosen, found, metric=metric, confirmed=not no_mlflow)
    if fmt == "table":
        options.echo_table(format_table(rows, cwd=Path.cwd(), width=options.width(wide)))
    else:
        click.echo(format_rows(rows, fmt, cwd=Path.cwd()), nl=False)
    ctx.exit(code)


def _nothing_matches(kept, datasets, rankers) -> str:
    from ltr_bench.report.model_list import model_rows

    have = sorted({r.dataset for r in kept})
    names = sorted({row.label for row in model_rows(kept)} | {r.ranker for r in kept})
    what = " and ".join(
        f"{opt} {','.join(v)}" for opt, v in (("--dataset", datasets), ("--ranker", rankers)) if v
    )
    return (
        f"{what}: no kept model matches; kept models are of datasets {', '.join(have)} and "
        f"rows {', '.join(names)}"
    )


def _check_each_name(kept, datasets, rankers) -> None:
    """Every name given to ``--dataset`` and ``--ranker`` must name something kept (one that
    matches nothing is a typo, never dropped silently): exit 2 naming it, with close
    matches."""
    import difflib

    from ltr_bench.report.model_list import model_rows, select

    for option, wanted, have in (
        ("--dataset", datasets, sorted({r.dataset for r in kept})),
        (
            "--ranker",
            rankers,
            sorted({row.label for row in model_rows(kept)} | {r.ranker for r in kept}),
        ),
    ):
        for name in wanted or ():
            one = [name]
            if select(kept, **{option.lstrip("-") + "s": one}):
                continue
            close = difflib.get_close_matches(name, have, n=3, cutoff=0.5)
            raise UsageError(
                f"{option} {name}: no kept model matches"
                + (f" (did you mean: {', '.join(close)})" if close else "")
                + f"; kept: {', '.join(have)}"
            )


def _look_up(records, tracking_uri, found: dict) -> int:
    """Fill ``found`` (``(key, finished)`` -> MLflow ids) with each record's live fold run
    in the store (read-only, never created): the run whose tags name the record's key and
    finish time. A note beside a record (``<results>/.mlflow/<key>.json``) is only a hint:
    one naming a run the store does not confirm (another cell's, a deleted one, one not
    there) is said, and its ids are not shown. Returns the exit code: 1 when the store
    cannot be read (a user's own SQLite file, a damaged one; the list is printed without
    ids), 0 else (a store that does not exist: a note, no ids)."""
    from ltr_bench.tracking import TrackingError, resolve_tracking_uri
    from ltr_bench.tracking.lookup import fold_models, noted_run_problems, store_problem

    noted = {r.key: r for r in records if (r.mlflow or {}).get("run_id")}
    unconfirmed = (
        f" ({len(noted)} of them have ids noted when they were logged; not shown: the store "
        "cannot confirm them)"
        if noted
        else ""
    )
    uri = resolve_tracking_uri(tracking_uri)
    try:
        problem = store_problem(uri)
    except TrackingError as exc:  # a user's own database, a damaged file: nothing to read
        click.echo(
            f"Error: {exc} (the models are listed without MLflow ids{unconfirmed})", err=True
        )
        return EXIT_FAILED
    if problem is not None:
        click.echo(f"note: no MLflow ids: {problem}{unconfirmed}", err=True)
        return EXIT_OK
    click.echo(f"reading the fold runs in MLflow {uri} ...", err=True)
    try:
        runs = fold_models({r.dataset for r in records}, uri)
        found.update((k, v.as_record_mlflow()) for k, v in runs.items())
        doubtful = {
            key: (r.mlflow["run_id"], r.finished)
            for key, r in noted.items()
            if (found.get((key, r.finished)) or {}).get("run_id") != r.mlflow["run_id"]
        }
        problems = noted_run_problems(uri, doubtful)
    except TrackingError as exc:
        found.clear()
        click.echo(f"Error: {exc} (the models are listed without MLflow ids)", err=True)
        return EXIT_FAILED
    for key, why in sorted(problems.items()):
        r = noted[key]
        live = (found.get((key, r.finished)) or {}).get("run_id")
        click.echo(
            f"note: {r.summary_line()}: the MLflow run {r.mlflow['run_id']} noted for it "
            f"(in the results folder's .mlflow/{key[:12]}...json) is {why}; "
            + (f"its fold run in the store is {live}" if live else "it is listed without ids")
            + " (re-running the same `ltr-bench run` logs what the store lacks)",
            err=True,
        )
    return EXIT_OK


def _best(records, chosen, found: dict, metric: str | None, rankers, no_mlflow: bool):
    """The fold models of each dataset's best configuration (``choose_best``, as ``report
    --register``), and the metric each was chosen by (dataset -> metric). Where MLflow holds
    fold runs of the dataset, the choice is made among the records with a fold run, as
    ``report --register`` reads them; otherwise among every local record."""
    from ltr_bench.report.pairing import ReportError
    from ltr_bench.report.register import choose_best, headline

    out, by = [], {}
    for dataset in sorted({r.dataset for r in chosen}):
        pool = [r for r in records if r.dataset == dataset and r.ok]
        logged = [
            r
            for r in pool
            if (r.key, r.finished) in found or (no_mlflow and (r.mlflow or {}).get("run_id"))
        ]
        try:
            report, row = choose_best(logged or pool, dataset, metric=metric, rankers=rankers)
        except ReportError as exc:  # the metric is --best's here, not report's --metric
            text = str(exc)
            if text.startswith("--metric"):
                raise ReportError("--best" + text[len("--metric") :], usage=exc.usage) from None
            raise
        by[dataset] = headline(report)  # METRIC in the records' spelling
        models = [r for r in row.runs.values() if r.model_dir]
        if not models:
            click.echo(f"note: the best of {dataset} ({row.label}) kept no model", err=True)
        out += models
    return out, by

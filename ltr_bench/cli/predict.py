"""``ltr-bench predict``: rank a LETOR file or a dataset's split with a kept model.

Parsing and printing only: the model is read by :func:`ltr_bench.models.load_model` (an MLflow
model URI is first downloaded by :func:`ltr_bench.tracking.models.download_model`), the rows
are ranked and evaluated by :mod:`ltr_bench.models.predict`.
"""

from __future__ import annotations

import tempfile

import click

from ltr_bench.cli import options
from ltr_bench.errors import EXIT_OK, UsageError

CONTEXT = options.CONTEXT


@click.command("predict", cls=options.Command, context_settings=CONTEXT)
@click.option(
    "--model",
    "model_ref",
    required=True,
    metavar="PATH|URI",
    help="A kept model, as `ltr-bench models` lists it: its folder "
    "(<results>/<key>.model.<token>), its fold run's id, or an MLflow model URI "
    "(runs:/<run id>/model, models:/<model id>, models:/NAME/VERSION).",
)
@click.option(
    "--data",
    "data_ref",
    required=True,
    metavar="FILE|DATASET[:FOLD[:SPLIT]]",
    help="A LETOR/SVMlight file (plain, .gz, .bz2, .xz; labels optional) or a dataset's "
    "split, e.g. synthetic:1:test (fold default 1, split default test).",
)
@click.option(
    "--output",
    default=None,
    type=click.Path(dir_okay=False),
    help="Write the ranking as a TREC run (qid Q0 docid rank score tag; docid = the line's "
    "#docid = ... when every line has one, else the row's position, 0-based).",
)
@click.option(
    "--qrels",
    "qrels_out",
    default=None,
    type=click.Path(dir_okay=False),
    help="Write the rows' labels as TREC qrels (qid 0 docid label), the documents named as in "
    "--output, so trec_eval, ranx or ir_measures can score the run.",
)
@click.option(
    "--tag",
    default=None,
    help="The TREC run's tag (last column; default: the model's ranker name).",
)
@click.option(
    "--scores",
    "scores_out",
    default=None,
    type=click.Path(dir_okay=False),
    help="Write one score per line, in the order of the rows.",
)
@click.option(
    "--metrics",
    default=None,
    metavar="M1,M2,...",
    help="Metrics when the rows have labels (default: run's).",
)
@click.option(
    "--max-label",
    type=click.IntRange(min=1),
    default=None,
    help="ERR's top grade for a file (default: the file's largest label; a dataset's "
    "split uses the dataset's, as run does).",
)
@options.one_dataset_options("--data")
@options.data_dir
@options.cache_dir
@options.tracking_uri
@click.option(
    "--chunk-rows",
    type=click.IntRange(min=1),
    default=None,
    help="Rows of a file ranked at a time (whole queries; default 100000).",
)
@click.pass_context
def predict_command(
    ctx,
    model_ref,
    data_ref,
    output,
    qrels_out,
    tag,
    scores_out,
    metrics,
    max_label,
    seed,
    dataset_options,
    data_dir,
    cache_dir,
    tracking_uri,
    chunk_rows,
) -> None:
    """Rank new data with a model kept by `run` or `tune`; with labels, print the metrics.

    On a fold's test split (e.g. --data synthetic:1:test) the metrics equal those the run
    recorded for that cell. Progress goes to stderr, the metrics to stdout.

    Exit codes: 0 ok, 1 the model or the data cannot be read, 2 bad invocation (including
    data whose feature count is not the model's).
    """
    from ltr_bench.cli.console import Console
    from ltr_bench.cli.model_ref import load_model_ref
    from ltr_bench.models import predict as P

    spec = P.parse_data_spec(data_ref)
    metric_list = [m.strip() for m in metrics.split(",") if m.strip()] if metrics else None
    P.record_metrics(metric_list)  # a bad metric is refused before any work
    _check_max_label(max_label, spec)
    _check_outputs(
        [(output, "--output"), (qrels_out, "--qrels"), (scores_out, "--scores")],
        model_ref,
        spec,
        tracking_uri,
    )
    _check_labels_for_qrels(qrels_out, spec)
    opts = options.parse_one_dataset_options(dataset_options)
    console = Console()
    with tempfile.TemporaryDirectory(prefix="ltr-bench-model-") as tmp:
        model = load_model_ref(model_ref, tracking_uri, tmp, console)

        def progress(done: int, total: int, message: str) -> None:
            pct = f" {100 * done / total:.0f}%" if total else ""
            console.status(f"{message}{pct}")

        if spec.path is not None:
            pred = P.predict_file(
                model,
                spec.path,
                metrics=metric_list,
                max_label=max_label,
                chunk_rows=chunk_rows,
                progress=progress,
            )
        else:
            console.status(f"loading {spec.dataset} fold {spec.fold} ...", force=True)
            from ltr_bench.clicks.options import data_options

            pred = P.predict_split(
                model,
                spec,
                data_dir=data_dir,
                cache_dir=cache_dir,
                seed=seed,
                options=data_options(opts),
                metrics=metric_list,
                progress=progress,
                load_fold=_fold_loader(spec, seed, opts, data_dir, cache_dir, progress),
            )
        console.clear()
    if output or qrels_out:
        pred.notes += P.repeated_docid_notes(pred)
    _write(output, qrels_out, scores_out, pred, tag or model.manifest.get("ranker", "ltr-bench"))
    for note in pred.notes:
        click.echo(f"warning: {note}", err=True)
    click.echo(
        f"{model.manifest.get('ranker')} model ranked {pred.scores.size} rows, "
        f"{pred.n_queries} queries of {pred.source}",
        err=True,
    )
    if pred.metrics:
        width = max(len(k) for k in pred.metrics)
        for key, value in pred.metrics.items():
            click.echo(f"{key:<{width}}  {value:.6f}")
    ctx.exit(EXIT_OK)


def _check_labels_for_qrels(qrels_out, spec) -> None:
    """``--qrels`` needs labels: a file whose rows have none is refused before any ranking
    (its first data line says it: :func:`ltr_bench.data.stream.is_labelled`)."""
    if not qrels_out or spec.path is None:
        return
    from ltr_bench.data.stream import is_labelled

    try:
        labelled = is_labelled(spec.path)
    except OSError:
        return  # reading the file says what is wrong
    if not labelled:
        raise UsageError(
            f"--qrels {qrels_out}: {spec.path} has no labels to write (its rows start with "
            "qid:); drop --qrels, or give a file with a label in front of every row"
        )


def _check_max_label(max_label, spec) -> None:
    from ltr_bench.evaluation.ranked import MAX_LABEL

    if max_label is None:
        return
    if spec.path is None:
        raise UsageError(
            f"--max-label applies to a file; a dataset's split ({spec.dataset}) is evaluated "
            "with the dataset's own top grade, as run evaluates it"
        )
    if max_label > MAX_LABEL:
        raise UsageError(
            f"--max-label {max_label}: ltr-bench's metrics take labels up to {MAX_LABEL} "
            "(the gain 2^label - 1 of a larger one overflows)"
        )


def _check_outputs(outputs, model_ref: str, spec, tracking_uri) -> None:
    """Before any work: no output replaces an input (the data, the model's folder), lies in
    a store or a model folder, or is the other output (:func:`ltr_bench.cli.outputs.
    check_output_paths`)."""
    from pathlib import Path

    from ltr_bench.cli.outputs import check_output_paths, model_inputs

    data = spec.path
    if data is None and spec.dataset and Path(spec.dataset).expanduser().is_dir():
        data = Path(spec.dataset).expanduser()  # a dataset folder given by its path
    check_output_paths(outputs, model_inputs(model_ref, tracking_uri, data))


def _fold_loader(spec, seed: int, opts: dict, data_dir, cache_dir, progress):
    """``k -> fold k`` of ``spec``'s dataset as ``run`` loads it for a cell: its data options,
    ``seed``, and, with click options, the simulated click labels of train and vali (test
    keeps its labels). Click options are checked now (exit 2)."""
    from pathlib import Path

    from ltr_bench import data
    from ltr_bench.clicks.options import data_options, resolve_click_options

    source = spec.dataset
    try:
        kind = data.get_spec(source).kind
    except data.UnknownDatasetError:
        if not Path(source).expanduser().is_dir():
            raise
        source, kind = Path(source).expanduser().resolve(), "path"
    clicks = resolve_click_options(opts, kind=kind, dataset=spec.dataset)

    def load(k: int):
        fold = data.load_fold(
            source,
            k,
            data_dir=data_dir,
            cache_dir=cache_dir,
            seed=seed,
            options=data_options(opts) or None,
            progress=progress,
        )
        if clicks:
            from ltr_bench.clicks import simulate_clicks

            fold = simulate_clicks(fold, clicks, seed=seed, cache_dir=cache_dir)
        return fold

    return load


def _write(output, qrels_out, scores_out, pred, tag: str) -> None:
    """Write the outputs asked for, each followed by a line on stderr that says where."""
    from ltr_bench.models.predict import scores_text
    from ltr_bench.results import qrels_text, trec_run_text, write_output

    n = pred.scores.size
    if output:
        run = trec_run_text(pred.qid, pred.scores, tag=tag, docid=pred.docid)
        write_output(output, run, what="--output")
        click.echo(f"wrote {output} (--output: the TREC run, {n} lines)", err=True)
    if scores_out:
        write_output(scores_out, scores_text(pred.scores), what="--scores")
        click.echo(f"wrote {scores_out} (--scores: one score a line, {n} lines)", err=True)
    if qrels_out and pred.y is None:  # the run and scores above are kept
        raise UsageError(f"--qrels {qrels_out}: {pred.source} has no labels to write")
    if qrels_out:
        qrels = qrels_text(pred.qid, pred.y, docid=pred.docid)
        write_output(qrels_out, qrels, what="--qrels")
        click.echo(f"wrote {qrels_out} (--qrels: the file's labels as TREC qrels)", err=True)

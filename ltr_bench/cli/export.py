"""``ltr-bench export``: a kept model as one ONNX file, proven by ONNX Runtime.

Parsing and printing only: the graph is built by :func:`ltr_bench.models.onnx.onnx_model`,
written by :func:`ltr_bench.models.onnx.write_onnx` (atomically) and, with ``--check``,
compared with the native model by :func:`ltr_bench.models.onnx.check_export`.
"""

from __future__ import annotations

import tempfile

import click

from ltr_bench.cli import options
from ltr_bench.errors import EXIT_OK, LtrBenchError

CONTEXT = options.CONTEXT


@click.command("export", cls=options.Command, context_settings=CONTEXT)
@click.option(
    "--model",
    "model_ref",
    required=True,
    metavar="PATH|URI",
    help="A kept model: its folder or an MLflow model URI (as predict takes).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["onnx"]),
    default="onnx",
    show_default=True,
    help="The file format.",
)
@click.option(
    "--output",
    required=True,
    type=click.Path(dir_okay=False),
    help="The file to write (atomically; never one of the inputs).",
)
@click.option(
    "--check",
    "check_ref",
    default=None,
    metavar="FILE|DATASET[:FOLD[:SPLIT]]",
    help="Before writing, score these rows with ONNX Runtime and with the native model "
    "(as predict --data does) and refuse to write unless the scores agree within the "
    "bound and the metrics to 1e-6.",
)
@options.one_dataset_options("--check")
@options.data_dir
@options.cache_dir
@options.tracking_uri
@click.pass_context
def export_command(
    ctx,
    model_ref,
    fmt,
    output,
    check_ref,
    seed,
    dataset_options,
    data_dir,
    cache_dir,
    tracking_uri,
) -> None:
    """Export a model kept by `run` or `tune` to ONNX (a file ONNX Runtime, Vespa and
    other non-Python engines score).

    The graph takes X (double, [N, n_features], raw features) and returns score (double,
    [N]); a model fitted on query_norm features, or one that scores whole lists, takes one
    query's rows per call (metadata ltr_bench.input). The file's metadata names the
    ranker, its version, the feature count and the data fingerprint.

    Exit codes: 0 written, 1 the model cannot be read or exported or --check failed (nothing
    written), 2 bad invocation (including an --output that is one of the inputs).
    """
    from ltr_bench.cli.console import Console
    from ltr_bench.cli.model_ref import load_model_ref
    from ltr_bench.cli.outputs import check_output_paths, model_inputs
    from ltr_bench.models import predict as P

    _check_output_name(output)
    spec = P.parse_data_spec(check_ref, "--check") if check_ref else None
    data = spec.path if spec is not None else None
    check_output_paths(
        [(output, "--output")], model_inputs(model_ref, tracking_uri, data, "--check")
    )
    opts = options.parse_one_dataset_options(dataset_options)
    if spec is not None and spec.dataset is not None:
        _check_fold(check_ref, spec, data_dir, opts)
    console = Console()
    from ltr_bench.models.onnx import (
        ONE_QUERY,
        OnnxScorer,
        check_export,
        input_contract,
        onnx_model,
        write_onnx,
    )

    with tempfile.TemporaryDirectory(prefix="ltr-bench-model-") as tmp:
        model = load_model_ref(model_ref, tracking_uri, tmp, console)
        name = model.manifest["ranker"]
        console.status(f"converting the {name} model to {fmt.upper()} ...", force=True)
        graph = onnx_model(model)
        data = graph.SerializeToString()
        contract = input_contract(model)
        if spec is not None:
            scorer = OnnxScorer(data, model.manifest, model.shown, contract == ONE_QUERY)
            console.status(f"checking it on {check_ref} ...", force=True)
            result = check_export(
                model,
                scorer,
                spec,
                data_dir=data_dir,
                cache_dir=cache_dir,
                seed=seed,
                options=opts or None,
            )
            console.clear()
            click.echo(f"check: {result.text()}", err=True)
            if not result.holds:
                raise LtrBenchError(
                    f"--check {check_ref}: ONNX Runtime's scores differ from the native model's "
                    f"beyond the bound; {output} was not written"
                )
        console.clear()
    try:
        path = write_onnx(graph, output)
    except OSError as exc:
        from ltr_bench.results.files import reason_of

        raise LtrBenchError(f"--output {output}: cannot write: {reason_of(exc)}") from None
    click.echo(
        f"{name} model exported to {path} (ONNX, {len(data) / 1024:.0f} KiB); input X double "
        f"[N, {model.n_features}], {contract} per call; output score double [N]",
        err=True,
    )
    ctx.exit(EXIT_OK)


def _check_output_name(output: str) -> None:
    """``--output`` must name a file: not empty, not a folder spelled with a trailing
    separator (``newdir/``: the file would be named ``newdir``). Exit 2 before any work."""
    import os

    from ltr_bench.errors import UsageError

    if not output.strip():
        raise UsageError("--output '': an empty path names no file; give the file to write")
    if output.endswith((os.sep, "/")):
        raise UsageError(
            f"--output {output}: names a folder (it ends with {output[-1]}); give the file "
            f"to write, e.g. {output}model.onnx"
        )


def _check_fold(check_ref: str, spec, data_dir, opts) -> None:
    """A ``--check DATASET:FOLD`` whose fold the dataset does not have is a bad invocation
    (exit 2), said before the model is loaded or converted."""
    from ltr_bench.data import available_folds
    from ltr_bench.errors import UsageError

    folds = available_folds(spec.dataset, data_dir=data_dir, options=opts or None)
    if spec.fold not in folds:
        contiguous = bool(folds) and folds == list(range(folds[0], folds[-1] + 1))
        have = f"{folds[0]}..{folds[-1]}" if contiguous else ", ".join(map(str, folds))
        raise UsageError(
            f"--check {check_ref}: {spec.dataset} has no fold {spec.fold} (its folds: "
            f"{have or 'none'})"
        )

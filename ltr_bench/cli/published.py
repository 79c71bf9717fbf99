"""``ltr-bench published``: list the published results ltr-bench ships, with their sources.

Parsing and printing only: the table and its checks are
:func:`ltr_bench.report.published.load_published`, the rendering
:func:`ltr_bench.report.published.render.format_published`.
"""

from __future__ import annotations

import click

from ltr_bench.cli import options
from ltr_bench.errors import EXIT_OK

CONTEXT = options.CONTEXT


@click.command("published", cls=options.Command, context_settings=CONTEXT)
@click.option(
    "--dataset",
    default=None,
    metavar="NAME",
    help="Only this dataset (ltr-bench's name: ohsumed, mq2007, mq2008, mslr10k, ...).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("md", "csv")),
    default="md",
    show_default=True,
    help="md: a table with numbered notes and sources; csv: the table's own columns "
    "(dataset, split, folds, model, metric, value, convention, selection, source, note, ...).",
)
@click.pass_context
def published_command(ctx: click.Context, dataset, fmt) -> None:
    """Published results for the datasets ltr-bench knows (LETOR 3.0/4.0 baseline tables,
    CatBoost's ranking benchmark, a few papers), each with the convention it was computed
    under, what it was selected on, and the file it was read from.

    `ltr-bench report` prints the rows whose convention the results recorded beside ours;
    docs/results/published.md says how each may be compared.

    Exit codes: 0 ok, 1 the table cannot be read, 2 bad invocation (unknown dataset).
    """
    from ltr_bench.data.specs import get_spec
    from ltr_bench.report.published import load_published
    from ltr_bench.report.published.render import format_published

    rows = load_published()
    name = None
    if dataset is not None:
        spec = get_spec(dataset)  # unknown name: UsageError with close matches (exit 2)
        name = spec.name
        rows = [r for r in rows if r.dataset == name]
        if not rows:  # a known dataset nobody published numbers for: say so, list none
            have = sorted({r.dataset for r in load_published()})
            click.echo(
                f"note: no published results for {name} in ltr-bench's table; datasets with "
                f"published results: {', '.join(have)}",
                err=True,
            )
    click.echo(format_published(rows, fmt, dataset=name), nl=False)
    ctx.exit(EXIT_OK)

"""What is there to run: ``ltr-bench rankers``, ``datasets`` and ``download``."""

from __future__ import annotations

import click

from ltr_bench.cli import options

CONTEXT = options.CONTEXT


@click.command(cls=options.Command, name="rankers", context_settings=CONTEXT)
@click.option(
    "--no-check",
    is_flag=True,
    help="Do not import the rankers (faster; status shows 'not checked').",
)
@click.option(
    "--recheck",
    is_flag=True,
    help="Import every ranker now, whatever the status cache says, and rewrite the cache.",
)
def rankers_cmd(no_check: bool, recheck: bool) -> None:
    """List registered rankers: name, distribution, version, status.

    Status imports each ranker's plugin (one at a time: a broken plugin shows as
    'unavailable' with its error and does not affect the others). An 'ok' is cached
    (rankers-status.json in $LTR_BENCH_CACHE, else $XDG_CACHE_HOME/ltr_bench, else
    ~/.cache/ltr_bench) and reused until the Python environment, a file the check imported or
    the plugin's own files change; a failure is never cached. A plugin whose declared
    requirements are not installed shows as 'unavailable' with the pip command that installs
    them, without being imported. An available ranker whose plugin says what it will run on
    shows that after 'ok' (neural: the torch build and the device that device=auto picks).
    """
    from ltr_bench.registry import list_rankers

    entries = list_rankers()
    statuses: dict[str, str] = {}
    to_check = []
    for e in entries:
        hint = e.install_hint()  # metadata only: a missing heavy dependency is never imported
        if hint is not None:
            statuses[e.name] = (
                f"unavailable: needs {', '.join(e.missing_requirements())}; install: {hint}"
            )
        elif no_check:
            statuses[e.name] = "not checked"
        else:
            to_check.append(e)
    if to_check:
        from ltr_bench.registry import runtime_note
        from ltr_bench.registry_status import check_statuses

        statuses.update(zip([e.name for e in to_check], check_statuses(to_check, recheck=recheck)))
        for e in to_check:  # e.g. neural: which torch, and the device `auto` picks
            note = runtime_note(e) if statuses[e.name] == "ok" else None
            if note:
                statuses[e.name] = f"ok ({note})"
    rows = [[e.name, e.distribution, e.version, statuses[e.name]] for e in entries]
    if not rows:
        click.echo("no rankers installed (none registers the 'ltr_bench.rankers' entry point)")
        return
    from ltr_bench.report.fit import fit_table

    # the status (an error, a pip command to copy) is never cut: its line may be long
    columns = ["name", "distribution", "version", "status"]
    fitted = fit_table(columns, rows, width=options.width(False))
    click.echo(fitted.text)


def _home_short(path, shorten: bool) -> str:
    """``path`` with the user's home folder as ``~`` (a shell reads it back) when
    ``shorten``, else whole."""
    from pathlib import Path

    home = Path.home()
    if shorten and home != Path("/") and home in Path(path).parents:
        return "~/" + str(Path(path).relative_to(home))
    return str(path)


# ------------------------------------------------------------------------------- datasets


@click.command(cls=options.Command, name="datasets", context_settings=CONTEXT)
@options.data_dir
@options.wide
def datasets_cmd(data_dir: str | None, wide: bool) -> None:
    """List known datasets: kind, folds, present or missing (where), and where to get them.

    The table fits 120 columns (or $COLUMNS): paths under the home folder are shown as ~/...
    and the source column is left out where needed (--wide shows it, paths whole)."""
    from ltr_bench.data import dataset_present, list_datasets, resolve_data_dir
    from ltr_bench.report.fit import Column, fit_table

    home = resolve_data_dir(data_dir)
    click.echo(f"data home: {home}")
    rows = []
    for spec in list_datasets():
        present, where = dataset_present(spec, data_dir=data_dir)
        shown = _home_short(where, not wide)
        if spec.kind != "letor":
            status = "built-in (no download)"
        else:
            status = f"present at {shown}" if present else f"missing: expected at {shown}"
        rows.append([spec.name, spec.kind, str(spec.n_folds), status, spec.homepage])
    columns: list[Column | str] = ["name", "kind", "folds", "status", Column("source", drop=1)]
    options.echo_table(fit_table(columns, rows, width=options.width(wide)))


# ------------------------------------------------------------------------------- download


@click.command(cls=options.Command, name="download", context_settings=CONTEXT)
@click.argument("name")
@options.data_dir
@click.option(
    "--url",
    default=None,
    metavar="URL",
    help="Download from here instead of the publisher's address (same checks).",
)
def download_cmd(name: str, data_dir: str | None, url: str | None) -> None:
    """Download a LETOR dataset into the data home, check it and unpack it where the loader
    expects it (mslr10k, mslr30k, mq2007, mq2008, ohsumed). Resumes an interrupted download.
    For datasets whose licence must be accepted by hand (yahoo-set1/2, istella-s) it prints
    the steps instead."""
    from ltr_bench.cli.console import Console
    from ltr_bench.data.download import download_dataset

    console = Console()

    def progress(done: int, total: int, what: str) -> None:
        pct = f" {100.0 * done / total:5.1f}%" if total else ""
        console.status(
            f"{what}: {done / 2**20:,.1f} MiB"
            + (f" of {total / 2**20:,.1f} MiB" if total else "")
            + pct
        )

    download_dataset(name, data_dir=data_dir, url=url, progress=progress, say=console.line)
    console.clear()

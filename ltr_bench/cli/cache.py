"""``ltr-bench cache list|verify|clear``: the parsed-data cache (:mod:`ltr_bench.data.cache`).

* ``list``: every entry, its namespace, size and what it was built from.
* ``verify``: re-hashes the whole source files of every LETOR entry (sha256, the only check
  that catches an edit in the middle of a file that kept its size and mtime) and the entry's
  arrays against its recorded fingerprint; entries whose sources changed, vanished or whose
  arrays are damaged are removed (``--dry-run`` only reports). Exit 1 when something was
  wrong, so it can guard a script.
* ``clear``: removes every entry (or those of one ``--namespace``) and stale temporary
  folders.

Every command also removes the temporary folders of writers that died.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from ltr_bench.cli import options
from ltr_bench.errors import EXIT_FAILED

__all__ = ["cache_group"]


def _cache_root(cache_dir):
    from ltr_bench.data import resolve_cache_dir

    return Path(resolve_cache_dir(cache_dir))


def _sweep_temporaries(root: Path) -> int:
    from ltr_bench.data.cache import remove_stale_temporaries

    n = 0
    if root.is_dir():
        for ns in root.iterdir():
            if ns.is_dir():
                n += len(remove_stale_temporaries(ns))
    return n


@click.group("cache", cls=click.Group, context_settings=options.CONTEXT)
def cache_group() -> None:
    """Inspect, verify or clear the parsed-data cache ($LTR_BENCH_CACHE or --cache-dir)."""


cache_group.command_class = options.Command


@cache_group.command("list")
@options.cache_dir
def list_cmd(cache_dir) -> None:
    """List the cache entries: namespace, size, source files."""
    from ltr_bench.data.cache import iter_entries

    root = _cache_root(cache_dir)
    _sweep_temporaries(root)
    total = 0
    click.echo(f"cache: {root}")
    for e in iter_entries(root):
        total += e.size
        what = (
            "(unreadable meta.json)"
            if e.meta is None
            else (
                e.meta.get("source")
                or ", ".join(f"{k}={v}" for k, v in (e.meta.get("options") or {}).items())
            )
        )
        click.echo(f"{e.namespace:10s} {e.size / 2**20:9.1f} MiB  {e.folder.name}  {what}")
    click.echo(f"total {total / 2**20:.1f} MiB")


def _problem(entry) -> str | None:
    """What is wrong with an entry (None: sound, or nothing to check against)."""
    from ltr_bench.data.cache import _read_entry, file_sha256
    from ltr_bench.folds import fingerprint_arrays

    if entry.meta is None:
        return "its meta.json is unreadable"
    for src, digest in (entry.meta.get("source_sha256") or {}).items():
        p = Path(src)
        if not p.is_file():
            return f"its source {src} no longer exists"
        if file_sha256(p) != digest:
            return f"its source {src} changed since the entry was built"
    if entry.namespace == "letor" and not entry.meta.get("source_sha256"):
        return "it predates whole-file hashes (cannot be verified)"
    try:
        arrays, meta = _read_entry(entry.folder)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"unreadable: {exc}"
    if entry.namespace == "letor":
        if fingerprint_arrays(arrays["X"], arrays["y"], arrays["qid"]) != meta.get("fingerprint"):
            return "its arrays do not match their recorded fingerprint"
    elif entry.namespace == "clicks":  # simulated click logs: their arrays' digest
        from ltr_bench.clicks.simulate import verify_entry

        return verify_entry(arrays, meta)
    elif entry.namespace == "generated":
        for s, fp in (meta.get("fingerprints") or {}).items():
            if fingerprint_arrays(arrays[f"{s}_X"], arrays[f"{s}_y"], arrays[f"{s}_qid"]) != fp:
                return f"its {s} arrays do not match their recorded fingerprint"
    return None


@cache_group.command("verify")
@options.cache_dir
@click.option("--dry-run", is_flag=True, help="Only report; remove nothing.")
@click.pass_context
def verify_cmd(ctx, cache_dir, dry_run) -> None:
    """Hash every entry's whole source files and arrays; remove the entries that no longer
    match (an edit that kept a file's size and modification time is found here).
    Exit 1 when an entry was stale or damaged."""
    from ltr_bench.data.cache import iter_entries

    root = _cache_root(cache_dir)
    n_tmp = _sweep_temporaries(root)
    bad = ok = 0
    for e in iter_entries(root):
        problem = _problem(e)
        if problem is None:
            ok += 1
            continue
        bad += 1
        action = "would remove" if dry_run else "removed"
        click.echo(f"{e.folder}: {problem}; {action}", err=True)
        if not dry_run:
            shutil.rmtree(e.folder, ignore_errors=True)
    click.echo(
        f"{ok} entr{'y' if ok == 1 else 'ies'} verified, {bad} stale or damaged"
        + (f", {n_tmp} stale temporary folder(s) removed" if n_tmp else "")
    )
    if bad:
        ctx.exit(EXIT_FAILED)


@cache_group.command("clear")
@options.cache_dir
@click.option(
    "--namespace",
    type=click.Choice(["letor", "generated", "clicks"]),
    default=None,
    help="Only this kind of entry.",
)
def clear_cmd(cache_dir, namespace) -> None:
    """Remove cache entries (all, or one namespace) and stale temporary folders."""
    from ltr_bench.data.cache import iter_entries

    root = _cache_root(cache_dir)
    n_tmp = _sweep_temporaries(root)
    n = size = 0
    for e in iter_entries(root):
        if namespace is None or e.namespace == namespace:
            shutil.rmtree(e.folder, ignore_errors=True)
            n += 1
            size += e.size
    click.echo(
        f"removed {n} entr{'y' if n == 1 else 'ies'} ({size / 2**20:.1f} MiB) from "
        f"{root}" + (f" and {n_tmp} stale temporary folder(s)" if n_tmp else "")
    )

"""``ltr-bench download NAME``: fetch a LETOR dataset whose licence allows direct download.

What happens, in order (each step survives an interruption; a re-run continues):

1. The archive is fetched into ``<data home>/.downloads/<archive>.part`` with HTTP range
   requests, so an interrupted download resumes where it stopped; progress is reported.
2. When complete, its size and (where the publisher or a long-standing public mirror of the
   metadata gives one) its SHA-256 are checked; a mismatch deletes the file and says so.
3. The archive is unpacked into a temporary folder beside the data home; the folder holding
   the layout the loader expects (e.g. ``Fold1/train.txt``) is found wherever the archive put
   it and moved into place atomically (``os.replace``): ``<data home>/<spec.root>``.

Zip and tar archives are unpacked with Python's own modules; RAR archives (LETOR 4.0) need an
external tool: ``unrar``, ``7z`` or ``bsdtar`` (Debian: ``unrar-free``, ``p7zip-full`` or
``libarchive-tools``), checked before anything is downloaded. Datasets whose licence must be
accepted on the publisher's site (Yahoo!, Istella) are not downloaded: the command prints the
exact steps and where to put the files. The publishers move their files now and then;
``--url`` overrides the address (the checks still apply).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ltr_bench.data.specs import DatasetSpec, get_spec, resolve_data_dir
from ltr_bench.errors import LtrBenchError, UsageError

__all__ = ["ARCHIVES", "Archive", "DownloadError", "download_dataset"]

_CHUNK = 1 << 20


class DownloadError(LtrBenchError):
    """The download, its check or the unpacking failed; the message says what to do."""


@dataclass(frozen=True)
class Archive:
    """Where a dataset's official archive is and how to check it.

    url: the publisher's address. filename: the archive's name. sha256 / size: expected
    digest and byte count (None where no source we trust gives one). kind: ``zip``,
    ``tar`` (any compression) or ``rar``. licence: None when direct download is allowed;
    otherwise the steps a person must take (the command prints them and downloads nothing).
    """

    url: str
    filename: str
    kind: str
    sha256: str | None = None
    size: int | None = None
    licence: str | None = None


_MSLR = "https://api.onedrive.com/v1.0/shares/{share}/root/content"
_LETOR4 = "http://research.microsoft.com/en-us/um/beijing/projects/letor/LETOR4.0/Data/{name}.rar"

#: Archives by dataset name. The MSLR digests are the ones several independent loaders
#: (e.g. pytorchltr) verify against; LETOR 3.0/4.0 publish none, so only completeness is
#: checked there.
ARCHIVES: dict[str, Archive] = {
    "mslr10k": Archive(
        _MSLR.format(share="s!AtsMfWUz5l8nbOIoJ6Ks0bEMp78"),
        "MSLR-WEB10K.zip",
        "zip",
        sha256="2902142ea33f18c59414f654212de5063033b707d5c3939556124b1120d3a0ba",
    ),
    "mslr30k": Archive(
        _MSLR.format(share="s!AtsMfWUz5l8nbXGPBlwD1rnFdBY"),
        "MSLR-WEB30K.zip",
        "zip",
        sha256="08cb7977e1d5cbdeb57a9a2537a0923dbca6d46a76db9a6afc69e043c85341ae",
    ),
    "mq2007": Archive(_LETOR4.format(name="MQ2007"), "MQ2007.rar", "rar"),
    "mq2008": Archive(_LETOR4.format(name="MQ2008"), "MQ2008.rar", "rar"),
    "ohsumed": Archive(
        "http://research.microsoft.com/en-us/um/beijing/projects/letor/LETOR3.0/OHSUMED.zip",
        "OHSUMED.zip",
        "zip",
    ),
    "yahoo-set1": Archive(
        "",
        "ltrc_yahoo.tar.bz2",
        "tar",
        licence=(
            "Yahoo! Webscope requires accepting its data licence: sign in at "
            "https://webscope.sandbox.yahoo.com/catalog.php?datatype=c, request dataset C14 "
            "(Learning to Rank Challenge), download the archive and unpack it so that "
            "<data home>/ltrc_yahoo/set1.train.txt exists."
        ),
    ),
    "istella-s": Archive(
        "",
        "istella-s-letor.tar.gz",
        "tar",
        licence=(
            "Istella's licence must be accepted on https://istella.ai/datasets/letor-dataset/ "
            "(fill in the form; the download link is sent by e-mail). Unpack the archive into "
            "<data home>/istella-s/ so that <data home>/istella-s/sample/train.txt exists."
        ),
    ),
}
ARCHIVES["yahoo-set2"] = ARCHIVES["yahoo-set1"]

_RAR_TOOLS = (
    ("unrar", ["unrar", "x", "-o+", "-idq", "{archive}", "{dest}/"]),
    ("7z", ["7z", "x", "-y", "-o{dest}", "{archive}"]),
    ("bsdtar", ["bsdtar", "-xf", "{archive}", "-C", "{dest}"]),
)


def _rar_tool() -> list[str] | None:
    for exe, cmd in _RAR_TOOLS:
        if shutil.which(exe):
            return cmd
    return None


def _expected_first_file(spec: DatasetSpec) -> Path:
    """The first split file of fold 1, relative to the spec's root (what marks the layout)."""
    rel = Path(spec.fold_dir.format(k=1)) if spec.fold_dir else Path()
    return rel / spec.split_files[0][1]


def _fetch(
    url: str, part: Path, *, size: int | None, progress: Callable[[int, int, str], None]
) -> None:
    """Download ``url`` into ``part``, resuming from its current length."""
    have = part.stat().st_size if part.exists() else 0
    if size is not None and have >= size:
        return
    request = urllib.request.Request(url, headers={"User-Agent": "ltr-bench"})
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        with urllib.request.urlopen(request, timeout=60) as resp:
            if have and resp.status != 206:  # the server ignored the range: start again
                have = 0
            length = resp.headers.get("Content-Length")
            total = have + int(length) if length is not None else (size or 0)
            with open(part, "ab" if have else "wb") as out:
                done = have
                while True:
                    chunk = resp.read(_CHUNK)
                    if not chunk:
                        break
                    out.write(chunk)
                    done += len(chunk)
                    progress(done, total, part.name)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # range past the end: the file is already complete
            return
        raise DownloadError(
            f"{url}: HTTP {exc.code} {exc.reason}. The publisher may have moved "
            f"the file: download it by hand and put it at {part.with_suffix('')}"
            f", or give its new address with --url"
        ) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DownloadError(
            f"{url}: {reason}; {part.stat().st_size if part.exists() else 0} "
            f"bytes kept in {part}: run the same command again to resume"
        ) from None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _unpack(archive: Path, kind: str, dest: Path) -> None:
    try:
        if kind == "zip":
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(dest)
        elif kind == "tar":
            with tarfile.open(archive) as tf:
                tf.extractall(dest, filter="data")
        else:
            tool = _rar_tool()
            assert tool is not None  # checked before downloading
            cmd = [part.format(archive=archive, dest=dest) for part in tool]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                raise DownloadError(
                    f"{archive}: {cmd[0]} failed: {(done.stderr or done.stdout).strip()[:300]}"
                )
    except (zipfile.BadZipFile, tarfile.TarError, EOFError) as exc:
        raise DownloadError(
            f"{archive} is damaged ({exc}); delete it and run the command again"
        ) from None


def download_dataset(
    name: str,
    *,
    data_dir=None,
    url: str | None = None,
    progress: Callable[[int, int, str], None] = lambda d, t, m: None,
    say: Callable[[str], None] = lambda m: None,
) -> Path:
    """Download, check and unpack dataset ``name`` into the data home; returns its folder.

    Raises :class:`UsageError` for datasets that are generated, unknown, or need a licence
    accepted by hand (the message has the steps), :class:`DownloadError` otherwise.
    """
    spec = get_spec(name)
    if spec.kind != "letor":
        raise UsageError(f"{spec.name} is generated on the fly: nothing to download")
    if spec.name == "lightgbm-example":
        raise UsageError("lightgbm-example ships with ltr-bench: nothing to download")
    archive = ARCHIVES.get(spec.name)
    if archive is None:
        raise UsageError(f"no download is known for {spec.name}; see {spec.homepage}")
    home = resolve_data_dir(data_dir)
    target = home / spec.root
    if archive.licence:
        raise UsageError(
            f"{spec.name} cannot be downloaded automatically. "
            f"{archive.licence.replace('<data home>', str(home))}"
        )
    if (target / _expected_first_file(spec)).exists() or any(
        (target / _expected_first_file(spec))
        .with_name(_expected_first_file(spec).name + s)
        .exists()
        for s in (".gz", ".bz2", ".xz")
    ):
        say(f"{spec.name} is already in place at {target}")
        return target
    if archive.kind == "rar" and _rar_tool() is None:
        raise DownloadError(
            f"{archive.filename} is a RAR archive: install one of unrar, 7z "
            f"or bsdtar (Debian: apt-get install libarchive-tools) and run "
            f"the command again"
        )
    downloads = home / ".downloads"
    try:
        downloads.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DownloadError(f"cannot create {downloads}: {exc.strerror or exc}") from None
    final = downloads / archive.filename
    if not final.exists():
        part = downloads / (archive.filename + ".part")
        say(f"downloading {url or archive.url} -> {part}")
        _fetch(url or archive.url, part, size=archive.size, progress=progress)
        if archive.size is not None and part.stat().st_size != archive.size:
            raise DownloadError(
                f"{part}: {part.stat().st_size} bytes, expected "
                f"{archive.size}; run the command again to resume"
            )
        os.replace(part, final)
    if archive.sha256 is not None:
        say(f"checking the SHA-256 of {final}")
        got = _sha256(final)
        if got != archive.sha256:
            final.unlink()
            raise DownloadError(
                f"{final}: SHA-256 {got} differs from the expected "
                f"{archive.sha256}; the damaged file was deleted, run the "
                f"command again"
            )
    say(f"unpacking {final}")
    with tempfile.TemporaryDirectory(prefix=".unpack-", dir=home) as tmp:
        _unpack(final, archive.kind, Path(tmp))
        marker = _expected_first_file(spec)
        found = sorted(Path(tmp).rglob(marker.name))
        roots = [
            p.parents[len(marker.parts) - 1]
            for p in found
            if p.relative_to(tmp).as_posix().endswith(marker.as_posix())
        ]
        if not roots:
            raise DownloadError(
                f"{final} does not contain {marker} in any folder; is it the "
                f"right archive? Expected layout: {spec.layout}"
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            shutil.rmtree(target)  # an incomplete earlier unpacking
        os.replace(roots[0], target)
    say(
        f"{spec.name} is ready at {target} (the archive stays in {downloads}; delete it to "
        f"save space)"
    )
    return target

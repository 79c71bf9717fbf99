"""What a fold is made from, cheaply: :func:`fold_inputs`, a JSON-able signature of every input
that determines the arrays :func:`ltr_bench.data.load_fold` would return, read without loading
them.

Files (a folder of LETOR files, a downloaded LETOR dataset): for every split file and its
``.query`` file, :func:`~ltr_bench.data.cache.source_signature` (resolved path, size,
``st_mtime_ns``, sha256 of the first and last MiB) - the very key under which the
parsed-data cache hands back a parsed split instead of parsing the file again, so a signature
that matches proves the data as much as the loader itself trusts its cache (see
:mod:`ltr_bench.data.cache` for what that check can miss, and ``ltr-bench cache verify``).
Generated and query-by-example data: none; the dataset's name, options and seed (the caller's
part of the key) determine the data, with the generator's and the cache's format versions
below. A change of either version, of a file, or of the file set changes the signature.

Costs two 1 MiB reads per file at most, never a parse. Raises what
:func:`~ltr_bench.data.load_fold` raises for missing files or an unknown name.
"""

from __future__ import annotations

from typing import Any

from ltr_bench.data.cache import CACHE_VERSION, source_signature
from ltr_bench.data.layout import as_path, generic_files, named_files
from ltr_bench.data.specs import get_spec, resolve_cache_dir

__all__ = ["fold_inputs"]

#: bump when the parsing, subsampling, normalising or generation of data changes what the
#: same inputs give: every proof recorded before is then no proof
INPUTS_VERSION = 1


def fold_inputs(dataset, fold: int, *, data_dir=None, cache_dir=None) -> dict[str, Any]:
    """The signature of fold ``fold`` of ``dataset`` (a registered name or a folder path):
    ``{"v": ..., "cache": ..., "files": {split: [data signature, query signature or None]},
    "entries": ...}`` (``files`` empty for generated and query-by-example data). The options
    and seed that also shape the fold are not in it: the caller keys on them.

    ``entries`` (file data only): the inode and ``st_mtime_ns`` of the parsed-data cache's
    LETOR folder (None without one). Adding or removing an entry changes it, so an entry
    discarded since (``ltr-bench cache verify`` found its source changed in a way the file
    signature misses, or a load found it damaged), or a cache removed by hand, changes the
    signature and the fold is loaded again."""
    out: dict[str, Any] = {"v": INPUTS_VERSION, "cache": CACHE_VERSION, "files": {}}
    path = as_path(dataset)
    if path is not None:
        files = generic_files(path, int(fold))
    else:
        spec = get_spec(dataset)
        if spec.kind != "letor":
            from ltr_bench.data.generated import _GEN_VERSION

            out["gen"] = _GEN_VERSION
            return out
        files = named_files(spec, data_dir, int(fold))
    out["files"] = {
        split: [source_signature(data), None if query is None else source_signature(query)]
        for split, (data, query) in sorted(files.items())
    }
    try:
        st = (resolve_cache_dir(cache_dir) / "letor").stat()
        out["entries"] = [st.st_ino, st.st_mtime_ns]
    except OSError:
        out["entries"] = None
    return out

"""Parameters that name files: their content is part of a configuration's identity.

A ranker parameter may name a file whose content decides the model (an allRank
configuration, a click log, a model file). Its path alone must not key a result: an edited
file must never be answered with the result of its old content. So, as data files are
identified by what they hold, every file a parameter names is fingerprinted by content
(``sha256`` of its bytes) when the plan is expanded, and the fingerprints join the cell key
(:func:`ltr_bench.run.cells.expand_plan`) and the record's configuration.

Which parameters name files: those the ranker declares in
:attr:`ltr_bench.ranker.RankerTags.file_params`, and, so that a ranker that declares none is
covered too, every parameter whose value is a string naming an existing regular file.

A file edited while the run is going would be fitted on content the key does not stand for:
:func:`check_unchanged` hashes each file again right before the ranker is built and right
after it is fitted (it may read the file at either time), and a file whose content is no
longer the planned one fails the cell (:class:`ParamFileChanged`), so no record ever pairs
a key with other content; the next run plans the new content as a new cell.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

__all__ = ["ParamFileChanged", "ParamFileError", "check_unchanged", "param_file_fingerprints"]

_CHUNK = 1 << 20


class ParamFileError(ValueError):
    """A declared file parameter names a file that cannot be read; ``str`` names the
    parameter, the file and the reason."""


class ParamFileChanged(ValueError):
    """A file a parameter names no longer holds the content the cell was planned with;
    ``str`` names the parameter, the file and both fingerprints."""


def _names_file(value: Any) -> Path | None:
    if not isinstance(value, (str, Path)) or not str(value).strip():
        return None
    path = Path(value).expanduser()
    try:
        return path if path.is_file() else None
    except (OSError, ValueError):  # a name too long, a NUL byte: not a file
        return None


def file_digest(path: Path) -> str:
    """``sha256:<hex>`` of the file's bytes (read in 1 MiB chunks); raises ``OSError``."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return f"sha256:{h.hexdigest()}"


def param_file_fingerprints(
    params: dict[str, Any], declared: tuple[str, ...] | list[str] = ()
) -> dict[str, str]:
    """``{parameter: "sha256:<hex>"}`` for every parameter of ``params`` that names a file:
    those in ``declared`` whose value is set (not None) and every other whose value is a
    string naming an existing regular file. A declared parameter whose file is missing is
    left to the ranker's own validation (it names what it expects); one that exists but
    cannot be read raises :class:`ParamFileError`."""
    out: dict[str, str] = {}
    for name in sorted(params):
        value = params[name]
        path = _names_file(value)
        if path is None:
            continue
        try:
            out[name] = file_digest(path)
        except OSError as exc:
            if name in declared:
                reason = exc.strerror or str(exc)
                raise ParamFileError(f"{name}={value}: cannot read the file: {reason}") from None
    return out


def check_unchanged(planned: dict[str, str] | None, params: dict[str, Any], ranker: str) -> None:
    """Raise :class:`ParamFileChanged` when a file named by ``params`` (``{parameter:
    path}``) no longer has the fingerprint ``planned`` (``{parameter: "sha256:<hex>"}``,
    :func:`param_file_fingerprints` at planning) or cannot be read any more."""
    for name, digest in (planned or {}).items():
        path = Path(str(params.get(name))).expanduser()
        try:
            now = file_digest(path)
        except OSError as exc:
            now = f"unreadable ({exc.strerror or exc})"
        if now != digest:
            raise ParamFileChanged(
                f"{ranker}.{name}={params.get(name)}: the file changed while the run was going "
                f"(planned with {digest[:19]}..., now {now[:40]}); this cell's key stands for "
                "the planned content, so nothing is recorded for it: run again to fit on "
                "the new content (a new cell)"
            )

"""The saved model's manifest (``manifest.json``): what wrote the model and what it expects.

Format version 1, a JSON object::

    format            "ltr-bench-model"
    format_version    1 (a reader refuses a larger number: the model is from a newer ltr-bench)
    ranker            registered name (``ltr-bench rankers``), e.g. "lightgbm"
    target            the entry point's "module:Class" at saving (information)
    distribution      distribution that registers the ranker, e.g. "ltr-bench-neural"
    distribution_version  its version at saving
    ltr_bench_version the version of ltr-bench that wrote the model
    created           UTC time of saving, ISO 8601
    params            get_params(deep=False): JSON, with {"__tuple__": [...]} for tuples
    n_features        feature count the model was fitted on (``n_features_in_``), or null
    preprocessing     {"query_norm": bool, "query_dim": int | null, "feature_transform": str}
    data_fingerprint  fingerprint of the fold the model was fitted on (``run`` and ``tune``:
                      ``{split: fingerprint}`` of its train/vali/test splits), or null
    extras            what the ranker's ``save_native`` returned (JSON)
    files             {"native/<file>": {"bytes": int, "sha256": hex}} of every native file

``preprocessing``: ``query_norm`` true means the features were LETOR ``QueryLevelNorm``-ed
per query before ``fit`` (the dataset option ``query_norm``), so new rows are normalised the
same way before ``predict`` (:meth:`~ltr_bench.models.loading.LoadedModel.predict` does);
``query_dim`` is the width of the query block on query-by-example rows (rows are
``2 * query_dim`` wide); ``feature_transform`` names a transform the ranker applies itself
inside ``predict`` (``neural``'s ``log1p``; information only, never applied twice).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, TypeGuard

from ltr_bench.errors import LtrBenchError
from ltr_bench.model_state import decode_state, encode_state

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "MANIFEST",
    "MAX_FEATURES",
    "NATIVE",
    "ModelLoadError",
    "ModelSaveError",
    "check_preprocessing",
    "file_digests",
    "parse_manifest",
]

FORMAT = "ltr-bench-model"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
NATIVE = "native"  # the sub-folder that holds the ranker's own files

PREPROCESSING_KEYS = ("query_norm", "query_dim", "feature_transform")
#: the largest feature count a manifest may state: a row of 2^24 float64 is 128 MiB; more
#: is damage (or a model no ``predict`` could feed), refused before any row is read
MAX_FEATURES = 1 << 24
_HEX = frozenset("0123456789abcdef")


class ModelLoadError(LtrBenchError, ValueError):
    """A saved model cannot be loaded; ``str(err)`` names the file and the cause (missing,
    damaged, not a regular file of the folder, not listed in the manifest, from a newer
    format, its ranker's plugin not installed). Exit code 1."""


class ModelSaveError(LtrBenchError, ValueError):
    """A ranker cannot be saved (it does not implement the persistence hooks, or its state or
    parameters are not JSON / numpy), or the folder cannot be written."""


def check_preprocessing(preprocessing: dict | None) -> dict:
    """The manifest's ``preprocessing`` from the caller's (missing keys get the defaults:
    no ``query_norm``, no query block, ``feature_transform`` "none"); ``ValueError`` on an
    unknown key or a value of the wrong type."""
    given = dict(preprocessing or {})
    unknown = sorted(set(given) - set(PREPROCESSING_KEYS))
    if unknown:
        raise ValueError(
            f"unknown preprocessing key(s) {', '.join(unknown)}; "
            f"known: {', '.join(PREPROCESSING_KEYS)}"
        )
    out = {
        "query_norm": given.get("query_norm", False),
        "query_dim": given.get("query_dim"),
        "feature_transform": given.get("feature_transform", "none"),
    }
    if not isinstance(out["query_norm"], bool):
        raise ValueError(f"preprocessing query_norm must be a bool, got {out['query_norm']!r}")
    qd = out["query_dim"]
    if qd is not None and (isinstance(qd, bool) or not isinstance(qd, int) or qd < 1):
        raise ValueError(f"preprocessing query_dim must be a positive int or None, got {qd!r}")
    out["query_dim"] = None if qd is None else int(qd)
    if not isinstance(out["feature_transform"], str):
        raise ValueError(
            f"preprocessing feature_transform must be a str, got {out['feature_transform']!r}"
        )
    return out


def encode_params(params: dict[str, Any], ranker_name: str) -> dict:
    """``params`` as manifest JSON; :class:`ModelSaveError` names a parameter that is not a
    JSON value (a tuple is kept as a tuple)."""
    arrays: dict = {}
    try:
        body = {k: encode_state(v, arrays, f"parameter {k!r}") for k, v in params.items()}
    except TypeError as exc:
        raise ModelSaveError(f"ranker {ranker_name!r} cannot be saved: {exc}") from None
    if arrays:
        raise ModelSaveError(
            f"ranker {ranker_name!r} cannot be saved: a parameter holds a numpy array "
            "(parameters must be JSON values)"
        )
    return body


def file_digests(folder: Path) -> dict[str, dict[str, Any]]:
    """``{relative path: {"bytes", "sha256"}}`` of every file under ``folder/native``."""
    out = {}
    native = folder / NATIVE
    for path in sorted(p for p in native.rglob("*") if p.is_file()):
        out[path.relative_to(folder).as_posix()] = {
            "bytes": path.stat().st_size,
            "sha256": _sha256(path),
        }
    return out


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def parse_manifest(data: bytes, path: Path) -> dict:
    """The manifest in ``data`` (the bytes of ``path``), checked field by field: the format
    and its version, the types and ranges of what a loader uses (``ranker``, ``params``,
    ``n_features``, ``preprocessing``, ``data_fingerprint``, ``extras``) and every ``files``
    entry (a path under ``native/`` without ``..``, ``.`` or empty parts; ``bytes`` a whole
    number >= 0; ``sha256`` 64 hex digits). ``params`` is decoded (tuples are tuples again).
    Raises :class:`ModelLoadError` saying "the model's manifest <path>" and what is wrong."""
    where = f"the model's manifest {path}"
    try:
        manifest = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ModelLoadError(f"{where} is damaged: not UTF-8 text ({exc})") from None
    except (ValueError, RecursionError) as exc:  # JSONDecodeError; an int of 5,000 digits
        raise ModelLoadError(f"{where} is damaged: not valid JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ModelLoadError(f"{path} is not an ltr-bench model manifest (no format {FORMAT!r})")
    version = manifest.get("format_version")
    if not _whole(version) or version < 1:
        raise ModelLoadError(f"{where} is damaged: format_version {version!r} is not a version")
    if version > FORMAT_VERSION:
        raise ModelLoadError(
            f"{path} was written by a newer ltr-bench (model format {version}; this ltr-bench "
            f"reads format {FORMAT_VERSION} and older): upgrade ltr-bench to load it"
        )

    def damaged(what: str) -> ModelLoadError:
        return ModelLoadError(f"{where} is damaged: {what}")

    for key, kind in (("ranker", str), ("params", dict), ("files", dict), ("extras", dict)):
        if not isinstance(manifest.get(key), kind):
            raise damaged(f"{key!r} is missing or not a {kind.__name__}")
    if not manifest["ranker"].strip():
        raise damaged("'ranker' is empty")
    for key in ("target", "distribution", "distribution_version", "ltr_bench_version", "created"):
        if not isinstance(manifest.get(key), (str, type(None))):
            raise damaged(f"{key!r} is {manifest[key]!r}, not a text")
    n = manifest.get("n_features")
    if n is not None and (not _whole(n) or not 1 <= n <= MAX_FEATURES):
        raise damaged(f"n_features is {_short(n)}, not a feature count (1 to {MAX_FEATURES})")
    try:
        prep = check_preprocessing(manifest.get("preprocessing"))
    except (ValueError, TypeError) as exc:
        raise damaged(str(exc)) from None
    if prep["query_dim"] is not None and n is not None and prep["query_dim"] > n:
        raise damaged(f"preprocessing query_dim {prep['query_dim']} is above n_features {n}")
    manifest["preprocessing"] = prep
    fp = manifest.get("data_fingerprint")
    fine = fp is None or isinstance(fp, str)
    if isinstance(fp, dict):
        fine = all(isinstance(k, str) and isinstance(v, str) for k, v in fp.items())
    if not fine:
        raise damaged("data_fingerprint is not a text or a {split: text} object")
    for name, recorded in manifest["files"].items():
        problem = _file_entry_problem(name, recorded)
        if problem:
            raise damaged(f"files entry {_short(name)}: {problem}")
    try:
        manifest["params"] = decode_state(manifest["params"], {})
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        raise damaged(f"'params' holds a value that cannot be decoded ({exc!r})") from None
    return manifest


def _whole(value) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _file_entry_problem(name: str, recorded) -> str | None:
    parts = name.split("/")
    if (
        len(parts) < 2
        or parts[0] != NATIVE
        or any(p in ("", ".", "..") for p in parts)
        or "\\" in name
        or "\x00" in name
    ):
        return f"not a path inside {NATIVE}/ (no '..', '.', empty parts or absolute paths)"
    if not isinstance(recorded, dict):
        return "not an object with bytes and sha256"
    size, digest = recorded.get("bytes"), recorded.get("sha256")
    if not _whole(size) or size < 0:
        return f"bytes is {_short(size)}, not a size"
    if not isinstance(digest, str) or len(digest) != 64 or not set(digest) <= _HEX:
        return f"sha256 is {_short(digest)}, not 64 hex digits"
    return None

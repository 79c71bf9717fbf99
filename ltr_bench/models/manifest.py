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
from typing import Any

from ltr_bench.errors import LtrBenchError
from ltr_bench.model_state import decode_state, encode_state

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "MANIFEST",
    "NATIVE",
    "ModelLoadError",
    "ModelSaveError",
    "check_preprocessing",
    "file_digests",
    "read_manifest",
]

FORMAT = "ltr-bench-model"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
NATIVE = "native"  # the sub-folder that holds the ranker's own files

PREPROCESSING_KEYS = ("query_norm", "query_dim", "feature_transform")


class ModelLoadError(LtrBenchError, ValueError):
    """A saved model cannot be loaded; ``str(err)`` names the file and the cause (missing,
    damaged, from a newer format, its ranker's plugin not installed). Exit code 1."""


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


def read_manifest(folder: Path) -> dict:
    """The manifest of the model in ``folder``, checked: the format and its version, the
    fields a loader needs, every native file present with its recorded size and SHA-256.
    ``params`` is decoded (tuples are tuples again). Raises :class:`ModelLoadError` naming
    the file and the cause."""
    folder = Path(folder)
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise ModelLoadError(f"model folder {folder} {what}")
    path = folder / MANIFEST
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ModelLoadError(
            f"{path} is missing: {folder} is not a saved ltr-bench model (or an incomplete one)"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelLoadError(f"{path} cannot be read: {exc}") from None
    try:
        manifest = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelLoadError(f"{path} is damaged: not valid JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ModelLoadError(f"{path} is not an ltr-bench model manifest (no format {FORMAT!r})")
    version = manifest.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ModelLoadError(f"{path} is damaged: format_version {version!r} is not a version")
    if version > FORMAT_VERSION:
        raise ModelLoadError(
            f"{path} was written by a newer ltr-bench (model format {version}; this ltr-bench "
            f"reads format {FORMAT_VERSION} and older): upgrade ltr-bench to load it"
        )
    for key, kind in (("ranker", str), ("params", dict), ("files", dict), ("extras", dict)):
        if not isinstance(manifest.get(key), kind):
            raise ModelLoadError(f"{path} is damaged: {key!r} is missing or not a {kind.__name__}")
    try:
        manifest["preprocessing"] = check_preprocessing(manifest.get("preprocessing"))
    except ValueError as exc:
        raise ModelLoadError(f"{path} is damaged: {exc}") from None
    for name, recorded in manifest["files"].items():
        _check_file(folder, path, name, recorded)
    manifest["params"] = decode_state(manifest["params"], {})
    return manifest


def _check_file(folder: Path, manifest_path: Path, name: str, recorded) -> None:
    file = folder / name
    if not isinstance(recorded, dict) or not name.startswith(NATIVE + "/") or ".." in name:
        raise ModelLoadError(f"{manifest_path} is damaged: bad file entry {name!r}")
    if not file.is_file():
        raise ModelLoadError(f"{file} is missing (listed in {manifest_path})")
    size = file.stat().st_size
    if size != recorded.get("bytes"):
        raise ModelLoadError(
            f"{file} is damaged: {size} bytes, but {recorded.get('bytes')} were written"
        )
    if _sha256(file) != recorded.get("sha256"):
        raise ModelLoadError(f"{file} is damaged: its SHA-256 differs from the one written")

"""A fitted ranker's learned state as two non-executable files, for the persistence hooks.

Rankers implement :meth:`~ltr_bench.ranker.BaseRanker.save_native` and
:meth:`~ltr_bench.ranker.BaseRanker.load_native`; most learned state is numbers, and this
module writes it without pickle:

* ``state.npz``: every numpy array (and numpy scalar, as a 0-d array), read back with
  ``np.load(allow_pickle=False)``: an object array is refused on writing and on reading;
* ``state.json``: everything else, JSON values (``None``, ``bool``, ``int``, ``float``,
  ``str``, lists, dicts, tuples), with ``{"__array__": key}`` where an array stood
  (markers: ``__numpy_scalar__``, ``__tuple__``, ``__items__`` for a dict with keys that are
  not all ``str``, ``__dict__`` for a dict whose keys look like markers). Floats are
  written with ``repr`` (``json``), which reads back bit for bit; NaN and infinities are
  written as JSON's ``NaN`` / ``Infinity`` extension.

:func:`save_fitted_state` / :func:`load_fitted_state` save a ranker's fitted attributes (the
public names ending in ``_``, the contract's convention) plus what its ``__init__`` took; a
ranker holding a library object (a booster, a scaler, a torch module) names it in ``skip``,
writes it in the library's own format and rebuilds it in ``load_native``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "STATE_ARRAYS",
    "STATE_JSON",
    "decode_state",
    "encode_state",
    "estimator_from_state",
    "estimator_state",
    "fitted_attributes",
    "load_fitted_state",
    "read_state",
    "save_fitted_state",
    "write_state",
]

STATE_JSON = "state.json"
STATE_ARRAYS = "state.npz"

_ARRAY, _SCALAR, _TUPLE, _DICT = "__array__", "__numpy_scalar__", "__tuple__", "__dict__"
_ITEMS = "__items__"  # a dict whose keys are not all str, as [[key, value], ...]
_MARKERS = {_ARRAY, _SCALAR, _TUPLE, _DICT, _ITEMS}


def encode_state(value: Any, arrays: dict[str, np.ndarray], where: str = "state") -> Any:
    """``value`` as JSON, its numpy arrays moved into ``arrays`` (keys ``a0``, ``a1``, ...).

    Raises ``TypeError`` naming ``where`` (the attribute path) for anything else: an object
    array or an object JSON cannot hold (a library model, a function)."""
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError(f"{where} is an object array, which cannot be saved without pickle")
        key = f"a{len(arrays)}"
        arrays[key] = value
        return {_ARRAY: key}
    if isinstance(value, np.generic):
        key = f"a{len(arrays)}"
        arrays[key] = np.asarray(value)
        return {_SCALAR: key}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple):
        return {_TUPLE: [encode_state(v, arrays, f"{where}[{i}]") for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [encode_state(v, arrays, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):  # e.g. {alpha: score}: as pairs
            return {
                _ITEMS: [
                    [encode_state(k, arrays, f"{where} key"), encode_state(v, arrays, where)]
                    for k, v in value.items()
                ]
            }
        body = {k: encode_state(v, arrays, f"{where}[{k!r}]") for k, v in value.items()}
        # a dict whose own keys look like our markers is wrapped, so it reads back as a dict
        return {_DICT: body} if set(value) & _MARKERS else body
    raise TypeError(
        f"{where} is a {type(value).__module__}.{type(value).__name__}, which cannot be saved "
        "as JSON or numpy arrays; save it in its library's own format in save_native"
    )


def decode_state(value: Any, arrays: dict[str, np.ndarray]) -> Any:
    """The inverse of :func:`encode_state`."""
    if isinstance(value, list):
        return [decode_state(v, arrays) for v in value]
    if isinstance(value, dict):
        if len(value) == 1:
            ((marker, body),) = value.items()
            if marker == _ARRAY:
                return arrays[body]
            if marker == _SCALAR:
                return arrays[body][()]
            if marker == _TUPLE:
                return tuple(decode_state(v, arrays) for v in body)
            if marker == _DICT:
                return {k: decode_state(v, arrays) for k, v in body.items()}
            if marker == _ITEMS:
                return {decode_state(k, arrays): decode_state(v, arrays) for k, v in body}
        return {k: decode_state(v, arrays) for k, v in value.items()}
    return value


def write_state(folder: str | Path, state: dict[str, Any]) -> list[str]:
    """Write ``state`` (``{name: value}``) to ``folder/state.json`` and, when it holds arrays,
    ``folder/state.npz`` (uncompressed). Returns the file names written."""
    folder = Path(folder)
    arrays: dict[str, Any] = {}  # ndarrays; Any: np.savez's stubs reserve allow_pickle
    body = {k: encode_state(v, arrays, k) for k, v in state.items()}
    (folder / STATE_JSON).write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
    written = [STATE_JSON]
    if arrays:
        with open(folder / STATE_ARRAYS, "wb") as fh:
            np.savez(fh, **arrays)
        written.append(STATE_ARRAYS)
    return written


def read_state(folder: str | Path) -> dict[str, Any]:
    """The state :func:`write_state` wrote in ``folder``. Arrays are read with
    ``allow_pickle=False``; raises ``OSError`` / ``ValueError`` for a missing or damaged file."""
    folder = Path(folder)
    body = json.loads((folder / STATE_JSON).read_text(encoding="utf-8"))
    if not isinstance(body, dict):
        raise ValueError(f"{folder / STATE_JSON} does not hold a JSON object")
    arrays: dict[str, np.ndarray] = {}
    if (folder / STATE_ARRAYS).exists():
        with np.load(folder / STATE_ARRAYS, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    return {k: decode_state(v, arrays) for k, v in body.items()}


def fitted_attributes(ranker, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """``{name: value}`` of the ranker's fitted attributes: public names ending in ``_``
    (the contract's convention for learned state), less ``skip``."""
    return {
        k: v
        for k, v in vars(ranker).items()
        if k.endswith("_") and not k.startswith("_") and k not in skip
    }


def save_fitted_state(
    ranker, folder: str | Path, *, skip: tuple[str, ...] = (), replace: dict | None = None
) -> dict:
    """``save_native`` for a ranker whose learned state is numbers: writes every fitted
    attribute but ``skip`` with :func:`write_state`; ``replace`` maps an attribute to the
    numbers that stand for it (e.g. a scikit-learn scaler as :func:`estimator_state`; rebuild
    it in ``load_native`` with :func:`load_fitted_state`'s ``rebuild``). Returns ``{}`` (no
    manifest extras). Raises ``TypeError`` naming an attribute that is not numbers (skip or
    replace it and save it in its library's format)."""
    state = fitted_attributes(ranker, skip)
    state.update(replace or {})
    try:
        write_state(folder, state)
    except TypeError as exc:
        raise TypeError(f"{type(ranker).__name__}: fitted attribute {exc}") from None
    return {}


def load_fitted_state(cls, folder: str | Path, manifest: dict, *, rebuild: dict | None = None):
    """``load_native`` for :func:`save_fitted_state`: ``cls(**manifest["params"])`` with the
    saved fitted attributes set on it; ``rebuild`` maps an attribute to a function turning
    its saved numbers back into the object (e.g. ``lambda s: estimator_from_state(
    StandardScaler, s)``)."""
    ranker = cls(**manifest["params"])
    rebuild = rebuild or {}
    for name, value in read_state(folder).items():
        if not (name.endswith("_") and not name.startswith("_") and name.isidentifier()):
            # only fitted attributes: a state file must not replace a method or a parameter
            raise ValueError(f"{Path(folder) / STATE_JSON}: {name!r} is not a fitted attribute")
        setattr(ranker, name, rebuild[name](value) if name in rebuild else value)
    return ranker


def estimator_state(estimator) -> dict:
    """A fitted scikit-learn estimator whose learned attributes are numbers (a scaler) as
    ``{"params": get_params(deep=False), "fitted": {attribute: value}}``."""
    return {
        "params": estimator.get_params(deep=False),
        "fitted": fitted_attributes(estimator),
    }


def estimator_from_state(cls, state: dict):
    """The estimator :func:`estimator_state` describes: ``cls(**params)`` with the fitted
    attributes set (the same arrays, so its ``transform`` is bit for bit the saved one's)."""
    estimator = cls(**state["params"])
    for name, value in state["fitted"].items():
        setattr(estimator, name, value)
    return estimator

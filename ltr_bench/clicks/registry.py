"""Click models by name: ``{"name": ..., "args": {...}}`` (allRank's ``click_model`` section).

A name is one of the literature models (``pbm``, ``cascade``, ``dcm``, ``dbn``; see
:mod:`.models`) or an allRank model (:mod:`.allrank`) spelled as allRank's config names it
(``allrank.click_models.cascade_models.BaseCascadeModel``), by its class name
(``BaseCascadeModel``) or by its short name (``base-cascade``). Arguments that are click models
themselves are ``{"name", "args"}`` dicts (lists of them for ``click_models``), as allRank's
configs write them. Every name and argument is checked before any data is touched: an unknown
name or argument is a :class:`ClickOptionError` (exit 2) with close matches.
"""

from __future__ import annotations

import difflib
import math

from ltr_bench.clicks.allrank import ALLRANK_MODELS, REQUIRED
from ltr_bench.clicks.models import LITERATURE_MODELS, ClickModel
from ltr_bench.data.errors import DatasetOptionError

__all__ = ["ClickOptionError", "build_click_model", "canonical_name", "model_names"]

ALLRANK_PREFIX = "allrank.click_models."
NESTED = {"click_models", "click_model", "dedicated_click_model"}


class ClickOptionError(DatasetOptionError):
    """A click option or click model that does not apply (exit code 2, before any work)."""


def _aliases() -> dict[str, str]:
    out = {name: name for name in LITERATURE_MODELS}
    for short, (_, path, _) in ALLRANK_MODELS.items():
        cls = path.rsplit(".", 1)[1]
        for alias in (short, short.replace("-", "_"), cls, ALLRANK_PREFIX + path):
            out[alias.lower()] = short
    return out


def model_names() -> list[str]:
    """The short names, literature models first."""
    return [*LITERATURE_MODELS, *ALLRANK_MODELS]


def canonical_name(name: str, *, where: str = "clicks") -> str:
    """The short name of a click model spelled any accepted way; else :class:`ClickOptionError`
    listing the close matches and every name."""
    aliases = _aliases()
    key = str(name).strip().lower()
    if key in aliases:
        return aliases[key]
    close = difflib.get_close_matches(key, list(aliases), n=3, cutoff=0.5)
    hint = (
        f" Did you mean {', '.join(repr(a) for a in dict.fromkeys(aliases[c] for c in close))}?"
        if close
        else ""
    )
    raise ClickOptionError(
        f"{where}: no click model {name!r}.{hint} Click models: {', '.join(model_names())} "
        f"(allRank's may also be given by class name or as {ALLRANK_PREFIX}<module>.<Class>)."
    )


def _defaults(short: str) -> dict:
    return dict(
        LITERATURE_MODELS[short][1] if short in LITERATURE_MODELS else ALLRANK_MODELS[short][2]
    )


def _number(where: str, key: str, value, *, lo=None, hi=None, integer=False):
    try:
        if isinstance(value, bool):
            raise ValueError
        number = float(value)
        if not math.isfinite(number) or (integer and number != int(number)):
            raise ValueError
    except (TypeError, ValueError):
        kind = "an integer" if integer else "a finite number"
        raise ClickOptionError(f"{where}: {key}={value!r} must be {kind}.") from None
    if (lo is not None and number < lo) or (hi is not None and number > hi):
        bounds = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ClickOptionError(f"{where}: {key}={value!r} must be {bounds}.")
    return int(number) if integer else number


def _items(where: str, key: str, value) -> list:
    """A list argument: a JSON/TOML list, comma-separated text or a single number."""
    if isinstance(value, str):
        return [v for v in value.split(",") if v.strip()]
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [value]  # click_positions=3 on the command line: one item
    raise ClickOptionError(f"{where}: {key}={value!r} must be a list (or text like 0,2).")


def _positions(where: str, value) -> list[int]:
    return [
        _number(where, "click_positions", v, lo=0, integer=True)
        for v in _items(where, "click_positions", value)
    ]


def _metric(where: str, value) -> str:
    """A distance name scipy's ``cdist`` knows, checked by scipy itself on four points (the
    simulation would find an unknown name only after the data is loaded)."""
    import numpy as np
    from scipy.spatial import distance

    name = str(value)
    points = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 3.0], [5.0, 1.0]])
    try:
        distance.cdist(points, points, metric=name)
    except (ValueError, TypeError) as exc:
        known = sorted(getattr(distance, "_METRICS_NAMES", []))
        close = difflib.get_close_matches(name, known, n=2)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        names = f" scipy's metrics: {', '.join(known)}." if known else ""
        raise ClickOptionError(
            f"{where}: metric={name!r} is not a scipy cdist metric ({exc}).{hint}{names}"
        ) from None
    return name


def _check(where: str, short: str, key: str, value):
    """The argument's value, coerced and range-checked (nested models are built)."""
    if key in NESTED:
        if key == "click_models":
            if not isinstance(value, (list, tuple)) or not value:
                raise ClickOptionError(
                    f"{where}: click_models must be a non-empty list of click models."
                )
            return [
                build_click_model(v, where=f"{where}.click_models[{i}]")
                for i, v in enumerate(value)
            ]
        return build_click_model(value, where=f"{where}.{key}")
    if key in ("eta", "duplicate_margin"):
        return _number(where, key, value, lo=0.0)
    if key in ("eps", "lam", "gamma", "q_percentile"):
        return _number(where, key, value, lo=0.0, hi=1.0)
    if key in ("threshold", "relevancy_threshold"):
        return _number(where, key, value)
    if key == "n_clicks":
        return _number(where, key, value, lo=0, integer=True)
    if key == "max_clicks":
        return (
            None
            if value is None or str(value).lower() == "none"
            else _number(where, key, value, lo=0, integer=True)
        )
    if key == "click_positions":
        return _positions(where, value)
    if key == "probabilities":
        probs = [_number(where, key, p, lo=0.0, hi=1.0) for p in _items(where, key, value)]
        if abs(sum(probs) - 1.0) > 1e-5:
            raise ClickOptionError(
                f"{where}: probabilities {probs} must sum to 1 (they sum to {sum(probs)})."
            )
        return probs
    if key == "combiner":
        text = str(value).lower().rsplit(".", 1)[-1]
        if text not in ("all", "any"):
            raise ClickOptionError(
                f"{where}: combiner={value!r} must be 'all' or 'any' (numpy.all / numpy.any)."
            )
        return text
    if key == "metric":
        return _metric(where, value)
    return value  # pragma: no cover - every argument is listed above


def build_click_model(spec, *, where: str = "click_model") -> ClickModel:
    """A click model from ``{"name": ..., "args": {...}}`` or a bare name (default arguments).

    Raises :class:`ClickOptionError` naming ``where`` for an unknown name or argument (with
    close matches), a missing required argument or a value out of range.
    """
    if isinstance(spec, str):
        spec = {"name": spec, "args": {}}
    if not isinstance(spec, dict) or "name" not in spec or set(spec) - {"name", "args"}:
        raise ClickOptionError(
            f'{where}: a click model is {{"name": ..., "args": {{...}}}}, got {spec!r}.'
        )
    if not isinstance(spec["name"], str):
        raise ClickOptionError(
            f"{where}: name must be a click model's name (text), got {spec['name']!r}."
        )
    if spec.get("args") is not None and not isinstance(spec["args"], dict):
        raise ClickOptionError(
            f'{where}: args must be an object {{"argument": value, ...}}, got {spec["args"]!r}.'
        )
    short = canonical_name(spec["name"], where=where)
    args = dict(spec.get("args") or {})
    defaults = _defaults(short)
    where = f"{where} ({short})"
    unknown = sorted(set(args) - set(defaults))
    if unknown:
        close = {u: difflib.get_close_matches(u, list(defaults), n=1) for u in unknown}
        hints = "".join(f" Did you mean {c[0]!r} for {u!r}?" for u, c in close.items() if c)
        raise ClickOptionError(
            f"{where}: no argument(s) {', '.join(unknown)}.{hints} Its arguments: "
            f"{', '.join(defaults) or 'none'}."
        )
    missing = [k for k, v in defaults.items() if v is REQUIRED and k not in args]
    if missing:
        raise ClickOptionError(f"{where}: missing argument(s) {', '.join(missing)}.")
    resolved = {}
    for k, v in defaults.items():
        try:
            resolved[k] = _check(where, short, k, args.get(k, v))
        except (TypeError, ValueError, OverflowError) as exc:  # a value of the wrong kind
            raise ClickOptionError(f"{where}: {k}={args.get(k, v)!r}: {exc}.") from None
    if short == "multiple" and len(resolved["probabilities"]) != len(resolved["click_models"]):
        raise ClickOptionError(f"{where}: one probability per click model is needed.")
    if short in LITERATURE_MODELS:
        return LITERATURE_MODELS[short][0](**resolved)
    return ALLRANK_MODELS[short][0](**resolved)

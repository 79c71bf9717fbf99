"""Search spaces of ``ltr-bench tune``: what a ranker declares, what a plan overrides, and
the Optuna distribution each spec becomes.

A ranker declares ``{parameter: spec}`` as a ``SEARCH_SPACE`` class attribute or a
``search_space()`` classmethod (:func:`search_space_of`); a plan's ``[tuning.LABEL]`` table
updates it (a spec ``false`` removes a parameter) and parameters the user fixed are dropped
(:func:`resolve_space`). Spec forms (:func:`parse_spec`):

* ``{low = 7, high = 255}`` -- integers in [low, high], optional ``log = true`` or
  ``step = k``;
* ``{low = 0.01, high = 0.3, log = true}`` -- reals (either bound a float);
* ``{choices = [...]}`` or a plain list -- categorical.

Every problem is a :class:`SearchSpaceError` (a :class:`~ltr_bench.run.plan.PlanError`, exit 2)
naming the plan table or ranker attribute and the parameter. ``ltr_bench.tune.study`` re-exports
these names, so ``from ltr_bench.tune.study import parse_spec`` keeps working.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Iterable, Mapping
from typing import Any

from ltr_bench.run.plan import PlanError, canonical_json

__all__ = [
    "SPACE_ATTR",
    "SPEC_KEYS",
    "SearchSpaceError",
    "parse_spec",
    "resolve_space",
    "search_space_of",
    "suggest",
]

#: the class attribute a ranker declares its search space in
SPACE_ATTR = "SEARCH_SPACE"
#: the keys a range spec may have
SPEC_KEYS = ("low", "high", "log", "step", "choices")


class SearchSpaceError(PlanError):
    """A search space (declared or given in a plan) is unusable; names the place (exit 2)."""


def parse_spec(name: str, spec: Any, *, where: str):
    """One parameter's search range -> an Optuna distribution.

    ``spec`` forms (TOML inline tables in a plan, dicts in a ranker's ``SEARCH_SPACE``):

    * ``{low = 7, high = 255}`` -- integers in [low, high] (both ints), optional
      ``log = true`` (log-uniform) or ``step = k``;
    * ``{low = 0.01, high = 0.3, log = true}`` -- reals (either bound a float);
    * ``{choices = ["l2", "zscore"]}`` or a plain list ``["l2", "zscore"]`` -- categorical
      (values: str, int, float, bool or none).

    Raises :class:`SearchSpaceError` naming ``where`` and the parameter.
    """
    import optuna.distributions as od

    here = f"{where}.{name}"
    if isinstance(spec, list):
        spec = {"choices": spec}
    if not isinstance(spec, Mapping):
        raise SearchSpaceError(
            f"{here}: expected a range like {{low = 7, high = 255}} or "
            f"{{choices = [...]}}, got {spec!r}"
        )
    unknown = [k for k in spec if k not in SPEC_KEYS]
    if unknown:
        raise SearchSpaceError(f"{here}: unknown key {unknown[0]!r}; keys: {', '.join(SPEC_KEYS)}")
    if "choices" in spec:
        if set(spec) != {"choices"}:
            raise SearchSpaceError(f"{here}: choices cannot be combined with low/high/log/step")
        choices = spec["choices"]
        if (
            not isinstance(choices, (list, tuple))
            or not choices
            or not all(c is None or isinstance(c, (str, int, float, bool)) for c in choices)
        ):
            raise SearchSpaceError(
                f"{here}: choices must be a non-empty list of numbers, "
                f"strings, booleans or none, got {choices!r}"
            )
        if len({canonical_json(c) for c in choices}) != len(choices):
            raise SearchSpaceError(f"{here}: a choice is listed twice: {list(choices)!r}")
        return od.CategoricalDistribution(list(choices))
    if "low" not in spec or "high" not in spec:
        raise SearchSpaceError(f"{here}: give low and high (or choices)")
    low, high, log, step = spec["low"], spec["high"], spec.get("log", False), spec.get("step")
    for key, v in (("low", low), ("high", high)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise SearchSpaceError(f"{here}: {key} must be a finite number, got {v!r}")
    if not isinstance(log, bool):
        raise SearchSpaceError(f"{here}: log must be true or false, got {log!r}")
    if low > high:
        raise SearchSpaceError(f"{here}: low ({low}) is above high ({high})")
    if log and low <= 0:
        raise SearchSpaceError(f"{here}: a log range needs low > 0, got {low}")
    if step is not None and (
        isinstance(step, bool) or not isinstance(step, (int, float)) or step <= 0
    ):
        raise SearchSpaceError(f"{here}: step must be a positive number, got {step!r}")
    if log and step is not None:
        raise SearchSpaceError(f"{here}: give log or step, not both")
    if step is not None:
        n_steps = (high - low) / step
        if abs(n_steps - round(n_steps)) > 1e-9 * max(1.0, abs(n_steps)):
            raise SearchSpaceError(
                f"{here}: step {step} does not divide the range [{low}, {high}] (Optuna would "
                f"silently shrink it); e.g. high = {low + math.floor(n_steps) * step:g} or "
                f"{low + math.ceil(n_steps) * step:g}"
            )
    if isinstance(low, int) and isinstance(high, int):
        if step is not None and not isinstance(step, int):
            raise SearchSpaceError(f"{here}: an integer range needs an integer step")
        return od.IntDistribution(low, high, log=log, step=step or 1)
    return od.FloatDistribution(float(low), float(high), log=log, step=step)


def _typed_spec(name: str, spec: Any, default: Any, here: str) -> Any:
    """``spec`` with its bounds of the parameter's kind, read from its default value: integer
    bounds of a real parameter (default ``1.0``) become reals, so ``{low = 0, high = 1}`` does
    not search the integers 0 and 1; real bounds of an integer parameter are refused."""
    if not isinstance(spec, Mapping) or "low" not in spec or "high" not in spec:
        return spec
    low, high = spec["low"], spec["high"]
    if isinstance(default, bool) or not isinstance(default, (int, float)):
        return spec  # no default to read the kind from (None, a string)
    ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (low, high))
    if isinstance(default, float) and ints:
        out = {**spec, "low": float(low), "high": float(high)}
        if isinstance(spec.get("step"), int) and not isinstance(spec.get("step"), bool):
            out["step"] = float(spec["step"])
        return out
    if isinstance(default, int) and not ints:
        raise SearchSpaceError(
            f"{here}: {name} is an integer parameter (default {default}); give integer "
            f"bounds, got {low!r} and {high!r}"
        )
    return spec


def search_space_of(ranker) -> dict[str, Any]:
    """The search space a ranker (class or instance) declares: ``search_space()`` if it has
    such a callable, else the ``SEARCH_SPACE`` attribute, else ``{}``; a dict
    ``{parameter: spec}`` in the forms :func:`parse_spec` reads."""
    fn = getattr(ranker, "search_space", None)
    space = fn() if callable(fn) else getattr(ranker, SPACE_ATTR, None)
    if space is None:
        return {}
    if not isinstance(space, Mapping):
        name = getattr(ranker, "__name__", type(ranker).__name__)
        raise SearchSpaceError(
            f"{name}.{SPACE_ATTR} must be a dict {{parameter: spec}}, got {type(space).__name__}"
        )
    return dict(space)


def resolve_space(
    label: str,
    ranker,
    *,
    override: Mapping[str, Any] | None = None,
    fixed: Iterable[str] = (),
    where: str = "tuning",
) -> dict[str, Any]:
    """``{parameter: spec}`` to search for one ranker configuration: its declared space,
    updated by ``override`` (a plan's ``[tuning.LABEL]`` table; a spec ``false`` removes a
    parameter), minus the parameters the user ``fixed``. Every spec is checked
    (:func:`parse_spec`), every name must be a parameter of ``ranker``
    (``get_params()``), and bounds take the kind of the parameter's default value (integer
    bounds of a real parameter search reals). Raises :class:`SearchSpaceError`."""
    space = search_space_of(ranker)
    params = set(ranker.get_params(deep=False))
    for name, spec in (override or {}).items():
        if spec is False:
            space.pop(name, None)
        else:
            space[name] = spec
    for name in space:
        if name not in params:
            src = (
                f"{where}.{label}"
                if name in (override or {})
                else f"{type(ranker).__name__}.{SPACE_ATTR}"
            )
            raise SearchSpaceError(
                f"{src}: {name!r} is not a parameter of {label}; "
                f"parameters: {', '.join(sorted(params))}"
            )
    defaults = ranker.get_params(deep=False)
    out = {
        k: _typed_spec(k, v, defaults.get(k), f"{where}.{label}.{k}")
        for k, v in space.items()
        if k not in set(fixed)
    }
    for name, spec in out.items():
        _check_default_draws(
            ranker, label, name, parse_spec(name, spec, where=f"{where}.{label}"), where
        )
    if not out:
        raise SearchSpaceError(
            f"{where}.{label}: nothing to tune: the ranker declares no "
            f"search space (or every parameter in it is fixed); give one "
            f"in a plan as [tuning.{label}]"
        )
    return out


def _can_draw(dist, value: Any) -> bool:
    """Whether Optuna distribution ``dist`` can draw ``value`` with a probability above 0."""
    import optuna.distributions as od

    if isinstance(dist, od.CategoricalDistribution):
        return any(type(c) is type(value) and c == value for c in dist.choices)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(dist, od.IntDistribution):
        inside = dist.low <= value <= dist.high and float(value).is_integer()
        return inside and (int(value) - dist.low) % dist.step == 0
    if isinstance(dist, od.FloatDistribution) and dist.step is not None:
        steps = (value - dist.low) / dist.step
        return dist.low <= value <= dist.high and math.isclose(steps, round(steps))
    return False  # a continuous range draws one given value with probability 0


def _check_default_draws(ranker, label: str, name: str, dist, where: str) -> None:
    """Refuse to search ``name`` when a trial drawing the parameter's default would train
    another value than the one the trial records: a ranker that replaces a default-valued
    parameter (``check_user_params`` refuses it, as ``neural`` does beside an allRank config
    setting it) would train the config's value on those trials."""
    check_user = getattr(ranker, "check_user_params", None)
    if not callable(check_user):
        return
    init = inspect.signature(type(ranker).__init__).parameters
    default = init[name].default if name in init else inspect.Parameter.empty
    if default is inspect.Parameter.empty or not _can_draw(dist, default):
        return
    try:
        check_user({name: default})
    except (ValueError, TypeError) as exc:
        raise SearchSpaceError(
            f"{where}.{label}.{name}: a trial that draws the default {default!r} would train "
            f"another value ({exc}); remove {name!r} from the search space ([tuning.{label}] "
            f"{name} = false) or from the config"
        ) from None


def suggest(trial, name: str, dist):
    """Ask Optuna ``trial`` for parameter ``name`` from ``dist`` (what :func:`parse_spec`
    returned) with the ``suggest_*`` call of its kind, so the value is recorded in the trial
    under the same distribution."""
    import optuna.distributions as od

    if isinstance(dist, od.CategoricalDistribution):
        return trial.suggest_categorical(name, dist.choices)
    if isinstance(dist, od.IntDistribution):
        return trial.suggest_int(name, dist.low, dist.high, step=dist.step, log=dist.log)
    return trial.suggest_float(name, dist.low, dist.high, step=dist.step, log=dist.log)

"""Dataset options: a named dataset's options resolved against its spec, a folder's checked.

Every value is coerced to the type of the spec's default (``n_queries=200`` from the command
line is an int) and unknown keys are a :class:`~ltr_bench.data.errors.DataError` listing the
allowed ones.
"""

from __future__ import annotations

from ltr_bench.data.errors import DataError, DatasetOptionError
from ltr_bench.data.generated import check_generated_options
from ltr_bench.data.specs import DatasetSpec
from ltr_bench.data.subsample import SUBSAMPLE_OPTIONS


def resolve_options(spec: DatasetSpec, options: dict | None) -> dict:
    """``spec.options`` updated with ``options``, values coerced to the defaults' types."""
    opts = dict(spec.options)
    options = options or {}
    for key, value in options.items():
        if key not in spec.options:
            import difflib

            allowed = ", ".join(spec.options) or "none"
            close = difflib.get_close_matches(key, list(spec.options), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise DatasetOptionError(
                f"dataset {spec.name!r} has no option {key!r};{hint} allowed options: {allowed}."
            )
        default = spec.options[key]
        try:
            if isinstance(default, bool):
                value = (
                    value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes")
                )
            elif isinstance(default, int):
                value = int(value) if isinstance(value, int) else int(_finite(value))
                if isinstance(options[key], float) and value != options[key]:
                    raise ValueError
            elif isinstance(default, float):
                value = _finite(value)
        except (TypeError, ValueError, OverflowError):
            raise DatasetOptionError(
                f"option {key}={options[key]!r} of dataset {spec.name!r} must be a finite "
                f"{type(default).__name__} (default {default!r})."
            ) from None
        opts[key] = value
    for key in SUBSAMPLE_OPTIONS:
        if opts.get(key, 0) < 0:
            raise DatasetOptionError(
                f"option {key}={opts[key]} of dataset {spec.name!r} must be >= 0 (0: every query)."
            )
    check_generated_options(spec.name, opts)  # ranges and memory, before anything is made
    return opts


def _finite(value) -> float:
    f = float(value)
    if f != f or f in (float("inf"), float("-inf")):
        raise ValueError
    return f


def folder_options(options: dict | None) -> dict:
    """A folder's options resolved. ``query_norm`` appears only when true, so that the
    identity (and resume keys) of folder runs made before the option existed do not change."""
    allowed = {"n_features": None, "label_max": None}
    opts: dict[str, bool | int | None] = dict(allowed)
    for key, value in (options or {}).items():
        if key == "query_norm":
            if as_bool(key, value, "a folder dataset"):
                opts[key] = True
            continue
        if key not in allowed:
            raise DataError(
                f"a folder dataset has no option {key!r}; allowed options: n_features, "
                "label_max, query_norm."
            )
        try:
            opts[key] = None if value is None else int(value)
            if isinstance(value, float) and opts[key] != value:
                raise ValueError
        except (TypeError, ValueError, OverflowError):
            raise DatasetOptionError(f"option {key}={value!r} must be an integer.") from None
        number = opts[key]
        if number is not None and number < (1 if key == "n_features" else 0):
            raise DatasetOptionError(
                f"option {key}={value!r} must be >= {int(key == 'n_features')}."
            )
    return opts


def as_bool(key: str, value, what: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes"):
        return True
    if text in ("0", "false", "no"):
        return False
    raise DataError(f"option {key}={value!r} of {what} must be true or false.")

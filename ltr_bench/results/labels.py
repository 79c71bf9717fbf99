"""Configuration labels: the one natural order of row labels and ranker names, and lists of
them on the command line.

A label names a configuration everywhere it is shown (the run summary, the records, the MLflow
run names, the report and its plots), and :func:`config_label` is the one function that makes
it: the plan's own label when the user named the configuration, else the ranker's name alone
for its defaults, else the name plus the parameters the user set
(``lightgbm[num_leaves=63,learning_rate=0.05]``). Commands that
take ``NAME[,NAME...]`` (``run --ranker``, ``tune --ranker``, ``report --ranker``) split with
:func:`split_names`, so a comma inside brackets belongs to the label; tables list labels in
:func:`label_sort_key` order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from ltr_bench.errors import UsageError

__all__ = [
    "config_label",
    "data_options",
    "label_sort_key",
    "row_label",
    "shared_data_options",
    "row_label_without",
    "split_names",
    "value_text",
    "variant_text",
]

#: joins a configuration's label and its data variant in a row's name
VARIANT_SEPARATOR = " · "


def value_text(value: Any) -> str:
    """A parameter value as a label shows it: strings bare, anything else as compact JSON
    (``0.05``, ``true``, ``[64,32]``, ``{"max_bin":63}``); ``None`` as ``None``, never ``null``."""
    if value is None:
        return "None"
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), sort_keys=True, default=repr)


def config_label(name: str, params: Mapping[str, Any] | None = None, label: str = "") -> str:
    """The label of a ranker configuration.

    ``label`` (a ``[rankers.LABEL]`` table of a plan, or a sweep point's label) wins when the
    user gave one. Otherwise: ``name`` alone when ``params`` (the parameters the *user* set,
    in the order given; never the resolved defaults) is empty, else
    ``name[key=value,...]`` with :func:`value_text` values, e.g. ``lightgbm[num_leaves=7]``.
    Two configurations of one ranker with different user-set parameters therefore never share
    a label, and the defaults' label is the bare name (the report's default baseline).
    """
    if label:
        return label
    if not params:
        return name
    return f"{name}[" + ",".join(f"{k}={value_text(v)}" for k, v in params.items()) + "]"


def variant_text(
    options: Mapping[str, Any] | None,
    identity: Mapping[str, Any] | None = None,
    *,
    leave_out: Collection[str] = (),
) -> str:
    """The data variant a row was trained on, in words: ``""`` for the dataset as it is,
    else its dataset options as the user gave them, clicks first.

    A click configuration reads ``clicks <model> <argument>=<value> ... x<sessions>``
    (``clicks pbm eta=1 x10``: 10 sessions per query), then the other protocol options the
    user set (``top_k=5``, ``logging_fraction=0.1``, ``aggregate=any``, ``logging_ranker=...``);
    ``sessions`` comes from the resolved click configuration in ``identity`` (the dataset
    identity of a record) when there is one, so the default 10 shows too. A ``click_model``
    given as allRank's section shows its ``name`` and its arguments, a nested model as
    ``name(key=value,...)`` (``clicks diverse-clicks
    dedicated_click_model=base-cascade(eta=1.0,threshold=2.0) q_percentile=0.5 x10``: the
    resolved section when ``identity`` has it). Other options (those that make the data
    itself, :func:`data_options`) follow as ``key=value`` (:func:`value_text`), except the
    keys in ``leave_out`` (a table that says them once for every row). Within each group the
    keys are sorted, so a name never depends on the order the options were given in (or on a
    record having been through JSON with sorted keys).
    """
    parts, rest = _click_parts(options, identity)
    parts += [f"{k}={value_text(rest[k])}" for k in sorted(rest) if k not in leave_out]
    return " ".join(parts)


def data_options(
    options: Mapping[str, Any] | None, identity: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The dataset options that are not about simulated clicks (``n_queries=30``,
    ``query_norm=true``): they make the data itself, train and test alike, so rows that
    differ in them are never compared; a report says the ones all its rows share once."""
    return _click_parts(options, identity)[1]


def shared_data_options(variants: Iterable[tuple[Any, Any]]) -> dict[str, Any]:
    """The data options (:func:`data_options`) that every one of ``variants`` --
    ``(dataset options, dataset identity)`` pairs, one per row -- has with the same value:
    what a table of those rows says once, in its heading, instead of in every row."""
    shared: dict[str, Any] | None = None
    for options, identity in variants:
        mine = data_options(options, identity)
        if shared is None:
            shared = mine
        else:
            shared = {k: v for k, v in shared.items() if k in mine and mine[k] == v}
    return shared or {}


def _click_parts(options, identity) -> tuple[list[str], dict[str, Any]]:
    """(the click configuration in words, the other options)."""
    options = dict(options or {})
    clicks = (identity or {}).get("clicks") or None
    parts: list[str] = []
    if options.get("clicks") or options.get("click_model") or clicks:
        section = options.pop("click_model", "")
        resolved = (clicks or {}).get("model") or {}
        name = options.pop("clicks", "") or resolved.get("name")
        if not name and isinstance(section, Mapping):
            name = section.get("name")
        parts += ["clicks", _short(name or "?")]
        if section:  # allRank's section: its arguments are the user's, nested models named
            given = resolved or (section if isinstance(section, Mapping) else {})
            parts += [f"{k}={_model_text(v)}" for k, v in (given.get("args") or {}).items()]
        # without the resolved configuration every option the user gave counts as the
        # click model's, sorted by key
        arguments = set(((clicks or {}).get("model") or {}).get("args") or options)
        protocol = set(clicks or ()) - {"sessions"}
        sessions = (clicks or {}).get("sessions", options.get("sessions", 10))
        options.pop("sessions", None)
        for group in (arguments, protocol):  # each sorted: a record read back is alike
            parts += [f"{k}={value_text(options.pop(k))}" for k in sorted(options) if k in group]
        parts.append(f"x{value_text(sessions)}")
    return parts, options


def _short(name: Any) -> str:
    """A click model's name as shown: an allRank class path by its class name."""
    return value_text(name).rsplit(".", 1)[-1]


def _model_text(value: Any) -> str:
    """An allRank section's argument: a nested model as ``name(key=value,...)``."""
    if isinstance(value, Mapping) and "name" in value:
        args = ",".join(f"{k}={_model_text(v)}" for k, v in (value.get("args") or {}).items())
        return f"{_short(value['name'])}({args})"
    if isinstance(value, list):
        return "[" + ",".join(_model_text(v) for v in value) + "]"
    return value_text(value)


def row_label(
    label: str,
    options: Mapping[str, Any] | None = None,
    identity=None,
    *,
    leave_out: Collection[str] = (),
) -> str:
    """A row's plain name wherever it is shown: the configuration's ``label``
    (:func:`config_label`) and, when it was trained on a data variant, that variant in words
    (:func:`variant_text`), e.g. ``lightgbm · clicks pbm eta=1 x10``. A label the user chose
    (``run --label``, a plan's table name) is shown as given with the variant after it.
    ``leave_out``: data options a table states once for all its rows (:func:`data_options`)."""
    variant = variant_text(options, identity, leave_out=leave_out)
    return f"{label}{VARIANT_SEPARATOR}{variant}" if variant else label


# A decimal number in a label: digits, an optional fraction and exponent (json.dumps writes
# 1e-05). A minus sign counts only where it cannot be a hyphen inside a name
# ("lambda=-1" is negative, "gauss-10" is the name "gauss-" and 10).
_NUMBER = re.compile(r"(?:(?<![\w.])-)?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
# In text, "]" and "[" sort before every other character: a label's bracketed variants
# follow it directly ("lightgbm", "lightgbm[...]", "lightgbm-big") and a shorter settings
# list comes before a longer one that starts alike ("[num_leaves=63]" before
# "[num_leaves=63,learning_rate=0.05]"; by code point "," < "]" would reverse them).
_BRACKETS_FIRST = str.maketrans({"]": "\x00", "[": "\x01"})


def label_sort_key(label: str) -> tuple:
    """Sort key for row labels and ranker names: natural order, the one order used wherever
    the report lists labels.

    The label is cut into text and decimal numbers (``-?digits[.digits][e±digits]``, see
    ``_NUMBER``); numbers compare by value, text by code point (case-sensitive, as plain
    ``sorted``) except that ``]`` then ``[`` sort before any other character
    (``_BRACKETS_FIRST``). Hence ``lgmml[n_metrics=2]`` < ``lgmml[n_metrics=10]`` <
    ``lgmml[n_metrics=100]``; ``lightgbm`` < ``lightgbm[num_leaves=7]`` <
    ``lightgbm[num_leaves=63]`` < ``lightgbm[num_leaves=63,learning_rate=0.05]`` <
    ``lightgbm-big``; and, because a fraction belongs to its number,
    ``learning_rate=0.05`` < ``0.1`` < ``1`` (``1e-05`` < ``0.001`` too). The price: a
    dotted version ``1.10`` reads as 1.1 < 1.9. At one position a number sorts before text.
    Equal values written differently (``0.10`` and ``0.1``) are ordered by their text, and
    the whole label breaks any remaining tie, so the order is total and deterministic.

    Returns ``(parts, label)``, parts being ``(0, value, text)`` for a number and
    ``(1, text)`` for text: the leading 0/1 means a float is never compared with a string.
    """
    parts: list[tuple] = []
    pos = 0
    for m in _NUMBER.finditer(label):
        if m.start() > pos:
            parts.append((1, label[pos : m.start()].translate(_BRACKETS_FIRST)))
        parts.append((0, float(m.group()), m.group()))
        pos = m.end()
    if pos < len(label):
        parts.append((1, label[pos:].translate(_BRACKETS_FIRST)))
    return tuple(parts), label


def split_names(values: str | Iterable[str], *, option: str) -> list[str]:
    """``NAME[,NAME...]`` option values -> the names, split only at commas outside ``[...]``.

    A row label such as ``lightgbm[num_leaves=63,learning_rate=0.05]`` stays whole; nested
    brackets (``lgmml[dims=[1,2]]``) count depth. ``values`` is one text or several (a
    ``multiple=True`` option); names are stripped, empty ones dropped. An unbalanced
    bracket (``]`` with none open, or ``[`` never closed) raises
    :class:`~ltr_bench.errors.UsageError` (exit 2) naming ``option``.
    """
    texts = [values] if isinstance(values, str) else list(values)
    out: list[str] = []
    for text in texts:
        depth, start = 0, 0
        for i, ch in enumerate(text + ","):  # the sentinel comma ends the last name
            if ch == "[":
                depth += 1
            elif ch == "]":
                depth -= 1
                if depth < 0:
                    raise UsageError(
                        f"{option} {text}: ']' at position {i + 1} closes no "
                        f"'['; brackets must balance, as in "
                        f"lightgbm[num_leaves=63,learning_rate=0.05]"
                    )
            elif ch == "," and depth == 0:
                name = text[start:i].strip()
                if name:
                    out.append(name)
                start = i + 1
        if depth > 0:
            raise UsageError(
                f"{option} {text}: {depth} '[' not closed; brackets must "
                f"balance, as in lightgbm[num_leaves=63,learning_rate=0.05]"
            )
    return out


def row_label_without(
    label: str, options: Mapping[str, Any] | None, identity: Any, key: str
) -> str:
    """:func:`row_label` with the data option ``key`` left out of the variant: the name of a
    line of a figure whose x axis is ``key`` (``lightgbm · clicks pbm eta=1`` for every
    point of a curve over ``sessions``, where each point's row is ``... x10``, ``... x100``)."""
    options = dict(options or {})
    value = options.pop(key, None)
    variant = variant_text(options, identity)
    if key == "sessions" and variant:  # variant_text always says the sessions: x<sessions>
        sessions = ((identity or {}).get("clicks") or {}).get("sessions", value)
        variant = " ".join(t for t in variant.split(" ") if t != f"x{value_text(sessions)}")
    return f"{label}{VARIANT_SEPARATOR}{variant}" if variant else label

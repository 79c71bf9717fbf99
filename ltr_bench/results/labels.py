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
from collections.abc import Iterable, Mapping
from typing import Any

from ltr_bench.errors import UsageError

__all__ = ["config_label", "label_sort_key", "split_names", "value_text"]


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

"""Aligned text tables that fit a terminal: the one renderer of every table the CLI prints
(``models``, ``datasets``, ``rankers``, the summary of ``run`` and ``tune``).

Width: :func:`table_width` is ``COLUMNS`` when that is a whole number of at least 40, else
120. The terminal's own size is not asked on purpose: a table piped into a file, ``less`` or
a CI log reads the same as on screen, and ``COLUMNS=200`` (or ``--wide``) widens it.

Fitting (:func:`fit_table`), only while the table is wider than the width: first the
columns every cell of which says nothing (``-`` or empty) are left out, then the columns
with a drop rank (highest rank first, the rightmost first among equals), then the cells of
the columns marked ``cut`` (descriptive text, never an id or a path: what a user copies is
shown whole or not at all) are cut to what fits, ending in ``…``. A row's cells are joined
by two spaces; the header is underlined by dashes; trailing blanks are stripped. The
columns left out are named in :attr:`Fitted.dropped` for the caller's note.

Markdown tables (:func:`markdown_table`, the tables of ``report``) lose no column instead: a
pipe table wider than the width is split into consecutive tables of the same rows, each
repeating the first ``keep`` columns (the row's name) before as many of the other columns as
fit, in order, separated by a blank line. Cells are not padded (the Markdown stays as
written, ``|`` in a cell escaped as ``\\|``); a line's width is its length.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "DEFAULT_WIDTH",
    "Column",
    "Fitted",
    "fit_table",
    "left_out_note",
    "markdown_table",
    "table_width",
]

DEFAULT_WIDTH = 120
_MIN_WIDTH = 40  # a COLUMNS below this is taken for a mistake
_GAP = "  "
_MIN_CUT = 12  # a cut column keeps at least this many characters


def table_width(env: Mapping[str, str] | None = None) -> int:
    """``COLUMNS`` (from ``env``, default ``os.environ``) when it is a whole number >= 40,
    else :data:`DEFAULT_WIDTH` (120)."""
    text = (os.environ if env is None else env).get("COLUMNS", "").strip()
    if text.isdigit() and int(text) >= _MIN_WIDTH:
        return int(text)
    return DEFAULT_WIDTH


@dataclass(frozen=True)
class Column:
    """One column: its header, right-aligned or not, ``drop`` (0: never left out; else
    left out to fit, higher first) and ``cut`` (its text may be cut to fit)."""

    name: str
    right: bool = False
    drop: int = 0
    cut: bool = False


@dataclass
class Fitted:
    """The rendered table (lines joined by newlines, no final newline) and the names of the
    columns left out to fit."""

    text: str
    dropped: list[str] = field(default_factory=list)


def _empty(cells: Sequence[str]) -> bool:
    return all(c in ("", "-") for c in cells)


def _total(widths: Sequence[int]) -> int:
    return sum(widths) + len(_GAP) * max(0, len(widths) - 1)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def fit_table(
    columns: Sequence[Column | str],
    rows: Sequence[Sequence[str]],
    *,
    width: int | None = None,
) -> Fitted:
    """``rows`` under ``columns`` as aligned text no wider than ``width`` where leaving
    out and cutting columns allows it (see the module); ``width=None``: every column, whole.
    A column given as a string is a plain left-aligned column that is never left out."""
    cols = [c if isinstance(c, Column) else Column(c) for c in columns]
    table = [[str(c) for c in row] for row in rows]
    keep = list(range(len(cols)))
    dropped: list[int] = []

    def widths() -> list[int]:
        return [max([len(cols[i].name)] + [len(r[i]) for r in table]) for i in keep]

    if width is not None:
        # what says nothing goes first, then by drop rank (rightmost first among equals)
        order = [i for i in reversed(keep) if table and _empty([r[i] for r in table])]
        ranked = sorted((i for i in keep if cols[i].drop), key=lambda i: (-cols[i].drop, -i))
        order += [i for i in ranked if i not in order]
        for i in order:
            if _total(widths()) <= width:
                break
            keep.remove(i)
            dropped.append(i)
        cuts = [k for k, i in enumerate(keep) if cols[i].cut]
        w = widths()
        while _total(w) > width and cuts:
            k = max(cuts, key=lambda k: w[k])
            room = max(_MIN_CUT, w[k] - (_total(w) - width), len(cols[keep[k]].name))
            if room >= w[k]:
                cuts.remove(k)
                continue
            i = keep[k]
            for r in table:
                r[i] = _cut(r[i], room)
            w = widths()
    w = widths()
    lines = []
    for row in [[c.name for c in cols], *table]:
        cells = [row[i].rjust(wi) if cols[i].right else row[i].ljust(wi) for i, wi in zip(keep, w)]
        lines.append(_GAP.join(cells).rstrip())
    rule = ["-" * wi for wi in w]
    if width is not None and rule and _total(w) > width:  # a long last cell: rule to the edge
        rule[-1] = "-" * max(len(cols[keep[-1]].name), width - _total(w[:-1]) - len(_GAP))
    lines.insert(1, _GAP.join(rule))
    return Fitted("\n".join(lines), [cols[i].name for i in sorted(dropped)])


def left_out_note(fitted: Fitted, width: int, how: str) -> str | None:
    """The note that names the columns left out to fit ``width`` and ``how`` to see them
    (e.g. ``--wide``); None when none was."""
    if not fitted.dropped:
        return None
    return (
        f"note: left out to fit {width} columns: {', '.join(fitted.dropped)} "
        f"({how} shows every column)"
    )


def _md_lines(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]):
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join("---:" if r else "---" for r in right) + "|")
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def markdown_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    right_from: int = 1,
    keep: int = 1,
    width: int | None = None,
) -> list[str]:
    """``rows`` under ``header`` as Markdown pipe-table lines, columns from ``right_from`` on
    right-aligned; with ``width``, split (see the module) so that every line is at most
    ``width`` long where one column beside the first ``keep`` allows it (a column wider than
    that alone still gets a table of its own, whole)."""

    def esc(c) -> str:
        return str(c).replace("|", "\\|")

    head = [esc(h) for h in header]
    body = [[esc(c) for c in row] for row in rows]
    right = [i >= right_from for i in range(len(head))]

    def lines(cols: list[int]) -> list[str]:
        return _md_lines(
            [head[i] for i in cols], [[r[i] for i in cols] for r in body], [right[i] for i in cols]
        )

    def wide(cols: list[int]) -> int:
        return max(len(line) for line in lines(cols))

    fixed = list(range(min(keep, len(head))))
    rest = list(range(len(fixed), len(head)))
    if width is None or not rest or wide(fixed + rest) <= width:
        return lines(fixed + rest)
    groups: list[list[int]] = [[]]
    for i in rest:
        if groups[-1] and wide(fixed + groups[-1] + [i]) > width:
            groups.append([])
        groups[-1].append(i)
    out: list[str] = []
    for g in groups:
        out += ([""] if out else []) + lines(fixed + g)
    return out

"""Writing published rows: the ``ltr-bench published`` listing (Markdown, CSV) and the section a
report prints under its table (Markdown, HTML). Nothing here decides which rows are shown
(:mod:`.compare` does)."""

from __future__ import annotations

import csv
import html
import io
import math
import re

from ltr_bench.report.published.compare import MODEL_MAP, PublishedSection
from ltr_bench.report.published.table import COLUMNS, CONVENTIONS, PublishedRow

__all__ = ["FORMATS", "format_published", "section_html", "section_markdown"]

FORMATS = ("md", "csv")
_GITHUB = re.compile(r"^https://github\.com/([^/]+/[^/]+)/blob/([0-9a-f]{7})[0-9a-f]*/(.+)$")


def source_name(url: str) -> str:
    """``owner/repo@abc1234:path`` for a GitHub file link, else the link itself."""
    m = _GITHUB.match(url)
    return f"{m.group(1)}@{m.group(2)}:{m.group(3)}" if m else url


def source_short(url: str) -> str:
    """``owner/repo@abc1234 file`` (the file's base name) for a GitHub file link: a table
    cell's link text; the full path is in the link's title."""
    m = _GITHUB.match(url)
    return f"{m.group(1)}@{m.group(2)} {m.group(3).rsplit('/', 1)[-1]}" if m else url


def _num(v: float) -> str:
    return "-" if v is None or math.isnan(v) else f"{v:.4f}"


def _diff(v: float) -> str:
    return "-" if v is None or math.isnan(v) else f"{v:+.4f}"


def _esc_md(text: str) -> str:
    return str(text).replace("|", "\\|")


def _md_table(header: list[str], body: list[list[str]], right: int) -> list[str]:
    """A Markdown table; columns from ``right`` on are right-aligned."""
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if i < right else "---:" for i in range(len(header))) + "|",
    ]
    return lines + ["| " + " | ".join(_esc_md(c) for c in row) + " |" for row in body]


def _note_numbers(notes: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in notes:
        if n and n not in out:
            out[n] = len(out) + 1
    return out


def _listing_md(rows: list[PublishedRow], dataset: str | None) -> str:
    notes = _note_numbers([r.note for r in rows])
    sources = _note_numbers([r.source for r in rows])
    header = [
        "dataset",
        "model",
        "ltr-bench ranker",
        "metric",
        "convention",
        "split",
        "selected on",
        "value",
        "note",
        "source",
    ]
    body = []
    for r in rows:
        counterpart = MODEL_MAP.get(r.model)
        body.append(
            [
                r.dataset,
                r.model,
                counterpart.text if counterpart else "-",
                r.metric,
                r.convention,
                r.split_text,
                r.selection,
                repr(r.value),
                f"[{notes[r.note]}]" if r.note else "",
                f"S{sources[r.source]}",
            ]
        )
    title = f"Published results for {dataset}" if dataset else "Published results"
    parts = [f"## {title} ({len(rows)} rows)", "", *_md_table(header, body, right=7), ""]
    parts += ["Notes:", ""] + [f"{i}. {n}" for n, i in notes.items()]
    parts += ["", "Sources:", ""] + [f"- S{i}: <{s}>" for s, i in sources.items()]
    parts += ["", "Conventions:", ""] + [f"- {k}: {v}" for k, v in CONVENTIONS.items()]
    return "\n".join(parts) + "\n"


def _listing_csv(rows: list[PublishedRow]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow(r.as_dict())
    return buf.getvalue()


def format_published(rows: list[PublishedRow], fmt: str = "md", *, dataset: str | None = None):
    """``ltr-bench published``: ``md`` (a table, numbered notes and sources) or ``csv`` (the
    table's own columns, the same rows; :func:`~.table.load_published` reads it back)."""
    if fmt == "csv":
        return _listing_csv(rows)
    if fmt == "md":
        return _listing_md(rows, dataset)
    raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")


def _section_cells(line) -> list[str]:
    p = line.published
    model = p.model + (" (test-selected)" if p.selection == "test" else "")
    return [
        model,
        p.metric,
        p.convention,
        p.split_text,
        _num(p.value),
        line.label or "-",
        _num(line.ours),
        _diff(line.difference),
    ]


_SECTION_HEADER = [
    "published model",
    "metric",
    "convention",
    "split",
    "published",
    "ours",
    "our value",
    "ours - published",
]


def section_markdown(section: PublishedSection, width: int | None = None) -> str:
    """The Markdown a report prints under its table (empty string when nothing to say);
    ``width``: the table no wider (:func:`ltr_bench.report.fit.markdown_table`)."""
    from ltr_bench.report.fit import markdown_table

    if not section.lines and not section.notes:
        return ""
    parts = [f"### Published results for {section.dataset}", ""]
    if section.lines:
        sources = _note_numbers([ln.published.source for ln in section.lines])
        # reference-style links keep the table narrow; the definitions follow the list
        body = [[*_section_cells(ln), f"[S{sources[ln.published.source]}]"] for ln in section.lines]
        parts += markdown_table(
            [*_SECTION_HEADER, "source"], body, right_from=4, keep=2, width=width
        )
        parts += [""]
        parts += [f"- [S{i}]: {source_name(s)}" for s, i in sources.items()]
        convs = ", ".join(section.conventions)
        parts += [
            f"- Shown: published test numbers under a convention these results recorded "
            f"({convs}), beside each of our rows for the same model, under that convention and "
            "over the same folds (mean over seeds per fold, then over folds).",
        ]
    parts += [f"- Note: {n}" for n in section.notes]
    if section.lines:
        parts += [""] + [f"[S{i}]: {s}" for s, i in sources.items()]
    return "\n".join(parts) + "\n"


def section_html(section: PublishedSection) -> str:
    """The same section as HTML (sources as links); empty string when nothing to say."""
    if not section.lines and not section.notes:
        return ""
    e = html.escape
    out = [f"<h2>Published results for {e(section.dataset)}</h2>"]
    if section.lines:
        head = "".join(f"<th>{e(h)}</th>" for h in [*_SECTION_HEADER, "source"])
        rows = []
        for ln in section.lines:
            cells = _section_cells(ln)
            tds = "".join(f"<td>{e(c)}</td>" for c in cells)
            src = ln.published.source
            link = (
                f'<a href="{e(src, quote=True)}" title="{e(source_name(src), quote=True)}">'
                f"{e(source_short(src))}</a>"
            )
            rows.append(f"<tr>{tds}<td>{link}</td></tr>")
        out.append(
            '<div class="scroll"><table class="published"><thead><tr>'
            + head
            + "</tr></thead><tbody>"
            + "".join(rows)
            + "</tbody></table></div>"
        )
        out.append(
            '<p class="sub">Published test numbers under a convention these results recorded ('
            + e(", ".join(section.conventions))
            + "), beside each of our rows for the same model, under that convention and over "
            "the same folds.</p>"
        )
    if section.notes:
        out.append('<ul class="notes">' + "".join(f"<li>{e(n)}</li>" for n in section.notes))
        out.append("</ul>")
    return "\n".join(out)

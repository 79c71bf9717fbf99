"""``docs/reliability.md`` names the test that holds each promise; every test it names must
exist (a test deleted by a later change once left the page pointing at nothing), and every
corpus case it names in italics must be a case of one of the corpora."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "reliability.md"


def _test_sources() -> str:
    files = [*(REPO / "tests").rglob("test_*.py"), *(REPO / "plugins").rglob("test_*.py")]
    return "\n".join(p.read_text(encoding="utf-8") for p in files if ".venv" not in p.parts)


def test_every_test_named_in_the_reliability_page_exists():
    names = set(re.findall(r"\b(test_[a-z0-9_]+)\b(?!\.py)", PAGE.read_text(encoding="utf-8")))
    defined = set(re.findall(r"^def (test_[a-z0-9_]+)", _test_sources(), re.M))
    missing = sorted(names - defined)
    assert not missing, f"docs/reliability.md names tests that do not exist: {missing}"


def test_every_corpus_case_named_in_the_bullet_table_exists():
    text = PAGE.read_text(encoding="utf-8")
    table = text[text.index("## Issue 27, bullet by bullet") :]
    sources = _test_sources()
    cases = set(re.findall(r'^\s*\(\s*"([^"]+)",', sources, re.M))
    named = set(re.findall(r"\*([^*|]+)\*", table))
    missing = sorted(n for n in named if n not in cases)
    assert not missing, f"corpus cases named in the table that do not exist: {missing}"

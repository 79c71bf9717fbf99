"""The API reference: Sphinx roles in docstrings become links (scripts/griffe_sphinx_roles.py,
the griffe extension mkdocs.yml gives mkdocstrings), resolved in the docstring's own scope."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

griffe = pytest.importorskip("griffe")  # the docs extra

REPO = Path(__file__).resolve().parents[1]


def _extension():
    spec = importlib.util.spec_from_file_location(
        "griffe_sphinx_roles", REPO / "scripts" / "griffe_sphinx_roles.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_extension_is_the_one_mkdocs_configures():
    assert "scripts/griffe_sphinx_roles.py:SphinxRoles" in (REPO / "mkdocs.yml").read_text()


def test_roles_become_optional_autorefs_to_the_names_they_resolve_to_in_scope():
    roles = _extension()
    pkg = griffe.load(
        "ltr_bench",
        search_paths=[str(REPO)],
        extensions=griffe.load_extensions(roles.SphinxRoles()),
    )
    ranker = pkg["ranker"]
    text = ranker.docstring.value
    assert ":class:" not in text and ":func:" not in text
    # unqualified, resolved in the module: ``:class:`RankerTags``` and ``:func:`apply_run_...```
    assert '<autoref identifier="ltr_bench.ranker.RankerTags" optional>' in text
    assert '<autoref identifier="ltr_bench.ranker.apply_run_settings" optional>' in text
    # an imported name resolves to where it comes from (scikit-learn: no page, so no link)
    assert '<autoref identifier="sklearn.exceptions.NotFittedError" optional>' in text
    # ``~`` shows the last component; a name in a method resolves through its class and module
    checks = pkg["testing"].docstring.value
    assert "<code>RankerTags</code>" in checks
    tags_doc = ranker["BaseRanker.ranker_tags"].docstring.value
    assert '<autoref identifier="ltr_bench.ranker.RankerTags" optional>' in tags_doc


def test_a_name_that_does_not_resolve_stays_code_without_a_link():
    roles = _extension()
    module = griffe.visit("m", filepath=Path("m.py"), code='"""See :class:`Nowhere`."""\n')
    roles._walk(module)
    assert module.docstring.value == "See <code>Nowhere</code>."

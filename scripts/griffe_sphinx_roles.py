"""Griffe extension for the API reference: Sphinx cross-reference roles become links.

The docstrings of ``ltr_bench`` (and of the plugins) name other objects with Sphinx roles,
``:class:`RankerTags```, ``:func:`~ltr_bench.ranker.apply_run_settings```, ``:mod:`.data```,
which mkdocstrings would print as text. Once a package is loaded, each role in each docstring
is resolved in the scope of the object that holds the docstring (the names it imports count)
and replaced by an optional mkdocs-autorefs reference: a link when the target is rendered on
some page of the manual, the name in code type otherwise (an external class such as
scikit-learn's ``NotFittedError``). ``~`` shows the last component only, as in Sphinx. A
name that does not resolve stays code. Configured in ``mkdocs.yml`` (``extensions``).
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

#: ``:role:`target``` and ``:py:role:`target```; the target may start with ``~`` or ``.``
ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const):`([^`]+)`")


def _target(obj: griffe.Object, text: str) -> tuple[str | None, str]:
    """``(identifier or None, title)`` of one role's target as written in ``obj``'s docstring."""
    short = text.startswith("~")
    name = text.lstrip("~")
    title = name.rsplit(".", 1)[-1] if short else name.lstrip(".")
    if name.startswith("."):  # relative to the module that holds the docstring
        module = obj if obj.is_module else obj.module
        base = module.path if module.is_package else module.path.rsplit(".", 1)[0]
        return f"{base}{name}", title
    head, _, rest = name.partition(".")
    try:
        resolved = obj.resolve(head)
    except griffe.NameResolutionError:
        scope = obj.parent
        resolved = None
        while scope is not None and resolved is None:  # a name of an enclosing class/module
            try:
                resolved = scope.resolve(head)
            except griffe.NameResolutionError:
                scope = scope.parent
    if resolved is None:
        return (name if "." in name else None), title
    return (f"{resolved}.{rest}" if rest else resolved), title


def _replace(obj: griffe.Object, match: re.Match[str]) -> str:
    identifier, title = _target(obj, match.group(1))
    code = f"<code>{html.escape(title)}</code>"
    if identifier is None:
        return code
    return f'<autoref identifier="{html.escape(identifier)}" optional>{code}</autoref>'


def _walk(obj: griffe.Object) -> None:
    if obj.docstring is not None and ":" in obj.docstring.value:
        obj.docstring.value = ROLE.sub(lambda m: _replace(obj, m), obj.docstring.value)
    for member in obj.members.values():
        if not member.is_alias:
            _walk(member)


class SphinxRoles(griffe.Extension):
    """Rewrite the roles of every docstring once the whole package is loaded (so that names
    imported from sibling modules resolve)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        _walk(pkg)

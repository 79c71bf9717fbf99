"""Discover rankers through the ``ltr_bench.rankers`` entry point group, lazily.

Built-in baselines register in the main ``pyproject.toml`` exactly as third-party plugins do
in theirs, so there is one code path. Listing rankers reads entry-point metadata only and
imports no ranker module; a ranker's module is imported when it is first used. A plugin whose
import fails is reported as unavailable (with its error) and the others keep working.

A plugin whose declared requirements (its distribution's ``Requires-Dist``) are not installed
is reported as unavailable *before* anything is imported, with the ``pip install`` command
that fixes it (:meth:`RankerEntry.missing_requirements`): a plugin with a heavy optional
dependency (PyTorch) is listed without importing that dependency.
"""

from __future__ import annotations

import difflib
import os
import shlex
import sys
import warnings
from dataclasses import dataclass
from importlib import metadata
from typing import Any, cast

from ltr_bench.errors import EXIT_FAILED, UsageError

ENTRY_POINT_GROUP = "ltr_bench.rankers"
#: a plugin's own note of what a ranker will run on (``ltr-bench rankers``; :func:`runtime_note`)
RUNTIME_GROUP = "ltr_bench.runtime"
#: the distribution of the core and its built-in rankers
CORE_DISTRIBUTION = "ltr-bench"


class RegistryError(UsageError):
    """Base class for registry errors; ``str(err)`` is the user-facing message (exit 2,
    except :class:`RankerLoadError`)."""


class UnknownRankerError(RegistryError, KeyError):
    """No ranker is registered under this name. ``suggestions`` holds close matches."""

    def __init__(self, name: str, available: list[str]):
        self.name = name
        self.available = sorted(available)
        self.suggestions = _close_matches(name, self.available)
        msg = f"unknown ranker {name!r}."
        if self.suggestions:
            msg += f" Did you mean: {', '.join(self.suggestions)}?"
        msg += f" Available rankers: {', '.join(self.available) or '(none installed)'}."
        super().__init__(msg)

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0])

    def __reduce__(self) -> tuple[type, tuple[str, list[str]]]:  # picklable across processes
        return type(self), (self.name, self.available)


def _normalise(name: str) -> str:
    return name.lower().replace("_", "-")


def _close_matches(name: str, available: list[str]) -> list[str]:
    """Up to 3 registered names close to ``name``, ignoring case and ``_`` versus ``-``."""
    by_key: dict[str, str] = {}
    for candidate in available:
        by_key.setdefault(_normalise(candidate), candidate)
    keys = difflib.get_close_matches(_normalise(name), list(by_key), n=3, cutoff=0.5)
    return [by_key[k] for k in keys]


class RankerLoadError(RegistryError):
    """The ranker is registered but its plugin cannot be imported or is not a ranker."""

    exit_code = EXIT_FAILED  # the invocation is fine; the installation is broken


class BadParameterError(RegistryError, ValueError):
    """A parameter given for a ranker does not exist or has an invalid value."""


@dataclass(frozen=True)
class RankerEntry:
    """One registered ranker, as its entry point declares it (nothing imported)."""

    name: str
    target: str  # "module:attribute"
    distribution: str
    version: str

    def missing_requirements(self) -> list[str]:
        """The requirements of this ranker's distribution that are not met, as written in
        its metadata (e.g. ``["torch==2.13.0"]``): not installed, or installed at a version
        outside the specifier. Reads metadata only (imports nothing); requirements behind
        an extra or an environment marker that does not apply are skipped."""
        if self.distribution == "(import path)":
            return []
        key = (_scan_key(), self.distribution)
        if key not in _unmet_cache:  # loaded once per cell: keep metadata reads off that path
            try:
                requires = metadata.distribution(self.distribution).requires or []
            except Exception:  # unreadable metadata: say nothing rather than guess
                requires = []
            if any(k[0] != key[0] for k in _unmet_cache):  # the installation changed
                _unmet_cache.clear()
            _unmet_cache[key] = [text for text in requires if _unmet(text)]
        return list(_unmet_cache[key])

    def install_hint(self) -> str | None:
        """``"pip install 'torch==2.13.0'"`` for the missing requirements, or None."""
        missing = self.missing_requirements()
        if not missing:
            return None
        return "pip install " + " ".join(shlex.quote(_without_marker(m)) for m in missing)

    def load(self) -> type:
        """Import the ranker class; :class:`RankerLoadError` says why when that fails
        (with the install command when a declared requirement is missing)."""
        hint = self.install_hint()
        if hint is not None:
            raise RankerLoadError(
                f"ranker {self.name!r} from {self.distribution} {self.version} needs "
                f"{', '.join(self.missing_requirements())}, which is not installed; "
                f"install it with: {hint}"
            )
        try:
            if self.distribution == "(import path)":
                # like `python -m`: a plan run from a project folder finds its own modules
                import os
                import sys

                if os.getcwd() not in sys.path:
                    sys.path.append(os.getcwd())
            ep = metadata.EntryPoint(name=self.name, value=self.target, group=ENTRY_POINT_GROUP)
            obj = ep.load()
        except Exception as exc:  # a broken plugin must not take the others down
            raise RankerLoadError(
                f"ranker {self.name!r} from {self.distribution} {self.version} could not be "
                f"loaded ({self.target}): {type(exc).__name__}: {exc}"
            ) from exc
        if not (callable(getattr(obj, "fit", None)) and callable(getattr(obj, "predict", None))):
            raise RankerLoadError(
                f"ranker {self.name!r} ({self.target}) does not have fit() and predict()"
            )
        # the built-in rankers ship with the core: they follow its contract by construction
        problem = None if self.distribution == CORE_DISTRIBUTION else contract_mismatch(obj)
        if problem is not None:
            raise RankerLoadError(
                f"ranker {self.name!r} from {self.distribution} {self.version}: {problem}"
                + ("" if self.distribution == "(import path)" else _upgrade_hint(self, obj))
            )
        return cast(type, obj)


def runtime_note(entry: RankerEntry) -> str | None:
    """What ranker ``entry`` will run on, in a few words (``neural``: ``torch 2.13.0+cpu (CPU
    build), device auto -> cpu``), or None when its distribution says nothing.

    The note is the string returned by the function the ranker's own distribution registers
    under the :data:`RUNTIME_GROUP` entry-point group with the ranker's name, called with no
    argument (it should be cheap: ``ltr-bench rankers`` calls it for every available ranker).
    A function that fails gives ``runtime unknown (<error>)``: a note informs, it never stops
    the listing. Newlines become spaces."""
    if entry.distribution == "(import path)":
        return None
    try:
        eps = metadata.distribution(entry.distribution).entry_points
        found = [ep for ep in eps if ep.group == RUNTIME_GROUP and ep.name == entry.name]
    except Exception:  # unreadable metadata: no note rather than a guess
        return None
    if not found:
        return None
    try:
        note = found[0].load()()
    except Exception as exc:  # a plugin's note must not take the listing down
        return f"runtime unknown ({type(exc).__name__}: {exc})"
    return " ".join(str(note).split())


def declared_contract_version(ranker: object) -> object:
    """The ranker contract version a ranker class (or instance) was built for: its
    ``contract_version`` attribute, or :data:`~ltr_bench.ranker.UNVERSIONED_CONTRACT` when it
    declares none (a plugin written before the contract had versions)."""
    from ltr_bench.ranker import UNVERSIONED_CONTRACT  # the plugin's import loaded it already

    return getattr(ranker, "contract_version", UNVERSIONED_CONTRACT)


def contract_mismatch(ranker: object) -> str | None:
    """Why this ltr-bench cannot run a ranker built for another contract version, or None
    when the version it declares (:func:`declared_contract_version`) is one of
    :data:`~ltr_bench.ranker.SUPPORTED_CONTRACT_VERSIONS`."""
    from ltr_bench.ranker import CONTRACT_VERSION, SUPPORTED_CONTRACT_VERSIONS

    declared = declared_contract_version(ranker)
    if not isinstance(declared, int) or isinstance(declared, bool):
        return f"contract_version must be an int, got {declared!r}"
    if declared in SUPPORTED_CONTRACT_VERSIONS:
        return None
    runs = ", ".join(str(v) for v in SUPPORTED_CONTRACT_VERSIONS)
    if declared > CONTRACT_VERSION:
        return (
            f"it is built for ranker contract version {declared}, newer than this ltr-bench "
            f"{_core_version()} implements ({CONTRACT_VERSION}); upgrade ltr-bench: "
            "pip install -U ltr-bench"
        )
    return (
        f"it is built for ranker contract version {declared}, which this ltr-bench "
        f"{_core_version()} no longer runs (it runs version(s) {runs}; see the deprecation "
        "policy in the contributor's guide)"
    )


def _upgrade_hint(entry: RankerEntry, obj: object) -> str:
    """The command that brings a plugin built for an older (or a malformed) contract version
    up to date; nothing for a newer one (the message says to upgrade ltr-bench)."""
    from ltr_bench.ranker import CONTRACT_VERSION

    declared = declared_contract_version(obj)
    if isinstance(declared, int) and not isinstance(declared, bool) and declared > CONTRACT_VERSION:
        return ""
    return f"; upgrade the plugin: pip install -U {shlex.quote(entry.distribution)}"


def _core_version() -> str:
    from ltr_bench import __version__

    return __version__


def _without_marker(requirement: str) -> str:
    return requirement.split(";", 1)[0].strip()


def _unmet(requirement: str) -> bool:
    """Whether a ``Requires-Dist`` line applies here and is not satisfied."""
    try:
        from packaging.requirements import Requirement
    except ImportError:  # no packaging: check presence only, by the leading name
        name = _without_marker(requirement)
        for sep in "<>=!~[ (":
            name = name.split(sep, 1)[0]
        if ";" in requirement:
            return False
        return installed_version(name) is None
    try:
        req = Requirement(requirement)
    except Exception:
        return False
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        return False
    installed = installed_version(req.name)
    if installed is None:
        return True
    return bool(req.specifier) and not req.specifier.contains(installed, prereleases=True)


def installed_version(name: str) -> str | None:
    """The installed version of distribution ``name``, None when it is not installed (or its
    metadata cannot be read). Reading a distribution's metadata parses its whole METADATA
    file, so answers are kept until the installation changes (:func:`_scan_key`)."""
    key = (_scan_key(), name)
    if key not in _version_cache:
        if any(k[0] != key[0] for k in _version_cache):
            _version_cache.clear()
        try:
            _version_cache[key] = metadata.version(name)
        except Exception:
            _version_cache[key] = None
    return _version_cache[key]


#: what ``_scan_key`` returns: (the distributions function, sys.path, its folders' mtimes)
ScanKey = tuple[Any, tuple[str, ...], tuple[int | None, ...]]


def _scan_key() -> ScanKey:
    """What the installed distributions depend on: the import path and each of its
    folders' modification time (installing or removing a distribution adds or removes an
    entry in a folder of ``sys.path``, which changes that folder's time stamp)."""
    stamps: list[int | None] = []
    for entry in sys.path:
        try:
            stamps.append(os.stat(entry or ".").st_mtime_ns)
        except OSError:
            stamps.append(None)
    return (metadata.distributions, tuple(sys.path), tuple(stamps))


#: {(scan key, distribution): its unmet requirements} (every distribution asked since the
#: installation last changed: ``ltr-bench rankers`` asks each one once, not once per ranker)
_unmet_cache: dict[tuple[ScanKey, str], list[str]] = {}

#: {(scan key, distribution name): its installed version or None}
_version_cache: dict[tuple[ScanKey, str], str | None] = {}

#: (scan key, entries, warnings) of the last scan
_scan: tuple[ScanKey, list[RankerEntry], list[tuple[Warning | str, type[Warning]]]] | None = None


def _entry_points() -> list[RankerEntry]:
    """The registered rankers. Reading every distribution's metadata costs about 13 ms, paid
    by every cell and every tuning trial when repeated, so the scan is kept until
    :func:`_scan_key` changes; its warnings are repeated on every call."""
    global _scan
    key = _scan_key()
    if _scan is None or _scan[0] != key:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            entries = _scan_entry_points()
        _scan = (key, entries, [(w.message, w.category) for w in caught])
    for message, category in _scan[2]:
        warnings.warn(message, category, stacklevel=3)
    return list(_scan[1])


def _scan_entry_points() -> list[RankerEntry]:
    entries: dict[str, RankerEntry] = {}
    for dist in metadata.distributions():
        try:  # one unreadable distribution (e.g. bad bytes in its metadata) must not hide
            eps = [ep for ep in dist.entry_points if ep.group == ENTRY_POINT_GROUP]
            if not eps:
                continue
            name = dist.metadata["Name"] or "?"
            version = dist.version or "?"
        except Exception as exc:  # the others: warn and skip it
            where = getattr(dist, "_path", "?")
            warnings.warn(
                f"skipping an installed distribution whose metadata cannot be read ({where}): "
                f"{type(exc).__name__}: {exc}",
                stacklevel=3,
            )
            continue
        for ep in eps:
            entry = RankerEntry(ep.name, ep.value, name, version)
            previous = entries.get(ep.name)
            if previous is not None and previous.target != entry.target:
                warnings.warn(
                    f"ranker name {ep.name!r} is registered twice ({previous.distribution}: "
                    f"{previous.target}; {entry.distribution}: {entry.target}); using the first",
                    stacklevel=3,
                )
                continue
            entries.setdefault(ep.name, entry)
    return sorted(entries.values(), key=lambda e: e.name)


def list_rankers() -> list[RankerEntry]:
    """Every registered ranker, sorted by name. Imports none of them."""
    return _entry_points()


def get_entry(name: str) -> RankerEntry:
    """The entry for ``name``; :class:`UnknownRankerError` (with close matches) otherwise.

    ``name`` may also be an import path ``package.module:Class`` (an experiment's own ranker
    that is not installed as a plugin, e.g. under ``experiments/``); its distribution shows
    as ``(import path)``. Nothing is imported here either.
    """
    if ":" in name:
        module, _, attr = name.partition(":")
        if (
            not module
            or not attr
            or not all(p.isidentifier() for p in module.split("."))
            or not attr.isidentifier()
        ):
            raise UnknownRankerError(name, [e.name for e in _entry_points()])
        return RankerEntry(name, name, "(import path)", "-")
    entries = {e.name: e for e in _entry_points()}
    try:
        return entries[name]
    except KeyError:
        raise UnknownRankerError(name, list(entries)) from None


def load_ranker_class(name: str) -> type:
    """Import and return the class registered as ``name``."""
    return get_entry(name).load()


def make_ranker(name: str, params: dict[str, Any] | None = None) -> Any:
    """Instantiate ranker ``name`` with its defaults, then apply ``params`` via set_params.

    An unknown parameter raises :class:`BadParameterError` listing the valid ones; value
    checks happen in the ranker's ``fit`` (scikit-learn convention).
    """
    cls = load_ranker_class(name)
    ranker = cls()
    if params:
        valid = ranker.get_params(deep=False)
        unknown = sorted(set(params) - set(valid))
        if unknown:
            hints = []
            for u in unknown:
                close = difflib.get_close_matches(u, list(valid), n=1, cutoff=0.6)
                if close:
                    hints.append(f"{u} -> {close[0]}?")
            raise BadParameterError(
                f"ranker {name!r} has no parameter(s) {', '.join(unknown)}"
                + (f" (did you mean: {', '.join(hints)})" if hints else "")
                + f"; valid parameters: {', '.join(sorted(valid))}"
            )
        ranker.set_params(**params)
    return ranker

"""The click dataset options: names, defaults and their checks (before any data is touched).

Any LETOR, folder or generated dataset takes them (``--dataset-option clicks=pbm
--dataset-option eta=1 --dataset-option sessions=10``); query-by-example data refuses them.

Options (default in brackets):

- ``clicks`` [none]: the click model: ``pbm``, ``cascade``, ``dcm``, ``dbn`` or an allRank
  model's name (``random``, ``fixed``, ``only-relevant``, ``base-cascade``,
  ``everything-but-duplicates``, ...).
- ``click_model`` [none]: instead of ``clicks``, allRank's ``click_model`` section as written,
  ``{"name", "args"}``: a TOML table, JSON text, or the path of a JSON file (an allRank config
  or the section alone). Needed for the models made of models (multiple, conditioned,
  max-clicks, diverse-clicks).
- ``sessions`` [10]: sessions simulated per query, in [1, :data:`MAX_SESSIONS`].
- ``top_k`` [10]: documents shown per session (0: the whole list).
- ``logging_ranker`` [``ridge``]: the registered ranker that produced the logged rankings.
- ``logging_fraction`` [0.01]: fraction of training queries (true labels) it is fitted on, in
  (0, 1], at least :data:`MIN_LOGGING_QUERIES` queries.
- ``aggregate`` [``count``]: the training / validation label of a shown document: ``count``
  (sessions in which it was clicked) or ``any`` (clicked at least once).
- model arguments: ``eta``, ``eps``, ``lam``, ``gamma`` (literature models), ``n_clicks``,
  ``click_positions``, ``threshold``, ``relevancy_threshold``, ``duplicate_margin``,
  ``metric`` (allRank's); only those of the chosen model are accepted.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path

__all__ = [
    "CLICK_OPTIONS",
    "MAX_SESSIONS",
    "MIN_LOGGING_QUERIES",
    "MODEL_ARGUMENTS",
    "SIMULATION_VERSION",
    "data_options",
    "has_click_options",
    "has_propensity",
    "resolve_click_options",
]

#: The version of the click simulation's output (``simulate.py``, ``models.py``, ``allrank.py``):
#: part of every resolved configuration, so of the dataset identity, the cell keys and the
#: click-log cache key. Bump it whenever the same options, seed and data would give other click
#: logs, so that neither a cached log nor a finished result of the older code is reused.
SIMULATION_VERSION = 1

#: protocol options and their defaults (model arguments are in MODEL_ARGUMENTS)
PROTOCOL = {
    "clicks": "",
    "click_model": "",
    "sessions": 10,
    "top_k": 10,
    "logging_ranker": "ridge",
    "logging_fraction": 0.01,
    "aggregate": "count",
}
#: the click models' arguments a ``--dataset-option`` may set (with ``clicks=<name>``)
MODEL_ARGUMENTS = (
    "eta",
    "eps",
    "lam",
    "gamma",
    "n_clicks",
    "click_positions",
    "threshold",
    "relevancy_threshold",
    "duplicate_margin",
    "metric",
)
#: every click option name
CLICK_OPTIONS = (*PROTOCOL, *MODEL_ARGUMENTS)
#: the logging ranker is fitted on at least this many training queries (all when fewer)
MIN_LOGGING_QUERIES = 10
#: sessions per query at most: the simulation holds every session's clicks of a split in
#: memory (about 9 bytes x sessions x queries x top_k), and is checked against the memory
#: available once the split's size is known
MAX_SESSIONS = 100_000


def has_click_options(options) -> bool:
    return any(k in CLICK_OPTIONS for k in (options or {}))


def data_options(options) -> dict:
    """``options`` without the click options: what the data layer receives."""
    return {k: v for k, v in (options or {}).items() if k not in CLICK_OPTIONS}


def _error(message: str):
    from ltr_bench.clicks.registry import ClickOptionError

    return ClickOptionError(message)


def _read_click_model(value, where: str):
    """allRank's ``click_model`` section from a dict, JSON text or a JSON file's path."""
    if isinstance(value, dict):
        section = value
    else:
        text = str(value).strip()
        if not text.startswith("{"):
            path = Path(text).expanduser()
            if not path.is_file():
                raise _error(f"{where}: {text!r} is neither JSON text nor a JSON file.")
            try:
                text = path.read_text()
            except OSError as exc:
                raise _error(f"{where}: cannot read {path}: {exc.strerror}.") from None
            where = str(path)
        try:
            section = json.loads(text)
        except ValueError as exc:
            raise _error(f"{where}: not valid JSON ({exc}).") from None
    if isinstance(section, dict) and "click_model" in section:  # a whole allRank config
        section = section["click_model"]
    return section, where


def _int(key, value, lo, where, hi=None):
    try:
        if isinstance(value, bool) or float(value) != int(float(value)):
            raise ValueError
        number = int(float(value))
    except (TypeError, ValueError, OverflowError):
        raise _error(f"{where}: {key}={value!r} must be an integer.") from None
    if number < lo:
        raise _error(f"{where}: {key}={value!r} must be >= {lo}.")
    if hi is not None and number > hi:
        raise _error(f"{where}: {key}={value!r} must be in [{lo}, {hi}].")
    return number


def resolve_click_options(
    options, *, kind: str, where: str = "--dataset-option", dataset: str | None = None
) -> dict | None:
    """The resolved click configuration of a dataset's options, or None without clicks.

    ``kind`` is the dataset's kind (``letor``, ``path``, ``generated``, ``qbe``); ``dataset``
    its name, for messages. The result
    (JSON-able, defaults filled in) is what the dataset identity and the cache key hold::

        {"model": {"name", "args"}, "sessions", "top_k", "aggregate",
         "logging_ranker": {"name", "version", "params"}, "logging_fraction",
         "simulation": SIMULATION_VERSION}

    Raises ``ClickOptionError`` (exit 2) for click options on query-by-example data, a click
    model that does not exist, an argument the chosen model does not take, a value out of
    range (``eta < 0``, a fraction outside (0, 1], ...) or an unknown logging ranker, each with
    close matches; nothing is loaded or fitted.
    """
    opts = {k: v for k, v in (options or {}).items() if k in CLICK_OPTIONS}
    if not opts:
        return None
    from ltr_bench.clicks.registry import build_click_model

    if kind == "qbe":
        raise _error(
            f"{where}: click options ({', '.join(sorted(opts))}) do not apply to "
            f"{'dataset ' + repr(dataset) + ', ' if dataset else ''}query-by-example data (no "
            "ranking is shown to a user); use a LETOR or generated dataset (several datasets: "
            "--dataset-option NAME.clicks=... sets one)."
        )
    settings = {**PROTOCOL, **{k: v for k, v in opts.items() if k in PROTOCOL}}
    arguments = {k: v for k, v in opts.items() if k in MODEL_ARGUMENTS}
    if settings["clicks"] and settings["click_model"]:
        raise _error(
            f"{where}: give either clicks=<name> or click_model=<allRank section>, not both."
        )
    if settings["click_model"]:
        if arguments:
            raise _error(
                f"{where}: {', '.join(sorted(arguments))} go into the click_model section's "
                "args, not beside it."
            )
        section, source = _read_click_model(settings["click_model"], where)
        model = build_click_model(
            section, where=f"{source} click_model" if source != where else f"{where} click_model"
        )
    elif settings["clicks"]:
        model = build_click_model(
            {"name": settings["clicks"], "args": arguments},
            where=f"{where} clicks={settings['clicks']}",
        )
    else:
        raise _error(
            f"{where}: {', '.join(sorted(opts))} set, but no click model: add clicks=<name> "
            "(pbm, cascade, dcm, dbn, or an allRank click model) or click_model=<allRank section>."
        )
    try:
        fraction = float(settings["logging_fraction"])
    except (TypeError, ValueError):
        fraction = float("nan")
    if not 0.0 < fraction <= 1.0:
        raise _error(
            f"{where}: logging_fraction={settings['logging_fraction']!r} must be in (0, 1]."
        )
    aggregate = str(settings["aggregate"]).lower()
    if aggregate not in ("count", "any"):
        close = difflib.get_close_matches(aggregate, ["count", "any"], n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise _error(f"{where}: aggregate={settings['aggregate']!r} must be count or any.{hint}")
    return {
        "model": json.loads(json.dumps(model.spec(), default=str)),
        "sessions": _int("sessions", settings["sessions"], 1, where, MAX_SESSIONS),
        "top_k": _int("top_k", settings["top_k"], 0, where),
        "aggregate": aggregate,
        "logging_ranker": _logging_ranker(str(settings["logging_ranker"]), where),
        "logging_fraction": fraction,
        "simulation": SIMULATION_VERSION,
    }


def _logging_ranker(name: str, where: str) -> dict:
    """``{"name", "version", "params"}`` of the logging ranker (its defaults, resolved)."""
    from ltr_bench import registry

    try:
        entry = registry.get_entry(name)
        ranker = registry.make_ranker(entry.name)
    except registry.RegistryError as exc:
        raise _error(f"{where}: logging_ranker: {exc}") from None
    params = json.loads(json.dumps(ranker.get_params(deep=False), default=str))
    return {"name": entry.name, "version": entry.version, "params": params}


def has_propensity(config: dict) -> bool:
    """Whether the resolved click configuration's model gives every shown row a positive
    ``propensity``, asked of the model itself on the list ``[top grade, 0]``: None for a model
    without an examination step (allRank's but ``base-cascade``), and 0 below a top-grade
    document for the cascade family (``cascade``, ``dbn``: that document is always clicked
    and ends the session); positive for ``pbm``, ``base-cascade`` and ``dcm`` with ``lam > 0``."""
    import numpy as np

    from ltr_bench.clicks.models import ShownLists
    from ltr_bench.clicks.registry import build_click_model

    model = build_click_model(config["model"])
    exam = model.examination(ShownLists(y=np.array([[1, 0]], dtype=np.int64), max_label=1))
    return exam is not None and bool(np.all(np.asarray(exam) > 0))

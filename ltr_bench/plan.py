"""The benchmark plan: which rankers (with parameters) run on which datasets, folds and seed.

A plan comes from command-line options or from a TOML file (``ltr-bench run --config
plan.toml``). The file format, every key optional except ``rankers`` and ``datasets``::

    seed = 0                       # every random choice flows from it (default 0)
    folds = "all"                  # or a list of 1-based fold numbers, e.g. [1, 3]
    threads = 2                    # sets each ranker's thread parameter (RankerTags.thread_param)
    metrics = ["ndcg@10", "map"]   # default: ltr_bench.metrics.DEFAULT_METRICS
    data_dir = "~/ltr_bench_data"  # the data home (else --data-dir / LTR_BENCH_DATA / ~)
    cache_dir = "/tmp/ltr-cache"   # parsed-data cache

    [rankers.lightgbm]             # one table per ranker; its keys are hyper-parameters
    num_leaves = 31
    learning_rate = 0.05

    [rankers.xgboost-gbrt]         # an empty table: the ranker's defaults

    [datasets.synthetic]           # one table per dataset; its keys are dataset options
    n_queries = 200

    [datasets."/data/MyLetor"]     # a path to a folder in a LETOR layout works too

``rankers = ["lightgbm", "xgboost-gbrt"]`` and ``datasets = ["synthetic"]`` (lists of names) are
accepted as shorthand. Unknown keys are errors that name the key and the file; ranker
parameters and dataset options are checked against the ranker / dataset when the plan is
expanded (see :mod:`ltr_bench.harness`). A ranker appears once per plan (TOML forbids
duplicate table names); to compare two settings of one ranker, run two plans.

Command-line values (``--param NAME.key=value``, ``--dataset-option``) use
:func:`parse_value`: a TOML scalar or array when the text is one (``31``, ``0.05``, ``true``,
``"text"``, ``[1, 2]``), ``none``/``null`` for ``None``, otherwise the text itself.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "DatasetChoice",
    "Plan",
    "PlanError",
    "RankerChoice",
    "load_plan",
    "parse_assignment",
    "parse_folds",
    "parse_value",
    "plan_from_dict",
]

TOP_LEVEL_KEYS = ("seed", "folds", "threads", "metrics", "data_dir", "cache_dir", "rankers",
                  "datasets")


class PlanError(ValueError):
    """An invalid plan or option; ``str(err)`` is the user-facing message (exit code 2)."""


@dataclass(frozen=True)
class RankerChoice:
    """A ranker by registered name with the hyper-parameters the user set (others: defaults)."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DatasetChoice:
    """A dataset by registered name or path, with generator / loader options."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class Plan:
    """A whole benchmark: cells = datasets x folds x rankers, all with one seed.

    folds: ``None`` means every fold the dataset has; otherwise 1-based fold numbers.
    metrics: ``None`` means :data:`ltr_bench.metrics.DEFAULT_METRICS`.
    threads: ``None`` leaves each ranker's thread parameter at its default.
    source: the config file the plan came from, if any (recorded with the runs).
    """

    rankers: list[RankerChoice]
    datasets: list[DatasetChoice]
    folds: list[int] | None = None
    seed: int = 0
    metrics: tuple[str, ...] | None = None
    threads: int | None = None
    data_dir: str | None = None
    cache_dir: str | None = None
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form, the same shape as the TOML file (stored with the runs)."""
        return {
            "seed": self.seed,
            "folds": "all" if self.folds is None else list(self.folds),
            "threads": self.threads,
            "metrics": None if self.metrics is None else list(self.metrics),
            "data_dir": self.data_dir,
            "cache_dir": self.cache_dir,
            "rankers": {r.name: dict(r.params) for r in self.rankers},
            "datasets": {d.name: dict(d.options) for d in self.datasets},
            "source": self.source,
        }


def _where(source: str | None, key: str) -> str:
    return f"{source}: key {key!r}" if source else f"key {key!r}"


def _check_int(value: Any, where: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise PlanError(f"{where}: expected an integer >= {minimum}, got {value!r}")
    return value


def _check_folds(value: Any, where: str) -> list[int] | None:
    if isinstance(value, str):
        return parse_folds(value, where=where)
    if isinstance(value, list) and value:
        folds = [_check_int(v, where, minimum=1) for v in value]
        if len(set(folds)) != len(folds):
            raise PlanError(f"{where}: fold numbers repeat: {value!r}")
        return folds
    raise PlanError(f"{where}: expected \"all\" or a non-empty list of fold numbers, got {value!r}")


def _check_table(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PlanError(f"{where}: expected a table of key = value pairs, got {value!r}")
    return dict(value)


def _named_tables(value: Any, where: str, kind: str) -> list[tuple[str, dict[str, Any]]]:
    if isinstance(value, list):
        if not value or not all(isinstance(v, str) and v for v in value):
            raise PlanError(f"{where}: expected a non-empty list of {kind} names, got {value!r}")
        if len(set(value)) != len(value):
            raise PlanError(f"{where}: a {kind} is listed twice: {value!r}")
        return [(v, {}) for v in value]
    if isinstance(value, dict):
        if not value:
            raise PlanError(f"{where}: no {kind} given")
        return [(name, _check_table(tbl, f"{where}.{name}")) for name, tbl in value.items()]
    raise PlanError(f"{where}: expected tables [{kind}s.NAME] or a list of names, got {value!r}")


def plan_from_dict(doc: dict[str, Any], *, source: str | None = None) -> Plan:
    """Validate a parsed TOML document (or the equivalent dict) and build a :class:`Plan`.

    Raises :class:`PlanError` naming the file and the offending key.
    """
    unknown = [k for k in doc if k not in TOP_LEVEL_KEYS]
    if unknown:
        raise PlanError(
            f"{_where(source, unknown[0])} is not a plan setting; valid keys: "
            f"{', '.join(TOP_LEVEL_KEYS)}"
        )
    for required in ("rankers", "datasets"):
        if required not in doc:
            raise PlanError(f"{source + ': ' if source else ''}missing [{required}]")
    rankers = [RankerChoice(n, p) for n, p in _named_tables(doc["rankers"],
                                                            _where(source, "rankers"), "ranker")]
    datasets = [DatasetChoice(n, o) for n, o in _named_tables(doc["datasets"],
                                                              _where(source, "datasets"),
                                                              "dataset")]
    plan = Plan(rankers=rankers, datasets=datasets, source=source)
    if "seed" in doc:
        plan.seed = _check_int(doc["seed"], _where(source, "seed"), minimum=0)
    if "folds" in doc:
        plan.folds = _check_folds(doc["folds"], _where(source, "folds"))
    if "threads" in doc:
        plan.threads = _check_int(doc["threads"], _where(source, "threads"), minimum=1)
    if "metrics" in doc:
        m = doc["metrics"]
        if not isinstance(m, list) or not m or not all(isinstance(x, str) for x in m):
            raise PlanError(f"{_where(source, 'metrics')}: expected a non-empty list of metric "
                            f"names such as [\"ndcg@10\", \"map\"], got {m!r}")
        plan.metrics = tuple(m)
    for key in ("data_dir", "cache_dir"):
        if key in doc:
            if not isinstance(doc[key], str) or not doc[key]:
                raise PlanError(f"{_where(source, key)}: expected a path string, got {doc[key]!r}")
            setattr(plan, key, str(Path(doc[key]).expanduser()))
    return plan


def load_plan(path: str | Path) -> Plan:
    """Read and validate a TOML plan file; :class:`PlanError` names the file and line/key."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PlanError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise PlanError(f"{path}: not UTF-8 text ({exc.reason})") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(f"{path}: invalid TOML: {exc}") from None
    return plan_from_dict(doc, source=str(path))


def parse_value(text: str) -> Any:
    """Parse a command-line value: TOML scalar/array if it is one, ``none``/``null`` -> None,
    ``True``/``False`` (Python spelling) -> bool, otherwise the string itself."""
    stripped = text.strip()
    low = stripped.lower()
    if low in ("none", "null"):
        return None
    if low in ("true", "false"):
        return low == "true"
    try:
        value = tomllib.loads(f"v = {stripped}")["v"]
    except tomllib.TOMLDecodeError:
        return text
    if isinstance(value, float) and not math.isfinite(value) and low not in (
            "inf", "+inf", "-inf", "nan", "+nan", "-nan"):
        return text
    if isinstance(value, (dict,)) or hasattr(value, "isoformat"):
        return text  # dates and inline tables are not parameter values; keep the text
    return value


def parse_assignment(text: str, *, option: str, scoped: bool = True) -> tuple[str | None, str, Any]:
    """Split ``NAME.key=value`` (``scoped``) or ``[NAME.]key=value`` into (name, key, value).

    ``option`` names the command-line option in error messages. With ``scoped=True`` the
    name is required (``--param lightgbm.num_leaves=31``); otherwise it is optional and
    ``None`` when absent (``--dataset-option n_queries=50``).
    """
    if "=" not in text:
        form = "NAME.key=value" if scoped else "[DATASET.]key=value"
        raise PlanError(f"{option} {text!r}: expected {form}")
    left, value = text.split("=", 1)
    left = left.strip()
    if "." in left:
        name, key = left.rsplit(".", 1)
    else:
        name, key = None, left
    if scoped and not name:
        raise PlanError(f"{option} {text!r}: expected NAME.key=value, e.g. "
                        f"{option} lightgbm.num_leaves=31")
    if not key or not key.isidentifier():
        raise PlanError(f"{option} {text!r}: {key!r} is not a valid parameter name")
    return name, key, parse_value(value)


def parse_folds(text: str, *, where: str = "--folds") -> list[int] | None:
    """``"all"`` -> None; ``"1,3"`` -> [1, 3] (1-based, no repeats)."""
    text = text.strip()
    if text.lower() == "all":
        return None
    folds: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1:
            raise PlanError(f"{where}: expected \"all\" or fold numbers like 1,3; got {text!r}")
        if int(part) in folds:
            raise PlanError(f"{where}: fold {part} is listed twice in {text!r}")
        folds.append(int(part))
    return folds


def canonical_json(obj: Any) -> str:
    """Deterministic JSON (sorted keys, no spaces); non-JSON values fall back to ``repr``."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=repr,
                      allow_nan=True)

"""The benchmark plan: which rankers (with parameters) run on which datasets, folds and seed.

A plan comes from command-line options or from a TOML file (``ltr-bench run --config
plan.toml``). The file format, every key optional except ``rankers`` and ``datasets``::

    seed = 0                       # every random choice flows from it (default 0)
    folds = "all"                  # or a list of 1-based fold numbers, e.g. [1, 3]
    threads = 2                    # each ranker's thread count (RankerTags.thread_param); default 1
    metrics = ["ndcg@10", "map"]   # default: ltr_bench.evaluation.metrics.DEFAULT_METRICS
    conventions = ["letor4"]       # also score under these profiles (evaluation.conventions)
    data_dir = "~/ltr_bench_data"  # the data home (else --data-dir / LTR_BENCH_DATA / ~)
    cache_dir = "/tmp/ltr-cache"   # parsed-data cache

    [rankers.lightgbm]             # one table per ranker; its keys are hyper-parameters
    num_leaves = 31
    learning_rate = 0.05

    [rankers.xgboost-gbrt]         # an empty table: the ranker's defaults

    [rankers."lightgbm-big"]       # a second configuration of one ranker: a label of your
    ranker = "lightgbm"            # choice and the registered name under ``ranker``
    num_leaves = 255

    [rankers."cv-mlr"]             # an import path works for an experiment's own ranker
    ranker = "experiments.mlr:MLRWithCV"

    [datasets.synthetic]           # one table per dataset; its keys are dataset options
    n_queries = 200

    [datasets."/data/MyLetor"]     # a path to a folder in a LETOR layout works too

    [datasets."ohsumed-clicks"]    # a second variant of one dataset: a label of your
    dataset = "ohsumed"            # choice and the dataset's name or path under ``dataset``
    clicks = "pbm"

    [sweep.lightgbm]               # sweep: one labelled configuration per value (a grid
    num_leaves = [7, 31, 127]      # over several keys), rows lightgbm[num_leaves=7], ...

    [sweep."ohsumed-clicks"]       # a dataset: one data variant per value (own identity,
    sessions = [10, 100, 1000]     # keys, caches); a label naming a ranker and a dataset: refused

    [tuning.lightgbm]              # `ltr-bench tune`: override a ranker's search space
    num_leaves = {low = 7, high = 255, log = true}   # (ltr_bench.tune.study.parse_spec);
    min_data_in_leaf = false                         # false leaves a parameter out

``rankers = ["lightgbm", "xgboost-gbrt"]`` and ``datasets = ["synthetic"]`` (lists of names) are
accepted as shorthand. ``seeds = [0, 1, 2]`` instead of ``seed`` repeats every cell with each
seed. Unknown keys are errors that name the key and the file; ranker parameters and dataset
options are checked against the ranker / dataset when the plan is expanded (see
:mod:`ltr_bench.run.cells`). The key ``ranker`` inside a ranker table is the registered name
(or ``module:Class`` import path) of a labelled configuration; it is not a parameter, nor is
``dataset`` in a dataset table (a labelled variant: one dataset on true labels and on clicks).

Command-line values (``--param NAME.key=value``, ``--dataset-option``) use
:func:`parse_value`: a TOML scalar or array when the text is one (``31``, ``0.05``, ``true``,
``"text"``, ``[1, 2]``), ``none``/``null`` for ``None``, otherwise the text itself.
"""

from __future__ import annotations

import copy
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ltr_bench.errors import UsageError
from ltr_bench.results.labels import config_label

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
    "parse_seeds",
    "parse_value",
    "plan_from_dict",
]

TOP_LEVEL_KEYS = (
    "seed",
    "seeds",
    "folds",
    "threads",
    "metrics",
    "conventions",
    "data_dir",
    "cache_dir",
    "rankers",
    "datasets",
    "sweep",
    "tuning",
)
RANKER_KEY = "ranker"  # inside [rankers.LABEL]: the registered name of a labelled configuration
DATASET_KEY = "dataset"  # inside [datasets.LABEL]: the dataset (name or path) of a variant


class PlanError(UsageError, ValueError):
    """An invalid plan or option; ``str(err)`` is the user-facing message (exit code 2)."""


@dataclass(frozen=True)
class RankerChoice:
    """A ranker by registered name with the hyper-parameters the user set (others: defaults)."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)
    label: str = ""  # the configuration's name in the plan; "" = the ranker's name

    @property
    def display(self) -> str:
        """How the user refers to this configuration (``--param NAME.key``, sweeps, tuning
        tables): its plan label, else the ranker's name."""
        return self.label or self.name

    @property
    def row_label(self) -> str:
        """How results show this configuration: :func:`ltr_bench.results.labels.config_label`."""
        return config_label(self.name, self.params, self.label)


@dataclass(frozen=True)
class DatasetChoice:
    """A dataset (name or path) with its options; ``label``: the variant's name in the plan;
    ``swept``: the option keys a sweep set (for messages only: not part of its identity)."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)
    label: str = ""
    swept: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @property
    def display(self) -> str:
        """The variant's name in the plan (``[sweep.LABEL]``): its label, else the dataset's."""
        return self.label or self.name


@dataclass
class Plan:
    """A whole benchmark: cells = datasets x folds x ranker configurations x seeds.

    seeds: the seeds every cell runs with (``seed`` is the first); ``[seed]`` by default.
    folds: ``None`` means every fold the dataset has; otherwise 1-based fold numbers.
    metrics: ``None`` means :data:`ltr_bench.evaluation.metrics.DEFAULT_METRICS`.
    threads: the thread count every ranker gets (its thread parameter, and BLAS/OpenMP
    pools); 1 by default, so timings of different rankers compare like with like and do not
    depend on what else the machine runs. The thread count is not part of a
    configuration's identity (a cell run with 1 or 4 threads resumes the same result).
    source: the config file the plan came from, if any (recorded with the runs).
    """

    rankers: list[RankerChoice]
    datasets: list[DatasetChoice]
    folds: list[int] | None = None
    seed: int = 0
    metrics: tuple[str, ...] | None = None
    threads: int | None = 1
    data_dir: str | None = None
    cache_dir: str | None = None
    source: str | None = None
    seeds: tuple[int, ...] | None = None
    command: str | None = None  # the command line that made the plan (provenance only)
    # extra convention profiles (ltr_bench.evaluation.conventions)
    conventions: tuple[str, ...] = ()
    sweeps: dict[str, dict[str, list]] = field(default_factory=dict)  # label -> key -> values
    tuning: dict[str, dict[str, Any]] = field(default_factory=dict)  # label -> search space

    def all_seeds(self) -> tuple[int, ...]:
        return tuple(self.seeds) if self.seeds else (self.seed,)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form, the same shape as the TOML file (stored with the runs):
        ``plan_from_dict`` of it (without ``source`` and the None values) is this plan.
        The ``[tuning.LABEL]`` search-space overrides and any sweep not yet expanded
        (``[sweep.LABEL]``) are kept, copied so that changing the dict leaves the plan alone;
        each key is left out when it is empty."""
        rankers = {}
        displays = [r.display for r in self.rankers]
        for r in self.rankers:
            # expanded sweep points of one unnamed configuration share its display name:
            # each is written as a table named by its row label
            key = r.display if displays.count(r.display) == 1 else r.row_label
            rankers[key] = {RANKER_KEY: r.name, **r.params} if key != r.name else dict(r.params)
        seeds = {"seeds": list(self.seeds)} if self.seeds else {"seed": self.seed}
        return {
            **seeds,
            "folds": "all" if self.folds is None else list(self.folds),
            "threads": self.threads,
            "metrics": None if self.metrics is None else list(self.metrics),
            **({"conventions": list(self.conventions)} if self.conventions else {}),
            "data_dir": self.data_dir,
            "cache_dir": self.cache_dir,
            "rankers": rankers,
            "datasets": {
                d.display: {DATASET_KEY: d.name, **d.options} if d.label else dict(d.options)
                for d in self.datasets
            },
            **({"sweep": copy.deepcopy(self.sweeps)} if self.sweeps else {}),
            **({"tuning": copy.deepcopy(self.tuning)} if self.tuning else {}),
            "source": self.source,
        }


def _where(source: str | None, key: str) -> str:
    return f"{source}: key {key!r}" if source else f"key {key!r}"


#: the largest seed: every library's random_state takes it (LightGBM's and XGBoost's are
#: signed 32-bit integers)
MAX_SEED = 2**31 - 1
#: the most seeds one plan repeats its cells with
MAX_SEEDS = 1000


def _check_int(value: Any, where: str, *, minimum: int, maximum: int | None = None) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < minimum
        or (maximum is not None and value > maximum)
    ):
        bound = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
        raise PlanError(f"{where}: expected an integer {bound}, got {value!r}")
    return value


def _check_folds(value: Any, where: str) -> list[int] | None:
    if isinstance(value, str):
        return parse_folds(value, where=where)
    if isinstance(value, list) and value:
        folds = [_check_int(v, where, minimum=1) for v in value]
        if len(set(folds)) != len(folds):
            raise PlanError(f"{where}: fold numbers repeat: {value!r}")
        return folds
    raise PlanError(f'{where}: expected "all" or a non-empty list of fold numbers, got {value!r}')


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


def _labelled(cls, section: str, key: str, what: str, label: str, table: dict, source):
    """A ranker configuration or dataset variant of a plan table: named by its table, or
    labelled by it with the name under ``key`` (``ranker`` / ``dataset``)."""
    if key not in table:
        return cls(label, table)
    name = table.pop(key)
    if not isinstance(name, str) or not name:
        where = _where(source, f"{section}.{label}.{key}")
        raise PlanError(f"{where}: expected {what}, got {name!r}")
    return cls(name, table, label=label)


def _ranker_choice(label: str, table: dict[str, Any], source: str | None) -> RankerChoice:
    what = "the registered name of a ranker (see `ltr-bench rankers`)"
    return _labelled(RankerChoice, "rankers", RANKER_KEY, what, label, table, source)


def _dataset_choice(label: str, table: dict[str, Any], source: str | None) -> DatasetChoice:
    what = "the name or path of a dataset (see `ltr-bench datasets`)"
    return _labelled(DatasetChoice, "datasets", DATASET_KEY, what, label, table, source)


def _check_seeds(value: Any, where: str) -> tuple[int, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        value = list(range(_check_int(value, where + " (a count)", minimum=1, maximum=MAX_SEEDS)))
    if not isinstance(value, list) or not value:
        raise PlanError(
            f"{where}: expected a list of seeds like [0, 1, 2] or a count, got {value!r}"
        )
    if len(value) > MAX_SEEDS:
        raise PlanError(f"{where}: {len(value)} seeds; at most {MAX_SEEDS}")
    seeds = [_check_int(v, where, minimum=0, maximum=MAX_SEED) for v in value]
    if len(set(seeds)) != len(seeds):
        raise PlanError(f"{where}: a seed is listed twice: {value!r}")
    return tuple(seeds)


def parse_conventions(value, *, where: str = "--convention") -> tuple[str, ...]:
    """Convention profile names (comma text or a list), checked against
    :data:`ltr_bench.evaluation.conventions.PROFILES`."""
    from ltr_bench.evaluation.conventions import PROFILES

    names = [v.strip() for v in value.split(",")] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise PlanError(f'{where}: expected profile names such as ["letor4"], got {value!r}')
    for n in names:
        if n not in PROFILES:
            raise PlanError(
                f"{where}: unknown convention profile {n!r}; profiles: {', '.join(PROFILES)}"
            )
    if len(set(names)) != len(names):
        raise PlanError(f"{where}: a profile is listed twice: {value!r}")
    return tuple(names)


def parse_seeds(text: str, *, where: str = "--seeds") -> tuple[int, ...]:
    """``"0,1,2"`` -> (0, 1, 2); a single number ``N`` -> (0, ..., N-1)."""
    parts = [p.strip() for p in text.split(",")]
    if not all(p.isdigit() for p in parts):  # an empty item ("0,,1", "0,1,") too
        raise PlanError(f"{where}: expected seeds like 0,1,2 or a count like 3; got {text!r}")
    if len(parts) == 1:
        return _check_seeds(int(parts[0]), where)
    return _check_seeds([int(p) for p in parts], where)


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
    rankers = [
        _ranker_choice(n, p, source)
        for n, p in _named_tables(doc["rankers"], _where(source, "rankers"), "ranker")
    ]
    datasets = [
        _dataset_choice(n, o, source)
        for n, o in _named_tables(doc["datasets"], _where(source, "datasets"), "dataset")
    ]
    plan = Plan(rankers=rankers, datasets=datasets, source=source)
    if "seed" in doc and "seeds" in doc:
        raise PlanError(f"{source + ': ' if source else ''}give either seed or seeds, not both")
    if "seed" in doc:
        plan.seed = _check_int(doc["seed"], _where(source, "seed"), minimum=0, maximum=MAX_SEED)
    if "seeds" in doc:
        plan.seeds = _check_seeds(doc["seeds"], _where(source, "seeds"))
        plan.seed = plan.seeds[0]
    if "folds" in doc:
        plan.folds = _check_folds(doc["folds"], _where(source, "folds"))
    if "threads" in doc:
        plan.threads = _check_int(doc["threads"], _where(source, "threads"), minimum=1)
    if "metrics" in doc:
        m = doc["metrics"]
        if not isinstance(m, list) or not m or not all(isinstance(x, str) for x in m):
            raise PlanError(
                f"{_where(source, 'metrics')}: expected a non-empty list of metric "
                f'names such as ["ndcg@10", "map"], got {m!r}'
            )
        plan.metrics = tuple(m)
    if "conventions" in doc:
        plan.conventions = parse_conventions(
            doc["conventions"], where=_where(source, "conventions")
        )
    for key in ("data_dir", "cache_dir"):
        if key in doc:
            if not isinstance(doc[key], str) or not doc[key]:
                raise PlanError(f"{_where(source, key)}: expected a path string, got {doc[key]!r}")
            setattr(plan, key, str(Path(doc[key]).expanduser()))
    if "sweep" in doc:
        for label, table in _named_tables(
            doc["sweep"], _where(source, "sweep"), "ranker or dataset"
        ):
            for key, values in table.items():
                where = _where(source, f"sweep.{label}.{key}")
                if not isinstance(values, list) or not values:
                    raise PlanError(
                        f"{where}: expected a non-empty list of values to sweep, "
                        f"e.g. [7, 31, 127], got {values!r}"
                    )
                plan.sweeps.setdefault(label, {})[key] = _check_sweep_values(values, where)
    if "tuning" in doc:
        plan.tuning = {
            label: table
            for label, table in _named_tables(doc["tuning"], _where(source, "tuning"), "ranker")
        }
    return plan


def _check_sweep_values(values: list, where: str) -> list:
    if len({canonical_json(v) for v in values}) != len(values):
        raise PlanError(f"{where}: a value is listed twice: {values!r}")
    return list(values)


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
    """Parse a command-line value: TOML scalar, array or inline table if it is one
    (``31``, ``[1, 2]``, ``{max_bin = 63}``), a JSON object (``{"max_bin": 63}``),
    ``none``/``null`` -> None, ``True``/``False`` (Python spelling) -> bool, otherwise the
    string itself."""
    stripped = text.strip()
    low = stripped.lower()
    if low in ("none", "null"):
        return None
    if low in ("true", "false"):
        return low == "true"
    if stripped.startswith("{") and ":" in stripped:
        try:  # a JSON object: structured values such as LightGBM's extra_params
            return json.loads(stripped)
        except ValueError:
            pass
    try:
        value = tomllib.loads(f"v = {stripped}")["v"]
    except tomllib.TOMLDecodeError:
        return text
    if (
        isinstance(value, float)
        and not math.isfinite(value)
        and low not in ("inf", "+inf", "-inf", "nan", "+nan", "-nan")
    ):
        return text
    if hasattr(value, "isoformat"):
        return text  # dates are not parameter values; keep the text
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
        raise PlanError(
            f"{option} {text!r}: expected NAME.key=value, e.g. {option} lightgbm.num_leaves=31"
        )
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
            raise PlanError(f'{where}: expected "all" or fold numbers like 1,3; got {text!r}')
        if int(part) in folds:
            raise PlanError(f"{where}: fold {part} is listed twice in {text!r}")
        folds.append(int(part))
    return folds


def canonical_json(obj: Any) -> str:
    """Deterministic JSON (sorted keys, no spaces); non-JSON values fall back to ``repr``."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=repr, allow_nan=True)

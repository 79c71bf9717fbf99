"""Sweeps: one labelled configuration per point of a parameter grid (``--sweep
NAME.key=v1,v2`` and ``[sweep.LABEL]`` tables of a plan, :mod:`ltr_bench.run.plan`).

``NAME`` / ``LABEL`` is a ranker configuration of the plan (its keys are hyper-parameters) or
one of its datasets (its keys are dataset options: ``--sweep ohsumed.sessions=10,100,1000``).
A swept dataset becomes one variant per point, each with its own options, so its own dataset
identity, result keys and caches, exactly as if every variant had its own
``[datasets.LABEL]`` table."""

from __future__ import annotations

import sys

from ltr_bench.results.labels import config_label
from ltr_bench.run.plan import (
    DatasetChoice,
    Plan,
    PlanError,
    RankerChoice,
    _check_sweep_values,
    parse_assignment,
    parse_value,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["expand_sweeps", "parse_sweep"]


def parse_sweep(text: str) -> tuple[str, str, list]:
    """``--sweep NAME.key=v1,v2,...`` -> (NAME, key, [v1, v2, ...]). Values are read as one
    TOML array when they form one (``7,31,127``; ``[5,10],[10,20]`` for list-valued
    parameters; ``"a","b"``), else split on commas and read by :func:`parse_value`
    (``l2,zscore``)."""
    name, key, _ = parse_assignment(text, option="--sweep")
    assert name is not None  # scoped: parse_assignment refused a missing NAME
    raw = text.split("=", 1)[1].strip()
    try:
        values = tomllib.loads(f"v = [{raw}]")["v"]
    except tomllib.TOMLDecodeError:
        values = [parse_value(p) for p in raw.split(",") if p.strip()]
    if not values:
        raise PlanError(f"--sweep {text!r}: no values; expected NAME.key=v1,v2,...")
    return name, key, _check_sweep_values(values, f"--sweep {text}")


def expand_sweeps(plan: Plan) -> Plan:
    """Replace each swept configuration by one labelled :class:`RankerChoice` per point of
    its grid (the product of its swept keys' values, keys in the order given), labelled
    ``LABEL[key=value,...]`` (an unnamed configuration: the ranker name with every
    parameter the user set, :func:`~ltr_bench.results.labels.config_label`); a swept value
    overrides the configuration's own. A swept dataset likewise becomes one
    :class:`DatasetChoice` per point, labelled ``LABEL[key=value,...]``, its options updated.
    Raises PlanError for a sweep of a name the plan does not run, or one that names both a
    ranker configuration and a dataset. Empties ``plan.sweeps``."""

    labels = [r.display for r in plan.rankers]
    data_labels = [d.display for d in plan.datasets]
    for label in plan.sweeps:
        if label in labels and label in data_labels:
            raise PlanError(
                f"sweep of {label!r}: both a ranker configuration and a dataset of this run "
                "are called that; give one of them a label of its own"
            )
        if label not in labels and label not in data_labels:
            raise PlanError(
                f"sweep of {label!r}: not part of this run, neither a ranker nor a dataset "
                f"(rankers: {', '.join(labels) or 'none'}; datasets: "
                f"{', '.join(data_labels) or 'none'}); add it to --ranker or --dataset"
            )

    def ranker_point(r: RankerChoice, setting: dict) -> RankerChoice:
        # a named configuration keeps its name, "NAME[swept=value,...]"; an unnamed one is
        # named by the ranker with every user-set parameter, swept ones included
        label = config_label(r.label, setting) if r.label else ""
        return RankerChoice(r.name, {**r.params, **setting}, label=label)

    def dataset_point(d: DatasetChoice, setting: dict) -> DatasetChoice:
        label = config_label(d.display, setting)
        return DatasetChoice(d.name, {**d.options, **setting}, label=label, swept=tuple(setting))

    out = _expanded(plan.rankers, plan.sweeps, ranker_point)
    data = _expanded(plan.datasets, plan.sweeps, dataset_point)
    plan.rankers, plan.datasets = out, data
    plan.sweeps = {}
    return plan


def _expanded(choices: list, sweeps: dict, point) -> list:
    """Each choice swept in ``sweeps`` replaced by ``point(choice, setting)`` per grid point."""
    out = []
    for c in choices:
        grid = sweeps.get(c.display)
        out += [point(c, setting) for setting in _points(grid)] if grid else [c]
    return out


def _points(grid: dict[str, list]) -> list[dict]:
    """The grid's points in order: the product of the keys' values, keys as given."""
    import itertools

    keys = list(grid)
    return [dict(zip(keys, point)) for point in itertools.product(*(grid[k] for k in keys))]

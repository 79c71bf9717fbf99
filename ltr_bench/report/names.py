"""What a report calls its rows, which rows ``--ranker`` picks, and which row is the baseline.

Names
    A row (one configuration, ``ResultRecord.config_key``) is named by its plain name,
    :attr:`ResultRecord.row_name <ltr_bench.results.ResultRecord.row_name>`: the
    configuration's label and the data variant it was trained on in words
    (``lightgbm · clicks pbm eta=1 x10``), the name the run's summary and MLflow show, less
    the data options every row of the report shares (``n_queries=30``: the report's heading
    says them once; rows on other data are never compared anyway). When
    several configurations still share a name (one label for other parameters, an edited
    parameter file, another version of the data), :func:`row_names` tells them apart in
    words, never by a hash: the parameters that differ in brackets after the label
    (``lightgbm[num_leaves=31]``), else what differs and when each was run
    (``lightgbm (parameter file changed, run 2025-06-01 14:02)``), then the fields of the
    resolved configuration that differ (``lightgbm (ranker_version=4.6.0, run ...)``), and
    only if that is still not enough a number in the order they were run (``#2``).

Baseline
    :func:`pick_baseline`: the row named by ``--baseline`` (its full name, or a label or
    ranker name that picks one row; when it matches several and exactly one of them was
    trained on the dataset as it is, that one, and a note says so). Without ``--baseline``:
    among the rows on the dataset as it is (every row when none is), LightGBM's default
    configuration, else the default configuration run first, else the row run first (the
    earliest ``started`` of a row's records). When the choice was not the only possible
    reading -- another row shares the baseline's label on other data, or it was chosen
    among several by when it ran -- a note names the baseline and why it was taken.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ltr_bench.results import ResultRecord
from ltr_bench.results.labels import (
    data_options,
    label_sort_key,
    row_label,
    shared_data_options,
    value_text,
    variant_text,
)

__all__ = ["RowNameError", "RowNames", "pick_baseline", "row_names", "select_rows"]

#: the longest bracket of differing parameters a name gets before it says "run DATE" instead
MAX_SETTINGS = 60


class RowNameError(ValueError):
    """``--ranker`` / ``--baseline`` names no row, or several (the report turns it into a
    usage error)."""


def _label(r: ResultRecord) -> str:
    return r.label or r.ranker


def _trained_on_clicks(r: ResultRecord) -> bool:
    """Whether the row's training data is a click variant (its data options aside, which
    every comparable row shares)."""
    options, identity = r.dataset_options, r.dataset_identity
    return bool(variant_text(options, identity, leave_out=data_options(options, identity)))


def _first_start(runs: list[ResultRecord]) -> str:
    """The earliest start of a row's records (ISO 8601 sorts as text; unknown: last)."""
    return min((r.started for r in runs if r.started), default="~")


def _when(runs: list[ResultRecord]) -> str:
    start = _first_start(runs)
    return "run at an unknown time" if start == "~" else f"run {start[:16].replace('T', ' ')}"


def _settings(r: ResultRecord) -> dict[str, str]:
    # what the user set first (records from before labels named it; a resolved default
    # would read "None"), then the resolved values
    s = {k: value_text(v) for k, v in r.params.items()}
    s.update({k: value_text(v) for k, v in r.user_params.items()})
    return s


def _other_differences(runs: dict[str, ResultRecord]) -> list[str]:
    """What differs between configurations of one name besides their parameters, in words."""
    out = []

    def differ(get) -> bool:
        return len({value_text(get(r)) for r in runs.values()}) > 1

    if differ(lambda r: r.config.get("param_files")):
        out.append("parameter file changed")
    if differ(lambda r: {k: v for k, v in r.dataset_identity.items() if k != "seed"}):
        out.append("other data")
    if differ(lambda r: r.config.get("metrics")) or differ(lambda r: r.config.get("conventions")):
        out.append("other metrics")
    return out


def _tell_apart(
    cks: list[str], groups: dict[str, list[ResultRecord]], shared: dict[str, Any]
) -> dict[str, str]:
    firsts = {ck: groups[ck][0] for ck in cks}
    settings = {ck: _settings(r) for ck, r in firsts.items()}
    keys = sorted({k for s in settings.values() for k in s})
    differing = [k for k in keys if len({s.get(k) for s in settings.values()}) > 1]
    out: dict[str, str] = {}
    for ck, r in firsts.items():
        text = ",".join(f"{k}={settings[ck].get(k, '-')}" for k in differing)
        if text and len(text) <= MAX_SETTINGS:
            label = f"{_label(r)}[{text}]"
        else:
            label = f"{_label(r)} ({', '.join([*_other_differences(firsts), _when(groups[ck])])})"
        out[ck] = row_label(label, r.dataset_options, r.dataset_identity, leave_out=shared)
    by_name: dict[str, list[str]] = {}
    for ck, name in out.items():
        by_name.setdefault(name, []).append(ck)
    for same in by_name.values():  # still alike (same parameters, same minute)
        if len(same) > 1:
            r = firsts[same[0]]
            what = _config_differences({ck: firsts[ck] for ck in same})
            unique = len(set(what.values())) == len(same) and all(what.values())
            for i, ck in enumerate(sorted(same, key=lambda c: _first_start(groups[c])), 1):
                differs = what.get(ck, "")
                label = (
                    f"{_label(r)} ({differs}, {_when(groups[ck])})"
                    if unique
                    else f"{_label(r)} #{i} ({differs + ', ' if differs else ''}"
                    f"{_when(groups[ck])})"
                )
                out[ck] = row_label(label, r.dataset_options, r.dataset_identity, leave_out=shared)
    return out


#: fields of a record's ``config`` that are not the configuration (per cell, or where it ran)
_NOT_CONFIG = frozenset(
    {"command", "config_key", "key", "plan_key", "fold", "seed", "keep_models", "cache_dir"}
    | {"data_dir", "label", "threads", "dataset_identity", "max_label"}
)


def _config_differences(firsts: dict[str, ResultRecord]) -> dict[str, str]:
    """config key -> the fields of its resolved configuration (``ResultRecord.config``)
    that differ among ``firsts`` (``ranker_version=4.6.0``, ``score_repeats=5``), as
    ``key=value`` text; empty when nothing recorded differs."""
    configs = {ck: r.config or {} for ck, r in firsts.items()}
    fields = sorted({k for c in configs.values() for k in c} - _NOT_CONFIG)
    differing = [k for k in fields if len({value_text(c.get(k)) for c in configs.values()}) > 1]
    return {
        ck: ",".join(f"{k}={value_text(c.get(k))}"[:40] for k in differing)
        for ck, c in configs.items()
    }


@dataclass
class RowNames:
    """What :func:`row_names` gives: ``names`` ({config_key: row name}), ``notes`` (one per
    set of configurations told apart) and ``data_options`` (the data options every row
    shares, said once in the report's heading and left out of the names)."""

    names: dict[str, str]
    notes: list[str] = field(default_factory=list)
    data_options: dict[str, Any] = field(default_factory=dict)


def row_names(groups: dict[str, list[ResultRecord]]) -> RowNames:
    """Each row's plain name (:attr:`ResultRecord.row_name` without the data options every
    row shares), told apart in words where several configurations share one (module
    docstring)."""
    shared = shared_data_options(
        (r[0].dataset_options, r[0].dataset_identity) for r in groups.values()
    )
    by_name: dict[str, list[str]] = {}
    for ck, runs in groups.items():
        r = runs[0]
        name = row_label(_label(r), r.dataset_options, r.dataset_identity, leave_out=shared)
        by_name.setdefault(name, []).append(ck)
    out = RowNames({}, data_options=shared)
    for name, cks in by_name.items():
        if len(cks) == 1:
            out.names[cks[0]] = name
            continue
        told = _tell_apart(cks, groups, shared)
        out.names.update(told)
        shown = ", ".join(sorted(told.values(), key=label_sort_key))
        out.notes.append(
            f"{len(cks)} configurations share the name {name}: shown as {shown} (what differs "
            "between them: the parameters in brackets, else in words with when each was run)"
        )
    return out


def select_rows(
    groups: dict[str, list[ResultRecord]], names: dict[str, str], rankers: Sequence[str] | None
) -> list[str]:
    """The configuration keys ``--ranker`` picks (every row when None): a row's full name,
    its label or its ranker's name each pick the rows they name, in natural name order."""
    if not rankers:
        return sorted(groups, key=lambda ck: label_sort_key(names[ck]))
    chosen: list[str] = []
    for name in rankers:
        hits = [
            ck for ck in groups if name in (names[ck], groups[ck][0].ranker, groups[ck][0].label)
        ]
        if not hits:
            known = ", ".join(sorted(names.values(), key=label_sort_key))
            raise RowNameError(
                f"--ranker {name}: no results for it in this dataset; rankers with results: {known}"
            )
        hits.sort(key=lambda ck: label_sort_key(names[ck]))
        chosen.extend(ck for ck in hits if ck not in chosen)
    return chosen


def _is_default(r: ResultRecord) -> bool:
    return _label(r) == r.ranker and not r.user_params


def pick_baseline(
    chosen: list[str],
    names: dict[str, str],
    groups: dict[str, list[ResultRecord]],
    baseline: str | None,
) -> tuple[str, str | None]:
    """``(config key of the baseline, note or None)`` (module docstring). Raises
    :class:`RowNameError` for a ``--baseline`` that names no row, or several alike."""
    first = {ck: groups[ck][0] for ck in chosen}
    plain = [ck for ck in chosen if not _trained_on_clicks(first[ck])]
    if baseline is not None:
        hits = [ck for ck in chosen if names[ck] == baseline]
        if not hits:
            hits = [ck for ck in chosen if baseline in (first[ck].ranker, _label(first[ck]))]
        if len(hits) == 1:
            return hits[0], None
        if len(hits) > 1:
            on_plain = [ck for ck in hits if ck in plain]
            if len(on_plain) == 1:
                others = ", ".join(names[ck] for ck in hits if ck != on_plain[0])
                return on_plain[0], (
                    f"baseline {names[on_plain[0]]}: --baseline {baseline} also names {others}; "
                    "it took the row on the dataset as it is (name a row in full, e.g. "
                    f"--baseline '{names[hits[-1]]}', for another)"
                )
            raise RowNameError(
                f"--baseline {baseline} is ambiguous: pick one of "
                + ", ".join(names[ck] for ck in hits)
            )
        raise RowNameError(
            f"--baseline {baseline} has no results among the selected rankers; choose one of "
            + ", ".join(names[ck] for ck in chosen)
        )

    pool = plain or chosen
    defaults = [ck for ck in pool if _is_default(first[ck])]
    lightgbm = [ck for ck in defaults if first[ck].ranker == "lightgbm"]
    if lightgbm:
        tier, why = lightgbm, "LightGBM's default configuration"
    elif defaults:
        tier, why = defaults, "the default configuration of its ranker"
    else:
        tier, why = pool, "the only row" if len(pool) == 1 else "the row run first"
    if len(tier) > 1 and tier is not pool:
        why += f", run first of {len(tier)}"
    pick = min(tier, key=lambda ck: (_first_start(groups[ck]), label_sort_key(names[ck])))
    if plain and len(plain) < len(chosen):
        why += " on the dataset as it is"
    alike = [names[ck] for ck in chosen if ck != pick and _label(first[ck]) == _label(first[pick])]
    if not alike and len(tier) == 1:
        return pick, None
    verb = "shares" if len(alike) == 1 else "share"
    also = f"; {', '.join(alike)} {verb} its label on other data or settings" if alike else ""
    return pick, f"baseline {names[pick]}: {why}{also}; name another with --baseline"

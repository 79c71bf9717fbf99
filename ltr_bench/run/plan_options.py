"""A plan from the command line: ``--config`` (if any) with the options applied on top.

:func:`build_plan` is what ``ltr-bench run`` and ``ltr-bench tune`` call with the options as
typed (:class:`CommandLine`): ``--ranker``/``--dataset`` replace the file's lists (a name the
file also lists keeps its parameters / options), ``--param``/``--dataset-option``/``--sweep``
add to or override them, scalar options replace the file's values. Everything is checked
here, before any data is loaded (:class:`~ltr_bench.run.plan.PlanError`, exit 2).
"""

from __future__ import annotations

import dataclasses
import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from ltr_bench.results.labels import split_names
from ltr_bench.run.plan import (
    DatasetChoice,
    Plan,
    PlanError,
    RankerChoice,
    load_plan,
    parse_assignment,
    parse_conventions,
    parse_folds,
    parse_seeds,
)
from ltr_bench.run.sweeps import expand_sweeps, parse_sweep

__all__ = ["CommandLine", "build_plan"]


def _all_rankers(warn) -> list[str]:
    from ltr_bench.registry import RankerLoadError, list_rankers

    names = []
    for entry in list_rankers():
        try:
            entry.load()
        except RankerLoadError as exc:
            warn(f"skipping unavailable ranker: {exc}")
            continue
        names.append(entry.name)
    return names


@dataclass
class CommandLine:
    """The plan-shaping options of ``ltr-bench run`` as typed (``None``/empty: not given)."""

    config: str | None = None
    rankers: tuple[str, ...] = ()
    datasets: tuple[str, ...] = ()
    folds: str | None = None
    params: tuple[str, ...] = ()
    dataset_options: tuple[str, ...] = ()
    seed: int | None = None
    seeds: str | None = None
    conventions: str | None = None
    threads: int | None = None
    metrics: str | None = None
    data_dir: str | None = None
    cache_dir: str | None = None
    sweeps: tuple[str, ...] = ()
    label: str | None = None


def build_plan(cl: CommandLine, *, warn=lambda message: None, local: bool = True) -> Plan:
    """The plan from ``--config`` (if any) with the command-line options applied on top.

    ``warn(message)`` hears of rankers ``--ranker all`` leaves out (broken plugins) and of a
    thread count this machine cannot give (:func:`bound_threads`; ``local``: the cells run
    on this machine, not on a Dask cluster whose workers may have more cores).

    ``--ranker``/``--dataset`` replace the file's lists (a name the file also lists keeps
    its parameters / options); ``--param``/``--dataset-option`` add to or override them;
    scalar options replace the file's values. Raises PlanError / UnknownRankerError.
    """
    from ltr_bench.registry import UnknownRankerError, get_entry, list_rankers

    if cl.config is not None and not Path(cl.config).is_file():
        raise PlanError(f"--config: file {cl.config} does not exist")
    plan = load_plan(cl.config) if cl.config else Plan(rankers=[], datasets=[])
    names = split_names(cl.rankers, option="--ranker")
    if names:
        if "all" in names:
            if names != ["all"]:
                raise PlanError("--ranker: 'all' cannot be combined with other names")
            names = _all_rankers(warn)
            if not names:
                raise PlanError("--ranker all: no ranker is installed and importable")
        if len(set(names)) != len(names):
            raise PlanError(f"--ranker: a ranker is listed twice: {','.join(names)}")
        old = {r.display: r for r in plan.rankers}
        # --ranker picks some of the file's configurations: their [tuning.LABEL] tables go
        # with them (a table naming no configuration of the file stays, so tune still
        # refuses the typo)
        plan.tuning = {k: v for k, v in plan.tuning.items() if k in names or k not in old}
        plan.rankers = _picked(plan.rankers, names, RankerChoice)
    for ranker in plan.rankers:
        get_entry(ranker.name)  # unknown name -> UnknownRankerError with close matches
    by_name = {r.display: dict(r.params) for r in plan.rankers}
    for text in cl.params:
        name, key, value = parse_assignment(text, option="--param")
        assert name is not None  # scoped: parse_assignment refused a missing NAME
        if name not in by_name:
            known = [e.name for e in list_rankers()]
            if name not in known:
                err = UnknownRankerError(name, known)
                raise PlanError(f"--param {text}: {err}")
            raise PlanError(
                f"--param {text}: ranker {name!r} is not part of this run "
                f"(rankers: {', '.join(by_name) or 'none'}); add it to --ranker"
            )
        by_name[name][key] = value
    plan.rankers = [RankerChoice(r.name, by_name[r.display], r.label) for r in plan.rankers]

    dnames = split_names(cl.datasets, option="--dataset")
    if dnames:
        if len(set(dnames)) != len(dnames):
            raise PlanError(f"--dataset: a dataset is listed twice: {','.join(dnames)}")
        old_data = {d.display: d for d in plan.datasets}
        # the file's sweeps of the variants left out go with them
        plan.sweeps = {k: v for k, v in plan.sweeps.items() if k not in old_data or k in dnames}
        plan.datasets = _picked(plan.datasets, dnames, DatasetChoice)
    if cl.dataset_options:
        _apply_dataset_options(plan, cl.dataset_options)

    if cl.folds is not None:
        plan.folds = parse_folds(cl.folds)
    if cl.seed is not None and cl.seeds is not None:
        raise PlanError("give either --seed or --seeds, not both")
    if cl.seed is not None:
        plan.seed, plan.seeds = cl.seed, None
    if cl.seeds is not None:
        plan.seeds = parse_seeds(cl.seeds)
        plan.seed = plan.seeds[0]
    if cl.threads is not None:
        plan.threads = cl.threads
    if cl.conventions is not None:
        plan.conventions = parse_conventions(cl.conventions)
    if cl.metrics is not None:
        plan.metrics = tuple(m for m in (p.strip() for p in cl.metrics.split(",")) if m)
    if cl.data_dir is not None:
        plan.data_dir = cl.data_dir
    if cl.cache_dir is not None:
        plan.cache_dir = cl.cache_dir
    if not plan.rankers:
        raise PlanError(
            "no ranker given: use --ranker NAME[,NAME...|all] or --config FILE "
            "(see `ltr-bench rankers`)"
        )
    if not plan.datasets:
        raise PlanError(
            "no dataset given: use --dataset NAME|PATH or --config FILE (see `ltr-bench datasets`)"
        )
    plan.threads = bound_threads(plan.threads, warn=warn, local=local)
    for r in plan.rankers:
        _check_finite(r.params, f"{r.display}")
    for name, grid in cl_sweeps_and_plan(plan, cl):
        _check_finite(grid, name)
    for text in cl.sweeps:
        name, key, values = parse_sweep(text)
        plan.sweeps.setdefault(name, {})[key] = values
    if cl.label is not None:
        _apply_label(plan, cl.label)
    return expand_sweeps(plan)


def _apply_label(plan: Plan, label: str) -> None:
    """``--label NAME``: the one configuration of the run is named NAME, exactly as a plan's
    ``[rankers.NAME]`` table names it (the row, the records' ``label``, MLflow's ``label`` tag
    and run names; like a plan's label it is not part of the result keys). Its sweeps and
    tuning table follow it (a swept row is ``NAME[key=value]``). Several configurations are
    refused (exit 2): one name for several rows would make them indistinguishable, and
    ``--label`` is for naming one command's row; a plan names several."""
    from ltr_bench.registry import list_rankers
    from ltr_bench.results.labels import VARIANT_SEPARATOR

    text = label.strip()
    if not text:
        raise PlanError("--label: empty; give the row a name, e.g. --label 'lightgbm clicks'")
    control = sorted({c for c in label if unicodedata.category(c).startswith("C")})
    if control:  # a newline or tab would split every table and CSV line the row is in
        shown = ", ".join(repr(c) for c in control)
        raise PlanError(
            f"--label {label!r}: control character(s) {shown}; a row's name is one line of "
            "printable text"
        )
    if len(plan.rankers) != 1:
        names = ", ".join(r.display for r in plan.rankers)
        raise PlanError(
            f"--label {text}: it names one configuration, this run has {len(plan.rankers)} "
            f"({names}); run them one at a time with --label, or name each in a plan's "
            "[rankers.NAME] tables (--config)"
        )
    if split_names(text, option="--label") != [text]:  # a report's --ranker must name it
        raise PlanError(
            f"--label {text}: a comma outside [...] would split it in report --ranker lists; "
            "use another character"
        )
    if VARIANT_SEPARATOR.strip() in text:
        raise PlanError(
            f"--label {text}: '{VARIANT_SEPARATOR.strip()}' separates a row's label from its "
            "data variant in every table; use another character"
        )
    (r,) = plan.rankers
    others = {e.name for e in list_rankers()} - {r.name}
    if text in others:
        raise PlanError(
            f"--label {text}: that is the name of another ranker; a row of {r.name!r} "
            "under it would read as that ranker's"
        )
    old = r.display
    plan.rankers = [RankerChoice(r.name, dict(r.params), text)]
    for tables in (plan.sweeps, plan.tuning):
        if old in tables:
            tables[text] = tables.pop(old)


def _picked(choices: list, names: list[str], cls) -> list:
    """``--ranker`` / ``--dataset``: the named entries of the file (a copy, keeping their
    parameters or options and label), a new one for a name the file does not have."""
    old = {c.display: c for c in choices}
    return [dataclasses.replace(old[n]) if n in old else cls(n) for n in names]


def cl_sweeps_and_plan(plan: Plan, cl: CommandLine):
    """(where, values) of every sweep of the plan file and of ``--sweep``."""
    for label, grid in plan.sweeps.items():
        yield f"sweep.{label}", grid
    for text in cl.sweeps:
        yield f"--sweep {text}", parse_sweep(text)[2]


def _check_finite(value, where: str) -> None:
    """Refuse NaN and infinities anywhere in a parameter value (``--param ridge.alpha=nan``
    fitted nothing sensible, or failed only after the data had loaded); PlanError, exit 2."""
    import math

    if isinstance(value, float) and not math.isfinite(value):
        raise PlanError(f"{where}: {value!r} is not a finite number")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**63:
        # no ranker takes it: numpy and torch overflow (a traceback, or a float overflow
        # found only when training starts)
        digits = len(str(abs(value)))
        raise PlanError(
            f"{where}: an integer of {digits} digits is beyond 64-bit integers (|value| < 2^63); "
            "write a real number with an exponent (1e30)"
        )
    if isinstance(value, dict):
        for k, v in value.items():
            _check_finite(v, f"{where}.{k}")
    elif isinstance(value, (list, tuple)):
        for v in value:
            _check_finite(v, where)


#: more threads per ranker than any machine ltr-bench runs on has cores: refused (LightGBM
#: crashes at 100,000; 2,000 on two cores never finishes)
MAX_THREADS = 1024


def machine_cpus() -> int:
    """CPUs this process may run on (its affinity mask, else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def bound_threads(threads: int | None, *, warn, local: bool = True) -> int | None:
    """``--threads`` / ``threads =`` bounded by the machine: above :data:`MAX_THREADS` it is
    refused (:class:`PlanError`, exit 2); on this machine (``local``) a count above its CPUs
    is lowered to them with a warning, since the extra threads only wait for a core (and
    OpenMP spin-waiting makes them slower than fewer)."""
    if threads is None:
        return None
    if threads > MAX_THREADS:
        raise PlanError(
            f"--threads {threads}: more than {MAX_THREADS} threads per ranker is refused; "
            f"this machine has {machine_cpus()} CPU(s)"
        )
    cpus = machine_cpus()
    if local and threads > cpus:
        warn(f"--threads {threads} is more than the {cpus} CPU(s) of this machine; using {cpus}")
        return cpus
    return threads


def _apply_dataset_options(plan: Plan, assignments: tuple[str, ...]) -> None:
    from ltr_bench.clicks.options import CLICK_OPTIONS
    from ltr_bench.data import UnknownDatasetError, get_spec
    from ltr_bench.run.cells import PATH_DATASET_OPTIONS

    def allowed(name: str) -> set[str]:
        try:
            return set(get_spec(name).options or {}) | set(CLICK_OPTIONS)
        except UnknownDatasetError:
            return set(PATH_DATASET_OPTIONS) | set(CLICK_OPTIONS)  # a folder; names fail later

    opts = {d.display: dict(d.options) for d in plan.datasets}
    names = {d.display: d.name for d in plan.datasets}
    for text in assignments:
        target, key, value = parse_assignment(text, option="--dataset-option", scoped=False)
        if target is not None:
            if target not in opts:
                raise PlanError(
                    f"--dataset-option {text}: dataset {target!r} is not part of "
                    f"this run (datasets: {', '.join(opts) or 'none'})"
                )
            targets = [target]
        else:
            targets = [n for n in opts if key in allowed(names[n])]
            if not targets:
                import difflib

                known = sorted(set().union(*(allowed(names[n]) for n in opts)))
                close = difflib.get_close_matches(key, known, n=2)
                hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
                raise PlanError(
                    f"--dataset-option {text}: no dataset of this run has an option "
                    f"{key!r}.{hint} Options: "
                    + "; ".join(
                        f"{n}: {', '.join(sorted(allowed(names[n]))) or 'none'}" for n in opts
                    )
                )
        for n in targets:
            opts[n][key] = value
    plan.datasets = [DatasetChoice(d.name, opts[d.display], d.label) for d in plan.datasets]

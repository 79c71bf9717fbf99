"""Cells and plan expansion: a :class:`~ltr_bench.run.plan.Plan` becomes a list of cells.

A :class:`Cell` is one unit of work (one ranker configuration on one fold of one dataset
with one seed). It holds everything needed to redo it anywhere and is picklable, so an
executor can ship it to another process or machine. :func:`expand_plan` validates the whole
plan against the registries and the data home before anything runs: an unknown ranker,
parameter, dataset, option or fold fails here, not after the first fit.

Keys
----
``Cell.key`` identifies a result (resume): ``sha256`` of the canonical JSON of (ranker name,
resolved parameters, dataset identity, fold, seed, metric list), where the resolved
parameters are ``get_params()`` after the user's parameters and the seed are applied.
``Cell.plan_key`` drops the fold: it groups the folds of one configuration (one MLflow
parent run). Ranker *versions* are recorded but not part of the key: after upgrading a
ranker, re-run with ``--force``. A parameter that names a file is keyed by the file's
content too (:mod:`ltr_bench.run.param_files`): an edited configuration file is a new cell.
"""

from __future__ import annotations

import difflib
import hashlib
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ltr_bench.clicks.options import (
    CLICK_OPTIONS,
    data_options,
    has_propensity,
    resolve_click_options,
)
from ltr_bench.ranker import RankerTags, apply_run_settings, tags_of
from ltr_bench.results import jsonable
from ltr_bench.results.labels import row_label
from ltr_bench.run.param_files import ParamFileError, param_file_fingerprints
from ltr_bench.run.plan import DatasetChoice, Plan, PlanError, canonical_json

__all__ = [
    "Cell",
    "ExpandedPlan",
    "PATH_DATASET_OPTIONS",
    "build_ranker",
    "expand_plan",
    "ranker_tags",
]


def _sha256(obj: Any) -> str:
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()


@dataclass(frozen=True, eq=False)
class Cell:
    """One unit of work: ranker ``ranker`` with ``params`` on fold ``fold`` of a dataset.

    Everything needed to redo it anywhere (picklable): the dataset as given (registered
    name or path) with its options, folders and seed, and the resolved ranker parameters.
    ``key`` identifies the result (resume); ``plan_key`` groups the folds of one
    (ranker, parameters, dataset, seed) (one MLflow parent run).
    """

    key: str
    plan_key: str
    ranker: str  # registered name (or module:Class import path)
    params: dict[str, Any]  # resolved: get_params() after user params, seed, threads
    user_params: dict[str, Any]  # what the user set
    dataset: str  # display name (registered name, or folder name of a path)
    dataset_source: str  # registered name or path, as loaded
    dataset_options: dict[str, Any]
    dataset_identity: dict[str, Any]
    fold: int
    seed: int
    metrics: tuple[str, ...]
    threads: int | None = None
    data_dir: str | None = None
    cache_dir: str | None = None
    ranker_distribution: str = ""
    ranker_version: str = ""
    score_repeats: int = 5
    max_label: int | None = None
    config_key: str = ""  # the configuration over seeds and folds (no thread count)
    label: str = ""  # the configuration's name in the plan (default: ranker)
    command: str | None = None  # the invocation that planned it (provenance only)
    conventions: tuple[str, ...] = ()  # extra convention profiles to score under
    save_scores: bool = False  # keep the test scores as a TREC run file
    keep_models: str | None = None  # folder to keep the fitted model in (None: not kept)
    param_files: dict[str, str] | None = None  # {parameter: sha256 of the file it names}

    @property
    def row_name(self) -> str:
        """The cell's row as every progress line names it: its label and the data variant
        (:func:`ltr_bench.results.labels.row_label`), e.g. ``lightgbm · clicks pbm eta=1 x10``."""
        return row_label(self.label or self.ranker, self.dataset_options, self.dataset_identity)

    def config(self) -> dict[str, Any]:
        """The resolved configuration of this cell (stored with the run as JSON)."""
        d = {k: jsonable(v) for k, v in asdict(self).items()}
        d["metrics"] = list(self.metrics)
        return d


def _registry():
    from ltr_bench import registry

    return registry


def build_ranker(
    name: str,
    user_params: dict[str, Any],
    *,
    seed: int,
    threads: int | None,
    query_dim: int | None = None,
):
    """``make_ranker(name, user_params)``, then the run's seed, thread count and (on
    query-by-example data) query-block width through the parameters the ranker's tags
    declare (:func:`ltr_bench.ranker.apply_run_settings`: a parameter the user set is never
    overridden, nothing is guessed from names). Raises
    :class:`~ltr_bench.registry.RegistryError` subclasses for unknown names/params, and
    :class:`~ltr_bench.registry.RankerLoadError` for a ranker whose tags name a parameter
    it does not have."""
    ranker = _registry().make_ranker(name, dict(user_params))
    try:
        apply_run_settings(
            ranker, seed=seed, threads=threads, query_dim=query_dim, user_params=user_params
        )
    except (TypeError, ValueError) as exc:
        raise _registry().RankerLoadError(f"ranker {name!r}: {exc}") from None
    return ranker


def _check_click_labels(clicks, label_limits, where: str) -> None:
    """Refuse (exit 2, before any work) click data whose labels can exceed what a ranker
    accepts (``RankerTags.max_label``): click counts go up to ``sessions`` with
    ``aggregate=count``, clicked-or-not is 0/1 with ``aggregate=any``."""
    if not clicks:
        return
    from ltr_bench.evaluation.ranked import MAX_LABEL

    top = int(clicks["sessions"]) if clicks["aggregate"] == "count" else 1
    # the validation clicks are scored by ltr-bench's metrics too (model selection, tuning)
    limits = [*label_limits, ("ltr-bench's metrics (gain 2^label - 1)", MAX_LABEL)]
    over = [(label, limit) for label, limit in limits if top > limit]
    if over:
        names = ", ".join(f"{label} (labels up to {limit})" for label, limit in over)
        raise PlanError(
            f"{where}: with aggregate=count and sessions={top} the click labels (click "
            f"counts) go up to {top}, more than {names} accepts: use sessions <= "
            f"{min(limit for _, limit in over)} or aggregate=any (clicked at least once, 0/1)"
        )


def ranker_tags(ranker) -> RankerTags:
    """The ranker's :class:`RankerTags` (the defaults when it declares none or they are
    unusable)."""
    try:
        return tags_of(ranker)
    except Exception:  # noqa: BLE001 - a ranker without usable tags gets the defaults
        return RankerTags()


def _data():
    from ltr_bench import data

    return data


def _is_path(text: str) -> bool:
    """Whether ``--dataset`` text means a folder (same rule as the data layer)."""
    return (
        os.sep in text
        or "/" in text
        or text.startswith((".", "~"))
        or Path(text).expanduser().is_dir()
    )


PATH_DATASET_OPTIONS = ("n_features", "label_max", "query_norm")


def _resolve_dataset(choice: DatasetChoice, plan: Plan) -> tuple[str, str, Any]:
    """(display name, source for the data layer, spec or None for a folder path).

    Raises UnknownDatasetError for an unknown name that is not a folder, and PlanError for
    an option the dataset does not take.
    """
    data = _data()
    spec = None
    try:
        spec = data.get_spec(choice.name)
    except data.UnknownDatasetError:
        if not _is_path(choice.name):
            raise
        path = Path(choice.name).expanduser().resolve()
        if not path.is_dir():
            raise data.DatasetNotFoundError(
                f"dataset folder {path} does not exist (--dataset takes a known dataset name "
                f"or a folder of LETOR files)"
            ) from None
        display, source, allowed = path.name, str(path), dict.fromkeys(PATH_DATASET_OPTIONS)
    else:
        display, source, allowed = spec.name, spec.name, dict(spec.options or {})
    allowed.update(dict.fromkeys(CLICK_OPTIONS))  # checked by resolve_click_options
    unknown = sorted(set(choice.options) - set(allowed))
    if unknown:
        where = (
            f"{plan.source}: [datasets.{choice.name}]"
            if plan.source
            else f"--dataset-option for {display}"
        )
        valid = ", ".join(sorted(allowed)) or "(none: this dataset takes no options)"
        close = {u: difflib.get_close_matches(u, list(allowed), n=1) for u in unknown}
        hints = "".join(f" Did you mean {c[0]!r} for {u!r}?" for u, c in close.items() if c)
        raise PlanError(
            f"{where}: unknown option(s) {', '.join(unknown)};{hints} valid options: {valid}"
        )
    return display, source, spec


@dataclass
class ExpandedPlan:
    """Cells in run order (dataset, fold, ranker) plus what the harness needs to load folds."""

    plan: Plan
    cells: list[Cell]
    metrics: tuple[str, ...]


def expand_plan(
    plan: Plan,
    *,
    score_repeats: int = 5,
    save_scores: bool = False,
    keep_models: str | Path | None = None,
) -> ExpandedPlan:
    """Validate the plan against the registries and data home; one :class:`Cell` per
    dataset x fold x ranker. ``keep_models``: the results folder, where each cell keeps its
    fitted model (:mod:`ltr_bench.run.keep`); None: models are not kept.

    Raises :class:`PlanError` (bad metric, unknown fold or option),
    :class:`~ltr_bench.registry.RegistryError` (unknown ranker, bad parameter, broken
    plugin) and :class:`~ltr_bench.data.DataError` (unknown dataset, missing or malformed
    data) before anything runs.
    """
    from ltr_bench.evaluation.metrics import DEFAULT_METRICS, MetricKey

    registry = _registry()
    data = _data()
    requested = tuple(plan.metrics) if plan.metrics else tuple(DEFAULT_METRICS)
    try:  # canonical names; both empty-query conventions are always recorded
        metrics = tuple(MetricKey.parse(m).with_empty("1").text for m in requested)
    except ValueError as exc:
        raise PlanError(f"{plan.source + ': ' if plan.source else ''}{exc}") from None
    if len(set(metrics)) != len(metrics):
        raise PlanError(f"a metric is listed twice: {', '.join(requested)}")
    if not plan.rankers:
        raise PlanError("no ranker given")
    if not plan.datasets:
        raise PlanError("no dataset given")

    labels = [c.row_label for c in plan.rankers]
    if len(set(labels)) != len(labels):
        raise PlanError(f"a ranker configuration is listed twice: {', '.join(labels)}")

    # rankers: unknown names and parameters fail here, before any data is loaded
    seeds = plan.all_seeds()
    ranker_info = []
    position_rankers: list[str] = []  # rankers that need click positions (unbiased)
    label_limits: list[tuple[str, int]] = []  # ('row label', largest label its fit accepts)
    propensity_rankers: list[str] = []  # rankers that weight by the true propensities
    for choice in plan.rankers:
        entry = registry.get_entry(choice.name)
        resolved_by_seed = {}
        for seed in seeds:
            where = f"{plan.source}: [rankers.{choice.display}]" if plan.source else "--param"
            try:
                ranker = build_ranker(choice.name, choice.params, seed=seed, threads=plan.threads)
            except registry.BadParameterError as exc:
                raise registry.BadParameterError(f"{where}: {exc}") from None
            validate = getattr(ranker, "validate_params", None)
            if callable(validate):  # values, before any data is loaded (exit 2)
                try:
                    validate()
                except (ValueError, TypeError) as exc:
                    raise registry.BadParameterError(
                        f"{where}: ranker {choice.display!r}: {exc}"
                    ) from None
            check_user = getattr(ranker, "check_user_params", None)
            if callable(check_user) and choice.params:  # applied or refused, never ignored
                try:
                    check_user(dict(choice.params))
                except (ValueError, TypeError) as exc:
                    raise registry.BadParameterError(
                        f"{where}: ranker {choice.display!r}: {exc}"
                    ) from None
            resolved_by_seed[seed] = jsonable(ranker.get_params(deep=False))
        tags = ranker_tags(ranker)
        try:  # files named by parameters: their content is part of the identity
            files = param_file_fingerprints(resolved_by_seed[seeds[0]], tags.file_params)
        except ParamFileError as exc:
            raise registry.BadParameterError(f"{where}: ranker {choice.display!r}: {exc}") from None
        # what identifies a configuration: not the seed (a cell key has it on its own) and
        # not the thread count (it changes speed, never the numbers of these rankers)
        volatile = {getattr(tags, "seed_param", None), tags.thread_param} - {None}
        ranker_info.append((choice, entry, resolved_by_seed, volatile, files))
        if getattr(tags, "requires_position", False):
            position_rankers.append(choice.row_label)
        if getattr(tags, "requires_propensity", False):
            propensity_rankers.append(choice.row_label)
        if tags.max_label is not None:
            label_limits.append((repr(choice.row_label), int(tags.max_label)))
    seen: dict[str, str] = {}

    cells: list[Cell] = []
    for dchoice in plan.datasets:
        display, source, spec = _resolve_dataset(dchoice, plan)
        load_source: Any = Path(source) if spec is None else source
        where = f"{plan.source}: [datasets.{dchoice.name}]" if plan.source else "--dataset-option"
        clicks = resolve_click_options(
            dchoice.options,
            kind="path" if spec is None else spec.kind,
            where=where,
            dataset=display,
        )
        if position_rankers and not clicks:  # an unbiased ranker needs click data
            names = ", ".join(repr(r) for r in position_rankers)
            verb = "learns" if len(position_rankers) == 1 else "learn"
            raise PlanError(
                f"{where}: {names} {verb} from the positions of simulated clicks (unbiased), "
                f"but dataset {display} has no click options: add clicks=<model> (e.g. "
                "--dataset-option clicks=pbm) or leave unbiased off"
            )
        _check_click_labels(clicks, label_limits, where)
        if clicks and propensity_rankers and not has_propensity(clicks):
            raise PlanError(
                f"{where}: {', '.join(map(repr, propensity_rankers))} weight(s) each click by "
                f"its true examination propensity, but click model {clicks['model']['name']!r} "
                "has none for some shown rows (no examination step, or 0 below a document of "
                "the top grade as in the cascade family): use pbm, base-cascade or dcm "
                "(lam > 0), or a method that learns the propensities (neural.unbiased=dla)"
            )
        options = data_options(dchoice.options) or None
        # raises DatasetNotFoundError (where to download, where to put the files) when absent
        available = list(data.available_folds(load_source, data_dir=plan.data_dir, options=options))
        folds = available if plan.folds is None else list(plan.folds)
        missing = [f for f in folds if f not in available]
        if missing:
            raise PlanError(
                f"dataset {display} has no fold {missing[0]}; available folds: "
                f"{', '.join(map(str, available))}"
            )
        for seed in seeds:
            identity = jsonable(
                data.dataset_identity(
                    load_source, data_dir=plan.data_dir, seed=seed, options=options
                )
            )
            if clicks:  # simulated click logs: their configuration and seed are the data's
                identity = {**identity, "clicks": clicks, "seed": seed}
            for fold in folds:
                for choice, entry, resolved_by_seed, volatile, files in ranker_info:
                    resolved = resolved_by_seed[seed]
                    stable = {k: v for k, v in resolved.items() if k not in volatile}
                    config = {
                        "ranker": choice.name,
                        "params": stable,
                        "dataset": {k: v for k, v in identity.items() if k != "seed"},
                        "metrics": list(metrics),
                    }
                    if plan.conventions:  # profile keys in the record: part of its identity
                        config["conventions"] = list(plan.conventions)
                    if files:  # only then: keys of configurations without files stay
                        config["files"] = files
                    config_key = _sha256(config)
                    if seen.setdefault(config_key, choice.row_label) != choice.row_label:
                        raise PlanError(
                            f"ranker configurations {seen[config_key]!r} and "
                            f"{choice.row_label!r} have the same parameters"
                        )
                    base = {**config, "dataset": identity, "seed": seed}
                    cells.append(
                        Cell(
                            key=_sha256({**base, "fold": fold}),
                            plan_key=_sha256(base),
                            config_key=config_key,
                            ranker=choice.name,
                            label=choice.row_label,
                            params=resolved,
                            user_params=dict(choice.params),
                            dataset=display,
                            dataset_source=source,
                            dataset_options=dict(dchoice.options),
                            dataset_identity=identity,
                            fold=fold,
                            seed=seed,
                            metrics=metrics,
                            threads=plan.threads,
                            data_dir=plan.data_dir,
                            cache_dir=plan.cache_dir,
                            ranker_distribution=entry.distribution,
                            ranker_version=entry.version,
                            score_repeats=score_repeats,
                            command=plan.command,
                            conventions=tuple(plan.conventions),
                            save_scores=save_scores,
                            keep_models=None if keep_models is None else str(keep_models),
                            param_files=files or None,
                            max_label=None if spec is None else int(spec.label_max),
                        )
                    )
    return ExpandedPlan(plan=plan, cells=cells, metrics=metrics)

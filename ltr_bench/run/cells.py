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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ltr_bench.clicks.options import CLICK_OPTIONS, data_options, resolve_click_options
from ltr_bench.ranker import RankerTags, apply_run_settings, tags_of
from ltr_bench.results import jsonable
from ltr_bench.results.labels import row_label
from ltr_bench.run import click_checks
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
    propensity_estimate: str | None = None  # the estimated propensities fit gets (None: true)

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
    click_labels: bool = False,
):
    """``make_ranker(name, user_params)``, then the run's seed, thread count, (on
    query-by-example data) query-block width and (on click data, ``click_labels``) the
    linear gain through the parameters the ranker's tags declare
    (:func:`ltr_bench.ranker.apply_run_settings`: a parameter the user set is never
    overridden, nothing is guessed from names). Raises
    :class:`~ltr_bench.registry.RegistryError` subclasses for unknown names/params, and
    :class:`~ltr_bench.registry.RankerLoadError` for a ranker whose tags name a parameter
    it does not have."""
    ranker = _registry().make_ranker(name, dict(user_params))
    try:
        apply_run_settings(
            ranker,
            seed=seed,
            threads=threads,
            query_dim=query_dim,
            user_params=user_params,
            click_labels=click_labels,
        )
    except (TypeError, ValueError) as exc:
        raise _registry().RankerLoadError(f"ranker {name!r}: {exc}") from None
    return ranker


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
        if plan.source:
            where = f"{plan.source}: [datasets.{choice.name}]"
        elif set(unknown) <= set(choice.swept):  # the keys came from --sweep, not an option
            where = f"--sweep {choice.name}.{','.join(unknown)}"
        else:
            where = f"--dataset-option for {display}"
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
    notes: list[str] = field(default_factory=list)  # what the plan runs differently than listed


class _Configured:
    """One ranker configuration of a plan, built and checked per seed and per kind of data
    (click labels or not: the harness gives click data the linear gain,
    ``RankerTags.gain_param``), each once. Every check runs before any data is loaded."""

    def __init__(self, choice, entry, plan: Plan):
        self.choice, self.entry, self.plan = choice, entry, plan
        self.where = f"{plan.source}: [rankers.{choice.display}]" if plan.source else "--param"
        self._resolved: dict[tuple[int, bool], dict[str, Any]] = {}
        self._tags: dict[bool, RankerTags] = {}
        self.files: dict[str, str] = {}
        self.volatile: set[str] = set()
        self._identified = False

    def _build(self, seed: int, click_labels: bool):
        registry, choice, where = _registry(), self.choice, self.where
        try:
            ranker = build_ranker(
                choice.name,
                choice.params,
                seed=seed,
                threads=self.plan.threads,
                click_labels=click_labels,
            )
        except registry.BadParameterError as exc:
            raise registry.BadParameterError(f"{where}: {exc}") from None
        checks = [getattr(ranker, "validate_params", None)]  # values, before any data
        if choice.params:  # user parameters are applied or refused, never ignored
            check_user = getattr(ranker, "check_user_params", None)
            if callable(check_user):
                checks.append(lambda: check_user(dict(choice.params)))
        for check in checks:
            if callable(check):
                try:
                    check()
                except (ValueError, TypeError) as exc:
                    raise registry.BadParameterError(
                        f"{where}: ranker {choice.display!r}: {exc}"
                    ) from None
        return ranker

    def resolved(self, seed: int, click_labels: bool) -> dict[str, Any]:
        """The resolved parameters (``get_params()`` after the run's settings)."""
        key = (seed, click_labels)
        if key not in self._resolved:
            ranker = self._build(seed, click_labels)
            self._resolved[key] = jsonable(ranker.get_params(deep=False))
            if click_labels not in self._tags:
                self._tags[click_labels] = ranker_tags(ranker)
            if not self._identified:
                self._identify(self._tags[click_labels], self._resolved[key])
                self._identified = True
        return self._resolved[key]

    def _identify(self, tags: RankerTags, resolved: dict[str, Any]) -> None:
        try:  # files named by parameters: their content is part of the identity
            self.files = param_file_fingerprints(resolved, tags.file_params)
        except ParamFileError as exc:
            raise _registry().BadParameterError(
                f"{self.where}: ranker {self.choice.display!r}: {exc}"
            ) from None
        # what identifies a configuration: not the seed (a cell key has it on its own) and
        # not the thread count (it changes speed, never the numbers of these rankers)
        self.volatile = {p for p in (tags.seed_param, tags.thread_param) if p is not None}

    def tags(self, click_labels: bool) -> RankerTags:
        """The tags of the configuration as it runs on click data or not."""
        if click_labels not in self._tags:
            self.resolved(self.plan.all_seeds()[0], click_labels)
        return self._tags[click_labels]


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
    configs = [
        _Configured(choice, registry.get_entry(choice.name), plan) for choice in plan.rankers
    ]
    for configured in configs:
        for seed in seeds:
            configured.resolved(seed, False)

    variants = []  # (choice, display, source, spec, clicks, where) per dataset variant
    for dchoice in plan.datasets:
        display, source, spec = _resolve_dataset(dchoice, plan)
        swept_clicks = [k for k in dchoice.swept if k in CLICK_OPTIONS]
        if plan.source:
            where = f"{plan.source}: [datasets.{dchoice.display}]"
        elif swept_clicks:  # click values from --sweep (with any --dataset-option beside)
            where = f"--sweep {dchoice.name}.{','.join(swept_clicks)} (variant {display})"
        else:
            where = "--dataset-option"
        clicks = resolve_click_options(
            dchoice.options,
            kind="path" if spec is None else spec.kind,
            where=where,
            dataset=display,
        )
        variants.append((dchoice, display, source, spec, clicks, where))
    notes: list[str] = []
    with_clicks = any(v[4] for v in variants)
    listed: dict[str, str] = {}
    seen: dict[str, str] = {}
    cells: list[Cell] = []
    for dchoice, display, source, spec, clicks, where in variants:
        twice = canonical_json([source, dchoice.options])
        if listed.setdefault(twice, dchoice.display) != dchoice.display:
            raise PlanError(
                f"{where}: datasets {listed[twice]!r} and {dchoice.display!r} are the same "
                "data with the same options"
            )
        running = []
        positional = [c.choice.row_label for c in configs if c.tags(False).requires_position]
        if positional and not clicks and not with_clicks:  # an unbiased ranker needs clicks
            click_checks.refuse_positions_without_clicks(positional, where, display)
        for configured in configs:
            tags = configured.tags(bool(clicks))
            if tags.requires_position and not clicks:  # runs on the plan's click data only
                notes.append(
                    f"{configured.choice.row_label!r} does not run on {dchoice.display} (true "
                    "labels): it learns from the positions of clicks"
                )
                continue
            running.append((configured, tags))
        label_limits = [
            (repr(c.choice.row_label), int(t.max_label))
            for c, t in running
            if t.max_label is not None
        ]
        click_checks.check_click_labels(clicks, label_limits, where)
        click_checks.check_aggregate(
            clicks, [c.choice.row_label for c, t in running if t.requires_position], where
        )
        click_checks.check_propensities(
            clicks, [c.choice.row_label for c, t in running if t.requires_propensity], where
        )
        load_source: Any = Path(source) if spec is None else source
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
                for configured, tags in running:
                    choice = configured.choice
                    resolved = configured.resolved(seed, bool(clicks))
                    files = configured.files
                    stable = {k: v for k, v in resolved.items() if k not in configured.volatile}
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
                    estimate = tags.propensity_estimate if clicks else None
                    if estimate:  # the estimator's settings and version decide the numbers
                        from ltr_bench.clicks.propensities import estimator_spec

                        config["propensity_estimate"] = estimator_spec(estimate)
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
                            ranker_distribution=configured.entry.distribution,
                            ranker_version=configured.entry.version,
                            score_repeats=score_repeats,
                            command=plan.command,
                            conventions=tuple(plan.conventions),
                            save_scores=save_scores,
                            keep_models=None if keep_models is None else str(keep_models),
                            param_files=files or None,
                            max_label=None if spec is None else int(spec.label_max),
                            propensity_estimate=estimate,
                        )
                    )
    return ExpandedPlan(plan=plan, cells=cells, metrics=metrics, notes=notes)

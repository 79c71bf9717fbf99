"""The ranker contract every ranker (built-in or plugin) implements.

Contract (scikit-learn style)::

    fit(X, y, *, qid, eval_set=None) -> self
        X: array (n_docs, n_features); y: integer relevance labels (n_docs,);
        qid: query id per row (n_docs,), rows of one query contiguous;
        eval_set: None or (X_val, y_val, qid_val), the validation split.
    fit(X, y, *, qid, eval_set=None, position=None, propensity=None)   (clicks; see below)
        only for a ranker whose tags say ``accepts_position=True``: on click data
        (:mod:`ltr_bench.clicks`), y holds click counts and the harness also passes
        position: int64 (n_docs,), the 1-based rank at which the logging ranker showed
        the row; propensity: float64 (n_docs,), the click model's true probability that the
        row was examined there (NaN where none; an estimate: RankerTags.propensity_estimate).
        On data without clicks both stay None. Other rankers never receive them.
    predict(X, *, qid=None) -> np.ndarray float64 (n_docs,)
        Higher score = more relevant. Scores are in the input row order.
    get_params(deep=True) / set_params(**params)   (from scikit-learn's BaseEstimator)
    ranker_tags() -> RankerTags                       (what the ranker declares; see below)
    fitted_info() -> dict[str, int | float | str]     (what the fitted model is; see below)
    save_native(folder) -> dict; classmethod load_native(folder, manifest) -> ranker
                                                      (optional: the ranker can be saved)
    export_onnx(kit) -> onnx.ModelProto               (optional: the ranker can be exported)

Conventions: ``__init__`` only stores its arguments; learned state ends in ``_``;
``predict`` before ``fit`` raises :class:`NotFittedError` with a message that says so. A
query with one document or with all labels 0 must not crash a ranker.

Capabilities are declared, never sniffed: :func:`apply_run_settings` gives the seed, thread
count, query-block width and gain only to the parameters :class:`RankerTags` names.

Query-by-example data (``wine``, ``wdbc``): each row is ``[query features, document
features]`` (two blocks of equal width ``d``). A ranker that understands this names the
parameter that receives ``d`` in ``RankerTags.query_dim_param`` (the harness sets it on such
data only; its default must mean "no query block") and splits rows with
:func:`split_query_document`; other rankers simply learn on the concatenated features.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

# the input checks live in their own module; they are part of this contract's API
from ltr_bench.ranker_input import RankerInputError, check_ranking_input, query_boundaries

__all__ = [
    "CONTRACT_VERSION",
    "SUPPORTED_CONTRACT_VERSIONS",
    "UNVERSIONED_CONTRACT",
    "BaseRanker",
    "EvalSet",
    "NotFittedError",
    "Ranker",
    "RankerInputError",
    "RankerTags",
    "apply_run_settings",
    "can_export",
    "can_save",
    "check_ranking_input",
    "query_boundaries",
    "split_query_document",
    "tags_of",
]


#: The version of this contract, raised whenever the contract changes in a way a plugin must
#: follow. A plugin declares the version it was built for as ``contract_version`` on its
#: ranker class; ``check_ranker`` reports both, and ``ltr-bench rankers`` lists a plugin built
#: for a version this ltr-bench no longer runs as unavailable, with why (docs/contributing.md,
#: "Deprecation policy").
CONTRACT_VERSION = 1
#: the contract versions this ltr-bench runs (the current one and those still in their
#: deprecation period)
SUPPORTED_CONTRACT_VERSIONS: tuple[int, ...] = (1,)
#: the version of a ranker that declares none (written before the contract had versions)
UNVERSIONED_CONTRACT = 1


@dataclass(frozen=True)
class RankerTags:
    """What a ranker declares about itself; the harness and ``check_ranker`` read only these.

    requires_qid_at_predict: ``predict`` needs ``qid`` (e.g. per-query normalisation). When
        False, ``check_ranker`` verifies that ``predict(X)`` equals ``predict(X, qid=qid)``.
    uses_eval_set: ``fit`` uses the validation split (early stopping, model selection). The
        harness passes ``eval_set`` (the validation split, never test data) whenever there is
        one; the tag says whether the model depends on it. When False (and deterministic),
        ``check_ranker`` verifies that fitting with and without it gives the same scores.
    deterministic: the same seed (``seed_param``; for a ranker without randomness, nothing)
        and the same thread count give identical scores; ``check_ranker`` verifies it.
    thread_param: name of the parameter that sets the number of threads, or None. The
        harness sets it to the run's thread count (``--threads``) unless the user set it.
    seed_param: name of the parameter that takes the seed (an ``int``), or None when the
        ranker has no randomness (then it is not reproducible if it has some). The harness
        sets it to the run's seed unless the user set it.
    query_dim_param: name of the parameter that receives the width ``d`` of the query block
        on query-by-example data (rows ``[query (d), document (d)]``), or None when the
        ranker treats such rows as plain features. The harness sets it (unless the user did)
        only on query-by-example data; its default must mean "no query block".
    accepts_position: ``fit`` takes the keywords ``position`` and ``propensity`` (click data,
        see the contract above), passed only when this is True and the training split has
        them; every other ranker trains on the clicks as labels (naive), unchanged.
    requires_position: ``fit`` cannot work without ``position`` (an unbiased learner; implies
        ``accepts_position``): refused on data without clicks before any work (exit 2).
    requires_propensity: ``fit`` needs a finite positive ``propensity`` for every shown row
        (IPS with the true propensities): refused, before any work (exit 2), on clicks whose
        model has none (allRank's but ``base-cascade``; the cascade family).
    max_label: the largest integer label ``fit`` accepts, or None for any (LightGBM's
        lambdarank with its default 31-entry ``label_gain`` table: 30): click data whose
        labels (counts, up to ``sessions``) can exceed it is refused before any work (exit 2).
    gain_param: the parameter taking the gain of the NDCG objective and metric, ``"exp"``
        (``2^label - 1``, its default) or ``"linear"``; set to ``"linear"`` on click data
        (counts estimate click-through rates) unless the user set it; or None.
    propensity_estimate: None, ``fit`` gets the true ``propensity``; ``"randomisation"`` /
        ``"em"``: an estimate (:mod:`ltr_bench.clicks.propensities`).
    file_params: names of the parameters whose values name files that decide the model (an
        allRank configuration, a click log). The harness keys a result on their content
        (``sha256``), not their path, so an edited file is never answered with an old result
        (:mod:`ltr_bench.run.param_files`; any other parameter whose value names an existing
        file is fingerprinted too).

    Every ``*_param`` must name a parameter of ``get_params()`` (``check_ranker`` verifies it).
    """

    requires_qid_at_predict: bool = False
    uses_eval_set: bool = False
    deterministic: bool = True
    thread_param: str | None = None
    seed_param: str | None = None
    query_dim_param: str | None = None
    accepts_position: bool = False
    requires_position: bool = False
    file_params: tuple[str, ...] = ()
    requires_propensity: bool = False
    max_label: int | None = None
    gain_param: str | None = None
    propensity_estimate: str | None = None

    @property
    def query_dependent(self) -> bool:
        """Whether ``query_dim_param`` is set (read-only; code written for the earlier flag)."""
        return self.query_dim_param is not None

    def declared_params(self) -> dict[str, str]:
        """``{tag name: parameter name}`` of the ``*_param`` tags that are set."""
        return {
            tag: value
            for tag, value in (
                ("thread_param", self.thread_param),
                ("seed_param", self.seed_param),
                ("query_dim_param", self.query_dim_param),
                ("gain_param", self.gain_param),
            )
            if value is not None
        }


#: ``eval_set`` of ``fit``: ``(X_val, y_val, qid_val)``
EvalSet = tuple[ArrayLike, ArrayLike, ArrayLike]


@runtime_checkable
class Ranker(Protocol):
    """The contract for static type checkers (the harness relies on duck typing only)."""

    def fit(
        self, X: ArrayLike, y: ArrayLike, *, qid: ArrayLike, eval_set: EvalSet | None = None
    ) -> Ranker: ...

    def predict(self, X: ArrayLike, *, qid: ArrayLike | None = None) -> np.ndarray: ...

    def get_params(self, deep: bool = True) -> dict[str, Any]: ...

    def set_params(self, **params: Any) -> Ranker: ...


def split_query_document(
    X: np.ndarray, query_dim: int | None, *, param: str = "query_dim"
) -> tuple[np.ndarray | None, np.ndarray]:
    """``(Q, D)``: the query block and the document block of query-by-example rows.

    ``X`` (n_rows, 2 * query_dim) holds rows ``[query (query_dim), document (query_dim)]``;
    ``Q = X[:, :query_dim]``, ``D = X[:, query_dim:]`` (views, not copies). ``query_dim=None``
    means the rows have no query block: ``(None, X)``. ``param`` is the ranker's name for
    the parameter (``RankerTags.query_dim_param``), used in the error messages. Raises
    :class:`RankerInputError` (a ``ValueError``) naming ``param`` and the width when
    ``query_dim`` is not a positive integer or ``X`` is not ``2 * query_dim`` wide.
    """
    if query_dim is None:
        return None, X
    if not isinstance(query_dim, numbers.Integral) or isinstance(query_dim, bool) or query_dim < 1:
        raise RankerInputError(f"{param} must be a positive integer or None, got {query_dim!r}")
    qd = int(query_dim)
    width = X.shape[1] if getattr(X, "ndim", 0) == 2 else None
    if width != 2 * qd:
        raise RankerInputError(
            f"{param}={qd} means rows [query ({qd}), document ({qd})] of width {2 * qd}, but X "
            f"has {width if width is not None else 'no'} columns (shape {np.shape(X)})"
        )
    return X[:, :qd], X[:, qd:]


def can_save(ranker: object) -> bool:
    """Whether ``ranker`` (an instance or a class) declares it can be saved: it has its own
    ``save_native`` and ``load_native`` (overriding :class:`BaseRanker`'s, which refuse)."""
    return _declares(ranker, "save_native") and _declares(ranker, "load_native")


def can_export(ranker: object) -> bool:
    """Whether ``ranker`` (an instance or a class) declares it can be exported to ONNX: it has
    its own ``export_onnx`` (overriding :class:`BaseRanker`'s, which refuses)."""
    return _declares(ranker, "export_onnx")


def _declares(ranker: object, hook: str) -> bool:
    """``ranker``'s class defines ``hook`` itself or inherits it from a class other than
    :class:`BaseRanker` (whose hooks refuse); a class without BaseRanker counts when it has
    the method at all."""
    import inspect

    cls = ranker if isinstance(ranker, type) else type(ranker)
    own = inspect.getattr_static(cls, hook, None)
    return own is not None and own is not BaseRanker.__dict__[hook]


def tags_of(ranker: object) -> RankerTags:
    """``ranker.ranker_tags()``, or the default :class:`RankerTags` when the ranker has no
    such method. Raises ``TypeError`` when the method returns something else (a broken
    declaration must not silently become the defaults)."""
    getter = getattr(ranker, "ranker_tags", None)
    if getter is None:
        return RankerTags()
    tags = getter()
    if not isinstance(tags, RankerTags):
        raise TypeError(
            f"{type(ranker).__name__}.ranker_tags() must return ltr_bench.ranker.RankerTags, "
            f"got {type(tags).__name__}"
        )
    return tags


def apply_run_settings(
    ranker: Ranker,
    *,
    seed: int | None,
    threads: int | None,
    query_dim: int | None,
    user_params: Iterable[str] = (),
    click_labels: bool = False,
) -> dict[str, Any]:
    """Give ``ranker`` a run's seed, thread count, query-block width and click gain.

    Each setting goes to the parameter its tag declares (``seed`` -> ``seed_param``,
    ``threads`` -> ``thread_param``, ``query_dim`` -> ``query_dim_param``, ``"linear"`` ->
    ``gain_param`` if ``click_labels``) and nowhere else: nothing is guessed from parameter
    names. A setting is skipped when its value is None (no seed, library-default threads, no
    query block, not clicks), when the ranker declares no parameter for it, or when that
    parameter is in ``user_params`` (the names the user set explicitly; a dict works, its
    keys are used) -- the user's value wins.

    Returns ``{parameter: value}`` of the updates applied with ``set_params``. Raises
    ``ValueError`` naming the tag when a tag names a parameter that ``get_params()`` does not
    have, and ``TypeError`` when ``ranker_tags()`` returns no :class:`RankerTags`.
    """
    tags = tags_of(ranker)
    params = ranker.get_params(deep=False)
    explicit = set(user_params)
    updates: dict[str, Any] = {}
    for tag, param, value in (
        ("seed_param", tags.seed_param, seed),
        ("thread_param", tags.thread_param, threads),
        ("query_dim_param", tags.query_dim_param, query_dim),
        ("gain_param", tags.gain_param, "linear" if click_labels else None),
    ):
        if param is None or value is None:
            continue
        if param not in params:
            raise ValueError(
                f"{type(ranker).__name__}: RankerTags.{tag}={param!r} is not a parameter of "
                f"the ranker (parameters: {', '.join(sorted(params)) or 'none'})"
            )
        if param not in explicit:
            updates[param] = value
    if updates:
        ranker.set_params(**updates)
    return updates


class BaseRanker(BaseEstimator):  # type: ignore[misc]  # scikit-learn ships no type information
    """Base class: scikit-learn parameter handling (get/set_params, clone) plus tags.

    Subclasses implement ``fit`` and ``predict``, override :meth:`ranker_tags` when they
    differ from the defaults, :meth:`fitted_info` when they can say what they learned and
    :meth:`learning_curves` when they train in iterations or epochs.
    """

    def ranker_tags(self) -> RankerTags:
        """What this ranker declares (:class:`RankerTags`); the defaults: no seed, thread or
        query-block parameter, deterministic, ``predict`` works without ``qid``."""
        return RankerTags()

    def validate_params(self) -> None:
        """Check the parameter values without any data; raise ``ValueError`` (or
        ``TypeError``) naming the parameter and what is allowed.

        Called by the harness when the plan is expanded, before any data is loaded, so a bad
        value is a bad invocation (exit 2), not a failure after loading. Declare
        scikit-learn's ``_parameter_constraints`` (``{name: [constraints]}``, see
        ``sklearn.utils._param_validation``: e.g. ``[Interval(Integral, 2, None,
        closed="left"), None]``) and this checks them; or override ``_validate_params``
        (also called from ``fit``). A ranker declaring neither is not checked here.
        """
        from sklearn.base import BaseEstimator

        own = type(self)._validate_params is not BaseEstimator._validate_params
        if own or getattr(self, "_parameter_constraints", None):
            self._validate_params()

    def check_user_params(self, user_params: dict[str, Any]) -> None:
        """Refuse a parameter the user set that would have no effect; raise ``ValueError``
        naming it and why (e.g. a configuration file the ranker reads replaces it).

        Called by the harness when the plan is expanded, after :meth:`validate_params`, with
        the parameters the user set explicitly (``--param``, a plan's table): an override is
        applied or refused, never recorded without effect. The default accepts all.
        """

    def fitted_info(self) -> dict[str, int | float | str]:
        """What the fitted model is: its size and training diagnostics (e.g. trees used,
        best iteration, leaves, rank of a learned metric, iterations until convergence).

        Called by the harness once after ``fit`` and stored with the run. Keys are ``str``;
        values are JSON scalars: ``bool``, ``int``, finite ``float`` or ``str`` (numpy
        integers are not ``int``: convert them). Leave out what is unknown rather than
        returning None or NaN. Should be cheap compared with ``fit``. The default says
        nothing: ``{}``.
        """
        return {}

    def learning_curves(self) -> dict[str, list[float]]:
        """The fitted model's training curves: one value per iteration (boosting round) or
        epoch, in training order, per quantity.

        Keys name the quantity and the split it was measured on, e.g. ``"train_loss"``,
        ``"vali_loss"``, ``"vali_ndcg@10"`` (metric names as ``--metrics`` spells them);
        values are lists of ``float`` (the i-th value belongs to iteration ``i + 1``; curves
        of one ranker may differ in length, e.g. a metric evaluated every few epochs). Called
        by the harness once after ``fit``; the curves are stored in the result record
        (``ResultRecord.learning_curves``) and logged to MLflow as step metrics of the fold
        run (``curve.<key>``, step = iteration), so the MLflow UI draws them. Use only
        training and validation data: never the test split. The default: no curves, ``{}``.
        """
        return {}

    def save_native(self, folder: Path) -> dict[str, Any]:
        """Write the fitted model into the existing, empty ``folder`` (a :class:`pathlib.Path`)
        in non-executable formats (a library's own model file, JSON, ``.npz``; never pickle)
        and return the manifest extras: a ``str``-keyed dict of JSON values (``{}`` for none).

        Overriding this and :meth:`load_native` declares that the ranker can be saved; the
        default says it cannot (``NotImplementedError``). ``ltr_bench.models.save_model`` calls
        it (inside a temporary folder that is renamed when complete) and writes the manifest;
        :mod:`ltr_bench.model_state` writes fitted numbers (``save_fitted_state``)."""
        raise NotImplementedError(
            f"{type(self).__name__} cannot be saved: it does not implement save_native() and "
            "load_native() (see the plugin guide, 'Save and load')"
        )

    @classmethod
    def load_native(cls, folder: Path, manifest: dict[str, Any]) -> BaseRanker:
        """The fitted ranker :meth:`save_native` wrote in ``folder``; ``manifest`` is the
        model's manifest (``manifest["params"]``: ``get_params(deep=False)`` at saving;
        ``manifest["extras"]``: what ``save_native`` returned). Must not unpickle anything.
        ``predict`` of the result must equal the saved ranker's bit for bit."""
        raise NotImplementedError(f"{cls.__name__} cannot load a saved model")

    def export_onnx(self, kit: Any) -> Any:
        """The fitted model as an ONNX graph (an ``onnx.ModelProto``) that scores rows exactly
        as ``predict`` does: input ``"X"``, double ``[n_docs, n_features_in_]`` (the rows
        ``predict`` gets), output ``"score"``, double ``[n_docs]``, in row order. A ranker
        whose tags say ``requires_qid_at_predict`` receives one query's rows per call.

        ``kit`` is :mod:`ltr_bench.models.onnx.kit`: the shared builders (a graph with that
        signature, linear scorers, tree ensembles from LightGBM / XGBoost / CatBoost,
        threshold sums), handed in so that a ranker imports nothing of ``ltr_bench.models``.
        Overriding this declares that the ranker can be exported (:func:`can_export`);
        ``ltr-bench export`` adds the manifest's preprocessing (``query_norm``) and metadata,
        and proves the graph with ONNX Runtime. The default refuses (``NotImplementedError``)."""
        raise NotImplementedError(
            f"{type(self).__name__} cannot be exported to ONNX: it does not implement "
            "export_onnx() (see the plugin guide, 'Export to ONNX')"
        )

    def _check_fitted(self, *attributes: str) -> None:
        attrs = attributes or tuple(
            k for k in vars(self) if k.endswith("_") and not k.startswith("_")
        )
        if not attrs or any(not hasattr(self, a) for a in attrs):
            raise NotFittedError(
                f"This {type(self).__name__} is not fitted yet: call fit(X, y, qid=...) "
                "before predict"
            )

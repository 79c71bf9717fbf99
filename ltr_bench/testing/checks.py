"""The conformance checks themselves, one function per check (table in :mod:`ltr_bench.testing`).

Each ``check_*`` function takes the shared :class:`Context` (the original ranker, its tags, the
data and one lazily fitted clone) and raises :class:`AssertionError` with the reason when the
ranker breaks the contract.
"""

from __future__ import annotations

import json
import math
from typing import Any

import joblib
import numpy as np
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from ltr_bench.ranker import CONTRACT_VERSION, RankerTags, tags_of
from ltr_bench.registry import contract_mismatch
from ltr_bench.testing.data import (
    SEED,
    block_permutation,
    make_check_data,
    make_query_by_example,
    with_degenerate_queries,
)


def describe(ranker: object) -> str:
    text = repr(ranker)
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:297] + "..."


def _tags(ranker: object) -> RankerTags:
    return tags_of(ranker)


def _assert_scores(scores: object, n: int, what: str) -> None:
    assert isinstance(scores, np.ndarray), f"{what} returned {type(scores).__name__}, not ndarray"
    assert scores.dtype == np.float64, f"{what} returned dtype {scores.dtype}, not float64"
    assert scores.shape == (n,), f"{what} returned shape {scores.shape}, expected ({n},)"
    assert np.isfinite(scores).all(), f"{what} returned NaN or infinite scores"


def _assert_same_scores(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    scale = max(1.0, float(np.max(np.abs(expected))) if expected.size else 1.0)
    if not np.allclose(actual, expected, rtol=1e-7, atol=1e-9 * scale):
        worst = int(np.argmax(np.abs(actual - expected)))
        raise AssertionError(
            f"{what}: row {worst} got {float(actual[worst])!r}, expected "
            f"{float(expected[worst])!r} "
            f"(max abs difference {np.max(np.abs(actual - expected)):.3g})"
        )


def _same_param(a: object, b: object) -> bool:
    if a is b:
        return True
    try:
        return bool(joblib.hash(a) == joblib.hash(b))
    except Exception:  # unhashable by joblib: fall back to equality
        try:
            return bool(a == b)
        except Exception:
            return False


class Context:
    """Data and one shared fitted ranker, built lazily so each check fits only what it needs.

    The data attributes hand out fresh copies, so a ranker that writes into its inputs
    cannot spoil the data of later checks (``no_input_mutation`` reports it).
    """

    def __init__(self, ranker: Any, quick: bool):
        self.original = ranker
        self.quick = quick
        try:
            self.tags = _tags(ranker)
        except Exception:  # reported by the "tags" check
            self.tags = RankerTags()
        size = (
            dict(n_queries=8, n_features=5, max_docs=12)
            if quick
            else dict(n_queries=30, n_features=10, max_docs=30)
        )
        self._train = make_check_data(SEED, **size)
        self._val = make_check_data(SEED + 1, **size)
        X_test, _, qid_test = make_check_data(SEED + 2, **size)
        self._test = (X_test, qid_test)
        for a in (*self._train, *self._val, *self._test):
            a.setflags(write=False)
        self.n_permutations = 1 if quick else 3
        self._base: Any = None
        self._fitted: Any = None

    @property
    def X(self) -> np.ndarray:
        return np.array(self._train[0], copy=True)

    @property
    def y(self) -> np.ndarray:
        return np.array(self._train[1], copy=True)

    @property
    def qid(self) -> np.ndarray:
        return np.array(self._train[2], copy=True)

    @property
    def X_test(self) -> np.ndarray:
        return np.array(self._test[0], copy=True)

    @property
    def qid_test(self) -> np.ndarray:
        return np.array(self._test[1], copy=True)

    @property
    def eval_set(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        X, y, qid = self._val
        return X.copy(), y.copy(), qid.copy()

    @property
    def base(self) -> Any:
        """A clone of the ranker whose seed parameter (``seed_param``), when None, is pinned
        to 0 as the harness would (None means unseeded in scikit-learn; the suite needs
        reproducible runs)."""
        if self._base is None:
            base = clone(self.original)
            param = self.tags.seed_param
            if param and base.get_params(deep=False).get(param, 0) is None:
                base.set_params(**{param: 0})
            self._base = base
        return self._base

    def fresh(self) -> Any:
        return clone(self.base)

    def fitted(self) -> Any:
        if self._fitted is None:
            self._fitted = self.fresh().fit(self.X, self.y, qid=self.qid)
        return self._fitted


# --------------------------------------------------------------------------- the checks


def check_contract_version(ctx: Context) -> None:
    problem = contract_mismatch(ctx.original)
    assert problem is None, (
        f"{problem} (this ltr-bench checks ranker contract version {CONTRACT_VERSION}; "
        "declare it as the class attribute contract_version)"
    )


def check_tags(ctx: Context) -> None:
    getter = getattr(ctx.original, "ranker_tags", None)
    tags = getter() if getter is not None else RankerTags()
    assert isinstance(tags, RankerTags), (
        f"ranker_tags() must return ltr_bench.ranker.RankerTags, got {type(tags).__name__}"
    )
    params = ctx.original.get_params(deep=False)
    for tag, param in tags.declared_params().items():
        assert isinstance(param, str) and param in params, (
            f"tags.{tag}={param!r} is not a parameter (parameters: {sorted(params)})"
        )
    files = getattr(tags, "file_params", ())
    assert isinstance(files, tuple), f"tags.file_params must be a tuple, got {files!r}"
    for param in files:
        assert isinstance(param, str) and param in params, (
            f"tags.file_params names {param!r}, not a parameter (parameters: {sorted(params)})"
        )


def check_init_stores_params(ctx: Context) -> None:
    params = ctx.original.get_params(deep=False)
    new = type(ctx.original)(**params)
    new_params = new.get_params(deep=False)
    for key, value in params.items():
        assert new_params[key] is value, (
            f"__init__ changed parameter {key!r} ({value!r} became {new_params[key]!r}); "
            "__init__ must store its arguments unchanged and validate them in fit"
        )
    extra = sorted(a for a in vars(new) if a not in params and not a.startswith("_"))
    assert not extra, f"__init__ sets attributes that are not parameters: {extra}"


def check_params_round_trip(ctx: Context) -> None:
    params = ctx.original.get_params(deep=False)
    copy = clone(ctx.original)  # raises when __init__ does not store its arguments
    assert type(copy) is type(ctx.original), "clone returned a different type"
    returned = copy.set_params(**params)
    assert returned is copy, "set_params must return self"
    after = copy.get_params(deep=False)
    assert set(after) == set(params), f"get_params keys changed: {sorted(after)}"
    for key in params:
        assert _same_param(after[key], params[key]), (
            f"set_params/get_params round trip changed {key!r}: {params[key]!r} -> {after[key]!r}"
        )
    seed_param = ctx.tags.seed_param
    if seed_param is not None and seed_param in params:
        copy.set_params(**{seed_param: 12345})
        assert copy.get_params(deep=False)[seed_param] == 12345, (
            f"set_params({seed_param}=12345) (the tags' seed_param) is not reflected by get_params"
        )


def check_predict_before_fit_raises(ctx: Context) -> None:
    ranker = ctx.fresh()
    try:
        ranker.predict(ctx.X_test, qid=ctx.qid_test)
    except NotFittedError:
        return
    except Exception as exc:  # any error is fine if it tells the user to fit first
        assert "fit" in str(exc).lower(), (
            f"predict before fit raised {type(exc).__name__}: {exc!s:.200} -- the message "
            "should say the ranker is not fitted (sklearn's NotFittedError does)"
        )
        return
    raise AssertionError("predict before fit did not raise")


def check_fit_returns_self(ctx: Context) -> None:
    ranker = ctx.fresh()
    returned = ranker.fit(ctx.X, ctx.y, qid=ctx.qid)
    assert returned is ranker, f"fit returned {type(returned).__name__} {returned!r:.80}, not self"


def check_predict_output(ctx: Context) -> None:
    ranker = ctx.fitted()
    _assert_scores(ranker.predict(ctx.X, qid=ctx.qid), len(ctx.X), "predict on training X")
    _assert_scores(
        ranker.predict(ctx.X_test, qid=ctx.qid_test), len(ctx.X_test), "predict on new X"
    )


def check_learned_attributes(ctx: Context) -> None:
    ranker = ctx.fresh()
    before_attrs = set(vars(ranker))
    before_params = {k: joblib.hash(v) for k, v in ranker.get_params(deep=False).items()}
    ranker.fit(ctx.X, ctx.y, qid=ctx.qid)
    new = sorted(a for a in set(vars(ranker)) - before_attrs if not a.startswith("_"))
    bad = [a for a in new if not a.endswith("_")]
    assert not bad, f"fit set public attributes that do not end in '_': {bad}"
    assert new, "fit set no learned attribute ending in '_' (e.g. n_features_in_)"
    changed = sorted(
        k
        for k, v in ranker.get_params(deep=False).items()
        if joblib.hash(v) != before_params.get(k)
    )
    assert not changed, f"fit changed parameters {changed}; learned state belongs in attr_"


def _copies(*arrays: np.ndarray) -> list[np.ndarray]:
    return [np.array(a, copy=True) for a in arrays]


def check_no_input_mutation(ctx: Context) -> None:
    X, y, qid, Xt, qt = ctx.X, ctx.y, ctx.qid, ctx.X_test, ctx.qid_test
    Xv, yv, qv = ctx.eval_set
    originals = _copies(X, y, qid, Xv, yv, qv, Xt, qt)
    names = [
        "X",
        "y",
        "qid",
        "eval_set X",
        "eval_set y",
        "eval_set qid",
        "predict X",
        "predict qid",
    ]
    ranker = ctx.fresh().fit(X, y, qid=qid, eval_set=(Xv, yv, qv))
    ranker.predict(Xt, qid=qt)
    for name, now, orig in zip(names, (X, y, qid, Xv, yv, qv, Xt, qt), originals):
        assert now.dtype == orig.dtype and np.array_equal(now, orig), (
            f"fit/predict modified the caller's {name} array"
        )


def check_read_only_input(ctx: Context) -> None:
    arrays = _copies(ctx.X, ctx.y, ctx.qid, *ctx.eval_set, ctx.X_test, ctx.qid_test)
    for a in arrays:
        a.setflags(write=False)
    X, y, qid, Xv, yv, qv, Xt, qt = arrays
    try:
        ranker = ctx.fresh().fit(X, y, qid=qid, eval_set=(Xv, yv, qv))
        scores = ranker.predict(Xt, qid=qt)
    except ValueError as exc:
        if "read-only" in str(exc) or "read only" in str(exc):
            raise AssertionError(
                f"read-only input arrays are not accepted (the ranker writes into its "
                f"inputs): {exc}"
            ) from exc
        raise
    _assert_scores(scores, len(Xt), "predict on read-only X")


def check_row_order(ctx: Context) -> None:
    ranker = ctx.fitted()
    rng = np.random.default_rng(SEED + 3)
    for X, qid in ((ctx.X_test, ctx.qid_test), (ctx.X, ctx.qid)):
        scores = ranker.predict(X, qid=qid)
        for _ in range(ctx.n_permutations):
            perm = block_permutation(qid, rng)
            permuted = ranker.predict(np.ascontiguousarray(X[perm]), qid=qid[perm])
            _assert_same_scores(
                permuted,
                scores[perm],
                "scores are not in input row order (shuffling the query blocks and the rows "
                "inside them did not shuffle the scores the same way)",
            )


def check_predict_without_qid(ctx: Context) -> None:
    ranker = ctx.fitted()
    with_qid = ranker.predict(ctx.X_test, qid=ctx.qid_test)
    without = ranker.predict(ctx.X_test)
    _assert_scores(without, len(ctx.X_test), "predict without qid")
    _assert_same_scores(
        without,
        with_qid,
        "tags say requires_qid_at_predict=False, but predict(X) differs from predict(X, qid=qid)",
    )


def check_fitted_info(ctx: Context) -> None:
    getter = getattr(ctx.fitted(), "fitted_info", None)
    if getter is None:  # optional for rankers that do not derive from BaseRanker
        return
    info = getter()
    assert isinstance(info, dict), f"fitted_info() returned {type(info).__name__}, not dict"
    for key, value in info.items():
        assert isinstance(key, str), f"fitted_info() key {key!r} is not a str"
        assert isinstance(value, (bool, int, float, str)), (
            f"fitted_info()[{key!r}] = {value!r} is a {type(value).__name__}; values must be "
            "bool, int, float or str (convert numpy scalars with int()/float(); leave out "
            "what is unknown instead of None)"
        )
        assert not isinstance(value, float) or math.isfinite(value), (
            f"fitted_info()[{key!r}] = {value!r} is not finite (leave out what is unknown)"
        )
    json.dumps(info, allow_nan=False)  # the harness stores it as JSON


def check_deterministic(ctx: Context) -> None:
    first = ctx.fitted().predict(ctx.X_test, qid=ctx.qid_test)
    other = ctx.fresh().fit(ctx.X, ctx.y, qid=ctx.qid)
    second = other.predict(ctx.X_test, qid=ctx.qid_test)
    assert np.array_equal(first, second), (
        "two clones with the same seed gave different scores (max abs difference "
        f"{np.max(np.abs(first - second)):.3g}); set the tag deterministic=False if that is "
        "intended"
    )
    other.fit(ctx.X, ctx.y, qid=ctx.qid)
    third = other.predict(ctx.X_test, qid=ctx.qid_test)
    assert np.array_equal(first, third), (
        "fitting the same ranker a second time gave different scores (state leaks between fits)"
    )


def check_degenerate_queries(ctx: Context) -> None:
    X, y, qid = with_degenerate_queries(ctx.X, ctx.y, ctx.qid, SEED + 4)
    Xv, yv, qv = with_degenerate_queries(*ctx.eval_set, SEED + 5)
    ranker = ctx.fresh().fit(X, y, qid=qid)
    _assert_scores(
        ranker.predict(X, qid=qid),
        len(X),
        "predict after training with one-document and all-zero-label queries",
    )
    ranker = ctx.fresh().fit(X, y, qid=qid, eval_set=(Xv, yv, qv))
    _assert_scores(
        ranker.predict(Xv, qid=qv),
        len(Xv),
        "predict after training with degenerate queries in eval_set",
    )
    _assert_scores(ranker.predict(Xv[-7:-6], qid=qv[-7:-6]), 1, "predict on one row")


def check_eval_set_accepted(ctx: Context) -> None:
    ranker = ctx.fresh()
    returned = ranker.fit(ctx.X, ctx.y, qid=ctx.qid, eval_set=ctx.eval_set)
    assert returned is ranker, "fit with eval_set did not return self"
    _assert_scores(
        ranker.predict(ctx.X_test, qid=ctx.qid_test),
        len(ctx.X_test),
        "predict after fit with eval_set",
    )


def check_position_accepted(ctx: Context) -> None:
    """``accepts_position``: ``fit`` takes ``position`` (1-based ranks within each query)
    and ``propensity`` (``1 / position``), returns self and predicts as usual."""
    from ltr_bench.ranker import query_boundaries

    b = query_boundaries(ctx.qid)
    position = np.concatenate([np.arange(1, n + 1) for n in np.diff(b)]).astype(np.int64)
    ranker = ctx.fresh()
    returned = ranker.fit(ctx.X, ctx.y, qid=ctx.qid, position=position, propensity=1.0 / position)
    assert returned is ranker, "fit with position and propensity did not return self"
    _assert_scores(
        ranker.predict(ctx.X_test, qid=ctx.qid_test),
        len(ctx.X_test),
        "predict after fit with position and propensity",
    )


def check_query_dependent_rows(ctx: Context) -> None:
    param = ctx.tags.query_dim_param
    assert param is not None  # this check runs only for rankers that declare it
    params = ctx.base.get_params(deep=False)
    assert param in params, (
        f"tags say query_dim_param={param!r} but the ranker has no such parameter "
        f"(parameters: {sorted(params)}; see ltr_bench.ranker's module docstring)"
    )
    d = 3
    X, y, qid = make_query_by_example(SEED + 6, 8 if ctx.quick else 25, d)
    Xt, _, qt = make_query_by_example(SEED + 7, 4 if ctx.quick else 10, d)
    ranker = ctx.fresh().set_params(**{param: d})
    assert ranker.fit(X, y, qid=qid) is ranker, f"fit with {param}={d} did not return self"
    scores = ranker.predict(Xt, qid=qt)
    _assert_scores(scores, len(Xt), "predict on [query, document] rows")
    perm = block_permutation(qt, np.random.default_rng(SEED + 8))
    _assert_same_scores(
        ranker.predict(np.ascontiguousarray(Xt[perm]), qid=qt[perm]),
        scores[perm],
        "[query, document] scores are not in input row order",
    )


def check_eval_set_ignored(ctx: Context) -> None:
    without = ctx.fitted().predict(ctx.X_test, qid=ctx.qid_test)
    ranker = ctx.fresh().fit(ctx.X, ctx.y, qid=ctx.qid, eval_set=ctx.eval_set)
    _assert_same_scores(
        ranker.predict(ctx.X_test, qid=ctx.qid_test),
        without,
        "tags say uses_eval_set=False, but fitting with eval_set changed the scores",
    )


def check_save_load(ctx: Context) -> None:
    """Save (``save_native``) and load (``load_native``) the fitted ranker through a temporary
    folder, its parameters through JSON as the manifest keeps them: the loaded ranker is of
    the same class, has the same parameters and predicts the same scores bit for bit."""
    import tempfile
    from pathlib import Path

    from ltr_bench.model_state import decode_state, encode_state
    from ltr_bench.ranker import can_save

    fitted = ctx.fitted()
    assert can_save(fitted), (
        f"{type(fitted).__name__} cannot be saved: implement save_native(folder) -> dict and "
        "the classmethod load_native(folder, manifest) (the plugin guide, 'Save and load'; "
        "ltr_bench.model_state.save_fitted_state / load_fitted_state do it for numbers)"
    )
    arrays: dict[str, np.ndarray] = {}
    params = encode_state(fitted.get_params(deep=False), arrays, "get_params()")
    assert not arrays, "a parameter holds a numpy array; parameters must be JSON values"
    params = decode_state(json.loads(json.dumps(params)), {})
    with tempfile.TemporaryDirectory(prefix="ltr-bench-check-") as tmp:
        extras = fitted.save_native(Path(tmp))
        assert isinstance(extras, dict), f"save_native() returned {type(extras).__name__}"
        json.dumps(encode_state(extras, arrays, "save_native() extras"), allow_nan=False)
        manifest = {"params": params, "extras": extras, "n_features": None}
        loaded = type(fitted).load_native(Path(tmp), manifest)
        expected = fitted.predict(ctx.X_test, qid=ctx.qid_test)
        actual = loaded.predict(ctx.X_test, qid=ctx.qid_test)
    assert type(loaded) is type(fitted), f"load_native() returned {type(loaded).__name__}"
    assert all(
        _same_param(v, loaded.get_params(deep=False).get(k))
        for k, v in fitted.get_params(deep=False).items()
    ), "the loaded ranker's parameters differ from the saved one's"
    actual = np.asarray(actual, dtype=np.float64)
    assert actual.shape == expected.shape and np.array_equal(
        actual.view(np.int64), expected.view(np.int64)
    ), (
        "the loaded ranker's scores differ from the saved one's (max abs difference "
        f"{np.max(np.abs(actual - expected)) if actual.shape == expected.shape else 'n/a'}); "
        "save every fitted number exactly (no rounding, no text formatting of floats)"
    )

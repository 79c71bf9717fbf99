"""``check_ranker``: the conformance suite that every ranker (built-in or plugin) should pass.

Plugin authors call it from their own tests::

    from ltr_bench.testing import check_ranker

    def test_my_ranker_follows_the_ranker_contract():
        check_ranker(MyRanker(n_iter=5))

or, to see one test per check and ranker (like scikit-learn's ``parametrize_with_checks``;
test ids such as ``MyRanker(n_iter=5)-row_order``)::

    from ltr_bench.testing import parametrize_with_checks

    @parametrize_with_checks([MyRanker(n_iter=5), MyRanker(n_iter=5, mode="fast")])
    def test_my_ranker_follows_the_ranker_contract(ranker, check):
        check(ranker)

:func:`ranker_checks` gives the same checks of one ranker as ``(name, callable)`` pairs.

Every check works on fresh :func:`sklearn.base.clone` copies of the given ranker, so the
ranker's parameters (pass small ones for speed) are used, and the object itself is never
fitted or changed. The data are small random ranking problems drawn from a fixed seed
(continuous features, graded labels 0..3, query ids in no particular order); ``quick=True``
keeps them to about 70 training rows and 5 features so that slow rankers finish in seconds.

A failed check raises :class:`AssertionError` whose message starts with
``check_ranker: check '<name>' failed for <Ranker>(...)``; an unexpected exception from the
ranker inside a check is reported the same way (with the original exception chained).

The checks (see the ``_check_*`` functions for the precise conditions):

=================================  ===========================================================
``tags``                           ``ranker_tags()`` is a :class:`RankerTags`; each of
                                   ``thread_param``, ``seed_param``, ``query_dim_param``
                                   (when set) names a parameter of ``get_params()``
``init_stores_params``             ``__init__`` stores every argument unchanged (``is``) and
                                   sets no other public attribute (scikit-learn's rule)
``params_round_trip``              ``get_params``/``set_params``/``clone`` round-trip;
                                   ``set_params`` returns ``self``; an int set through
                                   ``seed_param`` is reflected by ``get_params``
``predict_before_fit_raises``      an exception that is ``NotFittedError`` or mentions "fit"
``fit_returns_self``               ``fit(...) is ranker``
``predict_output``                 float64, shape ``(n_docs,)``, finite, on new data too
``learned_attributes``             fit adds >= 1 public attribute, all ending in ``_``, and
                                   leaves the parameters unchanged
``no_input_mutation``              X, y, qid and eval_set arrays are unchanged by fit/predict
``read_only_input``                read-only arrays (``writeable=False``) are accepted
``row_order``                      scores follow the rows: shuffling query blocks and the rows
                                   inside them shuffles the scores the same way
``predict_without_qid``            when ``requires_qid_at_predict`` is False: ``predict(X)``
                                   equals ``predict(X, qid=qid)``
``fitted_info``                    after fit, ``fitted_info()`` (when the ranker has it)
                                   returns a dict with ``str`` keys and JSON scalar values
                                   (bool, int, finite float, str)
``deterministic``                  when the tag says so: two clones with the same seed
                                   (``seed_param``) and a refit give identical scores
``degenerate_queries``             one-document and all-zero-label queries in training and
                                   validation do not crash; one-row predict works
``eval_set_accepted``              ``fit(..., eval_set=(X_val, y_val, qid_val))`` works
``eval_set_ignored``               when ``uses_eval_set=False`` and ``deterministic``: the
                                   scores equal those of a fit without ``eval_set``
``query_dependent_rows``           when ``query_dim_param`` is set: that parameter exists,
                                   and fit/predict on ``[query, document]`` rows with it set
                                   to the query block's width work, in row order
=================================  ===========================================================

Row order is checked with a permutation that keeps each query's rows contiguous (the
contract's guarantee): the query blocks are put in a random order and the rows inside every
block are shuffled. A ranker whose score for a document depends only on that document and
its query's set of documents passes; one that returns scores sorted by query id or by score,
or that uses the position of a row, fails. Scores are compared with ``rtol=1e-7`` (plus an
absolute ``1e-9`` times the score scale) so that harmless floating-point reordering passes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable

import joblib
import numpy as np
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from ltr_bench.ranker import RankerTags, query_boundaries, tags_of

__all__ = ["check_ranker", "make_check_data", "parametrize_with_checks", "ranker_checks"]

_SEED = 20240531  # the one seed of the suite; every array below flows from it


def make_check_data(
    seed: int = _SEED,
    *,
    n_queries: int = 8,
    n_features: int = 5,
    min_docs: int = 4,
    max_docs: int = 12,
):
    """A small random ranking problem: ``(X, y, qid)`` with contiguous, unsorted query ids.

    X ~ N(0, 1) (continuous, so no two documents tie), labels ``y`` in 0..3 from a linear
    relevance ``X @ w + noise`` cut at global quantiles, query ids distinct random integers in
    random order. Deterministic in ``seed``.
    """
    rng = np.random.default_rng(seed)
    sizes = rng.integers(min_docs, max_docs + 1, size=n_queries)
    ids = rng.choice(np.arange(1, 10 * n_queries + 10), size=n_queries, replace=False)
    qid = np.repeat(ids, sizes).astype(np.int64)
    X = rng.standard_normal((int(sizes.sum()), n_features))
    w = rng.standard_normal(n_features)
    rel = X @ w + 0.5 * rng.standard_normal(X.shape[0])
    y = np.digitize(rel, np.quantile(rel, [0.5, 0.75, 0.9])).astype(np.int64)
    return X, y, qid


def _with_degenerate_queries(X, y, qid, seed):
    """Append a one-document relevant query, a one-document irrelevant query and an
    all-zero-label query of 6 documents (fresh query ids)."""
    rng = np.random.default_rng(seed)
    n_features = X.shape[1]
    base = int(qid.max()) + 1
    Xd = rng.standard_normal((8, n_features))
    yd = np.array([2, 0, 0, 0, 0, 0, 0, 0], dtype=np.int64)
    qd = np.array([base, base + 1] + [base + 2] * 6, dtype=np.int64)
    return np.vstack([X, Xd]), np.r_[y, yd], np.r_[qid, qd]


def _make_query_by_example(seed, n_queries, d):
    """Rows ``[query vector, document vector]`` (width 2*d); a document's label grows as it
    gets closer to its query."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(4, 9, size=n_queries)
    rows, labels, qids = [], [], []
    for i, m in enumerate(sizes):
        q = rng.standard_normal(d)
        docs = q + rng.standard_normal((m, d)) * rng.uniform(0.2, 2.0, size=(m, 1))
        dist = np.linalg.norm(docs - q, axis=1)
        labels.append(np.digitize(-dist, np.quantile(-dist, [0.5, 0.8])))
        rows.append(np.hstack([np.tile(q, (m, 1)), docs]))
        qids.append(np.full(m, 100 + 7 * i))
    return np.vstack(rows), np.concatenate(labels).astype(np.int64), np.concatenate(qids)


def _block_permutation(qid, rng):
    """A row permutation that shuffles the query blocks and the rows inside each block."""
    b = query_boundaries(qid)
    blocks = [rng.permutation(np.arange(b[i], b[i + 1])) for i in range(len(b) - 1)]
    return np.concatenate([blocks[i] for i in rng.permutation(len(blocks))])


def _describe(ranker) -> str:
    text = repr(ranker)
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:297] + "..."


def _tags(ranker) -> RankerTags:
    return tags_of(ranker)


def _assert_scores(scores, n, what):
    assert isinstance(scores, np.ndarray), f"{what} returned {type(scores).__name__}, not ndarray"
    assert scores.dtype == np.float64, f"{what} returned dtype {scores.dtype}, not float64"
    assert scores.shape == (n,), f"{what} returned shape {scores.shape}, expected ({n},)"
    assert np.isfinite(scores).all(), f"{what} returned NaN or infinite scores"


def _assert_same_scores(actual, expected, what):
    scale = max(1.0, float(np.max(np.abs(expected))) if expected.size else 1.0)
    if not np.allclose(actual, expected, rtol=1e-7, atol=1e-9 * scale):
        worst = int(np.argmax(np.abs(actual - expected)))
        raise AssertionError(
            f"{what}: row {worst} got {float(actual[worst])!r}, expected "
            f"{float(expected[worst])!r} "
            f"(max abs difference {np.max(np.abs(actual - expected)):.3g})"
        )


def _same_param(a, b) -> bool:
    if a is b:
        return True
    try:
        return joblib.hash(a) == joblib.hash(b)
    except Exception:  # unhashable by joblib: fall back to equality
        try:
            return bool(a == b)
        except Exception:
            return False


class _Context:
    """Data and one shared fitted ranker, built lazily so each check fits only what it needs.

    The data attributes hand out fresh copies, so a ranker that writes into its inputs
    cannot spoil the data of later checks (``no_input_mutation`` reports it).
    """

    def __init__(self, ranker, quick: bool):
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
        self._train = make_check_data(_SEED, **size)
        self._val = make_check_data(_SEED + 1, **size)
        X_test, _, qid_test = make_check_data(_SEED + 2, **size)
        self._test = (X_test, qid_test)
        for a in (*self._train, *self._val, *self._test):
            a.setflags(write=False)
        self.n_permutations = 1 if quick else 3
        self._base = None
        self._fitted = None

    X = property(lambda self: self._train[0].copy())
    y = property(lambda self: self._train[1].copy())
    qid = property(lambda self: self._train[2].copy())
    X_test = property(lambda self: self._test[0].copy())
    qid_test = property(lambda self: self._test[1].copy())

    @property
    def eval_set(self):
        return tuple(a.copy() for a in self._val)

    @property
    def base(self):
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

    def fresh(self):
        return clone(self.base)

    def fitted(self):
        if self._fitted is None:
            self._fitted = self.fresh().fit(self.X, self.y, qid=self.qid)
        return self._fitted


# --------------------------------------------------------------------------- the checks


def _check_tags(ctx: _Context):
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


def _check_init_stores_params(ctx: _Context):
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


def _check_params_round_trip(ctx: _Context):
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
    if seed_param in params:
        copy.set_params(**{seed_param: 12345})
        assert copy.get_params(deep=False)[seed_param] == 12345, (
            f"set_params({seed_param}=12345) (the tags' seed_param) is not reflected by get_params"
        )


def _check_predict_before_fit_raises(ctx: _Context):
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


def _check_fit_returns_self(ctx: _Context):
    ranker = ctx.fresh()
    returned = ranker.fit(ctx.X, ctx.y, qid=ctx.qid)
    assert returned is ranker, f"fit returned {type(returned).__name__} {returned!r:.80}, not self"


def _check_predict_output(ctx: _Context):
    ranker = ctx.fitted()
    _assert_scores(ranker.predict(ctx.X, qid=ctx.qid), len(ctx.X), "predict on training X")
    _assert_scores(
        ranker.predict(ctx.X_test, qid=ctx.qid_test), len(ctx.X_test), "predict on new X"
    )


def _check_learned_attributes(ctx: _Context):
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


def _copies(*arrays):
    return [np.array(a, copy=True) for a in arrays]


def _check_no_input_mutation(ctx: _Context):
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


def _check_read_only_input(ctx: _Context):
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


def _check_row_order(ctx: _Context):
    ranker = ctx.fitted()
    rng = np.random.default_rng(_SEED + 3)
    for X, qid in ((ctx.X_test, ctx.qid_test), (ctx.X, ctx.qid)):
        scores = ranker.predict(X, qid=qid)
        for _ in range(ctx.n_permutations):
            perm = _block_permutation(qid, rng)
            permuted = ranker.predict(np.ascontiguousarray(X[perm]), qid=qid[perm])
            _assert_same_scores(
                permuted,
                scores[perm],
                "scores are not in input row order (shuffling the query blocks and the rows "
                "inside them did not shuffle the scores the same way)",
            )


def _check_predict_without_qid(ctx: _Context):
    ranker = ctx.fitted()
    with_qid = ranker.predict(ctx.X_test, qid=ctx.qid_test)
    without = ranker.predict(ctx.X_test)
    _assert_scores(without, len(ctx.X_test), "predict without qid")
    _assert_same_scores(
        without,
        with_qid,
        "tags say requires_qid_at_predict=False, but predict(X) differs from predict(X, qid=qid)",
    )


def _check_fitted_info(ctx: _Context):
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


def _check_deterministic(ctx: _Context):
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


def _check_degenerate_queries(ctx: _Context):
    X, y, qid = _with_degenerate_queries(ctx.X, ctx.y, ctx.qid, _SEED + 4)
    Xv, yv, qv = _with_degenerate_queries(*ctx.eval_set, _SEED + 5)
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


def _check_eval_set_accepted(ctx: _Context):
    ranker = ctx.fresh()
    returned = ranker.fit(ctx.X, ctx.y, qid=ctx.qid, eval_set=ctx.eval_set)
    assert returned is ranker, "fit with eval_set did not return self"
    _assert_scores(
        ranker.predict(ctx.X_test, qid=ctx.qid_test),
        len(ctx.X_test),
        "predict after fit with eval_set",
    )


def _check_query_dependent_rows(ctx: _Context):
    param = ctx.tags.query_dim_param
    params = ctx.base.get_params(deep=False)
    assert param in params, (
        f"tags say query_dim_param={param!r} but the ranker has no such parameter "
        f"(parameters: {sorted(params)}; see ltr_bench.ranker's module docstring)"
    )
    d = 3
    X, y, qid = _make_query_by_example(_SEED + 6, 8 if ctx.quick else 25, d)
    Xt, _, qt = _make_query_by_example(_SEED + 7, 4 if ctx.quick else 10, d)
    ranker = ctx.fresh().set_params(**{param: d})
    assert ranker.fit(X, y, qid=qid) is ranker, f"fit with {param}={d} did not return self"
    scores = ranker.predict(Xt, qid=qt)
    _assert_scores(scores, len(Xt), "predict on [query, document] rows")
    perm = _block_permutation(qt, np.random.default_rng(_SEED + 8))
    _assert_same_scores(
        ranker.predict(np.ascontiguousarray(Xt[perm]), qid=qt[perm]),
        scores[perm],
        "[query, document] scores are not in input row order",
    )


def _check_eval_set_ignored(ctx: _Context):
    without = ctx.fitted().predict(ctx.X_test, qid=ctx.qid_test)
    ranker = ctx.fresh().fit(ctx.X, ctx.y, qid=ctx.qid, eval_set=ctx.eval_set)
    _assert_same_scores(
        ranker.predict(ctx.X_test, qid=ctx.qid_test),
        without,
        "tags say uses_eval_set=False, but fitting with eval_set changed the scores",
    )


def ranker_checks(ranker, *, quick: bool = True) -> list[tuple[str, Callable[[], None]]]:
    """The checks that apply to ``ranker`` as ``(name, zero-argument callable)`` pairs.

    Checks that depend on tags are left out when they do not apply (``predict_without_qid``
    needs ``requires_qid_at_predict=False``, ``deterministic`` needs ``deterministic=True``,
    ``eval_set_ignored`` needs ``uses_eval_set=False`` and ``deterministic=True``,
    ``query_dependent_rows`` needs ``query_dim_param``). The callables share one lazily
    fitted ranker, so running them all costs a handful of fits. Each callable runs with no
    argument or with ``ranker`` itself (``check()`` or ``check(ranker)``, the form
    :func:`parametrize_with_checks` tests use).
    """
    ctx = _Context(ranker, quick)
    checks: list[tuple[str, Callable[[_Context], None]]] = [
        ("tags", _check_tags),
        ("init_stores_params", _check_init_stores_params),
        ("params_round_trip", _check_params_round_trip),
        ("predict_before_fit_raises", _check_predict_before_fit_raises),
        ("fit_returns_self", _check_fit_returns_self),
        ("predict_output", _check_predict_output),
        ("learned_attributes", _check_learned_attributes),
        ("no_input_mutation", _check_no_input_mutation),
        ("read_only_input", _check_read_only_input),
        ("row_order", _check_row_order),
        ("fitted_info", _check_fitted_info),
    ]
    if not ctx.tags.requires_qid_at_predict:
        checks.append(("predict_without_qid", _check_predict_without_qid))
    if ctx.tags.deterministic:
        checks.append(("deterministic", _check_deterministic))
    checks += [
        ("degenerate_queries", _check_degenerate_queries),
        ("eval_set_accepted", _check_eval_set_accepted),
    ]
    if not ctx.tags.uses_eval_set and ctx.tags.deterministic:
        checks.append(("eval_set_ignored", _check_eval_set_ignored))
    if ctx.tags.query_dim_param is not None:
        checks.append(("query_dependent_rows", _check_query_dependent_rows))
    return [(name, _Check(name, fn, ctx)) for name, fn in checks]


class _Check:
    """One check of one ranker: ``check()`` or ``check(ranker)`` runs it (the ranker, when
    given, must be the one the check was made for: the check runs on clones of it)."""

    def __init__(self, name: str, fn: Callable[[_Context], None], ctx: _Context):
        self.name = name
        self.__name__ = f"check_{name}"
        self._fn = fn
        self._ctx = ctx

    def __repr__(self) -> str:
        return self.name

    def __call__(self, ranker=None) -> None:
        if ranker is not None and ranker is not self._ctx.original:
            raise ValueError(
                f"check {self.name!r} was made for {_describe(self._ctx.original)}, not for "
                f"{_describe(ranker)}; get the checks of a ranker from ranker_checks(ranker)"
            )
        description = _describe(self._ctx.original)
        try:
            self._fn(self._ctx)
        except AssertionError as exc:
            raise AssertionError(
                f"check_ranker: check {self.name!r} failed for {description}: {exc}"
            ) from exc
        except Exception as exc:
            raise AssertionError(
                f"check_ranker: check {self.name!r} failed for {description}: the ranker "
                f"raised {type(exc).__name__}: {exc}"
            ) from exc


def parametrize_with_checks(rankers: Iterable, *, quick: bool = True):
    """A ``pytest.mark.parametrize`` decorator: one test per (ranker, applicable check).

    The decorated test takes the arguments ``ranker`` and ``check`` and calls
    ``check(ranker)``. Test ids are ``<ranker repr>-<check name>``, e.g.
    ``LightGBMRanker(n_estimators=5)-row_order`` (the repr on one line, parameters left at
    their defaults omitted as scikit-learn prints them). The checks of one ranker share its
    lazily fitted clone, so the tests of a ranker cost about as much as one
    :func:`check_ranker` call. pytest is imported here only, so importing this module does
    not need it.
    """
    import pytest

    params, ids = [], []
    for ranker in rankers:
        description = " ".join(repr(ranker).split())
        for name, check in ranker_checks(ranker, quick=quick):
            params.append((ranker, check))
            ids.append(f"{description}-{name}")
    return pytest.mark.parametrize("ranker, check", params, ids=ids)


def check_ranker(ranker, *, quick: bool = True) -> None:
    """Run every applicable conformance check on clones of ``ranker``; stop at the first failure.

    ``quick=True`` (default): about 70 training rows x 5 features, one permutation per
    row-order check. ``quick=False``: about 500 rows x 10 features and three permutations.
    Raises :class:`AssertionError` naming the failed check and the ranker.
    """
    for _name, run in ranker_checks(ranker, quick=quick):
        run()

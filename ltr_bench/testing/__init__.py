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

The checks (see the ``check_*`` functions of :mod:`.checks` for the precise conditions):

=================================  ===========================================================
``contract_version``               the ranker's ``contract_version`` (a class attribute; none
                                   declared means version 1) is one this ltr-bench runs
                                   (:data:`ltr_bench.ranker.SUPPORTED_CONTRACT_VERSIONS`)
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
``position_accepted``              when ``accepts_position``: ``fit(..., position=...,
                                   propensity=...)`` (click data) returns self and predicts
``save_load``                      ``save_native`` then ``load_native`` (parameters through
                                   JSON): same class, same parameters, ``predict`` equal bit
                                   for bit; a ranker without the two hooks fails (it cannot
                                   be saved)
``export``                         when the ranker declares ``export_onnx``: the graph has the
                                   contract's signature and ONNX Runtime's scores of the test
                                   rows equal ``predict``'s within ``SCORE_BOUND * max(1,
                                   |score|)`` (``ltr_bench.models.onnx``; needs the ``onnx``
                                   extra)
=================================  ===========================================================

Row order is checked with a permutation that keeps each query's rows contiguous (the
contract's guarantee): the query blocks are put in a random order and the rows inside every
block are shuffled. A ranker whose score for a document depends only on that document and
its query's set of documents passes; one that returns scores sorted by query id or by score,
or that uses the position of a row, fails. Scores are compared with ``rtol=1e-7`` (plus an
absolute ``1e-9`` times the score scale) so that harmless floating-point reordering passes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ltr_bench.ranker import CONTRACT_VERSION, can_export
from ltr_bench.registry import declared_contract_version
from ltr_bench.testing import checks as c
from ltr_bench.testing.checks import Context, describe
from ltr_bench.testing.data import make_check_data

__all__ = [
    "CheckReport",
    "check_ranker",
    "make_check_data",
    "parametrize_with_checks",
    "ranker_checks",
]


def ranker_checks(ranker: Any, *, quick: bool = True) -> list[tuple[str, Callable[[], None]]]:
    """The checks that apply to ``ranker`` as ``(name, zero-argument callable)`` pairs.

    Checks that depend on tags are left out when they do not apply (``predict_without_qid``
    needs ``requires_qid_at_predict=False``, ``deterministic`` needs ``deterministic=True``,
    ``eval_set_ignored`` needs ``uses_eval_set=False`` and ``deterministic=True``,
    ``query_dependent_rows`` needs ``query_dim_param``). The callables share one lazily
    fitted ranker, so running them all costs a handful of fits. Each callable runs with no
    argument or with ``ranker`` itself (``check()`` or ``check(ranker)``, the form
    :func:`parametrize_with_checks` tests use).
    """
    ctx = Context(ranker, quick)
    checks: list[tuple[str, Callable[[Context], None]]] = [
        ("contract_version", c.check_contract_version),
        ("tags", c.check_tags),
        ("init_stores_params", c.check_init_stores_params),
        ("params_round_trip", c.check_params_round_trip),
        ("predict_before_fit_raises", c.check_predict_before_fit_raises),
        ("fit_returns_self", c.check_fit_returns_self),
        ("predict_output", c.check_predict_output),
        ("learned_attributes", c.check_learned_attributes),
        ("no_input_mutation", c.check_no_input_mutation),
        ("read_only_input", c.check_read_only_input),
        ("row_order", c.check_row_order),
        ("fitted_info", c.check_fitted_info),
    ]
    if not ctx.tags.requires_qid_at_predict:
        checks.append(("predict_without_qid", c.check_predict_without_qid))
    if ctx.tags.deterministic:
        checks.append(("deterministic", c.check_deterministic))
    checks += [
        ("degenerate_queries", c.check_degenerate_queries),
        ("eval_set_accepted", c.check_eval_set_accepted),
    ]
    if not ctx.tags.uses_eval_set and ctx.tags.deterministic:
        checks.append(("eval_set_ignored", c.check_eval_set_ignored))
    if ctx.tags.query_dim_param is not None:
        checks.append(("query_dependent_rows", c.check_query_dependent_rows))
    if getattr(ctx.tags, "accepts_position", False):
        checks.append(("position_accepted", c.check_position_accepted))
    checks.append(("save_load", c.check_save_load))
    if can_export(ranker):
        from ltr_bench.testing.export_check import check_export

        checks.append(("export", check_export))
    return [(name, _Check(name, fn, ctx)) for name, fn in checks]


class _Check:
    """One check of one ranker: ``check()`` or ``check(ranker)`` runs it (the ranker, when
    given, must be the one the check was made for: the check runs on clones of it)."""

    def __init__(self, name: str, fn: Callable[[Context], None], ctx: Context):
        self.name = name
        self.__name__ = f"check_{name}"
        self._fn = fn
        self._ctx = ctx

    def __repr__(self) -> str:
        return self.name

    def __call__(self, ranker: object = None) -> None:
        if ranker is not None and ranker is not self._ctx.original:
            raise ValueError(
                f"check {self.name!r} was made for {describe(self._ctx.original)}, not for "
                f"{describe(ranker)}; get the checks of a ranker from ranker_checks(ranker)"
            )
        description = describe(self._ctx.original)
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


def parametrize_with_checks(rankers: Iterable[Any], *, quick: bool = True) -> Any:
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


@dataclass(frozen=True)
class CheckReport:
    """What :func:`check_ranker` found when every check passed (a failure raises instead).

    ``contract_version``: the ranker contract this ltr-bench checks
    (:data:`ltr_bench.ranker.CONTRACT_VERSION`); ``declared_version``: the version the ranker
    declares it was built for (its ``contract_version`` attribute, or
    :data:`ltr_bench.ranker.UNVERSIONED_CONTRACT` when it declares none); ``checks``: the
    names of the checks that ran, in order. ``str(report)`` says all of it in one line.
    """

    ranker: str
    contract_version: int
    declared_version: int
    checks: tuple[str, ...]

    def __str__(self) -> str:
        return (
            f"{self.ranker} passed {len(self.checks)} checks of ranker contract version "
            f"{self.contract_version} (it declares version {self.declared_version}): "
            + ", ".join(self.checks)
        )


def check_ranker(ranker: Any, *, quick: bool = True) -> CheckReport:
    """Run every applicable conformance check on clones of ``ranker``; stop at the first failure.

    ``quick=True`` (default): about 70 training rows x 5 features, one permutation per
    row-order check. ``quick=False``: about 500 rows x 10 features and three permutations.
    Raises :class:`AssertionError` naming the failed check and the ranker; returns a
    :class:`CheckReport` (the contract version checked, the one the ranker declares, the
    checks run) when every check passed.
    """
    names = []
    for name, run in ranker_checks(ranker, quick=quick):
        run()
        names.append(name)
    declared = declared_contract_version(ranker)
    assert isinstance(declared, int)  # the contract_version check refused anything else
    return CheckReport(describe(ranker), CONTRACT_VERSION, declared, tuple(names))

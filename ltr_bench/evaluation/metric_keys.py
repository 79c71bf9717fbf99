"""Metric names: one table of metric definitions and one key type for every spelling.

:data:`METRIC_TABLE` holds, for every metric base name, whether it takes a cutoff ``k``, its
formula, its edge cases (query without relevant documents, ties, ``k`` beyond the query's
length), its display name and the kernel that computes it (a method of
:class:`ltr_bench.evaluation.ranked.RankedQueries`). :data:`VALID_FORMS`, :data:`CONVENTIONS`
(logged with every run) and :data:`METRICS_HELP` are derived from it, so a new metric is one
row here and one kernel there.

:class:`MetricKey` is the one parser and printer of metric names. A key is a metric, its
cutoff and its empty-query convention, and has four spellings:

==============  =========================  ===================================================
spelling        example                    used by
==============  =========================  ===================================================
``.text``       ``ndcg@10_empty0``         CLI, plans, result records, per-query CSV columns
``.mlflow_key`` ``ndcg_at_10_empty0``      MLflow metric keys (MLflow rejects ``@``)
``.display``    ``NDCG@10 (empty query     report tables and plot labels
                = 0)``
``.base``       ``ndcg@10``                :func:`~ltr_bench.evaluation.metrics.evaluate` (the
                                           convention is its ``empty_query`` argument)
==============  =========================  ===================================================

:meth:`MetricKey.parse` reads all four, in any letter case. The empty-query convention: a
query with no document of label >= 1 scores 1 by default (LightGBM, XGBoost, allRank, hence
published MSLR numbers) and 0 under the suffix ``_empty0`` (trec_eval, ranx); every run
records both (:func:`record_metric_keys`). Metrics for which such a query has a well-defined
value (P@k counts hits: 0) have no second convention and a single key.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from numbers import Real
from typing import cast

__all__ = [
    "CONVENTIONS",
    "DEFAULT_METRICS",
    "EMPTY_VALUES",
    "METRICS_HELP",
    "METRIC_TABLE",
    "MetricKey",
    "MetricSpec",
    "VALID_FORMS",
    "metric_display",
    "metric_key_or_none",
    "parse_metric",
    "record_metric_keys",
]

DEFAULT_METRICS: tuple[str, ...] = (
    "ndcg@1",
    "ndcg@3",
    "ndcg@5",
    "ndcg@10",
    "ndcg@20",
    "map",
    "mrr",
    "err@10",
)

# The only place these spellings are written: everything else goes through MetricKey.
_EMPTY0_SUFFIX = "_empty0"
_MLFLOW_CUTOFF = "_at_"
_DISPLAY_EMPTY0 = " (empty query = 0)"

#: The empty-query conventions every run records, as ``MetricKey.empty`` values: "1" (the
#: default, no suffix) and "0" (suffix ``_empty0``).
EMPTY_VALUES: tuple[str, ...] = ("1", "0")

_CUTOFF_RULES = ("required", "optional", "forbidden")


@dataclass(frozen=True)
class MetricSpec:
    """One metric's definition: a row of :data:`METRIC_TABLE`.

    ``name``: base name in keys (``ndcg``); ``display``: its name in reports (``NDCG``);
    ``cutoff``: whether ``@k`` is "required", "optional" or "forbidden"; ``formula``,
    ``empty_query``, ``ties``, ``beyond_query``: the definition and its edge cases as text
    (logged with every run); ``follows_empty_query``: whether a query without relevant
    documents takes the convention's value (True) or has a value of its own (False: one
    key only); ``kernel``: the method of ``ltr_bench.evaluation.ranked.RankedQueries`` computing the
    (n_queries,) raw values, called with ``k`` (an int, or None for no cutoff).
    """

    name: str
    display: str
    cutoff: str
    formula: str
    empty_query: str
    ties: str
    beyond_query: str
    follows_empty_query: bool
    kernel: str

    @property
    def forms(self) -> tuple[str, ...]:
        """The valid spellings with a placeholder ``k``: ``("map", "map@k")``."""
        return {
            "required": (f"{self.name}@k",),
            "optional": (self.name, f"{self.name}@k"),
            "forbidden": (self.name,),
        }[self.cutoff]

    @property
    def definition(self) -> str:
        """Formula and edge cases in one line (a run's ``convention.<name>`` tag)."""
        return (
            f"{self.formula}. Query without relevant documents: {self.empty_query}. "
            f"Ties: {self.ties}. k beyond the query's length: {self.beyond_query}."
        )


_EXACT_TIES = "expected value over all orderings of equally scored documents (exact)"

METRIC_TABLE: dict[str, MetricSpec] = {
    s.name: s
    for s in (
        MetricSpec(
            name="ndcg",
            display="NDCG",
            cutoff="required",
            formula="NDCG@k = DCG@k / IDCG@k, DCG@k = sum over rank <= k of (2^rel - 1) / "
            "log2(rank + 1), IDCG@k = DCG@k of the labels sorted descending",
            empty_query="IDCG = 0, the ratio is 0/0: scores the convention's value",
            ties=_EXACT_TIES + ": a tie group's mean gain on each rank it occupies "
            "(sklearn.metrics.ndcg_score)",
            beyond_query="sums over the documents the query has; IDCG truncated the same way",
            follows_empty_query=True,
            kernel="ndcg",
        ),
        MetricSpec(
            name="map",
            display="MAP",
            cutoff="optional",
            formula="AP@k = (1/R) sum over relevant docs d with rank(d) <= k of P@rank(d), R = all "
            "relevant docs of the query (trec_eval map_cut, ranx); no k: the whole list",
            empty_query="R = 0, the ratio is 0/0: scores the convention's value",
            ties=_EXACT_TIES,
            beyond_query="sums over the documents the query has (R still counts all relevant)",
            follows_empty_query=True,
            kernel="map",
        ),
        MetricSpec(
            name="mrr",
            display="MRR",
            cutoff="optional",
            formula="RR@k = 1 / rank of the first relevant document if that rank <= k, else 0; "
            "no k: the whole list",
            empty_query="every ranking scores 0, so the query says nothing about the ranker: "
            "scores the convention's value",
            ties=_EXACT_TIES + " (hypergeometric position of the first relevant document)",
            beyond_query="looks at the documents the query has",
            follows_empty_query=True,
            kernel="mrr",
        ),
        MetricSpec(
            name="err",
            display="ERR",
            cutoff="required",
            formula="ERR@k = sum over rank r <= k of (R_r / r) prod_{i<r} (1 - R_i), "
            "R = (2^g - 1) / 2^g_max, g_max = max_label (Chapelle et al. 2009)",
            empty_query="every ranking scores 0: scores the convention's value (0 gives the "
            "Yahoo! challenge ERR; a real query scores at most 1 - 2^-g_max)",
            ties=_EXACT_TIES,
            beyond_query="sums over the documents the query has",
            follows_empty_query=True,
            kernel="err",
        ),
        MetricSpec(
            name="p",
            display="P",
            cutoff="required",
            formula="P@k = (relevant docs among ranks 1..k) / k",
            empty_query="0 (a count of hits, defined for every query; XGBoost's pre@k agrees): "
            "no second convention",
            ties=_EXACT_TIES + ": a tie group with r relevant of m documents puts r/m on each "
            "of its ranks",
            beyond_query="still divides by k (trec_eval, ranx; XGBoost's pre@k by min(k, n))",
            follows_empty_query=False,
            kernel="precision",
        ),
        MetricSpec(
            name="recall",
            display="Recall",
            cutoff="required",
            formula="Recall@k = (relevant docs among ranks 1..k) / R, R = all relevant docs of "
            "the query",
            empty_query="R = 0, the ratio is 0/0: scores the convention's value (trec_eval's "
            "recall_k scores 0)",
            ties=_EXACT_TIES + ": a tie group with r relevant of m documents puts r/m on each "
            "of its ranks",
            beyond_query="counts the documents the query has: 1 once k >= its length "
            "(if it has a relevant document)",
            follows_empty_query=True,
            kernel="recall",
        ),
    )
}

VALID_FORMS: tuple[str, ...] = tuple(f for s in METRIC_TABLE.values() for f in s.forms)
_FOLLOWING = [
    s.display + ("@k" if s.cutoff == "required" else "")
    for s in METRIC_TABLE.values()
    if s.follows_empty_query
]
_OWN_VALUE = [s.display + "@k" for s in METRIC_TABLE.values() if not s.follows_empty_query]

#: Name -> text; logged as ``convention.<name>`` tags with every run.
CONVENTIONS: dict[str, str] = {
    "gain": "2^rel - 1",
    "discount": "1/log2(rank + 1), rank starting at 1",
    "relevant": "label >= 1 (every metric but NDCG and ERR, and the empty-query test)",
    "empty_query": (
        "a query with no document of label >= 1 scores 1 (LightGBM/XGBoost/allRank) in "
        f"{', '.join(_FOLLOWING)}, and 0 (trec_eval/ranx) under the keys ending "
        f"{_EMPTY0_SUFFIX}; every run records both. {', '.join(_OWN_VALUE)} scores 0 (one key)"
    ),
    "ties": _EXACT_TIES,
    "k_larger_than_query": "; ".join(
        f"{s.display}@k {s.beyond_query}" for s in METRIC_TABLE.values()
    ),
    **{s.name: s.definition for s in METRIC_TABLE.values()},
}

#: One-line description of the metric grammar for CLI help and error messages.
METRICS_HELP: str = (
    f"{', '.join(VALID_FORMS)} (k an integer >= 1, any letter case; ndcg_at_10 is also "
    f"accepted; the suffix {_EMPTY0_SUFFIX} selects the convention that scores a query "
    "without relevant documents 0 instead of 1; _letor4, _letor3, _trec or _nonempty select a "
    "convention profile, see ltr_bench.evaluation.conventions)"
)

_DISPLAY_RE = re.compile(re.escape(_DISPLAY_EMPTY0.strip()) + r"$")
#: Convention profiles (:mod:`ltr_bench.evaluation.conventions`): a key suffix each, e.g.
#: ndcg@10_letor4.
PROFILE_TITLES = {
    "letor4": "LETOR 4.0 script",
    "letor3": "LETOR 3.0 script",
    "trec": "trec_eval",
    "nonempty": "empty queries left out",
}
_NAME_RE = re.compile(
    r"^([a-z]+)(?:(?:@|"
    + _MLFLOW_CUTOFF
    + r")([^_\s]*))?("
    + _EMPTY0_SUFFIX
    + r")?(?:_("
    + "|".join(PROFILE_TITLES)
    + r"))?$"
)


@dataclass(frozen=True)
class MetricKey:
    """A metric, its cutoff and its empty-query convention; immutable and hashable.

    ``name``: a :data:`METRIC_TABLE` base name (lower case); ``k``: the cutoff, an int >= 1,
    or None for the whole list (only where the table allows it); ``empty``: "1" (default: a
    query without relevant documents scores 1) or "0". A metric without that edge case
    (``follows_empty_query`` False, e.g. ``p``) has one key: its ``empty`` is always "1".
    Invalid fields raise ValueError.
    """

    name: str
    k: int | None = None
    empty: str = "1"
    profile: str = (
        ""  # a convention profile of ltr_bench.evaluation.conventions, "" = ltr-bench's own
    )

    def __post_init__(self) -> None:
        _check_fields(self.name, self.k, self.empty, repr(self.name))
        if self.profile and self.profile not in PROFILE_TITLES:
            raise ValueError(
                f"metric {self.name!r}: unknown convention profile "
                f"{self.profile!r}; profiles: {', '.join(PROFILE_TITLES)}"
            )
        if not self.spec.follows_empty_query or self.profile:
            object.__setattr__(self, "empty", "1")  # one convention only: one key

    @classmethod
    def parse(cls, text: str) -> MetricKey:
        """Read any spelling: ``ndcg@10``, ``NDCG@10``, ``ndcg@10_empty0``, ``ndcg_at_10``,
        ``ndcg_at_10_empty0``, ``NDCG@10 (empty query = 0)``, ``map``, ``map_empty0``,
        ``p@5``, ``recall@10``; surrounding spaces are ignored.

        Raises ValueError naming the text and listing the valid forms.
        """
        if not isinstance(text, str):
            raise ValueError(f"metric name must be a string, got {type(text).__name__}: {text!r}")
        low = text.strip().lower()
        display_empty0 = _DISPLAY_RE.search(low)
        if display_empty0:
            low = low[: display_empty0.start()].rstrip()
        match = _NAME_RE.match(low)
        if (
            match is None
            or match.group(1) not in METRIC_TABLE
            or (display_empty0 and match.group(3))
            or (match.group(3) and match.group(4))
        ):
            raise ValueError(f"unknown metric {text!r}; valid forms: {METRICS_HELP}")
        name, k_text, suffix, profile = match.groups()
        if k_text is not None and not re.fullmatch(r"[0-9]+", k_text):  # "@x", "@-1", "@"
            raise ValueError(
                f"metric {text!r}: the cutoff k must be an integer >= 1; "
                f"valid forms: {METRICS_HELP}"
            )
        k = None if k_text is None else int(k_text)
        empty = "0" if (suffix or display_empty0) else "1"
        _check_fields(name, k, empty, repr(text))
        return cls(name, k, empty, profile or "")

    @property
    def spec(self) -> MetricSpec:
        """This metric's row of :data:`METRIC_TABLE`."""
        return METRIC_TABLE[self.name]

    @property
    def base(self) -> str:
        """The key without the convention, as :func:`~ltr_bench.evaluation.metrics.evaluate`
        takes it: ``ndcg@10``, ``map``."""
        return self.name + ("" if self.k is None else f"@{self.k}")

    @property
    def text(self) -> str:
        """Canonical CLI / report / record key: ``ndcg@10``, ``ndcg@10_empty0``, ``map``."""
        return (
            self.base
            + (_EMPTY0_SUFFIX if self.empty == "0" else "")
            + (f"_{self.profile}" if self.profile else "")
        )

    @property
    def mlflow_key(self) -> str:
        """MLflow metric key (no ``@``): ``ndcg_at_10``, ``ndcg_at_10_empty0``, ``map``."""
        cut = "" if self.k is None else f"{_MLFLOW_CUTOFF}{self.k}"
        return (
            self.name
            + cut
            + (_EMPTY0_SUFFIX if self.empty == "0" else "")
            + (f"_{self.profile}" if self.profile else "")
        )

    @property
    def display(self) -> str:
        """Name for tables and plots: ``NDCG@10``, ``MAP (empty query = 0)``, ``P@5``."""
        cut = "" if self.k is None else f"@{self.k}"
        return (
            self.spec.display
            + cut
            + (_DISPLAY_EMPTY0 if self.empty == "0" else "")
            + (f" ({PROFILE_TITLES[self.profile]})" if self.profile else "")
        )

    @property
    def empty_query(self) -> float:
        """The ``empty_query`` value :func:`~ltr_bench.evaluation.metrics.evaluate` needs for
        this key."""
        return float(self.empty)

    @property
    def convention(self) -> str:
        """What a query without relevant documents scores, in words (plot subtitles)."""
        if self.profile:
            return f"{PROFILE_TITLES[self.profile]} conventions"
        if not self.spec.follows_empty_query:
            return f"{self.spec.display}@k of a query without relevant documents = 0"
        return f"query without relevant documents = {self.empty}"

    def with_empty(self, empty: str | int | float) -> MetricKey:
        """The same metric under convention ``empty`` ("0"/"1", or 0/1 as a number)."""
        if isinstance(empty, Real) and not isinstance(empty, bool) and empty in (0, 1):
            empty = str(int(empty))
        # any other value is refused by __post_init__ (ValueError naming it)
        return MetricKey(self.name, self.k, cast(str, empty), self.profile)

    def __str__(self) -> str:
        return self.text


def _check_fields(name: str, k: object, empty: object, shown: str) -> None:
    """Raise ValueError naming ``shown`` (the metric as the caller wrote it) when ``name``,
    ``k`` or ``empty`` break :data:`METRIC_TABLE`'s rules."""
    spec = METRIC_TABLE.get(name)
    if spec is None:
        raise ValueError(f"unknown metric {shown}; valid forms: {METRICS_HELP}")
    if k is None:
        if spec.cutoff == "required":
            raise ValueError(
                f"metric {shown} needs a cutoff k, e.g. {name}@10; valid forms: {METRICS_HELP}"
            )
    elif isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(
            f"metric {shown}: the cutoff k must be an integer >= 1, got {k!r}; "
            f"valid forms: {METRICS_HELP}"
        )
    elif spec.cutoff == "forbidden":
        raise ValueError(f"metric {shown} takes no cutoff; valid forms: {METRICS_HELP}")
    if empty not in EMPTY_VALUES:
        raise ValueError(f"metric {shown}: empty must be one of {EMPTY_VALUES}, got {empty!r}")


def metric_key_or_none(name: str) -> MetricKey | None:
    """:meth:`MetricKey.parse` of ``name``, or None when it is not a metric name (other
    measures such as ``fit_seconds`` or ``knn_error``)."""
    try:
        return MetricKey.parse(name)
    except ValueError:
        return None


def metric_display(name: str) -> str:
    """``MetricKey.parse(name).display`` for a metric name; any other name unchanged."""
    key = metric_key_or_none(name)
    return key.display if key is not None else name


def parse_metric(name: str) -> tuple[str, int | None]:
    """Split a metric string into ``(base name, k)``, case-insensitively (kept for callers
    that predate :class:`MetricKey`; the convention suffix is accepted and dropped).

    ``"ndcg@10" -> ("ndcg", 10)``, ``"MAP" -> ("map", None)``, ``"ndcg@10_empty0" ->
    ("ndcg", 10)``. Anything invalid raises ValueError listing :data:`VALID_FORMS`.
    """
    key = MetricKey.parse(name)
    return key.name, key.k


def record_metric_keys(metrics: Iterable[str] | str) -> tuple[str, ...]:
    """The metric keys (``MetricKey.text``) a result record holds for requested ``metrics``.

    Every distinct requested metric (any spelling; a convention suffix is ignored, since
    both conventions are always recorded) gives its key under the default convention and,
    when the empty-query convention applies to it, under ``_empty0`` too: all default keys
    first, in request order, then the ``_empty0`` ones. ``("NDCG@10", "p@5", "ndcg_at_10")``
    -> ``("ndcg@10", "p@5", "ndcg@10_empty0")``. Bad names raise ValueError.
    """
    if isinstance(metrics, str):
        metrics = (metrics,)
    bases: dict[MetricKey, None] = {}
    for m in metrics:
        bases.setdefault(MetricKey.parse(m).with_empty("1"))
    if not bases:
        raise ValueError(f"no metric requested; valid forms: {METRICS_HELP}")
    keys = [key.with_empty(e) for e in EMPTY_VALUES for key in bases]
    return tuple(dict.fromkeys(key.text for key in keys))

"""The proof of an export: ONNX Runtime's scores against the native model's on held rows.

:func:`compare_scores` says, for native scores ``s`` and ONNX Runtime's ``o`` of the same rows:

* ``max_scaled_diff = max_i |o_i - s_i| / max(1, |s_i|)``, to hold below
  :data:`~ltr_bench.models.onnx.export.SCORE_BOUND`;
* ``misordered``: pairs of one query whose native scores differ by more than the bound,
  ``s_i - s_j > SCORE_BOUND * max(1, |s_i|, |s_j|)``, that ONNX Runtime does not order the
  same way (``o_i > o_j``); to be 0. Pairs closer than that may swap (they are ties within
  the precision the bound promises).

Missing values: a ranker whose fitted model offers ``missing_scores(X)`` (the tree rankers:
the library's own scores of rows holding NaN) is also proven on rows with NaN
(:func:`missing_rows`, :func:`compare_missing`), since its graph promises to treat NaN as
its library does (metadata ``ltr_bench.nan``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ltr_bench.ranker import query_boundaries

__all__ = [
    "METRIC_TOLERANCE",
    "ExportCheck",
    "OnnxScorer",
    "ScoreComparison",
    "check_export",
    "compare_missing",
    "compare_scores",
    "missing_rows",
]

#: rows of the data that the NaN proof (:func:`missing_rows`) is made from, at most
MISSING_PROOF_ROWS = 256


@dataclass(frozen=True)
class ScoreComparison:
    """What :func:`compare_scores` found (see the module)."""

    n_rows: int
    n_queries: int
    max_abs_diff: float
    max_scaled_diff: float
    misordered: int
    bound: float

    @property
    def holds(self) -> bool:
        """The scores are within the bound and no pair farther apart than it swapped."""
        return self.max_scaled_diff <= self.bound and self.misordered == 0

    def text(self) -> str:
        """One line: rows, queries, the largest differences and the pairs misordered."""
        verdict = "holds" if self.holds else "FAILS"
        return (
            f"{self.n_rows} rows, {self.n_queries} queries: max |onnx - native| "
            f"{self.max_abs_diff:.3g}, scaled by max(1, |native|) {self.max_scaled_diff:.3g} "
            f"(bound {self.bound:g}: {verdict}); pairs ordered differently beyond the bound: "
            f"{self.misordered}"
        )


def compare_scores(native, onnx, qid, bound: float) -> ScoreComparison:
    """Compare ``onnx`` with ``native`` scores (float, same rows, ``qid`` contiguous)."""
    s = np.asarray(native, dtype=np.float64)
    o = np.asarray(onnx, dtype=np.float64)
    if s.shape != o.shape:
        raise ValueError(f"{o.shape} ONNX scores for {s.shape} native ones")
    bounds = query_boundaries(np.asarray(qid))
    diff = np.abs(o - s)
    scaled = diff / np.maximum(1.0, np.abs(s))
    misordered = 0
    for a, b in zip(bounds[:-1], bounds[1:]):
        misordered += _misordered(s[a:b], o[a:b], bound)
    return ScoreComparison(
        n_rows=int(s.size),
        n_queries=int(bounds.size - 1),
        max_abs_diff=float(diff.max(initial=0.0)),
        max_scaled_diff=float(scaled.max(initial=0.0)),
        misordered=int(misordered),
        bound=float(bound),
    )


def _misordered(s: np.ndarray, o: np.ndarray, bound: float) -> int:
    """Pairs (i, j) of one query with ``s_i - s_j > bound * max(1, |s_i|, |s_j|)`` but
    ``o_i <= o_j``; in blocks of rows so that memory stays at ``block x n``."""
    n = s.size
    count = 0
    block = max(1, 4_000_000 // max(n, 1))
    for a in range(0, n, block):
        si, oi = s[a : a + block, None], o[a : a + block, None]
        tol = bound * np.maximum(1.0, np.maximum(np.abs(si), np.abs(s[None, :])))
        apart = (si - s[None, :]) > tol
        count += int(np.count_nonzero(apart & (oi <= o[None, :])))
    return count


def missing_rows(X) -> np.ndarray:
    """Proof rows with missing values from the rows ``X`` ``(n, d)`` (at most
    :data:`MISSING_PROOF_ROWS` of them, float64 copies): row ``i`` has feature ``i mod d``
    NaN and, every third row, feature ``(i + 1) mod d`` set to 0 (a value LightGBM's
    ``zero_as_missing`` treats as missing); one more row is all NaN. So every feature is NaN
    in some row, next to real values of the others."""
    X = np.array(X[:MISSING_PROOF_ROWS], dtype=np.float64)
    n, d = X.shape
    if d == 0:
        return X
    rows = np.arange(n)
    X[rows, rows % d] = np.nan
    third = rows[rows % 3 == 0]
    if d > 1:
        X[third, (third + 1) % d] = 0.0
    return np.vstack([X, np.full((1, d), np.nan)])


def compare_missing(ranker, graph_bytes: bytes, X) -> ScoreComparison | None:
    """ONNX Runtime's scores of :func:`missing_rows` of ``X`` (the ranker's own input, one
    call for all rows) against ``ranker.missing_scores`` (:func:`compare_scores`, the rows as
    one query); None when the ranker has no ``missing_scores`` (its graph follows no
    library's rule for NaN)."""
    from ltr_bench.models.onnx.export import SCORE_BOUND, onnx_scores

    if not callable(getattr(ranker, "missing_scores", None)) or len(X) == 0:
        return None
    rows = missing_rows(X)
    native = np.asarray(ranker.missing_scores(rows), dtype=np.float64)
    scores = onnx_scores(graph_bytes, rows, one_query=False)
    return compare_scores(native, scores, np.zeros(len(rows), np.int64), SCORE_BOUND)


@dataclass
class _Recorder:
    """A model as ``predict_*`` use it that keeps the first rows it scores (the NaN proof's
    source) and scores with ``model``."""

    model: Any
    rows: list = field(default_factory=list)

    @property
    def n_features(self) -> int | None:
        return self.model.n_features

    @property
    def manifest(self) -> dict:
        return self.model.manifest

    @property
    def folder(self) -> Any:
        return self.model.folder

    def predict(self, X, qid=None) -> np.ndarray:
        if sum(len(r) for r in self.rows) < MISSING_PROOF_ROWS:
            self.rows.append(np.array(X[:MISSING_PROOF_ROWS], dtype=np.float64))
        return self.model.predict(X, qid)


@dataclass
class OnnxScorer:
    """An exported model as :mod:`ltr_bench.models.predict` uses a
    :class:`~ltr_bench.models.LoadedModel`: ``predict(X, qid)`` scores with ONNX Runtime
    (one thread; one call per query under the ``"one query"`` input contract), so
    ``predict_split`` / ``predict_file`` rank and evaluate a split with it exactly as with
    the native model. The preprocessing is in the graph."""

    model_bytes: bytes
    manifest: dict
    folder: Any
    one_query: bool

    @property
    def n_features(self) -> int | None:
        return self.manifest.get("n_features")

    @property
    def shown(self) -> str:
        """How messages name the model (as :attr:`LoadedModel.shown`)."""
        return str(self.folder)

    @property
    def called(self) -> str:
        """``the model in <folder>`` (as :attr:`LoadedModel.called`)."""
        return f"the model in {self.folder}"

    def predict(self, X, qid=None) -> np.ndarray:
        from ltr_bench.models.onnx.export import onnx_scores
        from ltr_bench.ranker import RankerInputError

        X = np.asarray(X)
        if X.ndim == 2 and self.n_features is not None and X.shape[1] != self.n_features:
            raise RankerInputError(
                f"the rows have {X.shape[1]} features, but {self.called} was "
                f"fitted on {self.n_features}"
            )
        if self.one_query and qid is None:
            raise RankerInputError("the exported model scores one query per call: pass qid")
        return onnx_scores(self.model_bytes, X, qid, one_query=self.one_query)


@dataclass(frozen=True)
class ExportCheck:
    """ONNX Runtime against the native model on one data source: the scores
    (:class:`ScoreComparison`) and the largest difference between the metrics ``predict``
    prints (``metric_diff``, to be at most :data:`METRIC_TOLERANCE`; None without labels)."""

    source: str
    scores: ScoreComparison
    metric_diff: float | None
    #: the same on rows with NaN (:func:`compare_missing`); None: not proven (the ranker
    #: has no rule for NaN, or the graph takes one query per call)
    missing: ScoreComparison | None = None

    @property
    def holds(self) -> bool:
        return (
            self.scores.holds
            and (self.metric_diff is None or self.metric_diff <= METRIC_TOLERANCE)
            and (self.missing is None or self.missing.holds)
        )

    def text(self) -> str:
        metrics = (
            ""
            if self.metric_diff is None
            else f"; metrics differ by at most {self.metric_diff:.3g} "
            f"(tolerance {METRIC_TOLERANCE:g})"
        )
        missing = "" if self.missing is None else f"; with NaN: {self.missing.text()}"
        return f"{self.source}: {self.scores.text()}{metrics}{missing}"


#: the metrics ``predict`` prints with the exported model equal the native ones to this
METRIC_TOLERANCE = 1e-6


def check_export(native, scorer: OnnxScorer, spec, **load) -> ExportCheck:
    """Rank the data ``spec`` (:class:`~ltr_bench.models.predict.DataSpec`: a file or a
    dataset's split; ``load``: the keyword arguments of ``predict_split`` / ``predict_file``)
    with the native model and with ``scorer``, and compare (:func:`compare_scores` with
    :data:`~ltr_bench.models.onnx.export.SCORE_BOUND`, and the metrics); for a graph of
    rows (not one query per call) whose ranker has ``missing_scores``, also on
    :func:`missing_rows` of the first rows scored (:func:`compare_missing`)."""
    from ltr_bench.models import predict as P
    from ltr_bench.models.onnx.export import SCORE_BOUND

    onnx: Any = scorer  # predict_* take any object with LoadedModel's n_features and predict
    recorder = _Recorder(native)
    native = recorder
    if spec.path is not None:
        keep = {k: v for k, v in load.items() if k in ("metrics", "max_label", "progress")}
        a, b = P.predict_file(native, spec.path, **keep), P.predict_file(onnx, spec.path, **keep)
    else:
        keep = {k: v for k, v in load.items() if k not in ("max_label",)}
        a, b = P.predict_split(native, spec, **keep), P.predict_split(onnx, spec, **keep)
    diff = None
    if a.metrics is not None and b.metrics is not None:
        diff = max((abs(a.metrics[k] - b.metrics[k]) for k in a.metrics), default=0.0)
    missing = None
    if not scorer.one_query and recorder.rows:
        rows = np.vstack(recorder.rows)[:MISSING_PROOF_ROWS]
        missing = compare_missing(recorder.model.ranker, scorer.model_bytes, rows)
    return ExportCheck(
        source=a.source,
        scores=compare_scores(a.scores, b.scores, a.qid, SCORE_BOUND),
        metric_diff=diff,
        missing=missing,
    )

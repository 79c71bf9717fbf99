"""Ranking new data with a kept model: what ``ltr-bench predict`` does (the CLI only parses and
prints).

Two sources of rows:

* :func:`predict_split`: a split of a dataset's fold (``DATASET[:FOLD[:SPLIT]]``), loaded as
  ``ltr-bench run`` loads it (same loader, options, seed and cache), scored with one
  ``predict`` call on the whole split as the harness does, and evaluated by the same code
  with the same conventions (:func:`ltr_bench.evaluation.metrics.evaluate_conventions`, the
  dataset's top grade as ERR's ``max_label``): on a fold's test split the metrics equal the
  cell's recorded ones exactly.
* :func:`predict_file`: a LETOR / SVMlight file (plain or compressed, labels optional),
  read in chunks of whole queries (:func:`ltr_bench.data.stream.iter_query_chunks`) so a file
  larger than memory can be ranked; only the scores, labels and query ids are kept.

Scores come from :meth:`ltr_bench.models.LoadedModel.predict`, which applies the preprocessing
the model's manifest names (``query_norm``). Metrics are computed only when the rows have
labels. Outputs: a TREC run (:func:`ltr_bench.results.trec_run_text`), the matching qrels
(:func:`ltr_bench.results.qrels_text`), both naming each document as ``run --save-scores``
does (:func:`ltr_bench.folds.doc_names`: the file's own ``#docid = ...`` when every line has
one, else the row's position in the split or file, 0-based), and a scores file
(:func:`scores_text`: one score per line, in input order, written exactly with ``repr``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ltr_bench.errors import UsageError
from ltr_bench.evaluation.ranked import MAX_LABEL
from ltr_bench.models.loading import LoadedModel
from ltr_bench.ranker import RankerInputError

__all__ = [
    "DataSpec",
    "ModelInputError",
    "Prediction",
    "parse_data_spec",
    "predict_file",
    "predict_split",
    "record_metrics",
    "repeated_docid_notes",
    "scores_text",
]

SPLITS = ("train", "vali", "test")
Progress = Callable[[int, int, str], None]

#: the advice of a bad line's message when ``predict`` reads a file (no dataset, no options)
FILE_FIXES = {
    "label": f"ltr-bench's metrics take labels 0..{MAX_LABEL} (the gain 2^label - 1 of a "
    "larger one overflows); check the file's first column.",
    "qid": "Every line needs 'qid:<query id>' right after its label or, without labels, at "
    "its start (predict takes each row's query from its own line; it reads no '.query' file).",
}


class ModelInputError(UsageError):
    """The rows do not fit the model (a feature count other than the one it was fitted on):
    the invocation pairs a model with data it cannot rank (exit code 2)."""


@dataclass(frozen=True)
class DataSpec:
    """What ``--data`` names: a ``path`` (a file), or a ``dataset`` with ``fold`` and
    ``split``; ``option``: the option that named it (for messages)."""

    path: Path | None = None
    dataset: str | None = None
    fold: int = 1
    split: str = "test"
    option: str = "--data"


def parse_data_spec(text: str, option: str = "--data") -> DataSpec:
    """``FILE`` (an existing file) or ``DATASET[:FOLD[:SPLIT]]`` (fold 1-based, default 1;
    split train, vali or test, default test). :class:`UsageError` names what is wrong, and
    ``option`` (the option that gave ``text``: ``--data``, ``export --check``)."""
    path = Path(text).expanduser()
    if path.is_file():
        return DataSpec(path=path, option=option)
    if text and path.exists() and not path.is_dir():
        raise UsageError(
            f"{option} {text}: {_kind_of(path)}, not a data file: give a LETOR file (a "
            "regular file, read twice) or DATASET[:FOLD[:SPLIT]]"
        )
    name, _, rest = text.partition(":")
    fold_text, _, split = rest.partition(":")
    looks_like_a_file = "/" in name or "." in name  # dataset names have neither
    if not name or (looks_like_a_file and not Path(name).expanduser().is_dir()):
        raise UsageError(
            f"{option} {text}: no such file (give a LETOR file or DATASET[:FOLD[:SPLIT]])"
        )
    try:
        fold = int(fold_text) if fold_text else 1
    except ValueError:
        raise UsageError(f"{option} {text}: the fold must be a number, got {fold_text!r}") from None
    split = split or "test"
    if split not in SPLITS:
        raise UsageError(f"{option} {text}: the split must be one of {', '.join(SPLITS)}")
    return DataSpec(dataset=name, fold=fold, split=split, option=option)


def _kind_of(path: Path) -> str:
    """What a path that exists but is neither a regular file nor a folder is, in words."""
    import stat

    mode = path.stat().st_mode
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


@dataclass
class Prediction:
    """Scores of the rows of ``source``: ``scores`` (float64, input order), ``qid``, ``y``
    (None without labels), ``metrics`` (means, as a record's ``metrics``; None without labels)
    and ``per_query`` (as a record's), ``notes`` (what the user should know), ``docid`` (the
    rows' document ids from the data, bytes; None when it has none)."""

    source: str
    scores: np.ndarray
    qid: np.ndarray
    y: np.ndarray | None = None
    metrics: dict[str, float] | None = None
    per_query: dict[str, list] | None = None
    max_label: int | None = None
    notes: list[str] = field(default_factory=list)
    docid: np.ndarray | None = None

    @property
    def n_queries(self) -> int:
        return int(np.unique(self.qid).size)


def record_metrics(metrics=None) -> tuple[str, ...]:
    """The metric keys a record holds for ``metrics`` (default: ``run``'s defaults), in the
    canonical spelling ``expand_plan`` gives them."""
    from ltr_bench.evaluation.metrics import DEFAULT_METRICS, MetricKey

    requested = tuple(metrics) if metrics else tuple(DEFAULT_METRICS)
    try:
        return tuple(MetricKey.parse(m).with_empty("1").text for m in requested)
    except ValueError as exc:
        raise UsageError(f"--metrics: {exc}") from None


def _score(model: LoadedModel, X, qid, where: str) -> np.ndarray:
    try:
        scores = model.predict(X, qid)
    except RankerInputError as exc:
        raise ModelInputError(f"{where}: {exc}") from None
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape != (np.shape(X)[0],):
        raise ModelInputError(f"{where}: the model returned {scores.shape} scores")
    return scores


def _evaluate(pred: Prediction, metrics) -> None:
    from ltr_bench.evaluation.metrics import evaluate_conventions

    assert pred.y is not None  # evaluated only when the data has labels
    pred.metrics, pred.per_query = evaluate_conventions(
        pred.y, pred.scores, pred.qid, record_metrics(metrics), max_label=pred.max_label
    )


def predict_split(
    model: LoadedModel,
    spec: DataSpec,
    *,
    data_dir=None,
    cache_dir=None,
    seed: int = 0,
    options: dict[str, Any] | None = None,
    metrics=None,
    progress: Progress | None = None,
    load_fold: Callable[[int], Any] | None = None,
) -> Prediction:
    """Rank split ``spec.split`` of fold ``spec.fold`` of dataset ``spec.dataset`` (loaded
    with ``options`` and ``seed`` as ``run`` loads it) and evaluate it as ``run`` does (see
    the module). ``load_fold(k)``: loads fold ``k`` instead (the CLI's, which simulates the
    click options as ``run`` does). What the user should know about the split (the model's
    training data, a leak, other data: :func:`ltr_bench.models.provenance.split_notes`) is
    said in ``notes``, not refused."""
    from ltr_bench import data
    from ltr_bench.models.provenance import split_notes

    if spec.dataset is None:
        raise ValueError("predict_split needs a dataset (DataSpec.dataset), not a file")
    source: Any = spec.dataset
    spec_info = None
    try:
        spec_info = data.get_spec(spec.dataset)
    except data.UnknownDatasetError:
        if not Path(spec.dataset).expanduser().is_dir():
            raise
        source = Path(spec.dataset).expanduser().resolve()
    if load_fold is None:

        def load_fold(k: int):
            return data.load_fold(
                source,
                k,
                data_dir=data_dir,
                cache_dir=cache_dir,
                seed=seed,
                options=options or None,
                progress=progress,
            )

    fold = load_fold(spec.fold)
    split = getattr(fold, spec.split)
    if split is None:
        raise UsageError(
            f"{spec.option}: dataset {spec.dataset} fold {spec.fold} has no {spec.split} split"
        )
    where = f"{spec.dataset} fold {spec.fold} {spec.split}"
    pred = Prediction(source=where, scores=_score(model, split.X, split.qid, where), qid=split.qid)
    pred.y = split.y
    pred.docid = split.extras.get("docid")
    pred.max_label = int(spec_info.label_max) if spec_info is not None else fold.max_label

    def others():
        folds = data.available_folds(source, data_dir=data_dir, options=options or None)
        return (k for k in folds if k != spec.fold)

    recorded = model.manifest.get("data_fingerprint")
    pred.notes += split_notes(
        recorded, where, split, fold, load_fold=load_fold, other_folds=others()
    )
    _evaluate(pred, metrics)
    return pred


def predict_file(
    model: LoadedModel,
    path,
    *,
    metrics=None,
    max_label: int | None = None,
    chunk_rows: int | None = None,
    progress: Progress | None = None,
) -> Prediction:
    """Rank the rows of the LETOR / SVMlight file ``path`` chunk by chunk (whole queries; see
    the module); with labels, evaluate them (``max_label``: ERR's top grade, default the
    file's largest label; one below it is refused). The model's feature count is required
    of the file: an index beyond it is refused naming the line, a file whose largest feature
    index is below it is refused after reading (a sparse line may omit a zero feature, but a
    file where no line has the model's last feature was made for another model); both are
    :class:`ModelInputError` (exit 2). Labels go up to :data:`MAX_LABEL` (the metrics' gain
    ``2^label - 1``); a larger one is refused naming its line."""
    from ltr_bench.data.errors import FeatureIndexError
    from ltr_bench.data.stream import CHUNK_ROWS, iter_query_chunks

    path = Path(path)
    n = model.n_features
    if n is None:
        raise ModelInputError(f"{model.shown}: the model does not record its feature count")
    scores, qids, ys, docids = [], [], [], []
    widest = 0
    chunks = iter_query_chunks(
        path,
        n_features=n,
        chunk_rows=chunk_rows or CHUNK_ROWS,
        progress=progress,
        label_max=MAX_LABEL,
        context="this file",
        fixes=FILE_FIXES,
    )
    try:
        for chunk in chunks:
            widest = max(widest, chunk.width)
            where = f"{path} (rows {chunk.first_row}..{chunk.first_row + chunk.qid.size - 1})"
            scores.append(_score(model, chunk.X, chunk.qid, where))
            qids.append(chunk.qid)
            if chunk.y is not None:
                ys.append(chunk.y)
            docids.append(chunk.docid)
    except FeatureIndexError as exc:
        raise ModelInputError(
            f"{path}:{exc.line}: feature index {exc.index} is beyond the {n} features "
            f"{model.called} was fitted on: {_same_features(n)}"
        ) from None
    if widest < n:
        raise ModelInputError(
            f"{path}: the rows have at most {widest} features, but {model.called} "
            f"was fitted on {n}: {_same_features(n)}"
        )
    pred = Prediction(source=str(path), scores=np.concatenate(scores), qid=np.concatenate(qids))
    present = [d for d in docids if d is not None]
    if len(present) == len(docids):  # every line had an id (else: row positions)
        pred.docid = np.concatenate(present)
    if ys:
        pred.y = np.concatenate(ys)
        top = int(pred.y.max())
        if max_label is not None and max_label < top:
            raise UsageError(
                f"--max-label {max_label} is below the largest label of {path}, {top}: ERR's "
                "top grade must be at least every label (omit --max-label to use the file's "
                "largest)"
            )
        pred.max_label = top if max_label is None else int(max_label)
        _evaluate(pred, metrics)
    return pred


def _same_features(n: int) -> str:
    """What to do when a file's features are not the model's."""
    return (
        f"the file must have the model's {n} features, the feature set of the data it was "
        "trained on. To rank your own data, train on it first: `ltr-bench run --ranker "
        "lightgbm --dataset <folder with your train.txt, vali.txt, test.txt>`, then give "
        "--model one of that run's models (`ltr-bench models`)"
    )


def repeated_docid_notes(pred: Prediction) -> list[str]:
    """A note when some rows repeat a document id of an earlier row of their query (the TREC
    files name them ``<id>~2``, ...: :func:`ltr_bench.folds.doc_names`)."""
    if pred.docid is None:
        return []
    repeats = pred.qid.size - len(set(zip(pred.qid.tolist(), pred.docid.tolist())))
    if not repeats:
        return []
    return [
        f"{repeats} row(s) of {pred.source} repeat the document id of an earlier row of their "
        "query; the TREC run and qrels name them <id>~2, <id>~3, ... (trec_eval would take "
        "them for one document)"
    ]


def scores_text(scores) -> str:
    """One score per line, in input order, each written exactly (``repr``)."""
    return "".join(f"{float(s)!r}\n" for s in np.asarray(scores, dtype=np.float64))

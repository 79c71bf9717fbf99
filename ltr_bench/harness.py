"""Run a benchmark plan: for each dataset, fold and ranker, fit, score, evaluate, record.

Data flow: :class:`~ltr_bench.plan.Plan` -> :func:`expand_plan` (validates everything, gives
one :class:`Cell` per dataset x fold x ranker) -> :func:`run_cell` (pure: a cell and, when
the caller has it, the loaded fold, in; a :class:`ResultRecord` out) -> :class:`ResultStore`
(one JSON file per finished cell, written atomically) -> whoever listens (the CLI logs each
record to MLflow through :mod:`ltr_bench.tracking`; this module never imports MLflow).

Guarantees
----------
* Identical splits: the harness loads each fold once per invocation and runs every ranker on
  that same :class:`~ltr_bench.folds.Fold` object; each record carries the train / vali /
  test fingerprints, so "same data" is checkable after the fact.
* One seed: the dataset (generation, query-grouped folds) gets ``seed``; every ranker that
  has a ``random_state`` (or ``seed``) parameter gets ``random_state = seed`` in every cell.
  The folds differ in their data, so the same ranker seed in each is not a correlation risk,
  and a cell run on its own reproduces the same number.
* Resume: a cell's ``key`` is ``sha256`` of the canonical JSON of (ranker name, resolved
  parameters, dataset identity, fold, seed, metric list), where the resolved parameters are
  ``get_params()`` after the user's parameters, the seed and the thread count are applied
  (``query_dim`` is set later but follows from the dataset identity). A finished key found
  in the results folder is skipped unless ``force``. Ranker *versions* are recorded but not
  part of the key: after upgrading a ranker, re-run with ``--force``.
* Local results first: a record is on disk (``<results>/<key>.json`` plus
  ``<key>.per_query.csv``) before anyone logs it anywhere. Ctrl-C loses only the cell that
  was running (:class:`HarnessInterrupted` carries how many were saved).
* Failures: an exception in ``fit``/``predict``/evaluation makes a ``status="failed"``
  record (message and traceback; the traceback is appended to ``<results>/failures.log``);
  the other cells still run. Failed cells are not saved as finished, so a re-run retries
  them.

Query-by-example data (``Split.extras`` has ``doc_class`` and ``query_class``): every record
also gets ``extra_metrics["knn_error"]``, the k-NN classification error (k = ``KNN_K`` = 3,
the MLR paper's demos' k) read off the ranker's test scores by :func:`metrics.knn_error`.

Optional ranker hook: a ranker may define ``extra_metrics(fold) -> dict[str, float]``
(called after scoring, e.g. the k-NN error of a learned metric on query-by-example data);
the values go into ``record.extra_metrics`` and to MLflow under their own names.
"""

from __future__ import annotations

import csv
import datetime as _dt
import functools
import hashlib
import io
import json
import math
import os
import platform
import subprocess
import tempfile
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from .plan import DatasetChoice, Plan, PlanError, canonical_json
from .progress import progress_handler
from .ranker import RankerTags
from .timing import PeakMemory, Stopwatch, cpu_count, thread_limit, time_scoring

__all__ = [
    "Cell",
    "EMPTY_QUERY_CONVENTIONS",
    "ExpandedPlan",
    "HarnessInterrupted",
    "Listener",
    "ResultRecord",
    "ResultStore",
    "RunReport",
    "aggregate",
    "atomic_write_text",
    "build_ranker",
    "environment",
    "evaluate_both",
    "expand_plan",
    "failed_record",
    "freeze_fold",
    "new_record",
    "run_cell",
    "run_plan",
]

RECORD_FORMAT = 1

#: (key suffix, empty_query value): every metric is computed under both conventions;
#: ``ndcg@10`` uses empty_query=1 (LightGBM/XGBoost/allRank), ``ndcg@10_empty0`` uses 0
#: (trec_eval/ranx). See :mod:`ltr_bench.metrics`.
KNN_K = 3
EMPTY_QUERY_CONVENTIONS: tuple[tuple[str, float], ...] = (("", 1.0), ("_empty0", 0.0))


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def _sha256(obj: Any) -> str:
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()


def jsonable(value: Any) -> Any:
    """A JSON-safe copy: numpy scalars -> Python, tuples -> lists, other objects -> repr."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Path):
        return str(value)
    return repr(value)


# --------------------------------------------------------------------------------------------
# environment


def _git_commit(path: Path) -> str | None:
    """Commit of the git work tree containing ``path`` (``+dirty`` if modified), else None."""
    try:
        head = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"],
                              capture_output=True, text=True, timeout=5)
        if head.returncode != 0:
            return None
        commit = head.stdout.strip()
        dirty = subprocess.run(["git", "-C", str(path), "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
        if dirty.returncode == 0 and dirty.stdout.strip():
            commit += "+dirty"
        return commit
    except (OSError, subprocess.SubprocessError):
        return None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


_VERSIONED = ("ltr-bench", "numpy", "scipy", "scikit-learn", "lightgbm", "xgboost", "mlflow")


@functools.lru_cache(maxsize=None)
def environment(cwd: str | None = None) -> dict[str, Any]:
    """Where a record was computed: package versions, git commits, CPU, thread count.

    Versions come from installed distribution metadata (nothing is imported). ``git_commit``
    is the commit of the repository holding the working directory, ``ltr_bench_git_commit``
    the one holding the ltr_bench sources (``None`` outside a git checkout).
    """
    from importlib import metadata

    versions: dict[str, str | None] = {"python": platform.python_version()}
    for dist in _VERSIONED:
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    here = Path(cwd) if cwd else Path.cwd()
    return {
        "versions": versions,
        "git_commit": _git_commit(here),
        "ltr_bench_git_commit": _git_commit(Path(__file__).resolve().parent),
        "cpu_model": _cpu_model(),
        "cpu_count": cpu_count(),
        "platform": platform.platform(),
        "hostname": platform.node(),
    }


# --------------------------------------------------------------------------------------------
# cells and records


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
    ranker: str
    params: dict[str, Any]          # resolved: get_params() after user params, seed, threads
    user_params: dict[str, Any]     # what the user set
    dataset: str                    # display name (registered name, or folder name of a path)
    dataset_source: str             # registered name or path, as loaded
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

    def config(self) -> dict[str, Any]:
        """The resolved configuration of this cell (stored with the run as JSON)."""
        d = {k: jsonable(v) for k, v in asdict(self).items()}
        d["metrics"] = list(self.metrics)
        return d


@dataclass
class ResultRecord:
    """Everything measured for one cell. JSON-able via :meth:`to_dict` (without
    ``per_query``, which the store keeps in a CSV beside the JSON).

    metrics: mean over test queries, keys ``ndcg@10`` (empty query = 1) and
    ``ndcg@10_empty0`` (empty query = 0), one pair per requested metric.
    per_query: ``{"qid": [...], "ndcg@10": [...], ...}``, queries in order of first
    appearance in the test split (for paired significance tests).
    fit_seconds / score_us_per_doc / peak_rss_mb: see :mod:`ltr_bench.timing`.
    status: ``"ok"`` or ``"failed"`` (then ``error``, ``error_stage``, ``traceback``).
    warnings: things a reader of the numbers must know (e.g. constant scores).
    mlflow: ``{"tracking_uri", "experiment_id", "run_id", "parent_run_id"}`` once logged.
    """

    key: str
    plan_key: str
    ranker: str
    dataset: str
    fold: int
    seed: int
    status: str = "ok"
    ranker_distribution: str = ""
    ranker_version: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    user_params: dict[str, Any] = field(default_factory=dict)
    dataset_source: str = ""
    dataset_options: dict[str, Any] = field(default_factory=dict)
    dataset_identity: dict[str, Any] = field(default_factory=dict)
    metrics_requested: list[str] = field(default_factory=list)
    fingerprints: dict[str, str] = field(default_factory=dict)
    n_train_docs: int = 0
    n_test_docs: int = 0
    n_test_queries: int = 0
    metrics: dict[str, float] = field(default_factory=dict)
    extra_metrics: dict[str, float] = field(default_factory=dict)
    fit_seconds: float = float("nan")
    score_us_per_doc: float = float("nan")
    score_repeats: int = 0
    peak_rss_mb: float = float("nan")
    peak_rss_method: str = ""
    n_threads: int | None = None
    started: str = ""
    finished: str = ""
    environment: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    error_stage: str | None = None
    traceback: str | None = None
    mlflow: dict[str, Any] | None = None
    format: int = RECORD_FORMAT
    per_query: dict[str, list] | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self, *, per_query: bool = False) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "per_query"}
        d = jsonable(d)
        if per_query:
            d["per_query"] = jsonable(self.per_query)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ResultRecord":
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in known})

    def summary_line(self) -> str:
        """``lightgbm / synthetic fold 2`` (for messages)."""
        return f"{self.ranker} / {self.dataset} fold {self.fold}"


# --------------------------------------------------------------------------------------------
# ranker construction


def _registry():
    from . import registry

    return registry


def build_ranker(name: str, user_params: dict[str, Any], *, seed: int,
                 threads: int | None):
    """``make_ranker(name, user_params)``, then ``random_state``/``seed`` := seed and the
    thread parameter := threads (when the ranker declares one and the user did not set it).
    Raises :class:`~ltr_bench.registry.RegistryError` subclasses for unknown names/params."""
    ranker = _registry().make_ranker(name, dict(user_params))
    valid = ranker.get_params(deep=False)
    updates: dict[str, Any] = {}
    for seed_param in ("random_state", "seed"):
        if seed_param in valid and seed_param not in user_params:
            updates[seed_param] = seed
    if threads is not None:
        tp = _tags(ranker).thread_param
        if tp and tp in valid and tp not in user_params:
            updates[tp] = threads
    if updates:
        ranker.set_params(**updates)
    return ranker


def _tags(ranker) -> RankerTags:
    fn = getattr(ranker, "ranker_tags", None)
    if callable(fn):
        try:
            tags = fn()
            if isinstance(tags, RankerTags):
                return tags
        except Exception:  # a ranker without usable tags gets the defaults
            pass
    return RankerTags()


# --------------------------------------------------------------------------------------------
# the unit of work


def _data():
    from . import data

    return data


def _load_fold(cell: Cell, progress=None):
    data = _data()
    source: Any = cell.dataset_source
    if cell.dataset_identity.get("kind") == "path":
        source = Path(source)
    return data.load_fold(source, cell.fold, data_dir=cell.data_dir, cache_dir=cell.cache_dir,
                          seed=cell.seed, options=dict(cell.dataset_options) or None,
                          progress=progress)


def freeze_fold(fold) -> None:
    """Make every split's X, y, qid read-only, so that no ranker can change the data the
    next ranker sees (an in-place write raises ValueError and fails that cell only)."""
    for split in (fold.train, fold.vali, fold.test):
        if split is None:
            continue
        for arr in (split.X, split.y, split.qid):
            if isinstance(arr, np.ndarray):
                arr.flags.writeable = False


def _is_path(text: str) -> bool:
    """Whether ``--dataset`` text means a folder (same rule as the data layer)."""
    return (os.sep in text or "/" in text or text.startswith((".", "~"))
            or Path(text).expanduser().is_dir())


def _check_scores(scores: Any, n: int, ranker: str) -> np.ndarray:
    arr = np.asarray(scores)
    if arr.shape != (n,):
        raise ValueError(f"ranker {ranker!r} returned scores of shape {arr.shape}; expected "
                         f"({n},), one score per test document")
    arr = arr.astype(np.float64, copy=False)
    if not np.isfinite(arr).all():
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"ranker {ranker!r} returned a non-finite score ({arr[bad]}) at test "
                         f"row {bad}")
    return arr


def evaluate_both(y, scores, qid, metrics: Iterable[str], *, max_label: int | None):
    """Means and per-query values under both empty-query conventions.

    Returns ``(means, per_query)``; keys ``<metric><suffix>`` for the suffixes of
    :data:`EMPTY_QUERY_CONVENTIONS`; ``per_query`` also has ``"qid"``.
    """
    from .metrics import evaluate, query_ids

    metrics = tuple(metrics)
    means: dict[str, float] = {}
    per_query: dict[str, list] = {"qid": query_ids(qid).tolist()}
    for suffix, empty in EMPTY_QUERY_CONVENTIONS:
        pq = evaluate(y, scores, qid, metrics, empty_query=empty, per_query=True,
                      max_label=max_label)
        for m in metrics:
            values = np.asarray(pq[m], dtype=np.float64)
            per_query[m + suffix] = values.tolist()
            means[m + suffix] = float(np.mean(values)) if values.size else float("nan")
    return means, per_query


def new_record(cell: Cell) -> ResultRecord:
    """A record for ``cell`` with everything known before running it (status "ok")."""
    return ResultRecord(
        key=cell.key, plan_key=cell.plan_key, ranker=cell.ranker, dataset=cell.dataset,
        fold=cell.fold, seed=cell.seed, ranker_distribution=cell.ranker_distribution,
        ranker_version=cell.ranker_version, params=jsonable(cell.params),
        user_params=jsonable(cell.user_params), dataset_source=cell.dataset_source,
        dataset_options=jsonable(cell.dataset_options),
        dataset_identity=jsonable(cell.dataset_identity), metrics_requested=list(cell.metrics),
        n_threads=cell.threads, started=_now(), environment=environment(),
        config=cell.config(),
    )


def failed_record(cell: Cell, exc: BaseException, stage: str) -> ResultRecord:
    """A ``status="failed"`` record for ``cell`` (e.g. its fold could not be loaded)."""
    rec = new_record(cell)
    rec.status = "failed"
    rec.error_stage = stage
    rec.error = f"{type(exc).__name__}: {exc}"
    rec.traceback = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    rec.finished = _now()
    return rec


def run_cell(cell: Cell, *, fold=None, progress: Callable[[int, int, str], None] | None = None,
             ) -> ResultRecord:
    """Fit on train (validation split as ``eval_set``), score test, evaluate: one record.

    ``fold``: the loaded fold when the caller has it (the harness shares one per fold among
    all rankers); otherwise it is loaded from the cell. ``progress(done, total, message)``
    receives the ranker's own progress reports. Exceptions from loading, the ranker or the
    evaluation give a ``status="failed"`` record; ``KeyboardInterrupt`` propagates.
    """
    rec = new_record(cell)
    stage = "load"
    try:
        if fold is None:
            fold = _load_fold(cell)
        freeze_fold(fold)
        rec.fingerprints = dict(fold.fingerprints())
        train, test, vali = fold.train, fold.test, fold.vali
        rec.n_train_docs, rec.n_test_docs = train.n_docs, test.n_docs
        rec.n_test_queries = test.n_queries

        stage = "setup"
        ranker = build_ranker(cell.ranker, cell.user_params, seed=cell.seed,
                              threads=cell.threads)
        valid = ranker.get_params(deep=False)
        if fold.query_dim is not None and "query_dim" in valid \
                and "query_dim" not in cell.user_params:
            ranker.set_params(query_dim=int(fold.query_dim))
        rec.params = jsonable(ranker.get_params(deep=False))
        tags = _tags(ranker)
        if cell.threads is None and tags.thread_param and tags.thread_param in valid:
            value = ranker.get_params(deep=False)[tags.thread_param]
            rec.n_threads = value if isinstance(value, int) and value > 0 else None
        eval_set = None if vali is None else (vali.X, vali.y, vali.qid)
        max_label = cell.max_label if cell.max_label is not None else fold.max_label

        with thread_limit(cell.threads), PeakMemory() as mem, progress_handler(progress):
            stage = "fit"
            with Stopwatch() as sw:
                ranker.fit(train.X, train.y, qid=train.qid, eval_set=eval_set)
            stage = "predict"
            timing = time_scoring(lambda: ranker.predict(test.X, qid=test.qid), test.n_docs,
                                  repeats=cell.score_repeats)
        rec.fit_seconds = sw.seconds
        rec.score_us_per_doc = timing.us_per_doc
        rec.score_repeats = timing.repeats
        rec.peak_rss_mb = mem.peak_mb
        rec.peak_rss_method = mem.method

        scores = _check_scores(timing.scores, test.n_docs, cell.ranker)
        if scores.size > 1 and np.all(scores == scores[0]):
            rec.warnings.append(
                "all test scores are equal: the fitted model is constant, so every metric is "
                "the value of a random ranking (check the ranker's parameters, e.g. minimum "
                "leaf sizes or hessians on small data)")
        stage = "evaluate"
        rec.metrics, rec.per_query = evaluate_both(test.y, scores, test.qid, cell.metrics,
                                                   max_label=max_label)
        extras = test.extras
        if "doc_class" in extras and "query_class" in extras:
            from .metrics import knn_error  # query-by-example data: the MLR paper's measure

            rec.extra_metrics["knn_error"] = knn_error(
                scores, test.qid, extras["doc_class"], extras["query_class"], k=KNN_K)
        hook = getattr(ranker, "extra_metrics", None)
        if callable(hook):
            stage = "extra_metrics"
            rec.extra_metrics.update({str(k): float(v) for k, v in dict(hook(fold)).items()})
        rec.status = "ok"
    except Exception as exc:  # noqa: BLE001 - a failing ranker must not stop the benchmark
        rec.status = "failed"
        rec.error_stage = stage
        rec.error = f"{type(exc).__name__}: {exc}"
        rec.traceback = traceback.format_exc()
    rec.finished = _now()
    return rec


# --------------------------------------------------------------------------------------------
# the results store


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the whole new one:
    a temporary file in the same folder, fsync, then ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


_atomic_write = atomic_write_text  # the name ltr_bench.cli_report imports


def per_query_csv(per_query: dict[str, list]) -> str:
    """CSV text: header ``qid,<metric>...``, one row per query; floats via ``repr`` (exact)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    cols = list(per_query)
    w.writerow(cols)
    for row in zip(*(per_query[c] for c in cols)):
        w.writerow([repr(v) if isinstance(v, float) else v for v in row])
    return buf.getvalue()


def read_per_query_csv(path: Path) -> dict[str, list]:
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    if not rows:
        return {}
    header, body = rows[0], rows[1:]
    out: dict[str, list] = {c: [] for c in header}
    for row in body:
        for c, v in zip(header, row):
            out[c].append(_number(v) if c != "qid" else _qid(v))
    return out


def _number(text: str) -> float:
    return float(text)


def _qid(text: str):
    try:
        return int(text)
    except ValueError:
        return text


class ResultStore:
    """Finished cells as files: ``<root>/<key>.json`` and ``<root>/<key>.per_query.csv``.

    Writes are atomic (temporary file + ``os.replace``), the CSV before the JSON, so a record
    file exists only for a completely written result. Failures are appended to
    ``<root>/failures.log`` (tracebacks) and not stored as finished.
    """

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._cache: dict[str, ResultRecord] | None = None

    def json_path(self, key: str) -> Path:
        return self.root / f"{key}.json"

    def per_query_path(self, key: str) -> Path:
        return self.root / f"{key}.per_query.csv"

    @property
    def failure_log(self) -> Path:
        return self.root / "failures.log"

    def _read(self, path: Path) -> ResultRecord | None:
        try:
            rec = ResultRecord.from_dict(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            return None  # unreadable or foreign file: treat as not finished
        return rec if rec.ok else None

    def _index(self) -> dict[str, ResultRecord]:
        if self._cache is None:
            self._cache = {}
            if self.root.is_dir():
                for p in sorted(self.root.glob("*.json")):
                    rec = self._read(p)
                    if rec is not None and p.stem == rec.key:
                        self._cache[rec.key] = rec
        return self._cache

    def get(self, key: str) -> ResultRecord | None:
        """The finished record with this key, or None."""
        return self._index().get(key)

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def records(self, *, plan_key: str | None = None) -> list[ResultRecord]:
        recs = list(self._index().values())
        if plan_key is not None:
            recs = [r for r in recs if r.plan_key == plan_key]
        return sorted(recs, key=lambda r: (r.dataset, r.ranker, r.fold))

    def save(self, record: ResultRecord, *, per_query: bool = True) -> Path:
        """Write a finished record (and, with ``per_query``, its per-query CSV) atomically;
        returns the JSON path. ``per_query=False`` rewrites only the JSON (e.g. to note the
        MLflow run id)."""
        if not record.ok:
            raise ValueError("only finished (status ok) records are stored; use log_failure")
        if per_query and record.per_query is not None:
            atomic_write_text(self.per_query_path(record.key), per_query_csv(record.per_query))
        path = self.json_path(record.key)
        atomic_write_text(path, json.dumps(record.to_dict(), indent=1, sort_keys=True,
                                       allow_nan=True) + "\n")
        self._index()[record.key] = record
        return path

    def per_query(self, record: ResultRecord) -> dict[str, list] | None:
        """The per-query values of a record (from memory, else from its CSV)."""
        if record.per_query is not None:
            return record.per_query
        p = self.per_query_path(record.key)
        if p.is_file():
            record.per_query = read_per_query_csv(p)
        return record.per_query

    def log_failure(self, record: ResultRecord) -> Path:
        """Append a failed cell's traceback to ``failures.log``; returns the log path."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.failure_log, "a", encoding="utf-8") as fh:
            fh.write(f"=== {record.finished} {record.summary_line()} (key {record.key}, "
                     f"stage {record.error_stage})\n")
            fh.write((record.traceback or record.error or "").rstrip() + "\n\n")
        return self.failure_log


# --------------------------------------------------------------------------------------------
# plan expansion


PATH_DATASET_OPTIONS = ("n_features", "label_max")


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
                f"or a folder of LETOR files)") from None
        display, source, allowed = path.name, str(path), dict.fromkeys(PATH_DATASET_OPTIONS)
    else:
        display, source, allowed = spec.name, spec.name, dict(spec.options or {})
    unknown = sorted(set(choice.options) - set(allowed))
    if unknown:
        where = (f"{plan.source}: [datasets.{choice.name}]" if plan.source
                 else f"--dataset-option for {display}")
        valid = ", ".join(sorted(allowed)) or "(none: this dataset takes no options)"
        raise PlanError(f"{where}: unknown option(s) {', '.join(unknown)}; valid options: "
                        f"{valid}")
    return display, source, spec


@dataclass
class ExpandedPlan:
    """Cells in run order (dataset, fold, ranker) plus what the harness needs to load folds."""

    plan: Plan
    cells: list[Cell]
    metrics: tuple[str, ...]


def expand_plan(plan: Plan, *, score_repeats: int = 5) -> ExpandedPlan:
    """Validate the plan against the registries and data home; one :class:`Cell` per
    dataset x fold x ranker.

    Raises :class:`PlanError` (bad metric, unknown fold or option),
    :class:`~ltr_bench.registry.RegistryError` (unknown ranker, bad parameter, broken
    plugin) and :class:`~ltr_bench.data.DataError` (unknown dataset, missing or malformed
    data) before anything runs.
    """
    from .metrics import DEFAULT_METRICS, parse_metric

    registry = _registry()
    data = _data()
    metrics = tuple(plan.metrics) if plan.metrics else tuple(DEFAULT_METRICS)
    for m in metrics:
        try:
            parse_metric(m)
        except ValueError as exc:
            raise PlanError(f"{plan.source + ': ' if plan.source else ''}{exc}") from None
    if len(set(metrics)) != len(metrics):
        raise PlanError(f"a metric is listed twice: {', '.join(metrics)}")
    if not plan.rankers:
        raise PlanError("no ranker given")
    if not plan.datasets:
        raise PlanError("no dataset given")

    # rankers: unknown names and parameters fail here, before any data is loaded
    ranker_info = []
    for choice in plan.rankers:
        entry = registry.get_entry(choice.name)
        try:
            ranker = build_ranker(choice.name, choice.params, seed=plan.seed,
                                  threads=plan.threads)
        except registry.BadParameterError as exc:
            if plan.source:
                raise registry.BadParameterError(f"{plan.source}: [rankers.{choice.name}]: "
                                                 f"{exc}") from None
            raise
        resolved = jsonable(ranker.get_params(deep=False))
        ranker_info.append((choice, entry, resolved))

    cells: list[Cell] = []
    for dchoice in plan.datasets:
        display, source, spec = _resolve_dataset(dchoice, plan)
        load_source: Any = Path(source) if spec is None else source
        options = dict(dchoice.options) or None
        # raises DatasetNotFoundError (where to download, where to put the files) when absent
        available = list(data.available_folds(load_source, data_dir=plan.data_dir,
                                              options=options))
        folds = available if plan.folds is None else list(plan.folds)
        missing = [f for f in folds if f not in available]
        if missing:
            raise PlanError(f"dataset {display} has no fold {missing[0]}; available folds: "
                            f"{', '.join(map(str, available))}")
        identity = jsonable(data.dataset_identity(load_source, data_dir=plan.data_dir,
                                                  seed=plan.seed, options=options))
        for fold in folds:
            for choice, entry, resolved in ranker_info:
                base = {"ranker": choice.name, "params": resolved, "dataset": identity,
                        "seed": plan.seed, "metrics": list(metrics)}
                plan_key = _sha256(base)
                key = _sha256({**base, "fold": fold})
                cells.append(Cell(
                    key=key, plan_key=plan_key, ranker=choice.name, params=resolved,
                    user_params=dict(choice.params), dataset=display, dataset_source=source,
                    dataset_options=dict(dchoice.options), dataset_identity=identity,
                    fold=fold, seed=plan.seed, metrics=metrics, threads=plan.threads,
                    data_dir=plan.data_dir, cache_dir=plan.cache_dir,
                    ranker_distribution=entry.distribution, ranker_version=entry.version,
                    score_repeats=score_repeats,
                    max_label=None if spec is None else int(spec.label_max),
                ))
    return ExpandedPlan(plan=plan, cells=cells, metrics=metrics)


# --------------------------------------------------------------------------------------------
# running a plan


class Listener:
    """Callbacks of :func:`run_plan` (all optional no-ops); the CLI prints and logs here."""

    def fold_loading(self, dataset: str, fold: int) -> None:
        """About to load (or generate) a fold."""

    def fold_progress(self, dataset: str, fold: int, done: int, total: int,
                      message: str) -> None:
        """Progress of a long parse or generation (see :mod:`ltr_bench.progress`)."""

    def cell_started(self, cell: Cell, index: int, total: int) -> None:
        """``index`` is 1-based over all cells of the plan."""

    def cell_progress(self, cell: Cell, done: int, total: int, message: str) -> None:
        """The ranker reported progress (see :mod:`ltr_bench.progress`)."""

    def cell_finished(self, record: ResultRecord, index: int, total: int, *,
                      skipped: bool) -> None:
        """A cell finished (ok: already saved locally; failed: logged) or was skipped."""


@dataclass
class RunReport:
    """What :func:`run_plan` did. ``records``: ok records of the plan's cells in plan order
    (computed now or found finished); ``failed``: failed records; ``n_run``/``n_skipped``:
    cells computed now / found finished."""

    records: list[ResultRecord] = field(default_factory=list)
    failed: list[ResultRecord] = field(default_factory=list)
    n_run: int = 0
    n_skipped: int = 0
    n_cells: int = 0

    @property
    def n_saved(self) -> int:
        return len(self.records)


class HarnessInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`run_plan`. ``report`` holds what was finished and saved."""

    def __init__(self, report: RunReport):
        super().__init__("interrupted")
        self.report = report


def _group_by_fold(cells: list[Cell]) -> Iterator[list[Cell]]:
    group: list[Cell] = []
    for c in cells:
        if group and (c.dataset_source, c.fold, canonical_json(c.dataset_options)) != (
                group[0].dataset_source, group[0].fold, canonical_json(group[0].dataset_options)):
            yield group
            group = []
        group.append(c)
    if group:
        yield group


def run_plan(expanded: ExpandedPlan, store: ResultStore, *, force: bool = False,
             listener: Listener | None = None) -> RunReport:
    """Run every cell not yet finished (all with ``force``), fold by fold.

    Each fold is loaded once and shared by all rankers; a fold whose cells are all finished
    is not loaded at all. Each ok record is saved to ``store`` before ``listener`` hears of
    it. Ctrl-C raises :class:`HarnessInterrupted` with the report so far.
    """
    listener = listener or Listener()
    cells = expanded.cells
    report = RunReport(n_cells=len(cells))
    index = 0
    try:
        for group in _group_by_fold(cells):
            pending: list[tuple[int, Cell]] = []
            for cell in group:
                index += 1
                previous = None if force else store.get(cell.key)
                if previous is not None:
                    report.records.append(previous)
                    report.n_skipped += 1
                    listener.cell_finished(previous, index, len(cells), skipped=True)
                else:
                    pending.append((index, cell))
            if not pending:
                continue
            first = pending[0][1]
            listener.fold_loading(first.dataset, first.fold)
            fold = None
            load_error: Exception | None = None
            try:
                fold = _load_fold(first, progress=functools.partial(
                    listener.fold_progress, first.dataset, first.fold))
            except Exception as exc:  # noqa: BLE001 - reported per cell below
                load_error = exc
            for i, cell in pending:
                listener.cell_started(cell, i, len(cells))
                if load_error is not None:
                    rec = failed_record(cell, load_error, "load")
                else:
                    rec = run_cell(cell, fold=fold, progress=_progress_for(listener, cell))
                report.n_run += 1
                if rec.ok:
                    store.save(rec)
                    report.records.append(rec)
                else:
                    store.log_failure(rec)
                    report.failed.append(rec)
                listener.cell_finished(rec, i, len(cells), skipped=False)
    except KeyboardInterrupt:
        _plan_order(report, cells)
        raise HarnessInterrupted(report) from None
    _plan_order(report, cells)
    return report


def _plan_order(report: RunReport, cells: list[Cell]) -> None:
    position = {c.key: i for i, c in enumerate(cells)}
    report.records.sort(key=lambda r: position.get(r.key, len(position)))
    report.failed.sort(key=lambda r: position.get(r.key, len(position)))


def _progress_for(listener: Listener, cell: Cell):
    def report(done: int, total: int, message: str) -> None:
        listener.cell_progress(cell, done, total, message)

    return report


def aggregate(records: list[ResultRecord]) -> dict[str, tuple[float, float, int]]:
    """Per key of ``metrics`` plus fit_seconds / score_us_per_doc / peak_rss_mb and extra
    metrics: ``(mean, std, n)`` over the records (folds). ``std`` is the sample standard
    deviation (ddof=1), NaN for a single fold."""
    values: dict[str, list[float]] = {}
    for r in records:
        items = dict(r.metrics)
        items.update(r.extra_metrics)
        items.update(fit_seconds=r.fit_seconds, score_us_per_doc=r.score_us_per_doc,
                     peak_rss_mb=r.peak_rss_mb)
        for k, v in items.items():
            if v is not None and not (isinstance(v, float) and math.isnan(v)):
                values.setdefault(k, []).append(float(v))
    out = {}
    for k, vs in values.items():
        arr = np.asarray(vs)
        std = float(np.std(arr, ddof=1)) if arr.size > 1 else float("nan")
        out[k] = (float(np.mean(arr)), std, int(arr.size))
    return out

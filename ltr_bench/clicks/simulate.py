"""Simulated click logs: a loaded fold turned into click data (the standard protocol).

1. A logging ranker (``logging_ranker``, a registered ranker, default ``ridge``: linear, fast,
   deterministic, like the literature's Ranking SVM) is fitted with the true labels on a random
   ``logging_fraction`` of the training queries (default 1 %, at least
   :data:`~ltr_bench.clicks.options.MIN_LOGGING_QUERIES` queries, all when fewer), with the run's
   seed, one thread and no validation data.
2. It ranks every training and validation query (ties keep the file's row order); the top
   ``top_k`` documents are shown (0: all).
3. The click model samples ``sessions`` sessions of each shown list (every session shows the
   same list: the logging ranker is deterministic).
4. The training and validation splits keep only the shown documents (what a log holds); their
   labels become the number of sessions in which the document was clicked (``aggregate=count``,
   the default: ``E[count] = sessions * P(examined at k) * alpha(y)`` is linear in the
   examination probability, so inverse-propensity weighting of counts is unbiased, which it is
   not for "clicked at least once"), or 0/1 clicked at least once (``aggregate=any``). Beside
   them, as per-row arrays in ``Split.extras`` (which rankers never see, except through the
   ``position`` / ``propensity`` keywords of ``fit`` when they declare
   ``RankerTags.accepts_position``): ``position`` (int64, 1-based shown rank) and
   ``propensity`` (float64, the click model's exact probability that the row was examined at
   its position in its list; NaN for a model without an examination step).
   Queries without any click stay (they carry no signal, as in a real log).
5. **The test split is returned unchanged: its labels stay the true relevance.**
6. What the log says about its examination curve is estimated once, with the log, and kept
   in the returned fold's ``info["click_log"]`` (and so in every record of the fold):
   result randomisation on a randomised log of the same training queries, and regression
   EM on the log itself (:func:`ltr_bench.clicks.estimation.estimate_log_propensities`).

Every random choice comes from the seed (``numpy.random.SeedSequence([seed, fold, part])``).
The result is cached in the parsed-data cache (namespace ``clicks``) under a key holding the
click configuration (every option, the model's resolved arguments, the logging ranker's name,
version and parameters, and :data:`~ltr_bench.clicks.options.SIMULATION_VERSION`, the version
of this code's output), the seed, the fold and the fingerprints of the source splits.
"""

from __future__ import annotations

import hashlib
import math
import warnings

import numpy as np

from ltr_bench.clicks.models import ShownLists
from ltr_bench.clicks.options import MIN_LOGGING_QUERIES
from ltr_bench.clicks.registry import build_click_model
from ltr_bench.data.cache import cache_key, load_entry, write_entry
from ltr_bench.data.errors import DataWarning
from ltr_bench.data.specs import resolve_cache_dir
from ltr_bench.folds import Fold, Split
from ltr_bench.ranker import apply_run_settings, query_boundaries

__all__ = ["LoggingRankerError", "logged_rankings", "simulate_clicks", "verify_entry"]

_PARTS = ("train", "vali")
_ARRAYS = ("rows", "y", "position", "propensity")


def _rng(seed: int, fold: int, part: int) -> np.random.Generator:
    return np.random.default_rng(
        np.random.SeedSequence([int(seed) & 0xFFFFFFFF, int(fold), 32, part])
    )


def _fit_logging_ranker(train: Split, config: dict, seed: int, fold: int):
    from ltr_bench import registry

    b = query_boundaries(train.qid)
    n_queries = b.size - 1
    wanted = max(math.ceil(config["logging_fraction"] * n_queries), MIN_LOGGING_QUERIES)
    chosen = np.sort(
        _rng(seed, fold, 0).choice(n_queries, size=min(n_queries, wanted), replace=False)
    )
    rows = np.concatenate([np.arange(b[q], b[q + 1]) for q in chosen])
    spec = config["logging_ranker"]
    ranker = registry.make_ranker(spec["name"], spec["params"])
    apply_run_settings(ranker, seed=int(seed), threads=1, query_dim=None)
    try:
        ranker.fit(
            np.asarray(train.X[rows]), np.asarray(train.y[rows]), qid=np.asarray(train.qid[rows])
        )
    except Exception as exc:  # noqa: BLE001 - named: the cell's own ranker did not fail
        raise LoggingRankerError(
            f"logging_ranker {spec['name']!r} failed to fit on {chosen.size} training "
            f"queries: {type(exc).__name__}: {exc}"
        ) from exc
    return ranker, int(chosen.size)


class LoggingRankerError(RuntimeError):
    """The logging ranker failed (its fit raised, or it scored a document NaN or infinite):
    no click log can be simulated; the message names it, not the cell's ranker."""


def _logged_scores(ranker, split: Split, name: str) -> np.ndarray:
    """The logging ranker's scores of ``split``; refused unless every one is finite (a NaN
    would put documents in an arbitrary order and the clicks would silently follow it)."""
    try:
        scores = np.asarray(
            ranker.predict(np.asarray(split.X), qid=np.asarray(split.qid)), dtype=np.float64
        )
    except Exception as exc:  # noqa: BLE001
        raise LoggingRankerError(
            f"logging_ranker {name!r} failed to score split {split.name!r}: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    bad = ~np.isfinite(scores)
    if scores.shape != (len(split.qid),) or bad.any():
        raise LoggingRankerError(
            f"logging_ranker {name!r} gave {int(bad.sum())} of {scores.size} documents of split "
            f"{split.name!r} a score that is not a finite number (shape {scores.shape}); the "
            "logged rankings would be arbitrary. Choose another logging_ranker."
        )
    return scores


def logged_rankings(scores: np.ndarray, qid: np.ndarray, top_k: int):
    """``(rows, block, rank)`` of the shown documents: row index, query block index and
    0-based shown rank, ordered by block then rank. Each query's rows are sorted by score,
    highest first (ties: the rows' order), and the first ``top_k`` (0: all) are shown."""
    b = query_boundaries(qid)
    block = np.repeat(np.arange(b.size - 1), np.diff(b))
    order = np.lexsort((-np.asarray(scores, dtype=np.float64), block))
    rank = np.arange(order.size) - b[block[order]]
    shown = rank < top_k if top_k > 0 else np.ones(order.size, dtype=bool)
    return order[shown], block[order][shown], rank[shown]


def _click_split(split: Split, ranker, model, config, rng, max_label: int) -> dict[str, np.ndarray]:
    scores = _logged_scores(ranker, split, config["logging_ranker"]["name"])
    rows, block, rank = logged_rankings(scores, split.qid, int(config["top_k"]))
    n_blocks = int(block.max()) + 1 if block.size else 0
    width = int(rank.max()) + 1 if rank.size else 1
    y = np.full((n_blocks, width), -1, dtype=np.int64)
    y[block, rank] = np.asarray(split.y)[rows]
    shown_rows = np.full((n_blocks, width), -1, dtype=np.int64)
    shown_rows[block, rank] = rows
    X = split.X

    def features(q: int) -> np.ndarray:
        r = shown_rows[q]
        return np.asarray(X[r[r >= 0]], dtype=np.float64)

    lists = ShownLists(y=y, max_label=max_label, features=features)
    _check_memory(int(config["sessions"]), y.shape, split.name)
    clicks = model.sample(lists, rng, int(config["sessions"]))
    counts = clicks.sum(axis=0)
    labels = counts if config["aggregate"] == "count" else (counts > 0).astype(np.int64)
    exam = model.examination(lists)
    propensity = np.full(y.shape, np.nan) if exam is None else exam
    keep = np.argsort(rows, kind="stable")  # back to the file's row order
    return {
        "rows": rows[keep].astype(np.int64),
        "y": labels[block, rank][keep].astype(np.int64),
        "position": (rank + 1)[keep].astype(np.int64),
        "propensity": propensity[block, rank][keep].astype(np.float64),
        "clicks": counts[block, rank][keep].astype(np.int64),  # estimates only, not cached
    }


def _check_memory(sessions: int, shape: tuple[int, int], split: str) -> None:
    """Refuse, with the sizes, a simulation whose sessions cannot fit in memory: a model
    samples every session at once, a uniform draw (8 bytes) and a click (1 byte) per session,
    query and shown position."""
    import psutil

    need = 9 * sessions * shape[0] * shape[1]
    have = psutil.virtual_memory().available
    if need > have:
        raise MemoryError(
            f"sessions={sessions}: simulating {sessions} sessions of the {shape[0]} shown lists "
            f"(up to {shape[1]} documents) of split {split!r} needs about {need / 2**30:.1f} GiB; "
            f"this machine has {have / 2**30:.1f} GiB available. Use fewer sessions (or a "
            "smaller top_k)."
        )


def _digest(arrays: dict) -> str:
    h = hashlib.sha256()
    for name in sorted(arrays):
        h.update(name.encode())
        h.update(np.ascontiguousarray(arrays[name]).tobytes())
    return h.hexdigest()


def _verify(arrays: dict, meta: dict) -> str | None:
    return None if _digest(arrays) == meta.get("digest") else "its arrays changed after writing"


#: what is wrong with a click-log cache entry (None: sound); ``ltr-bench cache verify`` uses it
verify_entry = _verify


def simulate_clicks(fold: Fold, config: dict, *, seed: int, cache_dir=None, estimates=()) -> Fold:
    """``fold`` with click labels on train and vali (see the module docstring); test unchanged.

    ``config`` is :func:`~ltr_bench.clicks.options.resolve_click_options`' result. Cached: a
    second call with the same fold, configuration and seed reads the entry (its arrays are
    checked against the digest recorded when it was written). ``estimates``: propensity
    estimators (:data:`~ltr_bench.clicks.propensities.ESTIMATORS`) whose estimates the
    training split also carries, per row, as ``propensity_<method>`` in its extras
    (:mod:`ltr_bench.clicks.propensities`; cached the same way).
    """
    parts = {"train": fold.train, "vali": fold.vali}
    key_parts = {
        "kind": "clicks",
        "config": config,
        "seed": int(seed),
        "fold": int(fold.index),
        "max_label": int(fold.max_label),
        "sources": {p: (s.fingerprint if s is not None else None) for p, s in parts.items()},
    }
    key = cache_key(key_parts)

    def build(writer):
        model = build_click_model(config["model"])
        ranker, n_logging = _fit_logging_ranker(fold.train, config, seed, fold.index)
        out = {}
        counts = None
        for i, part in enumerate(_PARTS, start=1):
            if parts[part] is None:
                continue
            arrays = _click_split(
                parts[part], ranker, model, config, _rng(seed, fold.index, i), fold.max_label
            )
            clicks = arrays.pop("clicks")
            counts = clicks if part == "train" else counts
            for name, arr in arrays.items():
                writer.save(f"{part}_{name}", arr)
                out[f"{part}_{name}"] = arr
        return {
            "digest": _digest(out),
            "logging_queries": n_logging,
            "config": config,
            "propensity_estimates": _estimates(fold, out, counts, config, model, seed),
        }

    cache = resolve_cache_dir(cache_dir)
    loaded = load_entry(cache, "clicks", key, verify=_verify)
    if loaded is None:
        try:
            loaded = write_entry(cache, "clicks", key, build)
        except OSError as exc:
            warnings.warn(
                f"{cache}: cannot write the click-log cache ({exc}); the clicks are simulated "
                "in memory. Set LTR_BENCH_CACHE to a writable folder.",
                DataWarning,
                stacklevel=2,
            )
            loaded = _in_memory(build)
    arrays, meta = loaded
    log_estimates = meta.get("propensity_estimates")
    if log_estimates is None:  # an entry written before the estimates were kept with it
        counts = arrays["train_y"] if config["aggregate"] == "count" else None
        model = build_click_model(config["model"])
        log_estimates = _estimates(fold, arrays, counts, config, model, seed)
    new: dict[str, Split | None] = {}
    for part in _PARTS:
        split = parts[part]
        if split is None:
            new[part] = None
            continue
        rows = arrays[f"{part}_rows"]
        new[part] = Split(
            name=split.name,
            X=np.ascontiguousarray(split.X[rows], dtype=np.float64),
            y=np.array(arrays[f"{part}_y"]),
            qid=np.ascontiguousarray(split.qid[rows], dtype=np.int64),
            extras={
                **{k: v[rows] for k, v in split.extras.items()},
                "position": np.array(arrays[f"{part}_position"]),
                "propensity": np.array(arrays[f"{part}_propensity"]),
            },
        )
    train = new["train"]
    assert train is not None  # a fold always has a training split
    for method in dict.fromkeys(estimates):
        from ltr_bench.clicks import propensities

        curve = _estimated_curve(
            fold.train,
            train,
            config,
            method,
            key_parts=key_parts,
            seed=seed,
            fold=fold.index,
            max_label=fold.max_label,
            cache=cache,
        )
        position = train.extras["position"]
        train.extras[propensities.extra_name(method)] = propensities.rows_propensity(
            curve, position
        )
    return Fold(
        dataset=fold.dataset,
        index=fold.index,
        train=train,
        test=fold.test,  # true relevance: never replaced by clicks
        vali=new["vali"],
        max_label=fold.max_label,
        query_dim=fold.query_dim,
        load_seconds=fold.load_seconds,
        info={
            **fold.info,
            "click_log": {
                "logging_queries": meta.get("logging_queries"),
                "propensity_estimates": log_estimates,
            },
        },
    )


def _estimates(fold: Fold, arrays: dict, counts, config: dict, model, seed: int) -> dict:
    """The log's examination curve by result randomisation and by regression EM
    (:func:`ltr_bench.clicks.estimation.estimate_log_propensities`); ``counts``: the
    training rows' click counts (None: not at hand, EM is left out with the reason)."""
    from ltr_bench.clicks.estimation import estimate_log_propensities

    rows = arrays["train_rows"]
    source = fold.train
    out = estimate_log_propensities(
        np.asarray(source.X[rows]),
        np.asarray(source.qid[rows]),
        arrays["train_position"],
        np.zeros(rows.size) if counts is None else counts,
        source_y=np.asarray(source.y),
        source_qid=np.asarray(source.qid),
        sessions=int(config["sessions"]),
        model=model,
        max_label=int(fold.max_label),
        top_k=int(config["top_k"]),
        rng=_rng(seed, fold.index, 3),
    )
    if counts is None:
        out.pop("regression_em", None)
        out.setdefault("unavailable", {})["regression_em"] = (
            "the click counts of a log cached with aggregate=any before they were kept"
        )
    return out


def _in_memory(build) -> tuple[dict, dict]:
    class _Writer:
        def __init__(self):
            self.arrays = {}

        def save(self, name, arr):
            self.arrays[name] = np.asarray(arr)

    w = _Writer()
    meta = build(w)
    return w.arrays, meta


def _estimated_curve(
    raw_train, clicked_train, config: dict, method: str, *, key_parts, seed, fold, max_label, cache
) -> np.ndarray:
    """:func:`~ltr_bench.clicks.propensities.estimate_curve`, cleaned, from the click-log
    cache when an entry for the same log (``key_parts``: the log's own key parts), method and
    estimator spec exists; else computed and written there (in memory when the cache cannot
    be written)."""
    from ltr_bench.clicks import propensities

    key = cache_key(
        {
            **key_parts,
            "kind": "propensity-estimate",
            "estimator": propensities.estimator_spec(method),
        }
    )

    def build(writer):
        rng = _rng(seed, fold, 3 + propensities.ESTIMATORS.index(method))
        curve = propensities.clean_curve(
            propensities.estimate_curve(
                raw_train, clicked_train, config, method, max_label=max_label, rng=rng
            )
        )
        writer.save("curve", curve)
        return {"digest": _digest({"curve": curve}), "method": method}

    loaded = load_entry(cache, "clicks", key, verify=_verify)
    if loaded is None:
        try:
            loaded = write_entry(cache, "clicks", key, build)
        except OSError:  # the log itself already warned that the cache is not writable
            loaded = _in_memory(build)
    return np.array(loaded[0]["curve"], dtype=np.float64)

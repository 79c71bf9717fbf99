"""Generated datasets: LETOR-like ``synthetic`` data and the L-GMML paper's Gaussian classes.

``synthetic`` (deterministic from ``seed``)
-------------------------------------------
A pool of ``n_queries`` queries; query ``i`` has ``n_i = max(1, round(docs_per_query * G_i))``
documents with ``G_i ~ Gamma(shape 2, scale 1/2)`` (mean 1, so the mean is about
``docs_per_query``; single-document queries can occur, as in real data). For a document of query
``i``::

    x = m_i + z,      m_i ~ N(0, 0.5^2 I) (query shift), z ~ N(0, I)   (p features)
    g(x) = sum_h a_h tanh(w_h . x_S + c_h) + sum_(j,l) b_jl x_j x_l  (x_S: informative features)
    s = (g(x) - mean g) / sd g  +  u_i  +  label_noise * e,   u_i ~ N(0, 0.5^2), e ~ N(0, 1)
    label = number of thresholds t_1 < ... < t_4 below s

Option ``feature_distribution``: ``"normal"`` (default) stores ``x`` as above;
``"lognormal"`` stores ``exp(x)`` instead (labels still come from ``x``), so every feature is
positive and heavy-tailed like MSLR-WEB30K's raw counts and BM25 scores (skewness about 6 for
a query-shift sd of 0.5), while the informative structure is the same monotone signal.

``S`` is a random subset of ``n_informative`` feature positions; the other
``n_features - n_informative`` features are pure noise with the same marginal distribution
(the L-GMML paper's point is robustness to such features). The hidden network has
``2 * n_informative`` tanh units and ``n_informative // 2`` pairwise products. The mean and sd
of ``g`` and the thresholds come from a 50,000-document pilot sample of the same process (its
own random stream), the thresholds placed at the cumulative label frequencies of MSLR-WEB30K:
0: 52%, 1: 32%, 2: 13%, 3: 2%, 4: 1% (:data:`LABEL_FREQUENCIES`). ``u_i`` makes some queries
richer in relevant documents than others; ``label_noise`` keeps the best NDCG below 1.

Folds. The pool is cut into 5 contiguous parts of queries T1..T5; fold k uses the LETOR 3.0
rotation (as in the shared OHSUMED data): test = Tk, vali = T(k-1), train = T(k+1), T(k+2),
T(k+3) (cyclic). Query ids are the pool index + 1, so folds share queries as real LETOR folds do.

Determinism and scale. Every random draw comes from ``SeedSequence([seed, stream, ...])``:
stream 1 the hidden function, 2 the documents (one stream per (part, block of 512 queries)),
3 the query sizes, 4 the pilot. A part is generated block by block, so memory stays at one
block plus the output arrays, and data larger than :data:`CACHE_MIN_CELLS` values is
generated straight into memory-mapped cache files (keyed by options + seed + fold), so an
MSLR-WEB30K-sized fold (31,531 queries x 120 docs, 136 features: 2.27M training rows)
is generated once and reloaded in milliseconds.

``gauss-10/50/100`` (Su, King & Lyu 2017, Section 4.3.1)
------------------------------------------------------
The paper: "We employ the normal distribution to generate synthetic datasets with multiple
centers and 95% confidence interval. The datasets with {10,50,100} classes are denoted as
Synthetic-10, Synthetic-50, Synthetic-100 ... we assign the index of class to the relevant
label of the corresponding data point", evaluated by MAP against the number of local metrics
(best when it is close to the number of centers). Our reading, stated because the paper gives
no more detail:

- the number in the name is the number of classes (the paper's words), not the dimension;
  the dimension is the option ``n_features`` (default 10);
- centers ``mu_c ~ Uniform[-1, 1]^d``; points ``mu_c + sigma * N(0, I)`` with sigma set so that
  the 95% probability ball of each class (radius ``sigma * sqrt(chi2_d.ppf(0.95))``) has
  radius ``overlap * (smallest distance between two centers) / 2``: with ``overlap = 1`` the
  95% regions of the two closest classes just touch;
- ``n_per_class`` points per class (defaults 30 / 10 / 5, so 300 / 500 / 500 points);
- "class index = relevance label" is read as query-by-example retrieval, the setting in which
  MAP measures a multi-class metric: every point is a query, relevant = same class, with the
  same rows and splits as ``wine``/``wdbc`` (:mod:`ltr_bench.data.qbe`); the class indices are
  in ``extras["query_class"]``/``["doc_class"]``. (Using the class index itself as a graded
  label would make 99 of 100 classes "relevant" for MAP, which measures nothing.)
"""

from __future__ import annotations

import numpy as np

from ltr_bench.data.cache import cache_key, load_entry, write_entry
from ltr_bench.folds import Fold, Split, fingerprint_arrays

__all__ = [
    "CACHE_MIN_CELLS",
    "LABEL_FREQUENCIES",
    "gauss_fold",
    "gauss_points",
    "synthetic_fold",
    "synthetic_informative_features",
    "synthetic_query_sizes",
]

LABEL_FREQUENCIES = (0.52, 0.32, 0.13, 0.02, 0.01)
#: Generated data with at least this many feature values (docs x features) is cached.
CACHE_MIN_CELLS = 4_000_000
_BLOCK_QUERIES = 512
_PILOT_DOCS = 50_000
_GEN_VERSION = 1
#: values of the ``synthetic`` option ``feature_distribution`` (see the module docstring)
FEATURE_DISTRIBUTIONS = ("normal", "lognormal")
_SPLIT_PARTS = {  # fold k (1-based) -> parts (1-based) of test, vali, train
    k: {"test": [k], "vali": [(k - 2) % 5 + 1], "train": [(k + j - 1) % 5 + 1 for j in (1, 2, 3)]}
    for k in range(1, 6)
}


def _rng(seed: int, *stream: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([int(seed), *stream]))


def _check_synthetic(opts: dict) -> None:
    from ltr_bench.data.errors import DatasetOptionError as DataError

    if opts["n_queries"] < 5:
        raise DataError(
            f"synthetic: n_queries={opts['n_queries']} is too small; the 5 folds "
            "need at least 5 queries."
        )
    if opts["docs_per_query"] < 1:
        raise DataError("synthetic: docs_per_query must be at least 1.")
    if not 1 <= opts["n_informative"] <= opts["n_features"]:
        raise DataError(
            f"synthetic: n_informative={opts['n_informative']} must be between 1 "
            f"and n_features={opts['n_features']}."
        )
    if not opts["label_noise"] >= 0:  # also False for NaN
        raise DataError("synthetic: label_noise must be a number >= 0.")
    if opts.get("feature_distribution", "normal") not in FEATURE_DISTRIBUTIONS:
        raise DataError(
            f"synthetic: feature_distribution={opts['feature_distribution']!r} "
            f"must be one of {list(FEATURE_DISTRIBUTIONS)}."
        )


def estimated_bytes(name: str, opts: dict) -> int:
    """Memory of one generated fold before anything is drawn: ``synthetic`` holds about
    ``n_queries * docs_per_query`` rows (query sizes are ``docs_per_query`` times a
    Gamma(2, 0.5) draw of mean 1) of ``n_features`` float64 values plus two int64 columns;
    ``gauss-*`` ranks every point against every other (``(n_classes * n_per_class)^2``
    rows of ``2 * n_features + noise_features`` float64 values)."""
    if name == "synthetic":
        rows = int(opts["n_queries"]) * int(opts["docs_per_query"])
        return rows * (8 * int(opts["n_features"]) + 16)
    if name.startswith("gauss-"):
        n = int(opts["n_classes"]) * int(opts["n_per_class"])
        cols = 2 * int(opts["n_features"]) + int(opts.get("noise_features", 0))
        return n * n * (8 * cols + 16)
    return 0


def check_generated_options(name: str, opts: dict) -> None:
    """Every option of a generated or query-by-example dataset checked before any data is
    made: numbers finite and in range, and the fold's estimated memory
    (:func:`estimated_bytes`) within what this machine has available. Raises
    :class:`~ltr_bench.data.errors.DatasetOptionError` (exit 2) naming the option."""
    import math

    from ltr_bench.data.errors import DatasetOptionError

    for key, value in opts.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise DatasetOptionError(f"{name}: option {key}={value!r} must be a finite number.")
    if name == "synthetic":
        _check_synthetic(opts)
    if "test_size" in opts and not 0 < opts["test_size"] < 1:
        raise DatasetOptionError(f"{name}: test_size={opts['test_size']!r} must be in (0, 1).")
    if "n_folds" in opts and not 2 <= opts["n_folds"] <= 1000:
        raise DatasetOptionError(f"{name}: n_folds={opts['n_folds']!r} must be in [2, 1000].")
    if opts.get("noise_features", 0) < 0:
        raise DatasetOptionError(f"{name}: noise_features must be >= 0.")
    if name.startswith("gauss-"):
        c, m, d = int(opts["n_classes"]), int(opts["n_per_class"]), int(opts["n_features"])
        if c < 2 or m < 2 or d < 1:
            raise DatasetOptionError(
                f"{name}: need n_classes >= 2, n_per_class >= 2 and n_features >= 1, "
                f"got {c}, {m}, {d}."
            )
        if not opts["overlap"] > 0:
            raise DatasetOptionError(f"{name}: overlap must be > 0.")
    need = estimated_bytes(name, opts)
    if need:
        import psutil

        have = psutil.virtual_memory().available
        if need > have:
            raise DatasetOptionError(
                f"{name}: these options make a fold of about {need / 2**30:.1f} GiB "
                f"({_options_text(opts)}); this machine has {have / 2**30:.1f} GiB "
                "available. Choose smaller sizes."
            )


def _options_text(opts: dict) -> str:
    keys = ("n_queries", "docs_per_query", "n_features", "n_classes", "n_per_class")
    return ", ".join(f"{k}={opts[k]}" for k in keys if k in opts)


def synthetic_query_sizes(opts: dict, seed: int) -> np.ndarray:
    """Documents per query of the whole pool, int64 (n_queries,)."""
    g = _rng(seed, 3).gamma(2.0, 0.5, size=int(opts["n_queries"]))
    return np.maximum(1, np.rint(opts["docs_per_query"] * g)).astype(np.int64)


class _Model:
    """The hidden relevance function and label thresholds of one (options, seed)."""

    def __init__(self, opts: dict, seed: int):
        p, k = int(opts["n_features"]), int(opts["n_informative"])
        rng = _rng(seed, 1)
        self.p, self.noise = p, float(opts["label_noise"])
        self.lognormal = opts.get("feature_distribution", "normal") == "lognormal"
        self.informative = np.sort(rng.choice(p, size=k, replace=False))
        h = 2 * k
        self.W = rng.standard_normal((k, h)) * (1.5 / np.sqrt(k))
        self.c = rng.standard_normal(h) * 0.5
        self.a = rng.standard_normal(h)
        n_pairs = k // 2
        self.pairs = (
            rng.choice(k, size=(n_pairs, 2), replace=True)
            if n_pairs
            else np.zeros((0, 2), dtype=np.int64)
        )
        self.b = rng.standard_normal(n_pairs) * 0.5
        self.g_mean, self.g_sd = 0.0, 1.0
        prng = _rng(seed, 4)
        n_q = max(1, _PILOT_DOCS // 50)
        sizes = np.full(n_q, _PILOT_DOCS // n_q)
        x, u = self.draw(prng, sizes)
        g = self.g(x)
        self.g_mean, self.g_sd = float(g.mean()), float(g.std() or 1.0)
        s = self.score(x, u, prng)
        self.thresholds = np.quantile(s, np.cumsum(LABEL_FREQUENCIES)[:-1])

    def draw(self, rng, sizes: np.ndarray):
        """Features of queries with ``sizes`` documents, and each row's query offset u_i."""
        n = int(sizes.sum())
        shift = rng.normal(0.0, 0.5, size=(sizes.size, self.p))
        u = rng.normal(0.0, 0.5, size=sizes.size)
        x = rng.standard_normal((n, self.p))
        x += np.repeat(shift, sizes, axis=0)
        return x, np.repeat(u, sizes)

    def g(self, x: np.ndarray) -> np.ndarray:
        xs = x[:, self.informative]
        out = np.tanh(xs @ self.W + self.c) @ self.a
        if self.b.size:
            out += (xs[:, self.pairs[:, 0]] * xs[:, self.pairs[:, 1]]) @ self.b
        return out

    def score(self, x, u, rng) -> np.ndarray:
        e = rng.standard_normal(x.shape[0])
        return (self.g(x) - self.g_mean) / self.g_sd + u + self.noise * e

    def labels(self, x, u, rng) -> np.ndarray:
        return np.searchsorted(self.thresholds, self.score(x, u, rng)).astype(np.int64)


def synthetic_informative_features(opts: dict, seed: int) -> np.ndarray:
    """0-based column indices of the informative features (the rest are pure noise)."""
    return _Model(opts, seed).informative.copy()


def _part_bounds(n_queries: int) -> list[tuple[int, int]]:
    cuts = [round(j * n_queries / 5) for j in range(6)]
    return [(cuts[j], cuts[j + 1]) for j in range(5)]


def _fill_part(
    model: _Model,
    seed: int,
    part: int,
    q_lo: int,
    q_hi: int,
    sizes: np.ndarray,
    X,
    y,
    qid,
    row0: int,
    on_rows=None,
) -> int:
    """Generate queries ``q_lo..q_hi-1`` (part ``part``) into rows starting at ``row0``."""
    r = row0
    for b, start in enumerate(range(q_lo, q_hi, _BLOCK_QUERIES)):
        stop = min(q_hi, start + _BLOCK_QUERIES)
        rng = _rng(seed, 2, part, b)
        sz = sizes[start:stop]
        x, u = model.draw(rng, sz)
        n = x.shape[0]
        y[r : r + n] = model.labels(x, u, rng)
        X[r : r + n] = np.exp(x) if model.lognormal else x
        qid[r : r + n] = np.repeat(np.arange(start + 1, stop + 1, dtype=np.int64), sz)
        r += n
        if on_rows is not None:
            on_rows(n)
    return r


def synthetic_fold(opts: dict, seed: int, fold: int, *, cache_dir=None, progress=None) -> Fold:
    """Fold ``fold`` (1..5) of the ``synthetic`` dataset with options ``opts`` (all keys set)."""
    _check_synthetic(opts)
    sizes = synthetic_query_sizes(opts, seed)
    bounds = _part_bounds(int(opts["n_queries"]))
    parts = _SPLIT_PARTS[fold]
    p = int(opts["n_features"])
    split_rows = {
        s: int(sum(sizes[bounds[j - 1][0] : bounds[j - 1][1]].sum() for j in parts[s]))
        for s in ("train", "vali", "test")
    }
    total = sum(split_rows.values())
    done = [0]

    def on_rows(n):
        done[0] += n
        if progress is not None:
            progress(done[0], total, f"generating synthetic fold {fold}")

    def generate(alloc):
        model = _Model(opts, seed)
        out = {}
        for split in ("train", "vali", "test"):
            n = split_rows[split]
            X, y, qid = alloc(split, n)
            r = 0
            for j in parts[split]:
                lo, hi = bounds[j - 1]
                r = _fill_part(model, seed, j, lo, hi, sizes, X, y, qid, r, on_rows)
            out[split] = (X, y, qid)
        return out

    def make_fold(arrays, fps=None):
        splits = {}
        for s in ("train", "vali", "test"):
            X, y, qid = arrays[s]
            splits[s] = Split(
                name=s, X=X, y=y, qid=qid, _fingerprint=None if fps is None else fps[s]
            )
        return Fold(
            dataset="synthetic",
            index=fold,
            train=splits["train"],
            vali=splits["vali"],
            test=splits["test"],
            max_label=4,
        )

    if total * p < CACHE_MIN_CELLS or cache_dir is None:
        arrays = generate(
            lambda s, n: (np.empty((n, p)), np.empty(n, np.int64), np.empty(n, np.int64))
        )
        return make_fold(arrays)

    # the default distribution stays out of the key so caches made before the option existed
    # are still found
    key_opts = {
        k: v for k, v in opts.items() if not (k == "feature_distribution" and v == "normal")
    }
    key = cache_key(
        {
            "kind": "synthetic",
            "gen": _GEN_VERSION,
            "options": key_opts,
            "seed": int(seed),
            "fold": int(fold),
        }
    )

    def verify(arrays, meta):
        for s in ("train", "vali", "test"):
            fp = fingerprint_arrays(arrays[f"{s}_X"], arrays[f"{s}_y"], arrays[f"{s}_qid"])
            if fp != (meta.get("fingerprints") or {}).get(s):
                return f"the {s} arrays no longer have the fingerprint recorded with them"
        return None

    loaded = load_entry(cache_dir, "generated", key, verify=verify)
    if loaded is None:

        def build(writer):
            arrays = generate(
                lambda s, n: (
                    writer.open_map(f"{s}_X", np.float64, (n, p)),
                    writer.open_map(f"{s}_y", np.int64, (n,)),
                    writer.open_map(f"{s}_qid", np.int64, (n,)),
                )
            )
            fps = {}
            for s, (X, y, qid) in arrays.items():
                for a in (X, y, qid):
                    if isinstance(a, np.memmap):
                        a.flush()
                fps[s] = fingerprint_arrays(X, y, qid)
            return {"fingerprints": fps, "options": opts, "seed": int(seed), "fold": fold}

        loaded = write_entry(cache_dir, "generated", key, build)
    arrays, meta = loaded
    return make_fold(
        {
            s: (arrays[f"{s}_X"], arrays[f"{s}_y"], arrays[f"{s}_qid"])
            for s in ("train", "vali", "test")
        },
        meta.get("fingerprints"),
    )


def gauss_points(opts: dict, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(X, classes)``: ``n_classes * n_per_class`` points of the Gaussian class data."""
    from scipy.spatial.distance import pdist
    from scipy.stats import chi2

    from ltr_bench.data.errors import DataError

    c, m, d = int(opts["n_classes"]), int(opts["n_per_class"]), int(opts["n_features"])
    if c < 2 or m < 2 or d < 1:
        raise DataError(
            f"gauss: need n_classes >= 2, n_per_class >= 2 and n_features >= 1, got {c}, {m}, {d}."
        )
    rng = _rng(seed, 5)
    centers = rng.uniform(-1.0, 1.0, size=(c, d))
    dmin = float(pdist(centers).min())
    sigma = float(opts["overlap"]) * (dmin / 2.0) / np.sqrt(chi2.ppf(0.95, d))
    classes = np.repeat(np.arange(c, dtype=np.int64), m)
    X = centers[classes] + sigma * rng.standard_normal((c * m, d))
    return X, classes


def gauss_fold(name: str, opts: dict, seed: int, fold: int) -> Fold:
    """Fold ``fold`` of ``gauss-*``: query-by-example rows over the Gaussian class points."""
    from ltr_bench.data.qbe import qbe_fold

    X, classes = gauss_points(opts, seed)
    return qbe_fold(
        name,
        X,
        classes,
        fold,
        seed=seed,
        test_size=float(opts["test_size"]),
        noise_features=int(opts["noise_features"]),
    )

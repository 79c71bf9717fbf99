"""Tiny fake rankers for harness / CLI / tracking tests, registered like a real plugin.

:func:`install` writes an installed-looking distribution ``ltrb-fakes`` whose entry points
(group ``ltr_bench.rankers``) point at the classes below, so the harness reaches them through
the same registry code path as any plugin. Module-level state lets tests count and break fits.
"""

from __future__ import annotations

import importlib

import numpy as np

from ltr_bench.progress import report_progress
from ltr_bench.ranker import BaseRanker, RankerTags, check_ranking_input

ENTRY_POINTS = {
    "fake-linear": "ltrb_fake_rankers:LinearRanker",
    "fake-other": "ltrb_fake_rankers:OtherLinearRanker",
    "fake-failing": "ltrb_fake_rankers:FailingRanker",
    "fake-qbe": "ltrb_fake_rankers:QueryDimRanker",
    "fake-constant": "ltrb_fake_rankers:ConstantRanker",
    "fake-mutating": "ltrb_fake_rankers:MutatingRanker",
    "fake-curves": "ltrb_fake_rankers:CurveRanker",
    "fake-bad-curves": "ltrb_fake_rankers:BadCurveRanker",
    "fake-file": "ltrb_fake_rankers:FileRanker",
    "fake-broken": "ltrb_fake_rankers_missing_module:Nothing",
}

#: every fit: (ranker class name, train fingerprint-ish tuple, random_state, eval_set given)
FITS: list[dict] = []
#: raise KeyboardInterrupt at this (1-based) fit call, counted over all fake rankers
INTERRUPT_AT_FIT: int | None = None


def reset() -> None:
    global INTERRUPT_AT_FIT
    FITS.clear()
    INTERRUPT_AT_FIT = None


def install(root) -> None:
    """Write the ``ltrb-fakes`` dist-info under ``root`` (which must be on sys.path)."""
    info = root / "ltrb_fakes-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ltrb-fakes\nVersion: 0.1\n")
    lines = "".join(f"{name} = {target}\n" for name, target in ENTRY_POINTS.items())
    (info / "entry_points.txt").write_text(f"[ltr_bench.rankers]\n{lines}")
    importlib.invalidate_caches()


def use_workdir(work, mp) -> None:
    """Make ``work`` the working directory of a CLI test through the monkeypatch ``mp``:
    the fakes installed in ``work/plugins`` (on sys.path), the default MLflow store and a
    parsed-data cache of its own under ``work``, the fakes' records cleared."""
    plugins = work / "plugins"
    plugins.mkdir()
    mp.syspath_prepend(str(plugins))
    mp.chdir(work)
    mp.delenv("MLFLOW_TRACKING_URI", raising=False)
    mp.setenv("LTR_BENCH_CACHE", str(work / "cache"))
    install(plugins)
    reset()


class LinearRanker(BaseRanker):
    """score = X @ w with w ~ N(0, 1) drawn from ``random_state`` (learns nothing)."""

    def __init__(self, random_state=None, n_jobs=None, scale=1.0):
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.scale = scale

    def ranker_tags(self) -> RankerTags:
        return RankerTags(uses_eval_set=True, thread_param="n_jobs", seed_param="random_state")

    def fit(self, X, y, *, qid, eval_set=None):
        X, y, qid = check_ranking_input(X, y, qid)
        FITS.append(
            {
                "ranker": type(self).__name__,
                "n": X.shape[0],
                "sum": float(np.sum(X)),
                "random_state": self.random_state,
                "n_jobs": self.n_jobs,
                "eval_set": eval_set is not None,
                "params": self.get_params(),
            }
        )
        if INTERRUPT_AT_FIT is not None and len(FITS) == INTERRUPT_AT_FIT:
            raise KeyboardInterrupt
        for i in range(3):
            report_progress(i + 1, 3, "fake round")
        rng = np.random.default_rng(self.random_state)
        self.w_ = rng.normal(size=X.shape[1]) * float(self.scale)
        return self

    def predict(self, X, *, qid=None):
        self._check_fitted("w_")
        return np.asarray(X, dtype=np.float64) @ self.w_


class ConstantRanker(LinearRanker):
    """Scores every document 0 (a model that learned nothing)."""

    def predict(self, X, *, qid=None):
        return np.zeros(len(X))


class MutatingRanker(LinearRanker):
    """Breaks the contract: scales the caller's training matrix in place."""

    def fit(self, X, y, *, qid, eval_set=None):
        FITS.append({"ranker": type(self).__name__, "n": len(y)})
        X *= 2.0
        return super().fit(X, y, qid=qid, eval_set=eval_set)


class OtherLinearRanker(LinearRanker):
    """A second ranker (different name) to compare splits across rankers."""


class FailingRanker(LinearRanker):
    """Raises in fit (message checked by tests)."""

    def fit(self, X, y, *, qid, eval_set=None):
        FITS.append({"ranker": type(self).__name__, "n": len(y)})
        raise ValueError("fake failure: this ranker always breaks")


class QueryDimRanker(LinearRanker):
    """Declares a query-dimension parameter (set by the harness on query-by-example data) and
    reports what it was given through ``fitted_info``."""

    def __init__(self, random_state=None, n_jobs=None, scale=1.0, query_dim=None):
        super().__init__(random_state=random_state, n_jobs=n_jobs, scale=scale)
        self.query_dim = query_dim

    def ranker_tags(self) -> RankerTags:
        return RankerTags(
            uses_eval_set=False,
            thread_param="n_jobs",
            seed_param="random_state",
            query_dim_param="query_dim",
        )

    def fitted_info(self) -> dict:
        return {"query_dim_seen": self.query_dim}


class CurveRanker(LinearRanker):
    """Trains in ``n_iter`` steps towards the random direction ``w`` (iteration i scores with
    ``w * i / n_iter``) and records learning curves: the training mean squared error of the
    scores against the labels and the validation NDCG@10 after each iteration."""

    def __init__(self, random_state=None, n_jobs=None, scale=1.0, n_iter=5):
        super().__init__(random_state=random_state, n_jobs=n_jobs, scale=scale)
        self.n_iter = n_iter

    def fit(self, X, y, *, qid, eval_set=None):
        from ltr_bench.evaluation.metrics import evaluate

        super().fit(X, y, qid=qid, eval_set=eval_set)
        w = self.w_
        self.curves_ = {"train_loss": [], "vali_ndcg@10": []}
        for i in range(1, self.n_iter + 1):
            wi = w * (i / self.n_iter)
            self.curves_["train_loss"].append(float(np.mean((X @ wi - y) ** 2)))
            if eval_set is not None:
                Xv, yv, qv = eval_set
                ndcg = evaluate(yv, Xv @ wi, qv, "ndcg@10")["ndcg@10"]
                self.curves_["vali_ndcg@10"].append(float(ndcg))
        return self

    def learning_curves(self) -> dict[str, list[float]]:
        return {k: list(v) for k, v in self.curves_.items() if v}


class BadCurveRanker(LinearRanker):
    """Breaks the contract: its learning curve holds text."""

    def learning_curves(self):
        return {"train_loss": [0.5, "low"]}


class FileRanker(LinearRanker):
    """Reads its ``scale`` from the file ``scale_file`` names (declared in
    ``RankerTags.file_params``): results depend on the file's content, not its path."""

    def __init__(self, random_state=None, n_jobs=None, scale_file=None):
        super().__init__(random_state=random_state, n_jobs=n_jobs)
        self.scale_file = scale_file

    def ranker_tags(self) -> RankerTags:
        return RankerTags(
            thread_param="n_jobs", seed_param="random_state", file_params=("scale_file",)
        )

    def fit(self, X, y, *, qid, eval_set=None):
        with open(self.scale_file) as fh:
            self.scale = float(fh.read())
        return super().fit(X, y, qid=qid, eval_set=eval_set)


class EditedFileRanker(FileRanker):
    """A :class:`FileRanker` whose file is edited while it fits (as another process or an
    editor would do it): read, then rewritten with another scale."""

    def fit(self, X, y, *, qid, eval_set=None):
        super().fit(X, y, qid=qid, eval_set=eval_set)
        with open(self.scale_file, "a") as fh:
            fh.write("0\n")  # "1\n" becomes "1\n0\n": another content
        return self


class NaNScoreRanker(LinearRanker):
    """Scores every document NaN (a broken model), e.g. as a click log's logging ranker."""

    def predict(self, X, *, qid=None):
        return np.full(len(X), np.nan)


class PropensityRanker(LinearRanker):
    """Declares that it weights clicks by their true propensities (as ``neural.unbiased=ips``)."""

    def ranker_tags(self) -> RankerTags:
        import dataclasses

        return dataclasses.replace(
            super().ranker_tags(),
            accepts_position=True,
            requires_position=True,
            requires_propensity=True,
        )

    def fit(self, X, y, *, qid, eval_set=None, position=None, propensity=None):
        return super().fit(X, y, qid=qid, eval_set=eval_set)

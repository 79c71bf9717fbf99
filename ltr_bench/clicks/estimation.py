"""Estimating the examination propensities of a click log, reported against the true curve.

Position-based examination: a document shown at rank ``k`` is examined with probability
``theta_k`` and clicked when examined with probability ``gamma(q, d)`` (its relevance to the
user), so ``P(click) = theta_k gamma(q, d)``. Unbiased learning to rank needs ``theta`` only up
to a constant, so every estimate here is reported *relative to rank 1*, ``theta_k / theta_1``,
like the true curve ``(1/k)^eta`` of the position-based click model (:mod:`.models`).

Result randomisation (Joachims, Swaminathan and Schnabel, WSDM 2017; Wang et al., SIGIR 2016):
    an intervention: the top ``K`` documents of every list are shown in a uniformly random
    order, so every rank sees documents of the same average relevance ``gbar`` and the
    click-through rate at rank k is ``CTR_k = theta_k gbar``. Hence
    ``theta_k / theta_1 = CTR_k / CTR_1`` (:func:`propensity_by_randomisation`). It costs user
    experience (the shuffled lists are worse), which is why the literature looks for estimators
    from ordinary logs. :func:`randomised_log` simulates such a log with any click model.

Regression EM (Wang, Golbandi, Bendersky, Metzler and Najork, WSDM 2018):
    from the ordinary log alone. Latent per session: examined ``E ~ Bernoulli(theta_k)``,
    relevant ``R ~ Bernoulli(gamma)``, click ``C = E R``. A row shown ``n`` times with ``c``
    clicks contributes ``c`` trials with ``E = R = 1`` and ``n - c`` non-clicks, whose
    posteriors (E-step) are::

        P(E=1, R=0 | C=0) = theta (1 - gamma) / (1 - theta gamma)
        P(E=0, R=1 | C=0) = (1 - theta) gamma / (1 - theta gamma)

    M-step: ``theta_k`` = (clicks + expected examined non-clicks) / trials, over the rows at
    rank ``k``; ``gamma(x) = sigma(w . x + b)`` is refitted as a regression on the features
    (this is what makes it *regression* EM: relevance is shared across documents through
    their features, which separates it from position when every document is always shown at
    the same rank, as with a deterministic logging ranker). The regression is a
    scikit-learn ``LogisticRegression`` fitted to the expected labels: every row enters twice,
    as label 1 with weight ``c + (n - c) P(R=1 | C=0)`` and as label 0 with weight
    ``(n - c) P(R=0 | C=0)`` -- the expected log-likelihood exactly, where Wang et al. sample
    Bernoulli labels and fit a GBDT. :func:`propensity_by_regression_em`.

:func:`compare_to_truth` gives the per-rank and summary errors against the true curve.
"""

from __future__ import annotations

import numpy as np

from ltr_bench.clicks.models import ClickModel, ShownLists
from ltr_bench.ranker import query_boundaries

__all__ = [
    "compare_to_truth",
    "estimate_log_propensities",
    "propensity_by_randomisation",
    "propensity_by_regression_em",
    "randomised_log",
]


def _check(position, clicks, shown) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    pos = np.asarray(position, dtype=np.int64)
    c = np.asarray(clicks, dtype=np.float64)
    n = np.broadcast_to(np.asarray(shown, dtype=np.float64), pos.shape).astype(np.float64)
    if pos.ndim != 1 or c.shape != pos.shape:
        raise ValueError(
            f"position and clicks must be 1-D of one length, got {pos.shape} and {c.shape}"
        )
    if pos.size == 0 or pos.min() < 1:
        raise ValueError("position must hold 1-based ranks (>= 1) of at least one row")
    if np.any(c < 0) or np.any(c > n):
        raise ValueError("clicks must lie in [0, shown] for every row")
    return pos, c, n


def propensity_by_randomisation(position, clicks, shown) -> np.ndarray:
    """``CTR_k / CTR_1`` for k = 1..max(position), from a log of randomised lists.

    position: (n_rows,) 1-based rank; clicks: (n_rows,) clicks of the row; shown: (n_rows,) or
    a scalar, the sessions in which the row was shown at that rank. ``CTR_k`` = clicks / shown
    over the rows at rank ``k``. NaN at a rank nothing was shown at; raises ``ValueError``
    when rank 1 has no click (nothing to be relative to)."""
    pos, c, n = _check(position, clicks, shown)
    K = int(pos.max())
    clicked = np.bincount(pos - 1, weights=c, minlength=K)
    trials = np.bincount(pos - 1, weights=n, minlength=K)
    with np.errstate(invalid="ignore", divide="ignore"):
        ctr = np.where(trials > 0, clicked / trials, np.nan)
    if not ctr[0] > 0:
        raise ValueError("no click at rank 1: the propensities relative to rank 1 are undefined")
    return ctr / ctr[0]


def randomised_log(
    y, qid, model: ClickModel, *, max_label: int, top_k: int, sessions: int, rng
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Simulate result randomisation: ``(position, clicks, shown)`` per shown impression.

    For each query (rows ``qid``-contiguous, true labels ``y``) and each of ``sessions``
    sessions, ``top_k`` of its documents (all when fewer) drawn uniformly without replacement
    are shown in random order and ``model`` samples one session's clicks. The result has one
    entry per (session, shown document): 1-based rank, 0/1 click, ``shown = 1``."""
    y = np.asarray(y, dtype=np.int64)
    b = query_boundaries(np.asarray(qid))
    n_q = b.size - 1
    lists = np.full((sessions * n_q, top_k), -1, dtype=np.int64)
    for s in range(sessions):
        for q in range(n_q):
            docs = y[b[q] : b[q + 1]]
            pick = rng.permutation(docs.size)[:top_k]
            lists[s * n_q + q, : pick.size] = docs[pick]
    clicks = model.sample(ShownLists(y=lists, max_label=max_label), rng, 1)[0]
    mask = lists >= 0
    ranks = np.broadcast_to(np.arange(1, top_k + 1), lists.shape)
    return ranks[mask].astype(np.int64), clicks[mask].astype(np.float64), np.ones(mask.sum())


def propensity_by_regression_em(
    X, position, clicks, shown, *, iterations: int = 50, C: float = 1.0, tol: float = 1e-6
) -> np.ndarray:
    """``theta_k / theta_1``, k = 1..max(position), by regression EM (module docstring).

    X: (n_rows, d) features of the logged rows; position: (n_rows,) 1-based rank; clicks:
    (n_rows,) click count; shown: (n_rows,) or scalar, sessions the row was shown in (for a
    simulated log, ``sessions``). ``C``: inverse L2 strength of the logistic regression.
    Starts from ``theta = 0.5``, ``gamma = 0.5`` and stops after ``iterations`` rounds or when
    no ``theta_k`` moves by more than ``tol``. Deterministic."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    pos, c, n = _check(position, clicks, shown)
    X = StandardScaler().fit_transform(np.asarray(X, dtype=np.float64))
    K = int(pos.max())
    trials = np.bincount(pos - 1, weights=n, minlength=K)
    theta = np.full(K, 0.5)
    gamma = np.full(pos.size, 0.5)
    XX = np.vstack([X, X])
    labels = np.r_[np.ones(pos.size), np.zeros(pos.size)]
    # warm-started: each M-step's regression starts from the previous one's weights (the
    # same convex optimum, reached in a few L-BFGS steps instead of a hundred)
    reg = LogisticRegression(C=C, max_iter=1000, warm_start=True)
    for _ in range(int(iterations)):
        t = theta[pos - 1]
        denom = np.clip(1.0 - t * gamma, 1e-12, None)
        exam_no_click = t * (1.0 - gamma) / denom  # P(E=1 | C=0)
        rel_no_click = (1.0 - t) * gamma / denom  # P(R=1 | C=0)
        examined = np.bincount(pos - 1, weights=c + (n - c) * exam_no_click, minlength=K)
        new_theta = np.clip(
            np.where(trials > 0, examined / np.maximum(trials, 1e-12), theta), 1e-6, 1.0
        )
        w1 = c + (n - c) * rel_no_click
        w0 = (n - c) * (1.0 - rel_no_click)
        reg.fit(XX, labels, sample_weight=np.r_[w1, w0])
        gamma = reg.predict_proba(X)[:, 1]
        moved = np.max(np.abs(new_theta - theta))
        theta = new_theta
        if moved <= tol:
            break
    return theta / theta[0]


def compare_to_truth(estimated, true) -> dict[str, float]:
    """Errors of an estimated curve against the true one (both relative to rank 1, same
    ranks): ``mae`` and ``max_abs`` over ranks 2..K (rank 1 is 1 in both by construction)
    and ``abs@k`` per rank, ranks where the estimate is NaN left out."""
    est = np.asarray(estimated, dtype=np.float64)
    tru = np.asarray(true, dtype=np.float64)
    if est.shape != tru.shape:
        raise ValueError(f"estimated {est.shape} and true {tru.shape} curves differ in length")
    err = np.abs(est - tru)
    out = {f"abs@{k}": float(e) for k, e in enumerate(err, start=1) if np.isfinite(e)}
    tail = err[1:][np.isfinite(err[1:])]
    out["mae"] = float(tail.mean()) if tail.size else float("nan")
    out["max_abs"] = float(tail.max()) if tail.size else float("nan")
    return out


#: shuffled sessions per training query of the randomised log simulated beside every click
#: log (the intervention of Joachims et al. 2017: a few sessions suffice for a curve)
RANDOMISED_SESSIONS = 10
#: ranks estimated (DLA reports ``propensity@1..10`` too)
MAX_RANK = 10
#: the most shown rows regression EM fits on (whole queries, chosen by the seed): it refits
#: a logistic regression every iteration
EM_MAX_ROWS = 50_000
EM_ITERATIONS = 30


def estimate_log_propensities(
    X, qid, position, clicks, *, source_y, source_qid, sessions: int, model: ClickModel,
    max_label: int, top_k: int, rng,
) -> dict:  # fmt: skip
    """What a simulated click log tells about its examination curve, relative to rank 1, at
    ranks ``1..K`` (``K`` = ``top_k`` capped at :data:`MAX_RANK`; 10 when every document was
    shown).

    The log: ``X`` (features), ``qid``, ``position`` (1-based shown rank) and ``clicks``
    (click count over ``sessions`` sessions) of every shown training row, queries contiguous.
    ``source_y`` / ``source_qid``: the true labels and query ids of the whole training split
    the log was simulated from (for the randomised log). ``model``: the click model.

    * ``randomisation``: :func:`randomised_log` of :data:`RANDOMISED_SESSIONS` sessions of
      every source training query (``K`` of its documents in random order, the same click
      model), then :func:`propensity_by_randomisation`;
    * ``regression_em``: :func:`propensity_by_regression_em` on the log itself
      (:data:`EM_ITERATIONS` iterations, rows shown at ranks up to ``K``, at most
      :data:`EM_MAX_ROWS` of them in whole queries chosen with ``rng``).

    Returns ``{"ranks": K, "randomisation": [...], "regression_em": [...]}``; an estimate
    that cannot be made (no click at rank 1; a click model that needs features a shuffled
    list does not have) is left out and its reason given under ``"unavailable"``.
    """
    k = min(int(top_k), MAX_RANK) if int(top_k) > 0 else MAX_RANK
    out: dict = {"ranks": k}
    unavailable: dict[str, str] = {}
    try:
        log = randomised_log(
            source_y, source_qid, model, max_label=max_label, top_k=k,
            sessions=RANDOMISED_SESSIONS, rng=rng,
        )  # fmt: skip
        out["randomisation"] = [float(v) for v in propensity_by_randomisation(*log)[:k]]
    except Exception as exc:  # noqa: BLE001 - an estimate that cannot be made is said, not fatal
        unavailable["randomisation"] = f"{type(exc).__name__}: {exc}"
    position = np.asarray(position, dtype=np.int64)
    qid = np.asarray(qid)
    if position.size > EM_MAX_ROWS:  # whole queries, until the rows reach the cap
        b = query_boundaries(qid)
        order = rng.permutation(b.size - 1)
        enough = int(np.searchsorted(np.cumsum(np.diff(b)[order]), EM_MAX_ROWS)) + 1
        rows = np.concatenate([np.arange(b[q], b[q + 1]) for q in np.sort(order[:enough])])
    else:
        rows = np.arange(position.size)
    rows = rows[position[rows] <= k]
    try:
        if rows.size == 0 or position[rows].max() < k:
            raise ValueError(f"the log shows fewer than {k} ranks")
        em = propensity_by_regression_em(
            np.asarray(X)[rows], position[rows], np.asarray(clicks)[rows], sessions,
            iterations=EM_ITERATIONS,
        )  # fmt: skip
        out["regression_em"] = [float(v) for v in em[:k]]
    except Exception as exc:  # noqa: BLE001
        unavailable["regression_em"] = f"{type(exc).__name__}: {exc}"
    if unavailable:
        out["unavailable"] = unavailable
    return out

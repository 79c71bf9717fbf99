"""Click models of the simulation literature, on shown lists padded to one width.

Notation: a query's shown list has positions ``k = 1..K`` (rank 1 on top), true relevance
``y_k`` in ``0..ymax`` (``ymax``: the dataset's top grade). Every model here uses the
relevance-to-click noise of the simulation literature (Joachims et al. 2017; Ai et al. 2018)
as the probability that an examined document is clicked (its *attractiveness*)::

    alpha(y) = P(click | examined, y) = eps + (1 - eps) * (2^y - 1) / (2^ymax - 1)

so an examined irrelevant document is clicked with probability ``eps`` (noise) and an examined
document of the top grade always.

Shapes: :class:`ShownLists` holds ``y`` (Q, K) int64 with ``-1`` after a list's end and
``mask`` (Q, K) bool; :meth:`ClickModel.sample` returns clicks (S, Q, K) bool for ``S``
sessions (padding never clicked); :meth:`ClickModel.examination` returns (Q, K) float64, the
exact probability that the document at each position is examined in one session (0 on
padding), or None for a model without an examination step; :meth:`ClickModel.click_probability`
returns the exact marginal ``P(click at k)`` (Q, K) where the model has a closed form.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = [
    "CascadeModel",
    "ClickModel",
    "DBNModel",
    "DCMModel",
    "PositionBasedModel",
    "ShownLists",
    "attraction",
]


def attraction(y, ymax: int, eps: float) -> np.ndarray:
    """``alpha(y) = eps + (1 - eps) (2^y - 1) / (2^ymax - 1)``, float64 of ``y``'s shape;
    ``y`` is clipped to ``0..ymax`` (padding ``-1`` gives ``eps``; callers mask it)."""
    ymax = max(1, int(ymax))
    y = np.clip(np.asarray(y, dtype=np.float64), 0, ymax)
    return eps + (1.0 - eps) * (np.exp2(y) - 1.0) / (2.0**ymax - 1.0)


@dataclass
class ShownLists:
    """The lists one split showed: ``Q`` queries, at most ``K`` documents each.

    y: (Q, K) int64 true relevance in shown order, ``-1`` after the list's end.
    max_label: the dataset's top grade (``ymax`` of :func:`attraction`).
    features: ``features(q)`` -> (k_q, d) float64 feature rows of query ``q``'s shown list in
        shown order (only the feature-based allRank models call it), or None.
    """

    y: np.ndarray
    max_label: int
    features: Callable[[int], np.ndarray] | None = None

    @property
    def mask(self) -> np.ndarray:
        return self.y >= 0

    @property
    def lengths(self) -> np.ndarray:
        return self.mask.sum(axis=1)

    @property
    def ranks(self) -> np.ndarray:
        """(K,) float64: 1..K."""
        return np.arange(1, self.y.shape[1] + 1, dtype=np.float64)


class ClickModel:
    """A click model: ``name`` (as options spell it) and ``args`` (its resolved arguments)."""

    name = ""

    @property
    def args(self) -> dict:
        return {}

    def spec(self) -> dict:
        """``{"name", "args"}``: canonical, JSON-able, the model's identity in cache keys."""
        return {"name": self.name, "args": self.args}

    def sample(self, lists: ShownLists, rng: np.random.Generator, sessions: int) -> np.ndarray:
        raise NotImplementedError

    def examination(self, lists: ShownLists) -> np.ndarray | None:
        return None

    def click_probability(self, lists: ShownLists) -> np.ndarray | None:
        return None


class _NoisyModel(ClickModel):
    """A model whose examined documents are clicked with :func:`attraction` (``eps``)."""

    def __init__(self, eps: float = 0.1):
        self.eps = float(eps)

    def _alpha(self, lists: ShownLists) -> np.ndarray:
        return np.where(lists.mask, attraction(lists.y, lists.max_label, self.eps), 0.0)

    def click_probability(self, lists: ShownLists) -> np.ndarray:
        return self.examination(lists) * self._alpha(lists)


class PositionBasedModel(_NoisyModel):
    """Position-based model (PBM; Craswell et al. 2008, Joachims et al. 2017).

    A document at rank ``k`` is examined with probability ``theta_k = (1 / k)^eta``,
    independently of everything else, and clicked when examined and attracted::

        P(click at k) = theta_k * alpha(y_k)

    ``eta = 0``: no position bias; larger ``eta``: stronger bias. Clicks in one session are
    independent across positions.
    """

    name = "pbm"

    def __init__(self, eta: float = 1.0, eps: float = 0.1):
        super().__init__(eps)
        self.eta = float(eta)

    @property
    def args(self) -> dict:
        return {"eta": self.eta, "eps": self.eps}

    def examination(self, lists: ShownLists) -> np.ndarray:
        theta = (1.0 / lists.ranks) ** self.eta
        return np.where(lists.mask, theta[None, :], 0.0)

    def sample(self, lists, rng, sessions):
        p = self.click_probability(lists)
        return rng.random((sessions, *p.shape)) < p[None]


class CascadeModel(_NoisyModel):
    """Cascade model (Craswell et al. 2008): the user reads top-down, clicks the first
    attracted document and stops; without a click the next document is examined::

        E_1 = 1,  E_{k+1} = E_k * (1 - alpha(y_k)),  P(click at k) = E_k * alpha(y_k)

    At most one click per session.
    """

    name = "cascade"

    @property
    def args(self) -> dict:
        return {"eps": self.eps}

    def _continue(self, alpha: np.ndarray) -> np.ndarray:
        """P(examine k+1 | examined k), per position (Q, K)."""
        return 1.0 - alpha

    def examination(self, lists: ShownLists) -> np.ndarray:
        step = self._continue(self._alpha(lists))
        exam = np.ones_like(step)
        exam[:, 1:] = np.cumprod(step[:, :-1], axis=1)
        return np.where(lists.mask, exam, 0.0)

    def sample(self, lists, rng, sessions):
        alpha = self._alpha(lists)
        attracted = rng.random((sessions, *alpha.shape)) < alpha[None]
        return attracted & (np.cumsum(attracted, axis=-1) == 1)


class DCMModel(CascadeModel):
    """Dependent click model (DCM; Guo et al. 2009): as the cascade, but after a click the
    user goes on reading with probability ``lam`` (stops with ``1 - lam``)::

        E_1 = 1,  E_{k+1} = E_k * (1 - alpha(y_k) * (1 - lam)),  P(click at k) = E_k alpha(y_k)

    ``lam = 0`` is the cascade model; ``lam = 1`` examines every position (no position bias).
    """

    name = "dcm"

    def __init__(self, lam: float = 0.5, eps: float = 0.1):
        super().__init__(eps)
        self.lam = float(lam)

    @property
    def args(self) -> dict:
        return {"lam": self.lam, "eps": self.eps}

    def _continue(self, alpha):
        return 1.0 - alpha * (1.0 - self.lam)

    def sample(self, lists, rng, sessions):
        alpha = self._alpha(lists)
        Q, K = alpha.shape
        clicks = np.zeros((sessions, Q, K), dtype=bool)
        reading = np.ones((sessions, Q), dtype=bool)
        for k in range(K):
            clicked = reading & (rng.random((sessions, Q)) < alpha[None, :, k])
            clicks[:, :, k] = clicked
            reading &= ~(clicked & (rng.random((sessions, Q)) >= self.lam))
        return clicks


class DBNModel(CascadeModel):
    """Dynamic Bayesian network model (DBN; Chapelle and Zhang 2009). Top-down: an examined
    document is clicked with ``alpha(y_k)``; a clicked document satisfies the user with
    ``sigma(y_k) = (2^y_k - 1) / (2^ymax - 1)``, who then stops; otherwise the user goes on
    with probability ``gamma`` (perseverance)::

        E_1 = 1,  E_{k+1} = E_k * gamma * (1 - alpha(y_k) sigma(y_k)),
        P(click at k) = E_k * alpha(y_k)
    """

    name = "dbn"

    def __init__(self, gamma: float = 0.9, eps: float = 0.1):
        super().__init__(eps)
        self.gamma = float(gamma)

    @property
    def args(self) -> dict:
        return {"gamma": self.gamma, "eps": self.eps}

    def _sigma(self, lists: ShownLists) -> np.ndarray:
        return np.where(lists.mask, attraction(lists.y, lists.max_label, 0.0), 0.0)

    def examination(self, lists: ShownLists) -> np.ndarray:
        step = self.gamma * (1.0 - self._alpha(lists) * self._sigma(lists))
        exam = np.ones_like(step)
        exam[:, 1:] = np.cumprod(step[:, :-1], axis=1)
        return np.where(lists.mask, exam, 0.0)

    def sample(self, lists, rng, sessions):
        alpha, sigma = self._alpha(lists), self._sigma(lists)
        Q, K = alpha.shape
        clicks = np.zeros((sessions, Q, K), dtype=bool)
        reading = np.ones((sessions, Q), dtype=bool)
        for k in range(K):
            clicked = reading & (rng.random((sessions, Q)) < alpha[None, :, k])
            clicks[:, :, k] = clicked
            satisfied = clicked & (rng.random((sessions, Q)) < sigma[None, :, k])
            reading &= ~satisfied & (rng.random((sessions, Q)) < self.gamma)
        return clicks


#: name -> (class, {argument: default}) of the models above
LITERATURE_MODELS: dict[str, tuple[type, dict]] = {
    "pbm": (PositionBasedModel, {"eta": 1.0, "eps": 0.1}),
    "cascade": (CascadeModel, {"eps": 0.1}),
    "dcm": (DCMModel, {"lam": 0.5, "eps": 0.1}),
    "dbn": (DBNModel, {"gamma": 0.9, "eps": 0.1}),
}

"""``neural``: the LtR design paper's rank functionals, rank losses and weightings as a ranker.

Importing this module does not import torch (``fit``/``predict`` do), so listing rankers and
validating a plan work without it.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ltr_bench.predict_input import predict_matrix
from ltr_bench.ranker import BaseRanker, EvalSet, RankerTags, check_ranking_input
from ltr_bench_neural import design
from ltr_bench_neural.features import FEATURE_TRANSFORMS
from ltr_bench_neural.losses import check_loss_args, resolve
from ltr_bench_neural.scorers import SCORERS


class NeuralRanker(BaseRanker):
    """A differentiable ranker: rank functional f (``scorer``, optionally grouped), rank loss,
    weights, optimizer. Features are standardised on the training split (mean 0, sd 1).
    Equation and table numbers refer to the design paper
    (``ltr-design-issues-rank-functionals-and-losses``); docs: ``docs/rankers/neural.md``.

    Parameters
    ----------
    scorer : ``linear`` | ``quadratic`` (Eq. 4) | ``bilinear`` (Eq. 2) | ``distance`` (Eq. 3);
        default ``linear``. ``bilinear``/``distance`` need query-by-example rows (``query_dim``).
    group : ``none`` | ``min`` | ``max`` | ``mean`` | ``geomean`` (Table 2); default ``none``.
        Training ranks one mega-object per label; prediction ranks documents by f.
    loss : ``softmax`` (Eq. 5), ``smooth-ndcg`` / ``smooth-err`` / ``smooth-mrr`` (Eqs. 6-7),
        ``pointwise``, ``pl`` (Eq. 11), ``rpl`` (Eq. 13), ``wpll`` (Eq. 16),
        ``pair-quadratic`` / ``pair-hinge`` / ``pair-exp`` / ``pair-logistic`` (Eq. 9,
        Table 3), ``wub`` (Eq. 18); default ``softmax``.
    weight : W of Table 8 for ``pointwise``/``pl``/``rpl``/``wpll`` (``one``, ``rating``,
        ``sqrt-rating``, ``gain``, ``inv-pos``, ``inv-log-pos``); V of Table 9 for the pair
        losses and ``wub`` (``one``, ``inv-nq``, ``rating-diff``, ``rating-diff/nq``,
        ``ndcg-delta/max``, ``ndcg-delta``, ``gain-diff``, ``gain-diff/nq``); only ``one``
        for the others. Default ``one``.
    rho : float in [0, 1), default 0.1: the quadratic scorer keeps a product x_a x_b when
        |Pearson(x_a x_b, label)| >= rho on the training split.
    dim : int >= 1, default 10: rows of A and B (Eqs. 2-3).
    width, depth, dropout : None (default: from ``scorer_args``) or the ``mlp`` scorer's hidden
        width and layer count (sizes = [width] * depth) and dropout, or the ``transformer``'s
        d_model (d_ff = 4 * width), encoder blocks N and dropout; top-level so that
        ``ltr-bench tune`` can search them (``search_space``).
    activation : ``tanh`` | ``sigmoid``, default ``tanh``: sigma of Eq. 2.
    tau : float > 0, default 1.0: the scale of Eq. 3.
    temperature : float > 0, default 1.0: T of the smoothed metrics, sigmoid((f_j - f_i)/T)
        (Eq. 7 is T = 1); ``loss_args={temperature=...}`` overrides it.
    optimizer : ``auto`` | ``lbfgs`` (the paper's: full batch, strong-Wolfe line search) |
        ``adam`` | ``adamw`` | ``sgd`` (mini-batches of ``batch_size`` queries); default
        ``auto``: ``adam`` for ``neuralndcg`` (with 5 Sinkhorn rounds unless ``loss_args``
        sets ``max_iter``), ``lbfgs`` for every other loss (``ltr_bench_neural.defaults``).
    l2 : float >= 0 or None, default None: the Gaussian prior, R = mean_q loss_q + l2 *
        sum theta^2 over the weights (not biases), Eq. 1; None = 1e-2 for ``bilinear`` and
        ``distance``, 1e-4 for the other scorers.
    epochs : int >= 1, default 100: L-BFGS iterations or passes over the training queries.
    lr : float > 0 or None: step size; None = 1.0 for lbfgs (scaled by its line search),
        1e-2 for adam/adamw, 0.1 for sgd.
    batch_size : int >= 1, default 64: queries per mini-batch (adam, adamw, sgd).
    patience : int >= 1 or None, default 10: stop after this many iterations/epochs without a
        better ``val_metric`` on ``eval_set`` and keep the best; None = no early stopping.
    lr_scheduler : None or a class name of ``torch.optim.lr_scheduler`` (e.g. ``StepLR``),
        stepped once per epoch; ``lr_scheduler_args`` its keyword arguments (dict).
    grad_clip : float > 0 or None: clip the gradient norm (mini-batch optimizers).
    slate_length : int >= 2 or None: training lists longer than this keep a random subset
        of this many documents (drawn once from ``random_state``).
    val_metric : metric name, default ``ndcg@10`` (ltr_bench syntax): the early-stopping
        criterion and the validation learning curve.
    device : ``auto`` | ``cpu`` | ``cuda``, default ``auto`` (CUDA when available;
        :mod:`ltr_bench_neural.devices`). A model trained on CUDA scores on it; a kept model
        loads on the CPU.
    dtype : ``float32`` | ``float64``, default ``float32``.
    feature_transform : ``none`` | ``log1p``, default ``none``: applied to the features
        before standardisation; ``log1p`` is sign(x) log(1 + |x|) (Qin et al. 2021).
    memory_budget : int, default 2**24: the largest B * L * width of a batch in elements
        (width = L for losses with [B, L, L] tensors; the feature width of the quadratic
        scorer), which bounds the memory of pairwise and MRF losses on long lists.
    scorer_args, loss_args : dicts of per-scorer / per-loss settings (validated by name).
    config : an allRank-style configuration (see ``docs/rankers/neural-allrank.md``).
    query_dim : width of the query block of query-by-example rows, or None (set by the
        harness on such data; ``RankerTags.query_dim_param``).
    random_state : int or None: the seed of every random choice (initial values, slates,
        mini-batch order).
    n_threads : int or None: ``torch.set_num_threads`` during fit/predict
        (``RankerTags.thread_param``).
    unbiased : ``none`` | ``naive`` | ``ips`` | ``dla``, default ``none``: learn from clicks
        with the click-weighted softmax cross-entropy, uncorrected (``naive``), with
        inverse-propensity weights (``ips``) or the dual learning algorithm (``dla``; ``fit``
        then takes ``position`` / ``propensity``; :mod:`ltr_bench_neural.unbiased`).
    propensity : ``true`` | ``randomisation`` | ``em``, default ``true``: the propensities of
        ``unbiased="ips"``: the click model's, or estimated from the log by result
        randomisation or regression EM (:mod:`ltr_bench.clicks.propensities`).
    """

    #: the ranker contract version this plugin is built for (ltr_bench.ranker.CONTRACT_VERSION)
    contract_version = 1

    def __init__(
        self,
        scorer: str = "linear",
        group: str = "none",
        loss: str = "softmax",
        weight: str = "one",
        rho: float = 0.1,
        dim: int = 10,
        width: int | None = None,
        depth: int | None = None,
        dropout: float | None = None,
        activation: str = "tanh",
        tau: float = 1.0,
        temperature: float = 1.0,
        optimizer: str = "auto",
        l2: float | None = None,
        epochs: int = 100,
        lr: float | None = None,
        batch_size: int = 64,
        patience: int | None = 10,
        lr_scheduler: str | None = None,
        lr_scheduler_args: dict[str, Any] | None = None,
        grad_clip: float | None = None,
        slate_length: int | None = None,
        val_metric: str = "ndcg@10",
        device: str = "auto",
        dtype: str = "float32",
        feature_transform: str = "none",
        memory_budget: int = 2**24,
        scorer_args: dict[str, Any] | None = None,
        loss_args: dict[str, Any] | None = None,
        config: str | dict[str, Any] | None = None,
        query_dim: int | None = None,
        random_state: int | None = None,
        n_threads: int | None = None,
        unbiased: str = "none",
        propensity: str = "true",
    ) -> None:
        self.scorer = scorer
        self.group = group
        self.loss = loss
        self.weight = weight
        self.rho = rho
        self.dim = dim
        self.width = width
        self.depth = depth
        self.dropout = dropout
        self.activation = activation
        self.tau = tau
        self.temperature = temperature
        self.optimizer = optimizer
        self.l2 = l2
        self.epochs = epochs
        self.lr = lr
        self.batch_size = batch_size
        self.patience = patience
        self.lr_scheduler = lr_scheduler
        self.lr_scheduler_args = lr_scheduler_args
        self.grad_clip = grad_clip
        self.slate_length = slate_length
        self.val_metric = val_metric
        self.device = device
        self.dtype = dtype
        self.feature_transform = feature_transform
        self.memory_budget = memory_budget
        self.scorer_args = scorer_args
        self.loss_args = loss_args
        self.config = config
        self.query_dim = query_dim
        self.random_state = random_state
        self.n_threads = n_threads
        self.unbiased = unbiased
        self.propensity = propensity

    def ranker_tags(self) -> RankerTags:
        spec = SCORERS.get(self.scorer) if isinstance(self.scorer, str) else None
        return RankerTags(
            # with an allRank config the scorer is in the file: assume a listwise one
            requires_qid_at_predict=bool(spec is not None and spec.listwise)
            or self.config is not None,
            uses_eval_set=True,
            deterministic=True,
            thread_param="n_threads",
            seed_param="random_state",
            query_dim_param="query_dim",
            accepts_position=self.unbiased in ("ips", "dla"),  # unbiased_params.POSITION_MODES
            requires_position=self.unbiased in ("ips", "dla"),
            file_params=("config",),  # keyed by the file's content, not its path
            # weights 1 / true propensity, or 1 / an estimate the harness computes
            requires_propensity=self.unbiased == "ips" and self.propensity == "true",
            propensity_estimate=self.propensity
            if self.unbiased == "ips" and self.propensity != "true"
            else None,
        )

    def search_space(self: NeuralRanker | None = None) -> dict[str, Any]:
        """The default ``ltr-bench tune`` search space for this scorer, optimizer and loss
        (``ltr_bench_neural.search_space``); on the class, the defaults' space."""
        from ltr_bench_neural.search_space import default_search_space

        return default_search_space(self if self is not None else NeuralRanker())

    # ------------------------------------------------------------------ validation
    def check_user_params(self, user_params: dict[str, Any]) -> None:
        """With a config: a ``--param`` the config would replace is refused (issue 33)."""
        if self.config is not None:
            from ltr_bench_neural.allrank_overrides import check_overrides

            check_overrides(self, user_params)

    def _validate_params(self) -> None:
        """Every check that needs no data (called before any data is loaded)."""
        from ltr_bench_neural.devices import check_device
        from ltr_bench_neural.unbiased_params import check_unbiased_params

        check_unbiased_params(self)
        check_device(self.device)  # cuda without a GPU: refused before any data is loaded
        if self.config is not None:  # an allRank config: check it and what it resolves to
            from ltr_bench_neural.allrank_config import validate_config

            validate_config(self)
            return

        def choice(name: str, allowed: Iterable[str], what: str | None = None) -> None:
            value = getattr(self, name)
            if not isinstance(value, str) or value not in allowed:
                raise ValueError(f"{name}: " + design.unknown_choice(what or name, value, allowed))

        def integer(name: str, low: int, none_ok: bool = False) -> None:
            v = getattr(self, name)
            if v is None and none_ok:
                return
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or int(v) < low:
                extra = " or None" if none_ok else ""
                raise ValueError(f"{name} must be an integer >= {low}{extra}, got {v!r}")

        def real(
            name: str,
            low: float,
            high: float,
            *,
            low_open: bool = False,
            high_open: bool = False,
            none_ok: bool = False,
        ) -> None:
            v = getattr(self, name)
            if v is None and none_ok:
                return
            ok = isinstance(v, numbers.Real) and not isinstance(v, bool) and np.isfinite(float(v))
            if ok:
                ok = (v > low if low_open else v >= low) and (v < high if high_open else v <= high)
            if not ok:
                lb, rb = "(" if low_open else "[", ")" if high_open else "]"
                raise ValueError(f"{name} must be a number in {lb}{low}, {high}{rb}, got {v!r}")

        choice("scorer", SCORERS, "scorer")
        choice("group", design.GROUPS, "group functional")
        if not isinstance(self.loss, str):
            raise ValueError(f"loss must be a loss name, got {self.loss!r}")
        try:
            spec, _ = resolve(self.loss)
        except ValueError as exc:
            raise ValueError(f"loss: {exc}") from None
        fits = design.weights_for(spec.weights)
        if not isinstance(self.weight, str) or self.weight not in fits:
            every = {**design.ELEMENT_WEIGHTS, **design.PAIR_WEIGHTS}
            if isinstance(self.weight, str) and self.weight in every:
                kind = {"element": "element-wise W (Eq. 8)", "pair": "pairwise V (Eq. 9)"}
                raise ValueError(
                    f"weight {self.weight!r} does not fit loss {self.loss!r} "
                    f"({kind.get(spec.weights, 'unweighted')}); weights that fit: "
                    f"{', '.join(fits)}"
                )
            raise ValueError(
                "weight: "
                + design.unknown_choice("weight", self.weight, list(fits))
                + f" (the weights that fit loss {self.loss!r})"
            )
        for name in ("scorer_args", "loss_args", "lr_scheduler_args"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, dict):
                raise ValueError(f"{name} must be a dict (TOML table) or None, got {v!r}")
        check_loss_args(self.loss, self.loss_args)
        integer("width", 1, none_ok=True)
        integer("depth", 1, none_ok=True)
        real("dropout", 0.0, 1.0, high_open=True, none_ok=True)
        from ltr_bench_neural.search_space import check_shortcuts

        check_shortcuts(self)
        args = dict(self.scorer_args or {})
        accepted = SCORERS[self.scorer].args
        unknown = sorted(set(args) - set(accepted))
        if unknown:
            raise ValueError(
                f"scorer {self.scorer!r} has no scorer_args {', '.join(unknown)}; it accepts: "
                f"{', '.join(sorted(accepted)) or 'none'}"
            )
        real("rho", 0.0, 1.0, high_open=True)
        integer("dim", 1)
        choice("activation", design.ACTIVATIONS)
        real("tau", 0.0, np.inf, low_open=True, high_open=True)
        real("temperature", 0.0, np.inf, low_open=True, high_open=True)
        choice("optimizer", ("auto",) + tuple(design.OPTIMIZERS))
        real("l2", 0.0, np.inf, high_open=True, none_ok=True)
        integer("epochs", 1)
        real("lr", 0.0, np.inf, low_open=True, high_open=True, none_ok=True)
        integer("batch_size", 1)
        integer("patience", 1, none_ok=True)
        if self.lr_scheduler is not None and not isinstance(self.lr_scheduler, str):
            raise ValueError(
                f"lr_scheduler must be a class name or None, got {self.lr_scheduler!r}"
            )
        real("grad_clip", 0.0, np.inf, low_open=True, high_open=True, none_ok=True)
        integer("slate_length", 2, none_ok=True)
        from ltr_bench.evaluation.metric_keys import MetricKey

        try:
            MetricKey.parse(self.val_metric)
        except (ValueError, TypeError, AttributeError) as exc:
            raise ValueError(f"val_metric: {exc}") from None
        choice("device", design.DEVICES)
        choice("dtype", design.DTYPES)
        choice("feature_transform", FEATURE_TRANSFORMS, "feature transform")
        from ltr_bench_neural.allrank_config import check_torch_names

        check_torch_names(self)  # activations and scheduler names, known to torch only
        integer("memory_budget", 1024)
        integer("query_dim", 1, none_ok=True)
        integer("n_threads", 1, none_ok=True)
        rs = self.random_state
        if rs is not None and (
            isinstance(rs, bool) or not isinstance(rs, numbers.Integral) or int(rs) < 0
        ):
            raise ValueError(f"random_state must be a non-negative integer or None, got {rs!r}")

    # ------------------------------------------------------------------ fit / predict
    def fit(
        self,
        X: ArrayLike,
        y: ArrayLike,
        *,
        qid: ArrayLike,
        eval_set: EvalSet | None = None,
        position: ArrayLike | None = None,
        propensity: ArrayLike | None = None,
    ) -> NeuralRanker:
        """``position`` / ``propensity``: per-row click data, used only when ``unbiased``
        is ``ips`` or ``dla`` (:mod:`ltr_bench_neural.unbiased`); ignored otherwise."""
        self._validate_params()
        if self.config is not None:
            from ltr_bench_neural.allrank_config import fit_with_config

            fit_with_config(self, X, y, qid=qid, eval_set=eval_set)
            return self
        X, y, qid = check_ranking_input(X, y, qid)
        if X.shape[0] == 0:
            raise ValueError("cannot fit on an empty training set (X has 0 rows)")
        if eval_set is not None:
            Xv, yv, qv = eval_set
            Xv, yv, qv = check_ranking_input(Xv, yv, qv, n_features=X.shape[1])
            eval_set = (Xv, yv, qv) if len(Xv) else None
        from ltr_bench_neural.training import fit_model

        make, holder = None, {}
        if self.unbiased != "none":
            from ltr_bench_neural.unbiased import objective_factory

            make, holder = objective_factory(self, len(X), position, propensity)
        result = fit_model(self, X, y, qid, eval_set, make_objective=make)
        if hasattr(holder.get("objective"), "propensities"):  # dla: the learned curve
            self.propensity_ = holder["objective"].propensities()
            for k, v in enumerate(self.propensity_[:10], start=1):
                result.info[f"propensity@{k}"] = float(v)
        self.n_features_in_ = X.shape[1]
        self.model_ = result.model
        self.feature_mean_ = result.mean
        self.feature_scale_ = result.scale
        self.curves_ = result.curves
        self.info_ = result.info
        return self

    def predict(self, X: ArrayLike, *, qid: ArrayLike | None = None) -> np.ndarray:
        self._check_fitted("model_")
        X, qid = predict_matrix(X, qid, n_features=self.n_features_in_)
        from ltr_bench_neural.training import predict_scores

        return np.asarray(predict_scores(getattr(self, "effective_", self), X, qid))

    def save_native(self, folder: Path) -> dict[str, Any]:
        """The scorer's ``state_dict`` and the standardisation (:mod:`.persistence`)."""
        self._check_fitted("model_")
        from ltr_bench_neural.persistence import save_neural

        return save_neural(self, folder)

    @classmethod
    def load_native(cls, folder: Path, manifest: dict[str, Any]) -> NeuralRanker:
        from ltr_bench_neural.persistence import load_neural

        ranker: NeuralRanker = load_neural(cls, folder, manifest)
        return ranker

    def export_onnx(self, kit: Any) -> Any:
        """The fitted scorer as an ONNX graph through ``torch.onnx`` (:mod:`.onnx_export`):
        the feature transform and standardisation, then the scorer on the rows as one list
        (a listwise scorer gets one query per call)."""
        self._check_fitted("model_")
        from ltr_bench_neural.onnx_export import export_neural

        return export_neural(self, int(self.n_features_in_))

    def learning_curves(self) -> dict[str, list[float]]:
        """Per iteration (L-BFGS) or epoch: ``train_loss`` (the regularised objective at the
        start of the iteration / the epoch's mean) and ``vali_<val_metric>`` when an eval_set
        was given."""
        self._check_fitted("curves_")
        return {k: list(v) for k, v in self.curves_.items()}

    def fitted_info(self) -> dict[str, int | float | str]:
        """``iterations`` run, ``chosen_iteration`` (1-based; the best on validation when
        early stopping was on, else the last), ``n_parameters``, ``final_train_loss`` and,
        for the quadratic scorer, ``n_second_order_features`` (Table 5's "No. feats")."""
        return dict(getattr(self, "info_", {}))

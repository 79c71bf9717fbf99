"""The optimisation loop of :class:`~ltr_bench_neural.ranker.NeuralRanker` (imports torch).

Objective (Eq. 1): R(theta) = (1/D) sum_q loss_q + l2 * sum theta^2, theta the scorer's
weights (biases unpenalised), D the number of training queries.

- ``lbfgs``: the paper's optimiser. Full batch: the closure runs over every padded batch,
  back-propagating each batch's share (B_b / D) of the mean, so memory is one batch's graph.
  One ``step`` is one L-BFGS iteration (strong-Wolfe line search; curvature history kept
  across steps), which gives a learning curve per iteration. Stops after ``epochs``
  iterations, when the objective stops changing (relative change < 1e-10), or by early
  stopping.
- ``adam`` / ``adamw`` / ``sgd``: mini-batches of queries; the batches (fixed for the fit) are
  visited in a new random order each epoch; optional gradient clipping and a
  ``torch.optim.lr_scheduler`` stepped per epoch.

A non-finite objective stops the fit with :class:`TrainingDivergedError` naming the
iteration and the step size.
"""

from __future__ import annotations

import copy
import math
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import torch

from ltr_bench.evaluation.metrics import evaluate
from ltr_bench.progress import report_intermediate
from ltr_bench_neural.batching import Batch, build_batches
from ltr_bench_neural.defaults import resolve as resolve_defaults
from ltr_bench_neural.devices import resolve_device
from ltr_bench_neural.features import transform_features
from ltr_bench_neural.groups import group_scores
from ltr_bench_neural.losses import check_loss_args, resolve
from ltr_bench_neural.scorers import SCORERS, ScorerContext
from ltr_bench_neural.scorers._blocks import ranking_scores
from ltr_bench_neural.search_space import scorer_args_of, temperature_loss_args
from ltr_bench_neural.weights import weights_for_loss

DEFAULT_LR = {"lbfgs": 1.0, "adam": 1e-2, "adamw": 1e-2, "sgd": 0.1}


class TrainingDivergedError(RuntimeError):
    """The training objective became NaN or infinite."""


@dataclass
class FitResult:
    model: torch.nn.Module
    mean: np.ndarray
    scale: np.ndarray
    curves: dict[str, list[float]] = field(default_factory=dict)
    info: dict[str, int | float | str] = field(default_factory=dict)


@contextmanager
def torch_threads(n: int | None):
    """``torch.set_num_threads(n)`` for the block (restored after); None leaves torch's."""
    if n is None or torch.get_num_threads() == int(n):
        yield  # already so: no call into torch's pools (a one-query predict pays each)
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _dtype(name: str):
    return torch.float64 if name == "float64" else torch.float32


def standardise(X: np.ndarray):
    """``(mean, scale)`` of the training split; constant columns get scale 1."""
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[~(scale > 1e-12)] = 1.0
    return mean, scale


class _Objective:
    """loss(batch) for the ranker's scorer, group functional, loss and weight."""

    def __init__(self, ranker, model, n_levels: int, max_label: int):
        spec, _ = resolve(ranker.loss)
        self.spec = spec
        self.fn = spec.function_object()
        args = check_loss_args(ranker.loss, ranker.loss_args)
        if "temperature" in args and args["temperature"] is None:
            args["temperature"] = float(ranker.temperature)
        if "max_label" in args and args["max_label"] is None:
            args["max_label"] = max_label
        if "n_levels" in args and args["n_levels"] is None:
            args["n_levels"] = n_levels
        self.args = temperature_loss_args(ranker, spec, args)
        self.model = model
        self.group = ranker.group
        self.weight = ranker.weight
        self.n_levels = n_levels

    def __call__(self, batch: Batch) -> torch.Tensor:
        scores = self.model(batch.X, batch.mask)
        y, mask = batch.y, batch.mask
        if self.group != "none":
            scores, y, mask = group_scores(scores, y, mask, self.group, self.n_levels)
        with torch.no_grad():
            w = weights_for_loss(self.spec.weights, self.weight, y, mask, n_levels=self.n_levels)
        return self.fn(scores, y, mask, weights=w, **self.args)


def _penalty(model, l2: float) -> torch.Tensor | None:
    if l2 == 0:
        return None
    return l2 * sum((p * p).sum() for p in model.parameters() if p.ndim >= 1)


def _diverged(ranker, where: str, value: float, lr: float) -> TrainingDivergedError:
    return TrainingDivergedError(
        f"neural: the training objective became {value} at {where} (optimizer "
        f"{ranker.optimizer}, step size lr={lr:g}, loss {ranker.loss!r}); lower lr, raise l2 "
        "or choose another loss"
    )


def _leave_the_tied_start(model, generator) -> None:
    """Move zero-initialised weights to N(0, 0.01^2) values (from the ranker's seed).

    At w = 0 every document scores the same, and min/max over a group of tied scores is not
    differentiable: autograd splits the gradient evenly between the tied members (the
    gradient of the *mean*), which is not a descent direction of min/max, so L-BFGS's line
    search fails at the start and the fit ends at the constant model. A tiny random start
    has no ties."""
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim >= 1 and not p.any():
                p.copy_(0.01 * torch.randn(p.shape, generator=generator, dtype=p.dtype))


def fit_model(ranker, X, y, qid, eval_set, make_objective=None) -> FitResult:
    """``make_objective(ranker, model, n_levels, max_label)`` replaces the ranker's loss
    (``unbiased`` training from clicks, :mod:`ltr_bench_neural.unbiased`)."""
    ranker = resolve_defaults(ranker)  # optimizer "auto", l2 None -> the fit's values
    device = resolve_device(ranker.device)
    dtype = _dtype(ranker.dtype)
    spec = SCORERS[ranker.scorer]
    if spec.needs_query_block and ranker.query_dim is None:
        raise ValueError(
            f"scorer {ranker.scorer!r} needs query-by-example data, rows [query, document] "
            "(e.g. the datasets wine, wdbc); this data has no query block (query_dim=None)"
        )
    if ranker.query_dim is not None and X.shape[1] != 2 * ranker.query_dim:
        raise ValueError(
            f"query_dim={ranker.query_dim} means rows of width {2 * ranker.query_dim}, but X "
            f"has {X.shape[1]} columns"
        )
    seed = 0 if ranker.random_state is None else int(ranker.random_state)
    with torch_threads(ranker.n_threads):
        torch.manual_seed(seed)  # for modules that draw from torch's global generator
        generator = torch.Generator().manual_seed(seed)
        rng = np.random.default_rng(seed)
        X = transform_features(X, ranker.feature_transform)
        mean, scale = standardise(X)
        Xs = (X - mean) / scale
        max_label = int(y.max())
        n_levels = max(2, max_label + 1)
        ctx = ScorerContext(
            n_features=X.shape[1],
            X_train=Xs,
            y_train=y,
            query_dim=ranker.query_dim,
            dim=int(ranker.dim),
            activation=ranker.activation,
            tau=float(ranker.tau),
            rho=float(ranker.rho),
            generator=generator,
            dtype=dtype,
        )
        model = spec.build_function()(ctx, **scorer_args_of(ranker)).to(device)
        if ranker.group in ("min", "max"):
            _leave_the_tied_start(model, generator)
        objective = (make_objective or _Objective)(ranker, model, n_levels, max_label)
        scorer_width = X.shape[1] + int(getattr(model, "n_products", 0))
        pairwise = objective.spec.pairwise_memory and ranker.group == "none"

        def width(L: int) -> int:
            return max(L if pairwise else 1, scorer_width)

        minibatch = ranker.optimizer != "lbfgs"
        batches = build_batches(
            Xs,
            y,
            qid,
            max_queries=int(ranker.batch_size) if minibatch else None,
            budget=int(ranker.memory_budget),
            width=width,
            slate_length=ranker.slate_length,
            rng=rng,
            dtype=dtype,
            device=device,
        )
        check_memory = getattr(model, "check_training_memory", None)
        if check_memory is not None:  # the transformer: refuse batches that cannot fit
            check_memory(batches, ranker, device)
        validation = None
        if eval_set is not None:
            Xv, yv, qv = eval_set
            Xv = transform_features(Xv, ranker.feature_transform)
            validation = ((Xv - mean) / scale, yv, qv)
        trainer = _Trainer(ranker, model, objective, batches, validation, rng, device, dtype)
        trainer.run()
        info = {
            "iterations": trainer.iterations,
            "chosen_iteration": trainer.chosen,
            "n_parameters": int(sum(p.numel() for p in model.parameters())),
            "n_batches": len(batches),
            "optimizer": ranker.optimizer,
            "l2": float(ranker.l2),
        }
        if trainer.curves["train_loss"]:
            info["final_train_loss"] = float(trainer.curves["train_loss"][-1])
        if hasattr(model, "n_products"):
            info["n_second_order_features"] = int(model.n_products)
        # Scores are computed in float64 whatever the training dtype: float32 sums depend on
        # how BLAS blocks a matrix, so the score of a row would depend on the other rows
        # (the contract wants the same score for a document in any row order).
        model = model.double().eval()
        return FitResult(model, mean, scale, trainer.curves, info)


class _Trainer:
    def __init__(self, ranker, model, objective, batches, validation, rng, device, dtype):
        self.ranker = ranker
        self.model = model
        self.objective = objective
        self.batches = batches
        self.validation = validation
        self.rng = rng
        self.device = device
        self.dtype = dtype
        self.n_queries = sum(b.n_queries for b in batches)
        self.lr = float(ranker.lr) if ranker.lr is not None else DEFAULT_LR[ranker.optimizer]
        self.metric = ranker.val_metric
        self.curves: dict[str, list[float]] = {"train_loss": []}
        if validation is not None:
            self.curves[f"vali_{self.metric}"] = []
        self.iterations = 0
        self.chosen = 0
        self._best = -math.inf
        self._best_state = None

    # -------------------------------------------------------------- bookkeeping
    def _record(self, it: int, loss: float) -> bool:
        """Log iteration ``it`` (1-based); True when early stopping says stop."""
        self.iterations = it
        self.curves["train_loss"].append(float(loss))
        if self.validation is None:
            self.chosen = it
            return False
        Xv, yv, qv = self.validation
        self.model.eval()
        with torch.no_grad():
            scores = score_matrix(self.model, Xv, qv, self.ranker, self.device, self.dtype)
        self.model.train()
        value = float(evaluate(yv, scores, qv, (self.metric,))[self.metric])
        self.curves[f"vali_{self.metric}"].append(value)
        # to ltr-bench tune's pruner, as the GBDTs report their rounds: the same budget
        # then prunes every ranker's hopeless trials (may raise optuna.TrialPruned)
        report_intermediate(it, value)
        if value > self._best or self._best_state is None:
            self._best, self.chosen = value, it
            self._best_state = copy.deepcopy(self.model.state_dict())
        patience = self.ranker.patience
        return patience is not None and it - self.chosen >= patience

    def _restore_best(self) -> None:
        if self._best_state is not None and self.ranker.patience is not None:
            self.model.load_state_dict(self._best_state)
        else:
            self.chosen = self.iterations

    def run(self) -> None:
        self.model.train()
        if self.ranker.optimizer == "lbfgs":
            self._run_lbfgs()
        else:
            self._run_minibatch()
        self._restore_best()

    # -------------------------------------------------------------- L-BFGS
    def _run_lbfgs(self) -> None:
        params = [p for p in self.model.parameters() if p.requires_grad]
        # max_eval: torch's default (max_iter * 5 // 4 = 1 here) would cut the line search
        # to one evaluation, so a first trial step that overshoots would end the fit at 0
        opt = torch.optim.LBFGS(
            params,
            lr=self.lr,
            max_iter=1,
            max_eval=25,
            history_size=10,
            line_search_fn="strong_wolfe",
        )
        D = self.n_queries
        it = 0

        def closure():
            opt.zero_grad()
            total = 0.0
            for b in self.batches:
                part = self.objective(b) * (b.n_queries / D)
                part.backward()
                total += float(part.detach())
            pen = _penalty(self.model, float(self.ranker.l2))
            if pen is not None:
                pen.backward()
                total += float(pen.detach())
            if not math.isfinite(total):
                raise _diverged(self.ranker, f"L-BFGS iteration {it + 1}", total, self.lr)
            return torch.tensor(total)

        previous = None
        for it in range(int(self.ranker.epochs)):
            loss = float(opt.step(closure))
            stop = self._record(it + 1, loss)
            if stop:
                break
            if previous is not None and abs(previous - loss) <= 1e-10 * max(1.0, abs(loss)):
                break
            previous = loss

    # -------------------------------------------------------------- mini-batches
    def _run_minibatch(self) -> None:
        params = [p for p in self.model.parameters() if p.requires_grad]
        name = self.ranker.optimizer
        cls = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW, "sgd": torch.optim.SGD}
        opt = cls[name](params, lr=self.lr)
        scheduler = make_scheduler(self.ranker, opt)
        l2 = float(self.ranker.l2)
        clip = self.ranker.grad_clip
        for epoch in range(1, int(self.ranker.epochs) + 1):
            total = 0.0
            for k in self.rng.permutation(len(self.batches)):
                b = self.batches[k]
                opt.zero_grad()
                loss = self.objective(b)
                pen = _penalty(self.model, l2)
                if pen is not None:
                    loss = loss + pen
                value = float(loss.detach())
                if not math.isfinite(value):
                    raise _diverged(self.ranker, f"epoch {epoch}", value, opt.param_groups[0]["lr"])
                loss.backward()
                if clip is not None:
                    torch.nn.utils.clip_grad_norm_(params, float(clip))
                opt.step()
                total += value * b.n_queries / self.n_queries
            stop = self._record(epoch, total)
            if scheduler is not None:
                if isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
                    key = f"vali_{self.metric}"
                    scheduler.step(-self.curves[key][-1] if key in self.curves else total)
                else:
                    scheduler.step()
            if stop:
                break


def make_scheduler(ranker, opt):
    if ranker.lr_scheduler is None:
        return None
    cls = getattr(torch.optim.lr_scheduler, ranker.lr_scheduler, None)
    if not isinstance(cls, type):
        names = [n for n in dir(torch.optim.lr_scheduler) if n[0].isupper() and "LR" in n]
        raise ValueError(
            f"lr_scheduler {ranker.lr_scheduler!r} is not a class of torch.optim.lr_scheduler; "
            f"e.g. {', '.join(sorted(names))}"
        )
    try:
        return cls(opt, **(ranker.lr_scheduler_args or {}))
    except TypeError as exc:
        raise ValueError(f"lr_scheduler {ranker.lr_scheduler}: {exc}") from None


def score_matrix(model, X, qid, ranker, device, dtype) -> np.ndarray:
    """Scores (float64, input row order) of standardised rows ``X``. Per-document scorers
    score rows in chunks of one pseudo-list; listwise scorers score padded query batches."""
    spec = SCORERS[ranker.scorer]
    n, d = X.shape
    out = np.empty(n, dtype=np.float64)
    width = d + int(getattr(model, "n_products", 0))
    if spec.listwise:
        for b in build_batches(
            X,
            None,
            qid,
            max_queries=None,
            budget=int(ranker.memory_budget),
            width=lambda L: width,
            dtype=dtype,
            device=device,
        ):
            s = ranking_scores(model(b.X, b.mask))
            rows = b.rows[b.mask].cpu().numpy()
            out[rows] = s[b.mask].detach().double().cpu().numpy()
        return out
    chunk = max(1, int(ranker.memory_budget) // max(1, width))
    for start in range(0, n, chunk):
        Xc = torch.as_tensor(X[start : start + chunk], dtype=dtype, device=device)[None]
        mask = torch.ones(Xc.shape[:2], dtype=torch.bool, device=device)
        s = ranking_scores(model(Xc, mask))[0]
        out[start : start + chunk] = s.detach().double().cpu().numpy()
    return out


def predict_scores(ranker, X, qid) -> np.ndarray:
    model = ranker.model_
    param = next(model.parameters(), None)
    device = param.device if param is not None else torch.device("cpu")
    dtype = param.dtype if param is not None else torch.float32
    if SCORERS[ranker.scorer].listwise and qid is None:
        raise ValueError(f"scorer {ranker.scorer!r} scores whole lists: predict needs qid")
    with torch_threads(ranker.n_threads), torch.inference_mode():
        X = transform_features(X, ranker.feature_transform)
        Xs = np.subtract(X, ranker.feature_mean_)
        np.divide(Xs, ranker.feature_scale_, out=Xs)  # the same numbers, one array fewer
        scores = score_matrix(model, Xs, qid, ranker, device, dtype)
    if not np.isfinite(scores).all():
        raise TrainingDivergedError("neural: the fitted model returned NaN or infinite scores")
    return scores

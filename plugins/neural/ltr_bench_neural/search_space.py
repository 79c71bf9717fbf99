"""The ``neural`` ranker's default ``ltr-bench tune`` search space, and the scorer shortcuts
(``width``, ``depth``, ``dropout``) it searches. Readable without torch.

``ltr-bench tune`` asks the ranker instance built with the user's parameters for its space
(``NeuralRanker.search_space``), so the space follows the scorer, the optimizer and the loss
chosen; parameters the user fixed are not searched (beside an allRank ``config``: the space of
the configuration it trains, see :func:`default_search_space`), and a plan's
``[tuning.LABEL]`` table overrides or removes any entry. Ranges
(``ltr_bench.tune.search_space.parse_spec`` forms):

- every configuration: ``l2`` log-uniform in [1e-6, 1e-1];
- the optimizer a fit uses (``auto`` resolved by the loss, ``ltr_bench_neural.defaults``)
  ``lbfgs``: ``epochs`` (iterations) in [10, 200] (log), ``patience`` in [3, 15];
- ``adam``/``adamw``: ``lr`` in [1e-4, 3e-2] (log); ``sgd``: ``lr`` in [1e-3, 0.3] (log);
  with ``batch_size`` in [8, 128] (log) and ``patience`` in [3, 15] (epochs stay at their value,
  the cap early stopping works under);
- ``mlp``: ``width`` in [16, 256] (log), ``depth`` in [1, 3], ``dropout`` in [0, 0.5]
  (a shortcut whose ``scorer_args`` key the user gave is left out, here and below);
- ``transformer``: ``width`` in {32, 64, 128} (d_model; d_ff = 4 * width), ``depth`` (encoder
  blocks N) in [1, 3], ``dropout`` in [0, 0.3];
- ``bilinear``: ``dim`` in [2, 32] (log), ``activation`` in {tanh, sigmoid}; ``distance``:
  ``dim`` in [2, 32] (log), ``tau`` in [0.1, 10] (log); ``quadratic``: ``rho`` in [0.05, 0.3];
- the losses with a smoothing scale (``smooth-ndcg``/``-err``/``-mrr``, ``neuralndcg``,
  ``approxndcg``, ``lambdaloss``): ``temperature`` in [0.1, 10] (log), which reaches each of
  them as its own argument (:data:`TEMPERATURE_ARGS`) unless ``loss_args`` gives that one.

Other loss arguments (``softmax``'s target, ``lambdaloss``'s weighing scheme, MRF gamma) change
what the loss is, so they are the user's choice, not searched.
"""

from __future__ import annotations

from typing import Any

#: loss function -> (its argument set by the ranker's ``temperature`` T, how): "T" passes T,
#: "1/T" passes 1/T (a sigmoid slope). The smooth-* losses read T already (their default None).
TEMPERATURE_ARGS: dict[str, tuple[str, str]] = {
    "neuralndcg": ("temperature", "T"),
    "approxndcg": ("alpha", "1/T"),
    "lambdaloss": ("sigma", "1/T"),
    "smooth_ndcg_loss": ("temperature", "T"),
    "smooth_err_loss": ("temperature", "T"),
    "smooth_mrr_loss": ("temperature", "T"),
}

#: the scorers the shortcuts apply to, and the scorer_args each shortcut sets
SHORTCUTS: dict[str, tuple[str, ...]] = {
    "mlp": ("sizes", "dropout"),
    "transformer": ("sizes", "d_ff", "N", "dropout"),
}

LOG = True


def _range(low, high, log=False) -> dict[str, Any]:
    return {"low": low, "high": high, "log": log} if log else {"low": low, "high": high}


def default_search_space(ranker) -> dict[str, Any]:
    """``{parameter: spec}`` for ``ranker``'s scorer, optimizer and loss (module docstring).

    With an allRank ``config``: the space of the configuration it trains (its scorer,
    optimizer and loss), without the parameters the config sets away from their defaults that
    a trial could draw at the default (a choice list or an integer range holding it): such a
    trial would train the config's value (a default cannot be told from no ``--param``), so
    the config fixes them. Real ranges (``lr``, ``l2``, ...) never draw the default itself and
    stay searched."""
    if getattr(ranker, "config", None) is not None:
        import inspect

        from ltr_bench_neural.allrank_config import effective_params

        effective, from_config, _, _ = effective_params(ranker)
        defaults = inspect.signature(type(ranker).__init__).parameters
        configured = default_search_space(type(ranker)(**effective))
        return {
            k: v
            for k, v in configured.items()
            if k not in from_config
            or from_config[k] == defaults[k].default
            or not _draws(v, defaults[k].default)
        }
    from ltr_bench_neural.defaults import resolved_optimizer
    from ltr_bench_neural.losses import resolve

    space: dict[str, Any] = {"l2": _range(1e-6, 1e-1, LOG)}
    optimizer = resolved_optimizer(ranker)
    if optimizer == "lbfgs":
        space["epochs"] = _range(10, 200, LOG)
    else:
        lr = (1e-3, 0.3) if optimizer == "sgd" else (1e-4, 3e-2)
        space["lr"] = _range(*lr, LOG)
        space["batch_size"] = _range(8, 128, LOG)
    space["patience"] = _range(3, 15)
    scorer = ranker.scorer
    fixed = set(ranker.scorer_args or {})  # a shortcut beside the key it sets is refused
    if scorer == "mlp":
        if "sizes" not in fixed:
            space.update(width=_range(16, 256, LOG), depth=_range(1, 3))
        if "dropout" not in fixed:
            space["dropout"] = _range(0.0, 0.5)
    elif scorer == "transformer":
        if not fixed & {"sizes", "d_ff"}:
            space["width"] = [32, 64, 128]
        if "N" not in fixed:
            space["depth"] = _range(1, 3)
        if "dropout" not in fixed:
            space["dropout"] = _range(0.0, 0.3)
    elif scorer == "bilinear":
        space.update(dim=_range(2, 32, LOG), activation=["tanh", "sigmoid"])
    elif scorer == "distance":
        space.update(dim=_range(2, 32, LOG), tau=_range(0.1, 10.0, LOG))
    elif scorer == "quadratic":
        space["rho"] = _range(0.05, 0.3)
    if isinstance(ranker.loss, str):
        try:
            spec, _ = resolve(ranker.loss)
        except ValueError:
            spec = None
        if spec is not None:
            arg = TEMPERATURE_ARGS.get(spec.function)
            if arg is not None and arg[0] not in (ranker.loss_args or {}):
                space["temperature"] = _range(0.1, 10.0, LOG)
    return space


def _draws(spec, value) -> bool:
    """Whether a spec of this module can draw ``value``: a list holding it, or an integer
    range around it (real ranges draw one given value with probability 0). The same question
    as ``ltr_bench.tune.search_space``'s check on Optuna distributions, for this module's two
    spec forms: a ranker may not import the tuner (the wings' one-way data flow)."""
    if isinstance(spec, list):
        return value in spec
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    low, high = spec["low"], spec["high"]
    return isinstance(low, int) and isinstance(high, int) and low <= value <= high


def temperature_loss_args(ranker, spec, args: dict[str, Any]) -> dict[str, Any]:
    """``args`` with the ranker's ``temperature`` passed to the loss's own smoothing argument
    (:data:`TEMPERATURE_ARGS`) when ``loss_args`` does not set it. At the default T = 1 every
    such argument keeps its default (1.0), so only a chosen T changes a loss."""
    entry = TEMPERATURE_ARGS.get(spec.function)
    if entry is None:
        return args
    name, how = entry
    if name in (ranker.loss_args or {}):
        return args
    T = float(ranker.temperature)
    if how == "1/T":
        if T != 1.0:
            args[name] = 1.0 / T
    elif args.get(name) is None or T != 1.0:
        args[name] = T
    return args


def scorer_args_of(ranker) -> dict[str, Any]:
    """``scorer_args`` with the shortcuts applied: ``mlp``: sizes = [width] * depth (width
    defaults to 64, depth to 2 when only the other is given), dropout; ``transformer``:
    sizes = [width], d_ff = 4 * width, N = depth, dropout (attention blocks)."""
    args = dict(ranker.scorer_args or {})
    width, depth, dropout = ranker.width, ranker.depth, ranker.dropout
    if ranker.scorer == "mlp":
        if width is not None or depth is not None:
            args["sizes"] = [int(width or 64)] * int(depth or 2)
        if dropout is not None:
            args["dropout"] = float(dropout)
    elif ranker.scorer == "transformer":
        if width is not None:
            args["sizes"] = [int(width)]
            args["d_ff"] = 4 * int(width)
        if depth is not None:
            args["N"] = int(depth)
        if dropout is not None:
            args["dropout"] = float(dropout)
    return args


def check_shortcuts(ranker) -> None:
    """Refuse ``width``/``depth``/``dropout`` for a scorer they do not apply to, or beside the
    scorer_args they would set (raises ``ValueError`` naming both)."""
    given = [n for n in ("width", "depth", "dropout") if getattr(ranker, n) is not None]
    if not given:
        return
    sets = SHORTCUTS.get(ranker.scorer)
    if sets is None:
        raise ValueError(
            f"{', '.join(given)}: the shortcut(s) apply to the mlp and transformer scorers, not "
            f"{ranker.scorer!r} (bilinear/distance: use dim)"
        )
    targets = {
        "width": ("sizes", "d_ff") if ranker.scorer == "transformer" else ("sizes",),
        "depth": ("N",) if ranker.scorer == "transformer" else ("sizes",),
        "dropout": ("dropout",),
    }
    clash = [
        (n, k) for n in given for k in targets[n] if k in (ranker.scorer_args or {}) and k in sets
    ]
    if clash:
        n, k = clash[0]
        raise ValueError(
            f"{n} and scorer_args.{k} both set the {ranker.scorer} scorer's {k}; give one"
        )

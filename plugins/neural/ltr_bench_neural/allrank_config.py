"""allRank configuration files, read unchanged: ``neural.config=PATH.json``.

An allRank config (``allrank/config_template.json``) becomes ``NeuralRanker`` parameters:

=====================================  =================================================
allRank                                ``neural``
=====================================  =================================================
``model.transformer`` null             ``scorer=mlp``: ``fc_model`` + ``post_model``
``model.transformer`` {N, h, d_ff, ..}  ``scorer=transformer``: the same, plus the encoder
``model.fc_model`` {sizes, ...}         ``scorer_args`` sizes, activation, dropout
                                       (``fc_dropout`` for the transformer), input_norm
``model.post_model``                   ``scorer_args`` d_output, output_activation
``optimizer`` {name, args.lr}          ``optimizer`` adam / adamw / sgd, ``lr``
``optimizer.args.weight_decay``        ``l2 = weight_decay / 2`` (the gradient of l2 * w^2
                                       is torch's weight decay; biases are not penalised)
``lr_scheduler`` {name, args}          ``lr_scheduler``, ``lr_scheduler_args``
``training.epochs``                    ``epochs``
``training.early_stopping_patience``   ``patience = early_stopping_patience + 1``
                                       (allRank stops when epoch - best > patience, ours
                                       when epoch - best >= patience)
``training.gradient_clipping_norm``    ``grad_clip``
``loss`` {name, args}                  ``loss``, ``loss_args`` (names below)
``val_metric`` ``ndcg_5``              ``val_metric`` ``ndcg@5``
``data.batch_size``, ``slate_length``  ``batch_size``, ``slate_length``
=====================================  =================================================

Loss names: ``neuralNDCG`` -> ``neuralndcg``, ``lambdaLoss`` -> ``lambdaloss`` (weighing
schemes ``ndcgLoss1_scheme`` ... -> ``ndcgLoss1`` ...; null -> ``rankNet``),
``approxNDCGLoss``/``approxNDCG`` -> ``approxndcg``, ``listNet`` -> ``listnet``, ``rankNet``
-> ``ranknet`` (``weight_by_diff`` -> weight ``rating-diff``), ``listMLE`` -> ``listmle``,
``ordinal``, ``bce``, ``pointwise_rmse`` -> ``rmse``. ``l2`` is 0 unless the optimizer has
weight decay (allRank has no other penalty).

Keys that do not apply here (``data.path``, ``num_workers``, ``validation_ds_role``,
``metrics``, ``expected_metrics``, ``detect_anomaly``, ``click_model``, unknown top-level
keys, loss arguments such as ``eps``) are listed in a notice (a warning). An unknown loss, a
loss argument the loss does not take, or an unknown key under ``model`` is an error naming
the file, the key and the known ones.

Overrides: a ``NeuralRanker`` parameter set to anything but its default (``--param``) wins
over the config; parameters left at their default take the config's value; a dict given
beside the config (``scorer_args``, ``loss_args``, ``lr_scheduler_args``) replaces only the
keys it names. (A ``--param`` equal to the default cannot be told from no ``--param``:
write such a value into the config. Where the config sets another value, ltr-bench refuses
the ``--param`` rather than train the config's while recording the user's:
:func:`ltr_bench_neural.allrank_overrides.check_overrides`.) The fitted ranker records the
config's parameters, the overrides and the notices (``fitted_info``), and MLflow logs the
``config`` path beside every parameter. Types, ranges and sizes of the whole file are
checked first: :mod:`ltr_bench_neural.allrank_checks`.
"""

from __future__ import annotations

import difflib
import inspect
import json
import warnings
from pathlib import Path
from typing import Any, cast

from ltr_bench_neural.allrank_checks import AllRankConfigError, check_config, check_scheduler

__all__ = ["AllRankConfigError", "AllRankConfigNotice", "effective_params", "translate"]


class AllRankConfigNotice(UserWarning):
    """Keys of an allRank config that do not apply here (listed, then ignored)."""


MODEL_KEYS = {
    "fc_model": ("sizes", "input_norm", "activation", "dropout"),
    "transformer": ("N", "d_ff", "h", "positional_encoding", "dropout"),
    "post_model": ("output_activation", "d_output"),
}
OPTIMIZERS = {"Adam": "adam", "AdamW": "adamw", "SGD": "sgd"}
SCHEMES = {
    None: "rankNet",
    "rankNet_scheme": "rankNet",
    "ndcgLoss1_scheme": "ndcgLoss1",
    "ndcgLoss2_scheme": "ndcgLoss2",
    "ndcgLoss2PP_scheme": "ndcgLoss2++",
    "lambdaRank_scheme": "lambdaRank",
    "rankNetWeightedByGTDiff_scheme": "rankNetWeightedByGTDiff",
    "rankNetWeightedByGTDiffPowed_scheme": "rankNetWeightedByGTDiffPowed",
}
# allRank loss name -> (our loss, {allRank arg: our arg}, allRank args that do not apply)
LOSSES: dict[str, tuple[str, dict[str, str], tuple[str, ...]]] = {
    "neuralNDCG": (
        "neuralndcg",
        {
            "temperature": "temperature",
            "powered_relevancies": "powered_relevancies",
            "k": "k",
            "stochastic": "stochastic",
        },
        ("padded_value_indicator", "n_samples", "beta", "log_scores"),
    ),
    "lambdaLoss": (
        "lambdaloss",
        {
            "weighing_scheme": "weighing_scheme",
            "k": "k",
            "sigma": "sigma",
            "mu": "mu",
            "reduction": "reduction",
            "reduction_log": "reduction_log",
        },
        ("eps", "padded_value_indicator"),
    ),
    "approxNDCGLoss": ("approxndcg", {"alpha": "alpha"}, ("eps", "padded_value_indicator")),
    "listNet": ("listnet", {}, ("eps", "padded_value_indicator")),
    "rankNet": ("ranknet", {}, ("padded_value_indicator",)),
    "rankNet_weightByGTDiff": ("ranknet", {}, ("padded_value_indicator",)),
    "listMLE": ("listmle", {}, ("eps", "padded_value_indicator")),
    "ordinal": ("ordinal", {"n": "n"}, ("padded_value_indicator",)),
    "bce": ("bce", {}, ("padded_value_indicator",)),
    "pointwise_rmse": ("rmse", {"no_of_levels": "no_of_levels"}, ("padded_value_indicator",)),
}
LOSSES["approxNDCG"] = LOSSES["approxNDCGLoss"]
NOT_APPLIED_TOP = ("metrics", "expected_metrics", "detect_anomaly", "click_model")
TOP_KEYS = ("model", "loss", "optimizer", "lr_scheduler", "training", "data", "val_metric")


def _err(where: str, key: str, problem: str) -> AllRankConfigError:
    return AllRankConfigError(f"{where}: key {key!r}: {problem}")


def _known(value: object, known) -> str:
    known = list(known)
    close = difflib.get_close_matches(str(value), known, n=3, cutoff=0.5)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    return f"{hint}; known: {', '.join(known)}"


def load(path) -> dict[str, Any]:
    """The JSON object of an allRank config file; errors name the file (and line)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AllRankConfigError(f"{p}: allRank config file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise AllRankConfigError(f"{p}: cannot read the allRank config: {exc}") from None
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AllRankConfigError(
            f"{p}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}); an allRank config is "
            "a JSON object (see allRank's config_template.json)"
        ) from None
    return cfg


def _section(cfg: dict, name: str, where: str, *, required: bool) -> dict | None:
    value = cfg.get(name)
    if value is None:
        if required:
            raise _err(where, name, "missing; an allRank config needs model, loss and optimizer")
        return None
    if not isinstance(value, dict):
        raise _err(where, name, f"must be a JSON object, got {value!r}")
    return value


def _check_keys(section: dict, known, where: str, prefix: str) -> None:
    for key in section:
        if key not in known:
            raise _err(where, f"{prefix}.{key}", "unknown" + _known(key, known))


def _model(model: dict, where: str) -> tuple[str, dict[str, Any]]:
    _check_keys(model, MODEL_KEYS, where, "model")
    parts = {}
    for name, keys in MODEL_KEYS.items():
        value = model.get(name)
        if value is not None and not isinstance(value, dict):
            raise _err(where, f"model.{name}", f"must be a JSON object or null, got {value!r}")
        if value is not None:
            _check_keys(value, keys, where, f"model.{name}")
        parts[name] = value or {}
    fc, tr, post = parts["fc_model"], parts["transformer"], parts["post_model"]
    args: dict[str, Any] = {
        "sizes": list(fc.get("sizes") or []),
        "activation": fc.get("activation"),
        "input_norm": bool(fc.get("input_norm", False)),
        "d_output": post.get("d_output", 1),
        "output_activation": post.get("output_activation"),
    }
    if model.get("transformer") is None:
        args["dropout"] = fc.get("dropout") or 0.0
        return "mlp", args
    args["fc_dropout"] = fc.get("dropout") or 0.0
    for key in ("N", "d_ff", "h"):
        if key in tr:
            args[key] = tr[key]
    args["dropout"] = tr.get("dropout") or 0.0
    heads, sizes = args.get("h", 1), args["sizes"]
    if sizes and isinstance(heads, int) and heads > 0 and sizes[-1] % heads:
        raise _err(
            where,
            "model.transformer.h",
            f"the number of heads h={heads} must divide d_model={sizes[-1]} "
            "(the last of model.fc_model.sizes)",
        )
    pe = tr.get("positional_encoding")
    if pe is not None:
        if not isinstance(pe, dict) or "strategy" not in pe:
            raise _err(
                where,
                "model.transformer.positional_encoding",
                f'must be null or {{"strategy": "fixed"|"learned", "max_indices": n}}, got {pe!r}',
            )
        args["positional_encoding"] = pe["strategy"]
        if "max_indices" in pe:
            args["max_indices"] = pe["max_indices"]
    return "transformer", args


def _check_activations(args: dict[str, Any], where: str) -> None:
    from ltr_bench_neural.scorers._blocks import activation_module

    for key, section in (("activation", "fc_model"), ("output_activation", "post_model")):
        try:
            activation_module(args.get(key), key)
        except ValueError as exc:
            raise _err(where, f"model.{section}.{key}", str(exc)) from None


def _loss(
    loss: dict, post_activation, where: str, notices: list[str]
) -> tuple[str, dict[str, Any], str | None]:
    """``(loss name, loss_args, weight or None)`` of the config's ``loss`` section."""
    _check_keys(loss, ("name", "args"), where, "loss")
    name = loss.get("name")
    if name not in LOSSES:
        raise _err(where, "loss.name", f"unknown allRank loss {name!r}" + _known(name, LOSSES))
    ours, mapping, ignored = LOSSES[name]
    given = loss.get("args") or {}
    if not isinstance(given, dict):
        raise _err(where, "loss.args", f"must be a JSON object, got {given!r}")
    out: dict[str, Any] = {}
    weight = None
    for key, value in given.items():
        if key in mapping:
            out[mapping[key]] = value
        elif name.startswith("rankNet") and key in ("weight_by_diff", "weight_by_diff_powed"):
            if value and key == "weight_by_diff":
                weight = "rating-diff"
            elif value:
                ours, out = "lambdaloss", {"weighing_scheme": "rankNetWeightedByGTDiffPowed"}
                out["reduction_log"] = "natural"
        elif key in ignored:
            notices.append(f"loss.args.{key} (not used by {ours})")
        else:
            known = [*mapping, *ignored]
            raise _err(where, f"loss.args.{key}", f"not an argument of {name}" + _known(key, known))
    if name == "rankNet_weightByGTDiff":
        weight = "rating-diff"
    if ours == "lambdaloss":
        scheme = out.get("weighing_scheme")
        if scheme not in SCHEMES:
            raise _err(
                where,
                "loss.args.weighing_scheme",
                f"unknown scheme {scheme!r}" + _known(scheme, [s for s in SCHEMES if s]),
            )
        out["weighing_scheme"] = SCHEMES[scheme]
    if ours == "neuralndcg" and not out.get("stochastic", False):
        out.pop("stochastic", None)
    if ours == "bce":
        # allRank applies BCE to the model's output: probabilities after a Sigmoid output
        # activation. Without one it would fail; we read the output as a logit instead.
        out["logits"] = str(post_activation).lower() != "sigmoid"
    return ours, out, weight


def _scheduler_class(name, where: str):
    import torch

    cls = getattr(torch.optim.lr_scheduler, str(name), None)
    if not isinstance(cls, type) or name.startswith("_"):
        known = sorted(
            n
            for n in dir(torch.optim.lr_scheduler)
            if n[0].isupper() and ("LR" in n or n.endswith("Plateau"))
        )
        raise _err(where, "lr_scheduler.name", f"unknown scheduler {name!r}" + _known(name, known))
    return cls


def translate(cfg, where: str = "<config>") -> tuple[dict[str, Any], list[str]]:
    """``(params, notices)``: NeuralRanker parameters of an allRank config, and the keys
    that do not apply. Raises :class:`AllRankConfigError` naming ``where`` and the key."""
    if not isinstance(cfg, dict):
        raise AllRankConfigError(
            f"{where}: not an allRank config: the top level must be a JSON object with model, "
            f"loss, optimizer, training, data (got {type(cfg).__name__})"
        )
    if "model" not in cfg or "loss" not in cfg:
        missing = [k for k in ("model", "loss") if k not in cfg]
        raise AllRankConfigError(
            f"{where}: not an allRank config: no {' or '.join(repr(m) for m in missing)} key "
            f"(top-level keys: {', '.join(map(str, cfg)) or 'none'}; see allRank's "
            "config_template.json)"
        )
    check_config(cfg, where, LOSSES)  # every type, range and size, before anything is read
    notices: list[str] = []
    params: dict[str, Any] = {"l2": 0.0}
    model = cast(dict, _section(cfg, "model", where, required=True))  # required: never None
    params["scorer"], params["scorer_args"] = _model(model, where)
    _check_activations(params["scorer_args"], where)
    post = (model.get("post_model") or {}).get("output_activation")
    params["loss"], loss_args, weight = _loss(
        cast(dict, _section(cfg, "loss", where, required=True)), post, where, notices
    )
    params["loss_args"] = loss_args
    if weight is not None:
        params["weight"] = weight
    opt = _section(cfg, "optimizer", where, required=False)
    if opt is not None:
        name = opt.get("name")
        if name not in OPTIMIZERS:
            raise _err(
                where,
                "optimizer.name",
                f"unsupported optimizer {name!r}" + _known(name, OPTIMIZERS),
            )
        params["optimizer"] = OPTIMIZERS[name]
        for key, value in (opt.get("args") or {}).items():
            if key == "lr":
                params["lr"] = value
            elif key == "weight_decay" and name != "AdamW":
                params["l2"] = float(value) / 2.0
            else:
                notices.append(f"optimizer.args.{key} (the {name} default is used)")
    sched = _section(cfg, "lr_scheduler", where, required=False)
    if sched is not None and sched.get("name") is not None:
        cls = _scheduler_class(sched["name"], where)
        sched_args = sched.get("args") or {}
        accepted = set(inspect.signature(cls).parameters) - {"optimizer"}
        for key in sched_args:
            if key not in accepted:
                raise _err(
                    where,
                    f"lr_scheduler.args.{key}",
                    f"not an argument of {sched['name']}" + _known(key, sorted(accepted)),
                )
        params["lr_scheduler"], params["lr_scheduler_args"] = sched["name"], dict(sched_args)
    training = _section(cfg, "training", where, required=False) or {}
    for key, value in training.items():
        if key == "epochs":
            params["epochs"] = value
        elif key == "early_stopping_patience":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise _err(
                    where,
                    "training.early_stopping_patience",
                    f"must be an integer >= 0, got {value!r}",
                )
            params["patience"] = value + 1
        elif key == "gradient_clipping_norm":
            params["grad_clip"] = value or None
        else:
            notices.append(f"training.{key}")
    data = _section(cfg, "data", where, required=False) or {}
    for key, value in data.items():
        if key == "batch_size":
            params["batch_size"] = value
        elif key == "slate_length":
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise _err(where, "data.slate_length", f"must be an integer >= 1, got {value!r}")
            params["slate_length"] = value
        else:
            notices.append(f"data.{key} (ltr-bench reads the data of --dataset)")
    vm = cfg.get("val_metric")
    if vm is not None:
        metric, _, at = str(vm).rpartition("_")
        if not metric or not at.isdigit():
            raise _err(where, "val_metric", f"expected <name>_<k> such as ndcg_5, got {vm!r}")
        params["val_metric"] = f"{metric}@{at}"
    for key in cfg:
        if key in NOT_APPLIED_TOP:
            notices.append(key)
        elif key not in TOP_KEYS:
            notices.append(f"{key} (not an allRank key)")
    return params, notices


def effective_params(ranker) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], list[str]]:
    """``(effective, from_config, overrides, notices)`` for a ranker with ``config`` set.

    ``effective`` is every parameter to train with (``config`` removed); ``overrides`` are
    the parameters set away from their defaults that replace a config value.
    """
    source = ranker.config
    if isinstance(source, dict):
        cfg, where = source, "<inline config>"
    elif isinstance(source, (str, Path)):
        cfg, where = load(source), str(source)
    else:
        raise AllRankConfigError(f"config must be a path to an allRank JSON file, got {source!r}")
    from_config, notices = translate(cfg, where)
    defaults = {
        name: p.default
        for name, p in inspect.signature(type(ranker).__init__).parameters.items()
        if p.default is not inspect.Parameter.empty
    }
    current = ranker.get_params(deep=False)
    explicit = {k: v for k, v in current.items() if k != "config" and v != defaults.get(k)}
    overrides = {k: v for k, v in explicit.items() if k in from_config and v != from_config[k]}
    effective = {**current, **from_config, **explicit, "config": None}
    for key in ("scorer_args", "loss_args", "lr_scheduler_args"):
        # a dict given beside the config changes the keys it names, not the whole table
        if isinstance(explicit.get(key), dict) and isinstance(from_config.get(key), dict):
            effective[key] = {**from_config[key], **explicit[key]}
    return effective, from_config, overrides, notices


def warn_notices(where, notices: list[str]) -> None:
    if notices:
        warnings.warn(
            f"allRank config {where}: keys that do not apply here, ignored: {'; '.join(notices)}",
            AllRankConfigNotice,
            stacklevel=3,
        )


def check_torch_names(ranker) -> None:
    """Pre-data check of the names that only torch knows: the activations of the ``mlp`` and
    ``transformer`` scorers and ``lr_scheduler`` with its argument names (ValueError naming
    the parameter and close matches). Imports torch only when one of them is set."""
    args = ranker.scorer_args or {}
    if ranker.scorer in ("mlp", "transformer") and isinstance(args, dict):
        from ltr_bench_neural.scorers._blocks import activation_module

        for key in ("activation", "output_activation"):
            if key in args:
                try:
                    activation_module(args[key], key)
                except ValueError as exc:
                    raise ValueError(f"scorer_args: {exc}") from None
    if isinstance(ranker.lr_scheduler, str):
        try:
            cls = _scheduler_class(ranker.lr_scheduler, "lr_scheduler")
        except AllRankConfigError as exc:
            raise ValueError(
                str(exc).replace("lr_scheduler: key 'lr_scheduler.name': ", "lr_scheduler: ")
            ) from None
        accepted = set(inspect.signature(cls).parameters) - {"optimizer"}
        for key in ranker.lr_scheduler_args or {}:
            if key not in accepted:
                raise ValueError(
                    f"lr_scheduler_args: {key!r} is not an argument of {ranker.lr_scheduler}"
                    + _known(key, sorted(accepted))
                )
        lr, epochs = ranker.lr or 1e-3, ranker.epochs  # types and a trial, as for a config
        args, where = dict(ranker.lr_scheduler_args or {}), "key 'lr_scheduler_args"
        check_scheduler(ranker.lr_scheduler, args, lr=lr, epochs=epochs, where=where)


def effective_ranker(ranker):
    """A new ranker of ``ranker``'s class with the config applied (``config=None``), its
    parameters validated, plus what :func:`effective_params` returns about it."""
    effective, from_config, overrides, notices = effective_params(ranker)
    work = type(ranker)(**effective)
    where = ranker.config if not isinstance(ranker.config, dict) else "<inline config>"
    try:
        work._validate_params()
    except ValueError as exc:
        raise AllRankConfigError(f"{where}: {exc}") from None
    return work, from_config, overrides, notices


def validate_config(ranker) -> None:
    """The pre-data check of a ranker with ``config`` (raises :class:`AllRankConfigError`)."""
    effective_ranker(ranker)


def fit_with_config(ranker: Any, X: Any, y: Any, *, qid: Any, eval_set: Any = None) -> Any:
    """Fit ``ranker`` as its allRank config says (``--param`` overrides applied); the fitted
    state is copied onto ``ranker`` and ``fitted_info`` records the config's parameters,
    the overrides and the notices."""
    work, from_config, overrides, notices = effective_ranker(ranker)
    where = ranker.config if not isinstance(ranker.config, dict) else "<inline config>"
    warn_notices(where, notices)
    work.fit(X, y, qid=qid, eval_set=eval_set)
    for name in ("n_features_in_", "model_", "feature_mean_", "feature_scale_", "curves_"):
        setattr(ranker, name, getattr(work, name))
    ranker.effective_ = work
    ranker.info_ = {
        **work.info_,
        "config_params": json.dumps(from_config, sort_keys=True, default=str),
        "config_overrides": json.dumps(overrides, sort_keys=True, default=str),
        "config_notices": "; ".join(notices),
    }
    return ranker

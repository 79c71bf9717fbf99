"""Every check of an allRank config that needs no data, in one place: the schema of the whole
file (:data:`SCHEMA`), the loss arguments' ranges, the scheduler built once on a dummy
parameter, and the output sizes against the loss (the ``--param`` overrides:
:mod:`ltr_bench_neural.allrank_overrides`).

:func:`check_config` runs first in :func:`ltr_bench_neural.allrank_config.translate`, so a
wrongly typed value is named by file, key, expected type and value (never a Python message
such as ``unhashable type: 'list'``, never a traceback) before any data is loaded, and
nothing is found only after training started. Unknown keys are left to ``translate``, which
names them with close matches (or lists them as notices where allRank allows them).
"""

from __future__ import annotations

import inspect
import numbers
import re
from dataclasses import dataclass, field
from typing import Any

from ltr_bench_neural.losses.arguments import number_fits

__all__ = ["SCHEMA", "AllRankConfigError", "Spec", "check_config", "check_scheduler"]


class AllRankConfigError(ValueError):
    """An allRank config that cannot be run: the message names the file and the key
    (importable from :mod:`ltr_bench_neural.allrank_config` as well)."""


@dataclass(frozen=True)
class Spec:
    """The type of one JSON value: ``kind`` object / list / int / number / string / bool /
    any; ``fields`` (object: the known keys; others are not checked here); ``items`` (list);
    ``low`` / ``high`` bounds (``*_open``: exclusive); ``choices`` (string); ``null``."""

    kind: str
    fields: dict[str, Spec] = field(default_factory=dict)
    items: Spec | None = None
    low: float | None = None
    low_open: bool = False
    high: float | None = None
    high_open: bool = False
    choices: tuple[str, ...] = ()
    null: bool = False

    def text(self) -> str:
        base = {
            "object": "a JSON object",
            "list": "a list",
            "int": "an integer",
            "number": "a finite number",
            "string": "a string",
            "bool": "true or false",
            "any": "a value",
        }[self.kind]
        if self.items is not None:
            base += f" (each {self.items.text()})"
        if self.choices:
            base = "one of " + ", ".join(repr(c) for c in self.choices)
        if self.low is not None and self.high is not None:
            lb, rb = "(" if self.low_open else "[", ")" if self.high_open else "]"
            base += f" in {lb}{self.low:g}, {self.high:g}{rb}"
        elif self.low is not None:
            base += f" {'>' if self.low_open else '>='} {self.low:g}"
        return base + (" or null" if self.null else "")


def _obj(null: bool = False, **fields: Spec) -> Spec:
    return Spec("object", fields=fields, null=null)


_COUNT = Spec("int", low=1)
_DROPOUT = Spec("number", low=0.0, high=1.0, high_open=True, null=True)
_NAME = Spec("string", null=True)

#: the allRank config as ltr-bench reads it (allRank's ``config_template.json``)
SCHEMA = _obj(
    model=_obj(
        fc_model=_obj(
            null=True,
            sizes=Spec("list", items=_COUNT, null=True),
            input_norm=Spec("bool", null=True),
            activation=_NAME,
            dropout=_DROPOUT,
        ),
        transformer=_obj(
            null=True,
            N=_COUNT,
            d_ff=_COUNT,
            h=_COUNT,
            positional_encoding=_obj(
                null=True,
                strategy=Spec("string", choices=("fixed", "learned")),
                max_indices=_COUNT,
            ),
            dropout=_DROPOUT,
        ),
        post_model=_obj(null=True, output_activation=_NAME, d_output=_COUNT),
    ),
    loss=_obj(name=Spec("string"), args=_obj(null=True)),
    optimizer=_obj(
        null=True,
        name=Spec("string"),
        args=_obj(
            null=True,
            lr=Spec("number", low=0.0, low_open=True),
            weight_decay=Spec("number", low=0.0),
        ),
    ),
    lr_scheduler=_obj(null=True, name=_NAME, args=_obj(null=True)),
    training=_obj(
        null=True,
        epochs=_COUNT,
        early_stopping_patience=Spec("int", low=0),
        gradient_clipping_norm=Spec("number", low=0.0, null=True),
    ),
    data=_obj(null=True, batch_size=_COUNT, slate_length=_COUNT),
    val_metric=_NAME,
)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, numbers.Integral):
        return "the integer"
    if isinstance(value, numbers.Real):
        return "the number"
    names: dict[type, str] = {dict: "an object", list: "a list", str: "the string"}
    return names.get(type(value), "a value")


def _fits(spec: Spec, value: Any) -> bool:
    if value is None:
        return spec.null or spec.kind == "any"
    kind = spec.kind
    if kind == "any":
        return True
    if kind == "object":
        return isinstance(value, dict)
    if kind == "list":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str) and (not spec.choices or value in spec.choices)
    if kind == "bool":
        return isinstance(value, bool)
    return number_fits(
        value,
        integer=kind == "int",
        low=spec.low,
        low_open=spec.low_open,
        high=spec.high,
        high_open=spec.high_open,
    )


def _got(value: Any) -> str:
    """``the string '16'``, ``a list [1, 2]`` (at most 60 characters of the value)."""
    shown = repr(value)
    return f"{_kind(value)} {shown if len(shown) <= 60 else shown[:57] + '...'}"


def _problem(where: str, key: str, expected: str, value: Any):
    return AllRankConfigError(f"{where}: key {key!r}: must be {expected}, got {_got(value)}")


def _walk(value: Any, spec: Spec, key: str, where: str) -> None:
    if not _fits(spec, value):
        raise _problem(where, key, spec.text(), value)
    if isinstance(value, dict):
        for name, sub in spec.fields.items():
            if name in value:
                _walk(value[name], sub, f"{key}.{name}" if key else name, where)
    elif isinstance(value, list) and spec.items is not None:
        for i, item in enumerate(value):
            _walk(item, spec.items, f"{key}[{i}]", where)


def _loss_args(cfg: dict, where: str, LOSSES: dict) -> None:
    """Types and ranges of the loss arguments (the loss's own rules, by the allRank name)."""
    from ltr_bench_neural.losses.arguments import ARG_RULES, arg_problem

    name = cfg["loss"].get("name")
    if name not in LOSSES:
        return  # named by translate, with close matches
    ours, mapping, _ = LOSSES[name]
    for key, value in (cfg["loss"].get("args") or {}).items():
        rule = ARG_RULES.get(ours, {}).get(mapping.get(key, ""))
        if key == "weighing_scheme" or rule is None:
            continue  # allRank's scheme names (translate), or an argument not ours
        if arg_problem(ours, mapping[key], value):
            raise _problem(where, f"loss.args.{key}", rule.text(), value)


def _sizes(cfg: dict, where: str, LOSSES: dict) -> None:
    """The scorer's outputs fit the loss: ``ordinal`` needs ``d_output = n`` outputs (one per
    threshold), every other loss one output per document."""

    post = cfg["model"].get("post_model") or {}
    d_output = post.get("d_output", 1)
    name = cfg["loss"].get("name")
    ours = LOSSES[name][0] if name in LOSSES else None
    if ours == "ordinal":
        n = (cfg["loss"].get("args") or {}).get("n")
        if n is not None and n != d_output:
            raise _problem(
                where, "model.post_model.d_output", f"{n} (loss.args.n: one output per threshold)",
                d_output,
            )  # fmt: skip
        if d_output < 2 and n is None:
            raise _problem(
                where, "model.post_model.d_output",
                "the number of thresholds n >= 2 of the ordinal loss", d_output,
            )  # fmt: skip
    elif ours is not None and d_output != 1:
        raise _problem(
            where, "model.post_model.d_output", f"1 (one score per document for {name})", d_output
        )


_SIMPLE = {"int": Spec("int"), "float": Spec("number"), "bool": Spec("bool"), "str": Spec("string")}


def _annotation_specs(annotation: Any) -> list[Spec] | None:
    """The specs a torch scheduler argument's annotation allows (None: not readable)."""
    if not isinstance(annotation, str):
        return None
    specs: list[Spec] = []
    for part in (p.strip() for p in annotation.split("|")):
        literal = re.fullmatch(r"Literal\[(.*)\]", part)
        if part == "None":
            specs.append(Spec("any", null=True))
        elif part in _SIMPLE:
            specs.append(_SIMPLE[part])
        elif literal:
            specs.append(Spec("string", choices=tuple(re.findall(r"'([^']*)'", literal[1]))))
        elif re.fullmatch(r"(list|Iterable|Sequence)\[(int|float)\]", part):
            item = _SIMPLE[part.split("[")[1].rstrip("]")]
            specs.append(Spec("list", items=item))
        else:
            return None
    return specs


def _scheduler(cfg: dict, where: str) -> None:
    sched = cfg.get("lr_scheduler") or {}
    if sched.get("name") is not None:
        check_scheduler(
            sched["name"],
            dict(sched.get("args") or {}),
            lr=((cfg.get("optimizer") or {}).get("args") or {}).get("lr", 1e-3),
            epochs=(cfg.get("training") or {}).get("epochs") or 3,
            where=f"{where}: key 'lr_scheduler.args",
        )


def check_scheduler(name: str, args: dict, *, lr: float, epochs: int, where: str) -> None:
    """Each argument of scheduler ``name`` against torch's annotation, the required ones
    present, then the scheduler built on a dummy parameter and stepped once per epoch (at
    most 10,000): what training would meet, found now. Unknown names and arguments are left
    to the callers (they name them with close matches). Raises :class:`AllRankConfigError`
    starting with ``where`` (``<file>: key 'lr_scheduler.args`` for a config, ``key
    'lr_scheduler_args`` for a parameter), followed by ``.<argument>'`` or ``'``."""
    import torch

    cls = getattr(torch.optim.lr_scheduler, str(name), None)
    if not isinstance(cls, type) or str(name).startswith("_"):
        return
    params = inspect.signature(cls).parameters
    if any(key not in params or key == "optimizer" for key in args):
        return
    for key, value in args.items():
        specs = _annotation_specs(params[key].annotation)
        if specs and not any(_fits(s, value) for s in specs):
            expected = " or ".join(dict.fromkeys(s.text() for s in specs))
            raise AllRankConfigError(f"{where}.{key}': must be {expected}, got {_got(value)}")
    missing = [
        k
        for k, p in params.items()
        if k != "optimizer" and p.default is inspect.Parameter.empty and k not in args
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]  # fmt: skip
    if missing:
        raise AllRankConfigError(f"{where}.{missing[0]}': missing; {name} needs it")
    try:
        opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=lr)
        scheduler = cls(opt, **args)
        for _ in range(min(int(epochs), 10_000)):  # one step per epoch, as training does
            opt.step()
            if isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
                scheduler.step(1.0)
            else:
                scheduler.step()
    except Exception as exc:  # noqa: BLE001 - any failure is the arguments', named
        raise AllRankConfigError(
            f"{where}': {name}(**{args}) fails: {type(exc).__name__}: {exc}"
        ) from None


def check_config(cfg: dict, where: str, losses: dict) -> None:
    """The whole config against :data:`SCHEMA`, then the loss arguments, the output sizes
    and the scheduler; ``losses`` is :data:`ltr_bench_neural.allrank_config.LOSSES` (allRank
    name -> our loss, argument names). Raises :class:`AllRankConfigError` naming ``where``
    (the file), the key, the expected type and the value."""
    _walk(cfg, SCHEMA, "", where)
    _loss_args(cfg, where, losses)
    _sizes(cfg, where, losses)
    _scheduler(cfg, where)

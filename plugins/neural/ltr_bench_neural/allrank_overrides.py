"""A ``--param`` set beside an allRank config is applied or refused, never recorded without
effect (issue 33): :func:`check_overrides`, called through
``NeuralRanker.check_user_params`` when the plan is expanded."""

from __future__ import annotations

from typing import Any

from ltr_bench_neural.allrank_config import AllRankConfigError, effective_params

__all__ = ["check_overrides"]


def check_overrides(ranker, user_params: dict[str, Any]) -> None:
    """Refuse a parameter the user set beside the config that would not be applied: one
    equal to its default (a default cannot be told from no ``--param``) whose config value
    differs, so the config's would be trained while the record said the user's. Raises
    :class:`AllRankConfigError` naming the file, the parameter and both values."""
    effective, from_config, _, _ = effective_params(ranker)
    where = "<inline config>" if isinstance(ranker.config, dict) else str(ranker.config)
    for name, value in sorted(user_params.items()):
        if name == "config" or name not in from_config:
            continue
        applied = effective.get(name)
        if isinstance(value, dict) and isinstance(applied, dict):
            lost = any(applied.get(k) != v for k, v in value.items())
        else:
            lost = applied != value
        if lost:
            raise AllRankConfigError(
                f"{where}: {name}={value!r} would have no effect: it equals the neural "
                f"default, which cannot be told from no --param, so the config's "
                f"{name}={from_config[name]!r} would be trained; to train with {name}="
                f"{value!r}, set it in the config file (or run without a config)"
            )

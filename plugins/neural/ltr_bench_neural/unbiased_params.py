"""The values of ``NeuralRanker.unbiased`` and their checks, without torch (plans are
validated before torch is imported; the objectives are in :mod:`ltr_bench_neural.unbiased`)."""

from __future__ import annotations

__all__ = ["POSITION_MODES", "PROPENSITY_SOURCES", "UNBIASED_MODES", "check_unbiased_params"]

#: the values of ``NeuralRanker.unbiased``
UNBIASED_MODES = ("none", "naive", "ips", "dla")
#: the modes that need the click keywords of ``fit`` (``RankerTags.accepts_position``)
POSITION_MODES = ("ips", "dla")
#: the values of ``NeuralRanker.propensity``: the click model's truth, or an estimate
PROPENSITY_SOURCES = ("true", "randomisation", "em")


def check_unbiased_params(ranker) -> None:
    """Refuse (``ValueError``) ``unbiased`` values and the settings it cannot combine with."""
    mode = ranker.unbiased
    source = getattr(ranker, "propensity", "true")
    if source not in PROPENSITY_SOURCES:
        raise ValueError(
            f"propensity must be one of {', '.join(PROPENSITY_SOURCES)}, got {source!r}"
        )
    if source != "true" and mode != "ips":
        raise ValueError(
            f"propensity={source!r} chooses the propensities of unbiased='ips'; with "
            f"unbiased={mode!r} nothing uses them"
        )
    if not isinstance(mode, str) or mode not in UNBIASED_MODES:
        import difflib

        close = difflib.get_close_matches(str(mode).lower(), UNBIASED_MODES, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"unbiased must be one of {', '.join(UNBIASED_MODES)}, got {mode!r}{hint}")
    if mode == "none":
        return
    if ranker.config is not None:
        raise ValueError(f"unbiased={mode!r} cannot be combined with an allRank config")
    if ranker.group != "none":
        raise ValueError(f"unbiased={mode!r} needs group='none', got {ranker.group!r}")
    if ranker.loss != "softmax":
        raise ValueError(
            f"unbiased={mode!r} trains the propensity-weighted softmax cross-entropy (Ai et al. "
            f"2018) in place of the loss: leave loss at 'softmax', got {ranker.loss!r}"
        )
    if mode == "dla" and ranker.optimizer == "lbfgs":  # "auto" resolves to adam for dla
        raise ValueError(
            "unbiased='dla' learns the propensities jointly by alternating gradient steps, "
            "which L-BFGS's line search cannot follow: set optimizer to adam, adamw or sgd"
        )

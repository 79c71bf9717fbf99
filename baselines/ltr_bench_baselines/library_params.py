"""The parameter names LightGBM and XGBoost know, read from the libraries themselves, so that
a misspelt key in ``extra_params`` is refused with its close matches instead of being ignored
(LightGBM ignores an unknown key silently at ``verbosity=-1``; XGBoost only warns).

* LightGBM: every parameter and alias of ``LGBM_DumpParamAliases`` (the C library's own
  table, through ``lightgbm.basic._ConfigAliases``).
* XGBoost: every parameter in the JSON configuration of a ranking booster
  (``Booster.save_config()``: the learner's, the objective's, the tree booster's and its
  updaters'), the global configuration's (``xgboost.get_config()``) and ``eval_metric``
  (a training-time parameter the saved configuration leaves out).
"""

from __future__ import annotations

import difflib
import functools
import json

__all__ = ["check_library_keys", "known_parameters"]


@functools.cache
def known_parameters(library: str) -> frozenset[str]:
    """Parameter names (and aliases) ``library`` (``"lightgbm"`` or ``"xgboost"``) accepts."""
    if library == "lightgbm":
        from lightgbm.basic import _ConfigAliases

        names: set[str] = set()
        for main, aliases in _ConfigAliases._get_all_param_aliases().items():
            names.add(main)
            names.update(aliases)
        return frozenset(names)
    if library == "xgboost":
        import numpy as np
        import xgboost as xgb

        dm = xgb.DMatrix(np.zeros((4, 1)), label=[0, 1, 0, 1], qid=[0, 0, 1, 1])
        names = set()

        def walk(obj):
            if isinstance(obj, dict):
                for k, v in obj.items():
                    if isinstance(v, str):
                        names.add(k)
                    walk(v)
            elif isinstance(obj, list):
                for v in obj:
                    walk(v)

        for objective in ("rank:ndcg", "rank:pairwise", "rank:map"):
            booster = xgb.Booster({"objective": objective, "tree_method": "hist"}, [dm])
            walk(json.loads(booster.save_config()))
        names.update(xgb.get_config())
        names.update({"eval_metric", "nthread", "seed", "eta", "lambda", "alpha"})
        return frozenset(names)
    raise ValueError(f"unknown library {library!r}")


def check_library_keys(library: str, keys) -> None:
    """Raise ``ValueError`` naming each key of ``extra_params`` ``library`` does not know,
    with its close matches."""
    known = known_parameters(library)
    bad = [k for k in keys if k not in known]
    if not bad:
        return
    parts = []
    for k in bad:
        close = difflib.get_close_matches(str(k), sorted(known), n=3)
        hint = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
        parts.append(f"{k!r}{hint}")
    raise ValueError(
        f"extra_params: {library} has no parameter {'; '.join(parts)}; see its documentation "
        "of parameters"
    )

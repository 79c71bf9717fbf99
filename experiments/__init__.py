"""Experiment plans (``experiments/*.toml``) and the rankers only they use.

Each TOML file is a benchmark plan run with ``ltr-bench run --config experiments/NAME.toml``
and summarised with ``ltr-bench report``; the README's "Results measured here" and
"Reproducing the paper" sections give the commands. What a plan cannot express lives in the
modules here and is named by import path in a plan, e.g.
``ranker = "experiments.mlr:MLRWithCV"`` (run from the repository root, so that the
``experiments`` package is importable).
"""

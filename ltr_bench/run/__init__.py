"""Running a plan: the plan itself, its cells, the harness and the executors.

Owns the plan (:mod:`.plan`: rankers x datasets x folds x configurations x seeds, read from
TOML or built from command-line options in :mod:`.plan_options`), its expansion into cells
(:mod:`.cells`), the harness that fits, scores and evaluates one cell (:mod:`.harness`) and
the executors that run cells in process or on Dask (:mod:`.executors`).

May import the root contract, ``data``, ``evaluation`` and ``results``. Must not import
MLflow, ``tracking``, ``report``, ``tune`` or ``cli``: listeners passed in by the caller are
how a run is observed.
"""

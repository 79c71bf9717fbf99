"""Running a plan: the plan itself, its cells, the harness and the executors.

Owns the plan (:mod:`.plan`: rankers x datasets x folds x configurations x seeds, read from
TOML or built from command-line options in :mod:`.plan_options`), its expansion into cells
(:mod:`.cells`), the unit of work that fits, scores and evaluates one cell (:mod:`.unit`),
the harness that runs a plan cell after cell, saving each result before its listeners
(:mod:`.listener`) hear of it (:mod:`.harness`), and the executors that run cells in process
(:mod:`.executors`) or on Dask (:mod:`.dask_executor`).

May import the root contract, ``data``, ``evaluation`` and ``results``. Must not import
MLflow, ``tracking``, ``report``, ``tune`` or ``cli``: listeners passed in by the caller are
how a run is observed.
"""

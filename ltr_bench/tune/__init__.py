"""Tuning: Optuna studies on validation data with an equal budget for every ranker.

Owns the study of one tuned cell (:mod:`.study`: budget, the tuning split carved from the
training data, resumable studies, the Dask unit of work) and the search spaces
(:mod:`.search_space`). May import the root contract, ``data``, ``evaluation``, ``results``
and ``run``. Never touches a test split while choosing.
"""

"""Parameters that make every ranker fit in well under a second on the small generated data of
the model tests (saving, loading, exporting): only speed, and leaf sizes the data can split."""

SPEED = {
    "lightgbm": {"n_estimators": 8, "num_leaves": 7, "min_data_in_leaf": 2},
    "lightgbm-dask": {"n_estimators": 5, "num_leaves": 7, "min_data_in_leaf": 2},
    "xgboost-gbrt": {"n_estimators": 8, "max_leaves": 7},
    "xgboost-lambdamart": {"n_estimators": 8, "max_leaves": 7, "min_child_weight": 1e-3},
    "xgboost-dask": {"n_estimators": 5, "max_leaves": 7, "min_child_weight": 1e-3},
    "catboost": {"n_estimators": 8, "depth": 3},
    "mlr": {"max_iter": 10, "admm_max_iter": 100},
    "rmlr": {"max_iter": 10, "admm_max_iter": 100},
    "lgmml": {"n_metrics": 6, "n_iter": 100},
    "neural": {"epochs": 3},
}

"""What a scoring request to a served kept model looks like and answers: the body built by
:func:`ltr_bench.tracking.models.request_body` from a split's rows scores as the model does,
and a request without some of the model's columns is refused with the cause first (not
MLflow's dump of the request and the schema). In-process, through ``mlflow.pyfunc``: the
served round trip is ``tests/test_tracking_serve.py``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ltr_bench import data
from ltr_bench.models import load_model
from ltr_bench.results import ResultStore
from ltr_bench.run.cells import expand_plan
from ltr_bench.run.harness import run_plan
from ltr_bench.run.plan import DatasetChoice, Plan, RankerChoice

TINY = {"n_queries": 12, "docs_per_query": 5, "n_features": 4, "n_informative": 2}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A kept ridge model saved as the MLflow Model ``run`` logs, loaded by ``mlflow.pyfunc``
    (what ``mlflow models serve`` calls), and the split it was tested on."""
    import mlflow.pyfunc

    from ltr_bench.tracking.models import _save

    root = tmp_path_factory.mktemp("results")
    plan = Plan(
        rankers=[RankerChoice("ridge", {})],
        datasets=[DatasetChoice("synthetic", dict(TINY))],
        folds=[1],
        seed=1,
        threads=1,
    )
    (rec,) = run_plan(
        expand_plan(plan, score_repeats=1, keep_models=root), ResultStore(root)
    ).records
    path = tmp_path_factory.mktemp("mlflow") / "model"
    model = load_model(rec.model_dir)
    _save(path, "r" * 32, "m-" + "0" * 32, rec.model_dir, model.manifest, 4)
    test = data.load_fold("synthetic", 1, seed=1, options=dict(TINY)).test
    return mlflow.pyfunc.load_model(str(path)), model, test


def _frame(body: dict) -> pd.DataFrame:
    split = json.loads(json.dumps(body))["dataframe_split"]  # what travels is JSON
    return pd.DataFrame(split["data"], columns=split["columns"])


def test_the_request_body_has_every_column_and_scores_as_the_model(served):
    from ltr_bench.tracking.models import request_body

    pyfunc, model, test = served
    body = request_body(test.X, test.qid)
    assert body["dataframe_split"]["columns"] == ["qid", "f1", "f2", "f3", "f4"]
    scores = np.asarray(pyfunc.predict(_frame(body)))
    np.testing.assert_allclose(scores, model.predict(test.X, test.qid), rtol=0, atol=1e-12)


def test_a_request_without_some_columns_says_so_first(served):
    from mlflow.exceptions import MlflowException

    pyfunc, _, test = served
    frame = pd.DataFrame({"qid": test.qid[:3], "f1": test.X[:3, 0], "f2": test.X[:3, 1]})
    with pytest.raises(MlflowException) as caught:
        pyfunc.predict(frame)
    message = caught.value.message
    assert message.startswith("the input lacks feature column(s) f3, f4;"), message
    assert "Failed to enforce schema" not in message

"""allRank configuration files: translation, overrides, notices and bad input."""

from __future__ import annotations

import copy
import json
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ltr_bench.testing import make_check_data  # noqa: E402
from ltr_bench_neural.allrank_config import (  # noqa: E402
    AllRankConfigError,
    AllRankConfigNotice,
    effective_params,
    translate,
)
from ltr_bench_neural.ranker import NeuralRanker  # noqa: E402
from ltr_bench_neural.training import TrainingDivergedError  # noqa: E402

# The layout of allRank's reproducibility configs (its config_template.json), small sizes.
CONTEXT_AWARE = {
    "model": {
        "fc_model": {"sizes": [16], "input_norm": False, "activation": None, "dropout": 0.0},
        "transformer": {
            "N": 1,
            "d_ff": 32,
            "h": 2,
            "positional_encoding": None,
            "dropout": 0.1,
        },
        "post_model": {"output_activation": "Tanh", "d_output": 1},
    },
    "data": {
        "path": "MLSR-WEB30K-FOLD1-PATH",
        "validation_ds_role": "vali",
        "num_workers": 1,
        "batch_size": 4,
        "slate_length": 12,
    },
    "optimizer": {"name": "Adam", "args": {"lr": 0.01}},
    "lr_scheduler": {"name": "StepLR", "args": {"step_size": 50, "gamma": 0.1}},
    "training": {"epochs": 3, "early_stopping_patience": 100, "gradient_clipping_norm": None},
    "val_metric": "ndcg_5",
    "metrics": ["ndcg_5", "ndcg_10"],
    "loss": {
        "name": "neuralNDCG",
        "args": {"temperature": 1.0, "k": None, "powered_relevancies": True, "stochastic": False},
    },
    "detect_anomaly": False,
    "expected_metrics": {"val": {"ndcg_5": 0.5}},
}


def config_file(tmp_path, cfg, name="config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(cfg, indent=2))
    return str(path)


def variant(**changes):
    cfg = copy.deepcopy(CONTEXT_AWARE)
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        node = cfg
        for key in parents:
            node = node[key]
        node[last] = value
    return cfg


def test_a_context_aware_config_becomes_the_transformer_with_allranks_settings():
    params, notices = translate(CONTEXT_AWARE, "c.json")
    assert params == {
        "scorer": "transformer",
        "scorer_args": {
            "sizes": [16],
            "activation": None,
            "input_norm": False,
            "fc_dropout": 0.0,
            "N": 1,
            "d_ff": 32,
            "h": 2,
            "dropout": 0.1,
            "d_output": 1,
            "output_activation": "Tanh",
        },
        "loss": "neuralndcg",
        "loss_args": {"temperature": 1.0, "k": None, "powered_relevancies": True},
        "optimizer": "adam",
        "lr": 0.01,
        "l2": 0.0,
        "lr_scheduler": "StepLR",
        "lr_scheduler_args": {"step_size": 50, "gamma": 0.1},
        "epochs": 3,
        "patience": 101,
        "grad_clip": None,
        "batch_size": 4,
        "slate_length": 12,
        "val_metric": "ndcg@5",
    }
    listed = "; ".join(notices)
    for key in ("data.path", "data.num_workers", "data.validation_ds_role", "metrics"):
        assert key in listed
    assert "expected_metrics" in listed and "detect_anomaly" in listed


def test_an_mlp_config_and_allranks_loss_names_map_to_ours():
    cfg = variant(
        model__transformer=None,
        model__fc_model={"sizes": [8, 4], "input_norm": True, "activation": "ReLU", "dropout": 0.2},
    )
    cfg["loss"] = {
        "name": "lambdaLoss",
        "args": {"weighing_scheme": "ndcgLoss2PP_scheme", "k": 5, "mu": 10, "sigma": 1.0},
    }
    params, _ = translate(cfg)
    assert params["scorer"] == "mlp"
    assert params["scorer_args"]["dropout"] == 0.2 and params["scorer_args"]["sizes"] == [8, 4]
    assert params["loss_args"] == {"weighing_scheme": "ndcgLoss2++", "k": 5, "mu": 10, "sigma": 1.0}
    for name, ours in [
        ("listNet", "listnet"),
        ("rankNet", "ranknet"),
        ("listMLE", "listmle"),
        ("approxNDCGLoss", "approxndcg"),
        ("pointwise_rmse", "rmse"),
    ]:
        cfg["loss"] = {"name": name, "args": {}}
        assert translate(cfg)[0]["loss"] == ours
    cfg["loss"] = {"name": "rankNet", "args": {"weight_by_diff": True}}
    assert translate(cfg)[0]["weight"] == "rating-diff"
    cfg["loss"] = {"name": "bce", "args": {}}
    assert translate(cfg)[0]["loss_args"] == {"logits": True}  # no Sigmoid output: logits
    cfg["model"]["post_model"]["output_activation"] = "Sigmoid"
    assert translate(cfg)[0]["loss_args"] == {"logits": False}  # allRank's probabilities


def test_params_set_beside_a_config_override_it_and_both_are_recorded(tmp_path):
    path = config_file(tmp_path, CONTEXT_AWARE)
    ranker = NeuralRanker(config=path, lr=0.002, epochs=2, random_state=0)
    effective, from_config, overrides, _ = effective_params(ranker)
    assert effective["lr"] == 0.002 and from_config["lr"] == 0.01
    assert effective["scorer"] == "transformer" and effective["config"] is None
    assert overrides == {"lr": 0.002, "epochs": 2}
    X, y, qid = make_check_data(n_queries=10)
    with pytest.warns(AllRankConfigNotice, match="data.path"):
        ranker.fit(X, y, qid=qid, eval_set=(X, y, qid))
    info = ranker.fitted_info()
    assert json.loads(info["config_overrides"]) == {"epochs": 2, "lr": 0.002}
    assert json.loads(info["config_params"])["loss"] == "neuralndcg"
    assert info["iterations"] <= 2
    scores = ranker.predict(X, qid=qid)
    assert scores.shape == (len(X),) and np.isfinite(scores).all()
    again = NeuralRanker(config=path, lr=0.002, epochs=2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AllRankConfigNotice)
        again.fit(X, y, qid=qid, eval_set=(X, y, qid))
    assert np.array_equal(again.predict(X, qid=qid), scores)  # one seed, one model


def test_an_ordinal_config_trains_one_output_per_threshold(tmp_path):
    cfg = variant(model__post_model={"output_activation": "Sigmoid", "d_output": 3})
    cfg["loss"] = {"name": "ordinal", "args": {"n": 3}}
    ranker = NeuralRanker(config=config_file(tmp_path, cfg), random_state=0)
    X, y, qid = make_check_data(n_queries=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AllRankConfigNotice)
        ranker.fit(X, y, qid=qid)
    scores = ranker.predict(X, qid=qid)
    assert ((scores >= 0) & (scores <= 3)).all()  # the sum of 3 sigmoid outputs


def test_a_config_that_is_not_json_names_the_file_and_line(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{\n  "model": {\n    "fc_model": [1,\n}\n')
    with pytest.raises(AllRankConfigError, match=r"broken\.json:4:\d+: not valid JSON"):
        NeuralRanker(config=str(path)).validate_params()


@pytest.mark.parametrize(
    ("cfg", "match"),
    [
        ([1, 2], "not an allRank config: the top level must be a JSON object"),
        ({"lr": 0.1}, "not an allRank config: no 'model' or 'loss' key"),
        (
            variant(loss={"name": "neuralNDCGG", "args": {}}),
            r"loss.name.*unknown allRank loss 'neuralNDCGG' \(did you mean neuralNDCG",
        ),
        (
            variant(loss={"name": "lambdaLoss", "args": {"weighing_scheme": "foo"}}),
            "unknown scheme 'foo'.*ndcgLoss2PP_scheme",
        ),
        (
            variant(loss={"name": "listMLE", "args": {"temperature": 1}}),
            "loss.args.temperature.*not an argument of listMLE",
        ),
        (variant(model__transformer__heads=2), r"model.transformer.heads.*known: N, d_ff, h"),
        (variant(model__resnet={}), "model.resnet.*unknown"),
        (variant(model__fc_model__activation="Rectifier"), "model.fc_model.activation"),
        (variant(model__post_model__output_activation="sigmod"), "Did you mean: Sigmoid"),
        (
            variant(lr_scheduler={"name": "StepLRR", "args": {}}),
            r"lr_scheduler.name.*unknown scheduler 'StepLRR' \(did you mean StepLR",
        ),
        (
            variant(lr_scheduler={"name": "StepLR", "args": {"steps": 3}}),
            "lr_scheduler.args.steps.*not an argument of StepLR",
        ),
        (variant(optimizer={"name": "Adagrad", "args": {}}), "unsupported optimizer 'Adagrad'"),
        (variant(data__slate_length=0), "data.slate_length.*must be an integer >= 1"),
        (variant(model__transformer__h=3), "heads h=3 must divide d_model=16"),
    ],
)
def test_bad_configs_are_refused_before_any_data_naming_file_and_key(tmp_path, cfg, match):
    path = config_file(tmp_path, cfg, "bad.json")
    with pytest.raises(AllRankConfigError, match="bad.json") as info:
        NeuralRanker(config=path).validate_params()
    assert info.match(match)


def test_a_missing_config_file_is_named():
    with pytest.raises(AllRankConfigError, match="no_such.json: allRank config file not found"):
        NeuralRanker(config="no_such.json").validate_params()


def test_a_loss_that_turns_nan_names_the_epoch_and_the_learning_rate(tmp_path):
    cfg = variant(model__transformer=None, optimizer={"name": "SGD", "args": {"lr": 1e30}})
    cfg["loss"] = {"name": "pointwise_rmse", "args": {"no_of_levels": 4}}
    cfg["lr_scheduler"] = {"name": "StepLR", "args": {"step_size": 1, "gamma": 1.0}}
    ranker = NeuralRanker(config=config_file(tmp_path, cfg), random_state=0)
    X, y, qid = make_check_data(n_queries=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AllRankConfigNotice)
        with pytest.raises(TrainingDivergedError, match=r"epoch \d+.*lr=1e\+30"):
            ranker.fit(X, y, qid=qid)


def test_a_dict_given_beside_a_config_replaces_only_the_keys_it_names(tmp_path):
    path = config_file(tmp_path, CONTEXT_AWARE)
    ranker = NeuralRanker(config=path, scorer_args={"dropout": 0.0}, loss_args={"k": 5})
    effective, _, overrides, _ = effective_params(ranker)
    assert effective["scorer_args"]["dropout"] == 0.0 and effective["scorer_args"]["N"] == 1
    assert effective["loss_args"] == {"temperature": 1.0, "k": 5, "powered_relevancies": True}
    assert set(overrides) == {"scorer_args", "loss_args"}

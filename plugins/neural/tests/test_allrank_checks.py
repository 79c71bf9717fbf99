"""Issue 33, items 4 and 6: an allRank config is checked whole before any data is loaded
(:mod:`ltr_bench_neural.allrank_checks`): every wrongly typed value is named by file, key,
expected type and value (no Python message, no traceback), what training would meet (a
scheduler argument of the wrong type, an infinite learning rate, outputs that do not fit the
loss) is found now; a ``--param`` the config would silently replace is refused."""

from __future__ import annotations

import inspect
import json

import pytest

torch = pytest.importorskip("torch")

from test_allrank_config import config_file, variant  # noqa: E402

from ltr_bench_neural.allrank_config import AllRankConfigError  # noqa: E402
from ltr_bench_neural.ranker import NeuralRanker  # noqa: E402


def _annotated(scheduler: str, argument: str) -> bool:
    """Whether this torch annotates the scheduler's argument: the annotations name a wrong
    argument (torch 2.13); torch 2.3 and 2.4 have none, and the check then builds the scheduler,
    whose failure names the arguments and the error."""
    cls = getattr(torch.optim.lr_scheduler, scheduler)
    return isinstance(inspect.signature(cls).parameters[argument].annotation, str)


STEP_SIZE_TYPED = _annotated("StepLR", "step_size")
MODE_TYPED = _annotated("ReduceLROnPlateau", "mode")

BAD = [  # (name, config, fragment after "bad.json: ")
    ("a list where a name belongs", variant(loss={"name": ["lambdaLoss"]}),
     "key 'loss.name': must be a string, got a list ['lambdaLoss']"),
    ("an int where a list belongs", variant(model__fc_model__sizes=16),
     "key 'model.fc_model.sizes': must be a list (each an integer >= 1) or null, got the "
     "integer 16"),
    ("a size as text", variant(model__fc_model__sizes=["16"]),
     "key 'model.fc_model.sizes[0]': must be an integer >= 1, got the string '16'"),
    ("optimizer args as a list", variant(optimizer={"name": "Adam", "args": [0.01]}),
     "key 'optimizer.args': must be a JSON object or null, got a list [0.01]"),
    ("a learning rate that overflows", variant(optimizer={"name": "Adam", "args": {"lr": 1e400}}),
     "key 'optimizer.args.lr': must be a finite number > 0, got the number inf"),
    ("weight decay as text", variant(optimizer={"name": "Adam", "args": {"weight_decay": "0"}}),
     "key 'optimizer.args.weight_decay': must be a finite number >= 0, got the string '0'"),
    ("a scheduler argument of the wrong type",
     variant(lr_scheduler={"name": "StepLR", "args": {"step_size": "50"}}),
     "key 'lr_scheduler.args.step_size': must be an integer, got the string '50'"
     if STEP_SIZE_TYPED else "key 'lr_scheduler.args': StepLR(**{'step_size': '50'}) fails: "
     "TypeError"),
    ("a scheduler choice unknown",
     variant(lr_scheduler={"name": "ReduceLROnPlateau", "args": {"mode": "minimum"}}),
     "key 'lr_scheduler.args.mode': must be one of 'min', 'max', got the string 'minimum'"
     if MODE_TYPED else "key 'lr_scheduler.args': ReduceLROnPlateau(**{'mode': 'minimum'}) "
     "fails: ValueError"),
    ("a scheduler argument missing", variant(lr_scheduler={"name": "StepLR", "args": {}}),
     "key 'lr_scheduler.args.step_size': missing; StepLR needs it"),
    ("a scheduler that fails when built",
     variant(lr_scheduler={"name": "OneCycleLR", "args": {"max_lr": 0.1}}), "OneCycleLR("),
    ("a scheduler that fails after some epochs",
     variant(lr_scheduler={"name": "OneCycleLR", "args": {"max_lr": 0.1, "total_steps": 2}}),
     "Tried to step 3 times"),
    ("epochs as a fraction", variant(training__epochs=1.5),
     "key 'training.epochs': must be an integer >= 1, got the number 1.5"),
    ("dropout of one", variant(model__transformer__dropout=1.0),
     "key 'model.transformer.dropout': must be a finite number in [0, 1) or null"),
    ("heads as text", variant(model__transformer__h="2"),
     "key 'model.transformer.h': must be an integer >= 1, got the string '2'"),
    ("a loss argument that flips the loss",
     variant(loss={"name": "lambdaLoss", "args": {"sigma": -1}}),
     "key 'loss.args.sigma': must be a finite number > 0, got the integer -1"),
    ("a loss argument of the wrong type",
     variant(loss={"name": "neuralNDCG", "args": {"temperature": "1"}}),
     "key 'loss.args.temperature': must be a finite number > 0, got the string '1'"),
    ("ordinal outputs that do not fit n",
     variant(loss={"name": "ordinal", "args": {"n": 4}}),
     "key 'model.post_model.d_output': must be 4 (loss.args.n: one output per threshold), "
     "got the integer 1"),
    ("several outputs for a listwise loss", variant(model__post_model__d_output=3),
     "key 'model.post_model.d_output': must be 1 (one score per document for neuralNDCG)"),
]  # fmt: skip


@pytest.mark.parametrize("name,cfg,fragment", BAD, ids=[c[0] for c in BAD])
def test_a_bad_config_value_is_named_by_file_key_type_and_value_before_any_data(
    tmp_path, name, cfg, fragment
):
    path = config_file(tmp_path, cfg, "bad.json")
    with pytest.raises(AllRankConfigError) as err:
        NeuralRanker(config=path).validate_params()
    message = str(err.value)
    assert message.startswith(f"{path}: key '"), message
    assert fragment in message, message


def test_the_examples_of_the_repository_pass_the_checks():
    from pathlib import Path

    folder = Path(__file__).resolve().parents[3] / "experiments" / "allrank_configs"
    paths = sorted(folder.glob("*.json"))
    assert paths
    for path in paths:
        NeuralRanker(config=str(path)).validate_params()


def test_a_param_equal_to_its_default_that_the_config_would_replace_is_refused(tmp_path):
    path = config_file(tmp_path, variant())  # Adam, lr 0.01
    default = NeuralRanker().optimizer  # the plugin's default ("auto")
    ranker = NeuralRanker(config=path, optimizer=default)
    with pytest.raises(AllRankConfigError, match=rf"optimizer='{default}' would have no effect"):
        ranker.check_user_params({"config": path, "optimizer": default})
    NeuralRanker(config=path, optimizer="adam").check_user_params({"optimizer": "adam"})
    NeuralRanker(config=path, lr=0.002).check_user_params({"lr": 0.002})  # applied
    default_lr = NeuralRanker().lr
    with pytest.raises(AllRankConfigError, match=r"the config's lr=0.01 would be trained"):
        NeuralRanker(config=path, lr=default_lr).check_user_params({"lr": default_lr})
    args = {"temperature": 2.0}  # a dict beside the config: the keys it names are applied
    NeuralRanker(config=path, loss_args=args).check_user_params({"loss_args": args})


def test_run_refuses_the_ignored_override_with_exit_2_before_any_data(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from ltr_bench.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LTR_BENCH_CACHE", str(tmp_path / "cache"))
    (tmp_path / "mlp.json").write_text(json.dumps(variant()))
    result = CliRunner().invoke(
        main,
        ["run", "--ranker", "neural", "--param", "neural.config=mlp.json", "--param",
         f"neural.optimizer={NeuralRanker().optimizer}", "--dataset", "synthetic", "--folds",
         "1", "--no-mlflow", "--results-dir", "res"],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "mlp.json: optimizer=" in result.output and "would have no effect" in result.output
    assert not (tmp_path / "res").exists() and not (tmp_path / "cache").exists()


def test_scheduler_arguments_given_as_parameters_are_checked_the_same_way():
    ranker = NeuralRanker(lr_scheduler="StepLR", lr_scheduler_args={"step_size": "5"})
    if STEP_SIZE_TYPED:
        expected = "key 'lr_scheduler_args.step_size': must be an integer"
    else:
        expected = r"key 'lr_scheduler_args': StepLR\(\*\*\{'step_size': '5'\}\) fails: TypeError"
    with pytest.raises(ValueError, match=expected):
        ranker.validate_params()
    ranker = NeuralRanker(lr_scheduler="OneCycleLR", lr_scheduler_args={"max_lr": 0.1})
    with pytest.raises(ValueError, match="key 'lr_scheduler_args': OneCycleLR"):
        ranker.validate_params()
    NeuralRanker(lr_scheduler="StepLR", lr_scheduler_args={"step_size": 5}).validate_params()


def test_tuning_beside_a_config_refuses_a_search_that_can_draw_a_default_the_config_replaces(
    tmp_path,
):
    from ltr_bench.tune.search_space import SearchSpaceError, resolve_space

    path = config_file(tmp_path, variant())  # Adam, lr 0.01
    ranker = NeuralRanker(config=path)
    default = NeuralRanker().optimizer
    with pytest.raises(
        SearchSpaceError,
        match=rf"tuning\.neural\.optimizer: a trial that draws "
        rf"the default '{default}' would train another value",
    ):
        resolve_space("neural", ranker, override={"optimizer": [default, "adam"]}, fixed={"config"})
    # the declared space beside a config is the config's configuration's, minus what it sets
    from ltr_bench_neural.allrank_config import effective_params

    effective, from_config, _, _ = effective_params(ranker)
    declared = resolve_space("neural", ranker, fixed={"config"})  # no refusal: nothing lost
    assert {"lr", "l2"} <= set(declared) <= set(NeuralRanker(**effective).search_space())
    defaults = NeuralRanker().get_params()
    for name in set(NeuralRanker(**effective).search_space()) - set(declared):
        assert from_config[name] != defaults[name]  # left out: a draw of the default is lost
    # a continuous range never draws the default itself, and a choice without it is applied
    space = resolve_space(
        "neural",
        ranker,
        override={"lr": {"low": 1e-4, "high": 3e-2, "log": True}, "optimizer": ["adam", "sgd"]},
        fixed={"config"},
    )
    assert space["optimizer"] == ["adam", "sgd"] and "lr" in space

"""Where ``neural`` computes (:mod:`ltr_bench_neural.devices`): ``device='cuda'`` without a GPU
is refused in one line before any data is loaded, ``ltr-bench rankers`` names the torch build
and the device ``auto`` picks, a model kept from CUDA tensors loads and predicts on a machine
without a GPU; and, on a machine with one (tests marked ``gpu``, skipped elsewhere), CUDA
starts from the CPU's initial weights, agrees with the CPU within float32 rounding, and a
CUDA-kept model scores on the CPU as it scored on the GPU.

Tolerances of the ``gpu`` tests (CPU and CUDA float32 sum in different orders, so the two fits
are the same computation with different roundings):

* the first epoch's training loss: relative difference <= 1e-5. Ten CPU fits of the two
  configurations below (seeds 0-4) with every input feature moved by one float32 rounding
  (x * (1 +- 2^-23)) differed by at most 4.4e-8 there; TF32 matrix products (10-bit mantissa)
  would differ by ~1e-3 and fail;
* NDCG@10 on the test split after 10 epochs: absolute difference <= 0.01. In the same ten
  perturbed fits the difference was 0 nine times and 0.00023 once (training amplifies rounding
  differences: the scores differed by up to 0.05 by the last epoch), while the seed moves
  NDCG@10 by 0.06 (transformer, seeds 0-4: 0.6129 to 0.6746): 0.01 passes rounding and fails
  a CUDA computation that is not the CPU's.

The measurement: ``python benchmarks/neural_rounding.py`` (it imports this module's
configurations).
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from click.testing import CliRunner  # noqa: E402

from ltr_bench.cli import main  # noqa: E402
from ltr_bench.data import load_fold  # noqa: E402
from ltr_bench.evaluation.metrics import evaluate  # noqa: E402
from ltr_bench.models import load_model, save_model  # noqa: E402
from ltr_bench_neural import devices, training  # noqa: E402
from ltr_bench_neural.ranker import NeuralRanker  # noqa: E402

HAS_CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU (torch.cuda.is_available())")

#: the configurations the tolerances above were measured with (dropout 0: the CPU and CUDA
#: generators are different streams, so dropout masks would differ between the devices)
SCORERS = {
    "mlp": {"sizes": [64, 32], "dropout": 0.0},
    "transformer": {"sizes": [32], "N": 2, "h": 2, "d_ff": 64, "dropout": 0.0},
}
LOSS_TOLERANCE = 1e-5
NDCG_TOLERANCE = 0.01


def _fold():
    options = {"n_queries": 100, "docs_per_query": 40, "n_features": 136, "n_informative": 20}
    return load_fold("synthetic", 1, options={**options, "feature_distribution": "lognormal"})


def _ranker(scorer: str, device: str, seed: int = 0) -> NeuralRanker:
    return NeuralRanker(
        scorer=scorer, scorer_args=SCORERS[scorer], loss="lambdaloss", optimizer="adam",
        lr=1e-3, batch_size=16, epochs=10, patience=None, feature_transform="log1p",
        device=device, random_state=seed, n_threads=1,
    )  # fmt: skip


# ----------------------------------------------------------------------- without a GPU


@pytest.mark.skipif(HAS_CUDA, reason="this machine has a GPU")
def test_cuda_without_a_gpu_is_refused_in_one_line_when_the_parameters_are_checked():
    with pytest.raises(ValueError) as err:
        NeuralRanker(device="cuda").validate_params()
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"device='cuda' but torch {torch.__version__} (")
    assert message.endswith("sees no CUDA GPU; use device='cpu' or 'auto'")


@pytest.mark.skipif(HAS_CUDA, reason="this machine has a GPU")
def test_run_with_device_cuda_and_no_gpu_exits_2_before_any_data_is_loaded(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        main,
        ["run", "--ranker", "neural", "--param", "neural.device=cuda", "--dataset", "synthetic",
         "--folds", "1", "--no-mlflow", "--results-dir", "res"],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "device='cuda' but torch" in errors[0], result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "res").exists()  # refused before anything was loaded or written


def test_the_device_check_counts_gpus_without_initialising_cuda(monkeypatch):
    # torch.cuda.is_available() initialises the CUDA driver, after which a forked worker
    # cannot use CUDA; device_count() asks NVML. Validation must use the latter.
    def initialises(*args, **kwargs):
        raise AssertionError("validation initialised CUDA (torch.cuda.is_available)")

    monkeypatch.setattr(torch.cuda, "is_available", initialises)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    NeuralRanker(device="cuda").validate_params()  # one GPU counted: accepted
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    with pytest.raises(ValueError, match="sees no CUDA GPU"):
        NeuralRanker(device="cuda").validate_params()
    for device in ("auto", "cpu"):
        NeuralRanker(device=device).validate_params()  # neither counts GPUs


def test_describe_names_a_cpu_build_from_its_version_without_importing_torch():
    code = textwrap.dedent("""
        import json, sys
        from importlib import metadata
        from ltr_bench_neural.devices import describe
        note = describe()
        print(json.dumps({"note": note, "torch": "torch" in sys.modules,
                          "version": metadata.version("torch")}))
    """)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if not result["version"].endswith("+cpu"):
        pytest.skip(f"torch {result['version']} is not a +cpu build")
    assert result["note"] == f"torch {result['version']} (CPU build), device auto -> cpu"
    assert not result["torch"]


@pytest.mark.parametrize(
    ("visible", "expected"),
    [
        (0, "torch 2.11.0+cu130 (CUDA 13.0), device auto -> cpu (no GPU visible)"),
        (1, "torch 2.11.0+cu130 (CUDA 13.0), device auto -> cuda (1 GPU: NVIDIA H200)"),
        (2, "torch 2.11.0+cu130 (CUDA 13.0), device auto -> cuda (2 GPUs: NVIDIA H200)"),
    ],
)
def test_describe_names_a_cuda_build_and_the_device_auto_picks(monkeypatch, visible, expected):
    from importlib import metadata

    monkeypatch.setattr(metadata, "version", lambda name: "2.11.0+cu130")
    monkeypatch.setattr(torch, "__version__", "2.11.0+cu130")
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: visible > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: visible)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: "NVIDIA H200")
    assert devices.describe() == expected
    monkeypatch.setattr(torch.version, "cuda", None)  # e.g. macOS: no label, no CUDA
    assert devices.describe() == "torch 2.11.0+cu130 (CPU build), device auto -> cpu"


def test_a_model_kept_from_cuda_tensors_loads_and_predicts_on_a_machine_without_a_gpu(
    tmp_path, monkeypatch
):
    """torch.save records each tensor's device; a file written from CUDA tensors says
    ``cuda:0``, and plain torch.load refuses it where there is no GPU. Such a file is made here
    by saving with torch's device tag forced to ``cuda:0`` (a CPU-only torch cannot make CUDA
    tensors): the kept model must load (``map_location="cpu"``) and predict as the fitted one."""
    import torch.serialization as serialization

    fold = _fold()
    tr, te = fold.train, fold.test
    ranker = NeuralRanker(scorer="mlp", optimizer="adam", epochs=3, device="cpu", random_state=0)
    ranker.fit(tr.X, tr.y, qid=tr.qid)
    expected = ranker.predict(te.X, qid=te.qid)
    with monkeypatch.context() as m:
        m.setattr(serialization, "location_tag", lambda storage: "cuda:0")
        folder = save_model(ranker, tmp_path / "model", ranker_name="neural")
    scorer_file = folder / "native" / "scorer.pt"
    if not HAS_CUDA:  # the file is what a CUDA fit writes: torch alone cannot load it here
        # torch 2.3 wraps the same message in an UnpicklingError
        with pytest.raises((RuntimeError, pickle.UnpicklingError), match="on a CUDA device"):
            torch.load(scorer_file, weights_only=True)
    state = torch.load(scorer_file, weights_only=True, map_location="cpu")
    assert all(t.device.type == "cpu" for t in state.values())
    loaded = load_model(folder)
    assert np.array_equal(loaded.predict(te.X, te.qid), expected)


# ----------------------------------------------------------------------- with a GPU


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("scorer", sorted(SCORERS))
def test_a_cuda_fit_starts_from_the_initial_weights_of_the_cpu_fit(monkeypatch, scorer):
    starts = []
    original = training._Trainer.run

    def run(trainer):
        starts.append({k: v.detach().cpu().clone() for k, v in trainer.model.state_dict().items()})
        return original(trainer)

    monkeypatch.setattr(training._Trainer, "run", run)
    fold = _fold()
    for device in ("cpu", "cuda"):
        _ranker(scorer, device).set_params(epochs=1).fit(fold.train.X, fold.train.y,
                                                         qid=fold.train.qid)  # fmt: skip
    cpu, cuda = starts
    assert cpu.keys() == cuda.keys()
    assert all(torch.equal(cpu[k], cuda[k]) for k in cpu)


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("scorer", sorted(SCORERS))
def test_cuda_and_cpu_fits_agree_within_float32_rounding(scorer):
    fold = _fold()
    tr, te = fold.train, fold.test
    fits = {}
    for device in ("cpu", "cuda"):
        ranker = _ranker(scorer, device).fit(tr.X, tr.y, qid=tr.qid)
        scores = ranker.predict(te.X, qid=te.qid)
        fits[device] = (ranker.curves_["train_loss"], evaluate(te.y, scores, te.qid)["ndcg@10"])
    (loss_cpu, ndcg_cpu), (loss_cuda, ndcg_cuda) = fits["cpu"], fits["cuda"]
    assert abs(loss_cuda[0] - loss_cpu[0]) <= LOSS_TOLERANCE * abs(loss_cpu[0])
    assert abs(ndcg_cuda - ndcg_cpu) <= NDCG_TOLERANCE


KEEP_CHILD = """
import sys
import numpy as np
import torch
from ltr_bench.models import load_model
assert not torch.cuda.is_available()
data = np.load(sys.argv[2])
np.save(sys.argv[3], load_model(sys.argv[1]).predict(data["X"], data["qid"]))
"""


@pytest.mark.gpu
@needs_cuda
def test_a_cuda_kept_model_scores_on_a_cpu_only_process_as_on_the_gpu(tmp_path):
    fold = _fold()
    tr, te = fold.train, fold.test
    ranker = _ranker("transformer", "cuda").set_params(epochs=3).fit(tr.X, tr.y, qid=tr.qid)
    on_gpu = ranker.predict(te.X, qid=te.qid)
    folder = save_model(ranker, tmp_path / "model", ranker_name="neural")
    np.savez(tmp_path / "test.npz", X=te.X, qid=te.qid)
    subprocess.run(
        [sys.executable, "-c", KEEP_CHILD, str(folder), str(tmp_path / "test.npz"),
         str(tmp_path / "scores.npy")],
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""}, cwd=tmp_path, check=True, timeout=300,
    )  # fmt: skip
    on_cpu = np.load(tmp_path / "scores.npy")
    # the kept parameters are the GPU's bit for bit, and score on the CPU as the fitted model
    # moved to the CPU does
    kept = torch.load(folder / "native" / "scorer.pt", weights_only=True, map_location="cpu")
    fitted = {k: v.cpu() for k, v in ranker.model_.state_dict().items()}
    assert all(torch.equal(kept[k], fitted[k]) for k in fitted)
    ranker.model_ = ranker.model_.cpu()
    assert np.array_equal(on_cpu, ranker.predict(te.X, qid=te.qid))
    # the GPU and the CPU sum the float64 products in other orders: equal to rounding, and the
    # same ranking of every test query
    np.testing.assert_allclose(on_cpu, on_gpu, rtol=1e-9, atol=1e-12)
    bounds = np.flatnonzero(np.r_[True, te.qid[1:] != te.qid[:-1], True])
    for a, b in zip(bounds[:-1], bounds[1:]):
        assert np.array_equal(np.argsort(-on_cpu[a:b]), np.argsort(-on_gpu[a:b]))

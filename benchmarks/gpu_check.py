"""The ``neural`` rankers on a GPU against the CPU: speed, memory and the same rankings.

Trains ``neural`` with allRank's MSLR-WEB30K models (``experiments/allrank_configs/``:
``mlp_ndcgloss2pp.json``, the 256-512-1024-512-256 MLP, and ``contextaware_ndcgloss2pp.json``,
the context-aware ranker: fc 128, N=4, h=4, d_ff 512; NDCGLoss2++, Adam lr 1e-3, batch 64,
slate 240) on CUDA and on the CPU with the same seed, and writes one JSON (``--out``) with, per
run: fit seconds, epochs, seconds per epoch, training documents per second, scoring time per
document, peak GPU memory, NDCG@10 on the test split and a hash of the initial weights; per
model: |NDCG@10 CUDA - CPU|, the largest score difference and the test queries whose top 10
is the same. The JSON is rewritten after every stage, so a run cut short keeps what it did.

Stages (``--stages``, in this order; each is skipped with its reason when it cannot run):

* ``smoke``: a small generated fold (60 queries of ~30 documents), 2 epochs of each model on
  each device: a broken setup fails here in seconds;
* ``mslr``: a generated fold of MSLR-WEB30K's shape (136 heavy-tailed features, ~120
  documents per query, labels at MSLR's frequencies; ``--queries`` in the pool: 60% train,
  20% test), ``log1p`` features, ``--epochs`` epochs without early stopping, each model on
  CUDA and then on the CPU (``--threads`` torch threads). Dropout is 0 (the configs say 0.3):
  the CPU and CUDA generators are different streams, so with dropout the two runs would draw
  different masks; without it they differ only by floating-point rounding;
* ``repeat``: the transformer fitted on CUDA a second time: are the scores identical?
* ``keep``: the CUDA transformer saved as a model folder (``ltr_bench.models.save_model``),
  loaded by a process that sees no GPU (``CUDA_VISIBLE_DEVICES=""``) and asked to score the
  test split: the same scores as on the GPU (float64; a GPU and a CPU sum in another order)
  and bit for bit those of the fitted model moved to the CPU;
* ``pytest``: ``pytest -m gpu plugins/neural/tests/test_devices.py`` when pytest imports;
* ``scale``: one CUDA epoch of the transformer on MSLR-WEB30K Fold 1's training size (the
  ``mslr`` training queries repeated to 18,919 queries, ~2.27M documents): seconds per epoch
  and peak memory at the real size, beside the CPU's rate from ``mslr``.

Without CUDA only the CPU runs happen (so it is tested without a GPU). A stage starts only if
it can end (``NEEDS``) within ``--budget-s``; a failed run or stage is recorded, the rest run
(exit 1). On the GPU machine, after ``bash benchmarks/gpu_check.sh --build`` here::

    bash benchmarks/gpu_check.sh "$OUT"          # run tool: carry [".gpu_wheels"], timeout_s 330
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
CONFIGS = {  # the transformer first: the model the check is for, should time run out
    "transformer": REPO / "experiments" / "allrank_configs" / "contextaware_ndcgloss2pp.json",
    "mlp": REPO / "experiments" / "allrank_configs" / "mlp_ndcgloss2pp.json",
}
MSLR_TRAIN_QUERIES = 18_919  # MSLR-WEB30K Fold 1's training queries
STAGES = ("smoke", "mslr", "repeat", "keep", "pytest", "scale")
#: seconds a stage may take at most on the GPU machine (estimates, docs/performance.md): a stage
#: starts only while the elapsed time plus this stays within --budget-s
NEEDS = {"mslr": 0, "repeat": 20, "keep": 30, "pytest": 60, "scale": 90}
#: the tolerances of plugins/neural/tests/test_devices.py (its docstring says why)
LOSS_TOLERANCE, NDCG_TOLERANCE = 1e-5, 0.01


def mslr_options(n_queries: int, docs: int = 120) -> dict:
    return {
        "n_queries": n_queries,
        "docs_per_query": docs,
        "n_features": 136,
        "n_informative": 20,
        "feature_distribution": "lognormal",
    }


def make_ranker(model: str, device: str, epochs: int, threads: int, seed: int):
    from ltr_bench_neural.ranker import NeuralRanker

    return NeuralRanker(
        config=str(CONFIGS[model]),
        scorer_args={"dropout": 0.0},  # see the module docstring
        feature_transform="log1p",
        epochs=epochs,
        device=device,
        n_threads=threads,
        random_state=seed,
    )


class InitialWeights:
    """sha256 of the scorer's state when training starts (after it is moved to the device)."""

    def __init__(self):
        from ltr_bench_neural import training

        self.last: str | None = None
        original = training._Trainer.run

        def run(trainer):
            h = hashlib.sha256()
            for name, t in sorted(trainer.model.state_dict().items()):
                h.update(name.encode())
                h.update(t.detach().cpu().contiguous().numpy().tobytes())
            self.last = h.hexdigest()[:16]
            return original(trainer)

        training._Trainer.run = run


def sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def fit_and_score(model, device, fold, args, init, repeats=2):
    """One fit + scoring of the test split; returns (row, ranker, test scores)."""
    import torch

    from ltr_bench.evaluation.metrics import evaluate

    tr, te = fold.train, fold.test
    ranker = make_ranker(model, device, args.epochs_for_fold, args.threads, args.seed)
    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    t0, c0 = time.perf_counter(), time.process_time()
    ranker.fit(tr.X, tr.y, qid=tr.qid)
    sync(device)
    fit_s, fit_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    fit_peak = torch.cuda.max_memory_allocated() if device == "cuda" else None
    info = ranker.fitted_info()
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    scores, score_s, score_cpu_s = None, np.inf, np.inf
    for _ in range(repeats + (device == "cuda")):  # CUDA: one untimed warm-up call
        t0, c0 = time.perf_counter(), time.process_time()
        scores = ranker.predict(te.X, qid=te.qid)
        score_s = min(score_s, time.perf_counter() - t0)
        score_cpu_s = min(score_cpu_s, time.process_time() - c0)
    _, sizes = np.unique(tr.qid, return_counts=True)
    slate = ranker.effective_.slate_length
    trained_docs = int(np.minimum(sizes, slate).sum()) if slate else int(sizes.sum())
    epochs = int(info["iterations"])
    row = {
        "model": model,
        "device": device,
        "threads": args.threads if device == "cpu" else None,
        "epochs": epochs,
        "fit_s": round(fit_s, 3),
        "s_per_epoch": round(fit_s / epochs, 4),
        "train_docs_per_s": round(trained_docs * epochs / fit_s, 1),
        "score_us_per_doc": round(1e6 * score_s / len(te.X), 3),
        # CPU seconds of this process (all threads): the sizing measure on a shared machine
        "fit_cpu_us_per_doc_epoch": round(1e6 * fit_cpu_s / (trained_docs * epochs), 1),
        "score_cpu_us_per_doc": round(1e6 * score_cpu_s / len(te.X), 1),
        "peak_gpu_mib_fit": None if fit_peak is None else round(fit_peak / 2**20, 1),
        "peak_gpu_mib_score": (
            round(torch.cuda.max_memory_allocated() / 2**20, 1) if device == "cuda" else None
        ),
        "ndcg@10": float(evaluate(te.y, scores, te.qid, ("ndcg@10",))["ndcg@10"]),
        "n_parameters": int(info["n_parameters"]),
        "initial_weights_sha256": init.last,
        "train_loss": [float(v) for v in ranker.curves_["train_loss"]],
        "load_average": round(os.getloadavg()[0], 2),
    }
    return row, ranker, scores


def compare(cpu, cuda, fold) -> dict:
    """How far the CUDA run is from the CPU run of the same model, seed and data."""
    (rc, _, sc), (rg, _, sg) = cpu, cuda
    te = fold.test
    same_top10 = 0
    bounds = np.flatnonzero(np.r_[True, te.qid[1:] != te.qid[:-1], True])
    for a, b in zip(bounds[:-1], bounds[1:]):
        top_c = np.argsort(-sc[a:b], kind="stable")[:10]
        top_g = np.argsort(-sg[a:b], kind="stable")[:10]
        same_top10 += bool(np.array_equal(top_c, top_g))
    losses = np.array([rc["train_loss"], rg["train_loss"]])
    rel = np.abs(losses[0] - losses[1]) / np.abs(losses[0])
    ndcg_diff = abs(rc["ndcg@10"] - rg["ndcg@10"])
    return {
        "abs_ndcg@10_diff": ndcg_diff,
        "ndcg_within_tolerance": bool(ndcg_diff <= NDCG_TOLERANCE),
        "rel_train_loss_diff_epoch1": float(rel[0]),
        "loss_within_tolerance": bool(rel[0] <= LOSS_TOLERANCE),
        "same_initial_weights": rc["initial_weights_sha256"] == rg["initial_weights_sha256"],
        "max_abs_score_diff": float(np.max(np.abs(sc - sg))),
        "score_scale": float(np.std(sc)),
        "test_queries": len(bounds) - 1,
        "test_queries_same_top10": int(same_top10),
        "max_rel_train_loss_diff": float(np.max(rel)),
        "fit_speedup_cuda": round(rc["fit_s"] / rg["fit_s"], 2),
        "scoring_speedup_cuda": round(rc["score_us_per_doc"] / rg["score_us_per_doc"], 2),
    }


def environment(args) -> dict:
    import torch

    import ltr_bench
    import ltr_bench_neural
    from ltr_bench_neural.devices import describe

    env = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cuda_available": torch.cuda.is_available(),
        "numpy": np.__version__,
        "cpu_count": os.cpu_count(),
        "threads": args.threads,
        "runtime_note": describe(),
        "ltr_bench_from": str(Path(ltr_bench.__file__).parent),
        "ltr_bench_neural_from": str(Path(ltr_bench_neural.__file__).parent),
        "load_average_start": round(os.getloadavg()[0], 2),
    }
    if env["cuda_available"]:
        p = torch.cuda.get_device_properties(0)
        env["gpu"] = {
            "name": p.name,
            "capability": f"{p.major}.{p.minor}",
            "memory_gib": round(p.total_memory / 2**30, 1),
        }
        env["allow_tf32_matmul"] = torch.backends.cuda.matmul.allow_tf32
        env["float32_matmul_precision"] = torch.get_float32_matmul_precision()
    return env


def stage_fits(name, fold, devices, args, init, out) -> dict:
    stage = {"fold": describe_fold(fold), "epochs": args.epochs_for_fold, "runs": []}
    out["stages"][name] = stage
    kept = {}
    for model in CONFIGS:
        for device in devices:
            try:
                result = fit_and_score(model, device, fold, args, init)
            except Exception:  # noqa: BLE001 - recorded; the other runs still tell something
                stage["runs"].append({"model": model, "device": device, "error": failure()})
                print(f"[{name}] {model} {device} FAILED:\n{failure()}", flush=True)
                write(out, args)
                continue
            kept[(model, device)] = result
            stage["runs"].append(result[0])
            say(name, result[0])
            write(out, args)
        if (model, "cpu") in kept and (model, "cuda") in kept:
            stage.setdefault("compare", {})[model] = compare(
                kept[(model, "cpu")], kept[(model, "cuda")], fold
            )
            say_compare(model, stage["compare"][model])
            write(out, args)
    return kept


def failure() -> str:
    """The current exception's traceback, shortened for the JSON."""
    return traceback.format_exc()[-3000:]


def describe_fold(fold) -> dict:
    tr, te = fold.train, fold.test
    return {
        "train_queries": int(len(np.unique(tr.qid))),
        "train_docs": int(len(tr.X)),
        "test_queries": int(len(np.unique(te.qid))),
        "test_docs": int(len(te.X)),
        "features": int(tr.X.shape[1]),
    }


def stage_repeat(fold, args, init, first) -> dict:
    _, _, again = fit_and_score("transformer", "cuda", fold, args, init, repeats=1)
    _, _, scores = first
    return {
        "identical_scores": bool(np.array_equal(scores, again)),
        "max_abs_score_diff": float(np.max(np.abs(scores - again))),
    }


KEEP_CHILD = """
import json, sys
import numpy as np
import torch
from ltr_bench.models import load_model
assert not torch.cuda.is_available()
data = np.load(sys.argv[2])
loaded = load_model(sys.argv[1])
np.save(sys.argv[3], loaded.predict(data["X"], data["qid"]))
print(json.dumps({"cuda_available": torch.cuda.is_available()}))
"""


def stage_keep(fold, result) -> dict:
    """Save the CUDA model, score it in a process that sees no GPU, compare."""
    from ltr_bench.models import save_model

    row, ranker, gpu_scores = result
    te = fold.test
    with tempfile.TemporaryDirectory() as tmp:
        folder = save_model(ranker, Path(tmp) / "model", ranker_name="neural")
        np.savez(Path(tmp) / "test.npz", X=te.X, qid=te.qid)
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
        done = subprocess.run(
            [sys.executable, "-c", KEEP_CHILD, str(folder), str(Path(tmp) / "test.npz"),
             str(Path(tmp) / "scores.npy")],
            env=env, cwd=tmp, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        if done.returncode != 0:
            return {"status": "failed", "stderr": done.stderr[-2000:]}
        cpu_scores = np.load(Path(tmp) / "scores.npy")
    ranker.model_ = ranker.model_.cpu()
    ranker.effective_.model_ = ranker.model_
    here = ranker.predict(te.X, qid=te.qid)  # the fitted model itself, on the CPU
    return {
        "status": "ok",
        "child": json.loads(done.stdout.strip().splitlines()[-1]),
        "identical_to_the_fitted_model_on_cpu": bool(np.array_equal(cpu_scores, here)),
        "max_abs_diff_to_gpu_scores": float(np.max(np.abs(cpu_scores - gpu_scores))),
        "max_rel_diff_to_gpu_scores": float(
            np.max(np.abs(cpu_scores - gpu_scores) / np.maximum(np.abs(gpu_scores), 1e-300))
        ),
    }


def stage_scale(fold, args, cpu_rate) -> dict:
    """One CUDA epoch of the transformer on MSLR-WEB30K Fold 1's training size."""
    import torch

    tr = fold.train
    _, start, sizes = np.unique(tr.qid, return_index=True, return_counts=True)
    reps = int(np.ceil(MSLR_TRAIN_QUERIES / len(sizes)))
    order = np.argsort(start)
    pick = np.concatenate([np.arange(start[i], start[i] + sizes[i]) for i in order])
    rows = np.tile(pick, reps)
    qid = np.repeat(np.arange(len(sizes) * reps), np.tile(sizes[order], reps))
    keep = qid < MSLR_TRAIN_QUERIES
    X, y, qid = tr.X[rows[keep]], tr.y[rows[keep]], qid[keep]
    ranker = make_ranker("transformer", "cuda", 1, args.threads, args.seed)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    ranker.fit(X, y, qid=qid)
    sync("cuda")
    fit_s = time.perf_counter() - t0
    docs = int(np.minimum(np.bincount(qid), 240).sum())
    return {
        "train_queries": int(MSLR_TRAIN_QUERIES),
        "train_docs": int(len(X)),
        "trained_docs_per_epoch": docs,
        "s_per_epoch_cuda": round(fit_s, 2),
        "peak_gpu_mib": round(torch.cuda.max_memory_allocated() / 2**20, 1),
        "projected_100_epochs_cuda_min": round(100 * fit_s / 60, 1),
        "projected_s_per_epoch_cpu": round(docs / cpu_rate, 1) if cpu_rate else None,
        "note": "fit includes standardisation and batching (once per fit); no validation",
    }


def stage_pytest() -> dict:
    try:
        import pytest  # noqa: F401
    except ImportError:
        return {"status": "skipped: pytest is not installed"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider",
         "plugins/neural/tests/test_devices.py"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    status = "ok" if done.returncode == 0 else "failed"
    return {"status": status, "rc": done.returncode, "tail": (done.stdout + done.stderr)[-3000:]}


def say(stage, row) -> None:
    gpu = f"  peak {row['peak_gpu_mib_fit']} MiB" if row["device"] == "cuda" else ""
    print(
        f"[{stage}] {row['model']:<11} {row['device']:<4} fit {row['fit_s']:8.2f} s "
        f"({row['epochs']} ep, {row['train_docs_per_s']:,.0f} docs/s)  "
        f"score {row['score_us_per_doc']:8.2f} us/doc  ndcg@10 {row['ndcg@10']:.4f}{gpu}",
        flush=True,
    )


def say_compare(model, c) -> None:
    print(
        f"        {model}: |dNDCG@10| {c['abs_ndcg@10_diff']:.4f} (<= {NDCG_TOLERANCE}: "
        f"{c['ndcg_within_tolerance']}), epoch-1 loss rel. diff "
        f"{c['rel_train_loss_diff_epoch1']:.1e} (<= {LOSS_TOLERANCE}: "
        f"{c['loss_within_tolerance']}), same init "
        f"{c['same_initial_weights']}, same top 10 in {c['test_queries_same_top10']}/"
        f"{c['test_queries']} queries, CUDA x{c['fit_speedup_cuda']} fit, "
        f"x{c['scoring_speedup_cuda']} scoring",
        flush=True,
    )


def write(out, args) -> None:
    out["elapsed_s"] = round(time.perf_counter() - args.t0, 1)
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(out, indent=1))
    os.replace(tmp, path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="the JSON file to write")
    ap.add_argument("--queries", type=int, default=1000, help="mslr: queries in the pool")
    ap.add_argument("--epochs", type=int, default=5, help="mslr: epochs per fit")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="CPU torch threads")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--stages", default=",".join(STAGES))
    ap.add_argument("--budget-s", type=float, default=300.0)
    args = ap.parse_args(argv)
    args.t0 = time.perf_counter()
    stages = [s for s in args.stages.split(",") if s]
    unknown = sorted(set(stages) - set(STAGES))
    if unknown:
        ap.error(f"unknown stage(s) {', '.join(unknown)}; known: {', '.join(STAGES)}")

    import warnings

    import torch

    from ltr_bench.data import load_fold
    from ltr_bench_neural.allrank_config import AllRankConfigNotice

    # the configs' keys that do not apply (data.path, ...): listed once per fit otherwise
    warnings.filterwarnings("ignore", category=AllRankConfigNotice)
    cuda = torch.cuda.is_available()
    devices = ["cuda", "cpu"] if cuda else ["cpu"]
    init = InitialWeights()
    out = {"format": 1, "argv": sys.argv[1:], "environment": environment(args), "stages": {}}
    write(out, args)
    print(f"gpu_check: {out['environment']['runtime_note']}; threads {args.threads}", flush=True)

    def skip(name, why) -> None:
        out["stages"][name] = {"status": f"skipped: {why}"}
        print(f"[{name}] skipped: {why}", flush=True)
        write(out, args)

    def in_budget(name) -> bool:
        elapsed = time.perf_counter() - args.t0
        if elapsed + NEEDS[name] > args.budget_s:
            skip(name, f"{elapsed:.0f} s elapsed + up to {NEEDS[name]} s > --budget-s")
            return False
        return True

    kept: dict = {}
    if "smoke" in stages:
        small = load_fold("synthetic", 1, options=mslr_options(60, 30), seed=args.seed)
        args.epochs_for_fold = 2
        stage_fits("smoke", small, devices, args, init, out)
    fold = None
    if "mslr" in stages and in_budget("mslr"):
        fold = load_fold("synthetic", 1, options=mslr_options(args.queries), seed=args.seed)
        args.epochs_for_fold = args.epochs
        kept = stage_fits("mslr", fold, devices, args, init, out)
    for name in ("repeat", "keep", "pytest", "scale"):
        if name not in stages:
            continue
        if not cuda:
            skip(name, "no CUDA GPU")
        elif ("transformer", "cuda") not in kept and name != "pytest":
            skip(name, "needs the mslr stage")
        elif in_budget(name):
            try:
                if name == "repeat":
                    result = stage_repeat(fold, args, init, kept[("transformer", "cuda")])
                elif name == "keep":
                    result = stage_keep(fold, kept[("transformer", "cuda")])
                elif name == "pytest":
                    result = stage_pytest()
                else:
                    cpu = kept.get(("transformer", "cpu"))
                    result = stage_scale(fold, args, cpu[0]["train_docs_per_s"] if cpu else None)
            except Exception:  # noqa: BLE001 - recorded; the next stages still run
                result = {"status": "failed", "error": failure()}
                print(f"[{name}] FAILED:\n{result['error']}", flush=True)
            out["stages"][name] = result
            shown = {k: v for k, v in result.items() if k != "tail"}  # pytest's output: JSON
            print(f"[{name}] {json.dumps(shown)}", flush=True)
            write(out, args)
    out["environment"]["load_average_end"] = round(os.getloadavg()[0], 2)
    text = json.dumps(out["stages"])
    out["failed"] = '"error"' in text or '"status": "failed"' in text
    write(out, args)
    print(f"gpu_check: wrote {args.out} in {out['elapsed_s']} s", flush=True)
    return 1 if out["failed"] else 0


if __name__ == "__main__":
    raise SystemExit(main())

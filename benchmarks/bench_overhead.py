"""The framework's own cost: wall time against the time of the stages, start-up, Dask speed-up.

Everything runs the installed ``ltr-bench`` command in a subprocess (interpreter start and
imports included, as a user sees it), in a scratch folder with an MLflow store that already
exists (made by a first, untimed run). Measured, each from one run unless said otherwise:

1. **main**: the README's main command ``ltr-bench run --ranker lightgbm,xgboost-gbrt
   --dataset synthetic`` (MLflow on) into a fresh results folder: wall time from the
   command's start to its exit (what a user waits for, the logging process's last work
   included) / the summed stage times of its records (setup + fit + score + evaluate of
   every cell, plus the load of every fold once: in process one load serves all rankers of
   a fold). Target <= 1.15. Each round runs the command three ways (``ENDINGS``): as a
   user does (it exits when MLflow has every run), with ``LTR_BENCH_MLFLOW_WAIT=0`` (it
   exits after the summary table and the logging finishes in the background; the next
   timing waits, untimed, until it has) and with ``--no-mlflow`` (the reference at the same
   load); ``--repeat N`` rounds, medians printed. ``--threads N`` (default 1) goes to every
   run.
2. **one fold**: ``ltr-bench run --ranker lightgbm --dataset <MQ2008-shaped folder> --folds
   1`` (MLflow on, parsed-data cache warm, existing store): start to exit - stages = the
   wait beyond the stage time, in seconds (target <= 2.0 s), and the part of it after the
   summary table was printed (the wait at exit: the user has the numbers, the command has
   not ended), ended the same three ways in each round. Each round also times a bare
   ``python -c "import lightgbm, mlflow"`` just before the three endings, and prints the
   wait beyond the stages / that bare import (target <= 1.2; at the end the median wait
   beyond the stages / the median bare import). The folder is
   generated here (:func:`write_letor`: 1,000 queries, ~15,000 documents, 46 features, 5
   folds in MQ2008's layout), so no download is needed.
3. **start-up**: ``ltr-bench --help`` and ``ltr-bench rankers``, median wall of 5 runs.
   Targets < 0.15 s and < 1 s. ``rankers`` caches each ranker's import check: its first call
   (empty status cache in the scratch folder) is timed alone and printed as "cold"; the
   median of the 5 calls after it is the warm number.
4. **Dask**: ten independent cells (lightgbm and xgboost-gbrt, 200 trees, one thread, the
   5 folds of the generated folder, cache warm, MLflow on): in process, then ``--workers
   2`` (cluster start included), each into a fresh results folder. Speed-up = in-process
   wall / Dask wall; target >= 1.6. The script checks that both runs' metrics are identical
   (bit for bit) and prints the machine's parallel capacity now (2.0 on an idle 2-core
   machine: no executor can beat it). The same pair again with ``--no-mlflow``; each run's
   CPU seconds (all its processes: client, forkserver, workers) beside its wall time.
5. **finished re-run** (``--parts rerun``): the main command once into a results folder
   (untimed, MLflow on: every record logged and noted), then ``--repeat N`` rounds (at least
   3) alternating the same command again (all 10 cells finished: no fold loaded, no MLflow
   logging process started) and a bare ``python -c "import lightgbm, mlflow"``; the ratio
   of the medians is printed (target <= 1.1) with the load before and after.

Dask at the size of real cells (ten OHSUMED cells of seconds, issue 35.3) is measured by
``bench_dask_cells.py``, which uses the same timers (``command_timing.py``).

The load average is printed before and after every timing: on a shared machine the numbers
move with it, so compare ratios within one run.

    python benchmarks/bench_overhead.py                  # all parts
    python benchmarks/bench_overhead.py --parts main,startup
    python benchmarks/bench_overhead.py --parts rerun --repeat 5      # finished re-run
    python benchmarks/bench_overhead.py --parts main,fold --repeat 5   # medians of 5 rounds
    git worktree add /tmp/before 85fff15      # then, for a before/after at the same load:
    python benchmarks/bench_overhead.py --parts main,fold --reference /tmp/before
    python benchmarks/bench_overhead.py --parts dask --reference /tmp/before --repeat 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from command_timing import (  # noqa: E402 - script dir
    LAST_CPU,
    LAST_WAIT,
    REFERENCE,
    _children_cpu,
    _reap,
    load,
    records,
    stage_seconds,
    timed,
    timed_lines,
)


def write_letor(root: Path, *, n_queries=1000, n_features=46, n_folds=5, seed=0) -> Path:
    """An MQ2008-shaped LETOR folder: ``Fold{1..5}/{train,vali,test}.txt``, ``n_queries``
    queries of 1-30 documents (mean ~15), features in [0, 1], labels 0-2 from a noisy linear
    score. Fold k tests on the k-th fifth of the queries, validates on the next, trains on
    the other three (MQ2008's rotation)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    w = rng.normal(size=n_features)
    sizes = rng.integers(1, 30, size=n_queries)
    lines_of = []
    for q, n in enumerate(sizes, start=1):
        X = rng.random((n, n_features))
        s = X @ w + rng.normal(scale=2.0, size=n)
        labels = np.digitize(s, np.quantile(s, [0.6, 0.9])) if n > 2 else np.zeros(n, int)
        lines_of.append(
            [
                f"{int(y)} qid:{q} "
                + " ".join(f"{j + 1}:{v:.6f}" for j, v in enumerate(x))
                + f" #docid = D{q}-{i}"
                for i, (x, y) in enumerate(zip(X, labels))
            ]
        )
    parts = np.array_split(np.arange(n_queries), n_folds)
    for k in range(n_folds):
        test, vali = parts[k], parts[(k + 1) % n_folds]
        train = np.concatenate([parts[(k + j) % n_folds] for j in range(2, n_folds)])
        folder = root / f"Fold{k + 1}"
        folder.mkdir(parents=True, exist_ok=True)
        for name, qs in (("train", train), ("vali", vali), ("test", test)):
            text = "\n".join(line for q in sorted(qs) for line in lines_of[q]) + "\n"
            (folder / f"{name}.txt").write_text(text)
    return root


def _median(values) -> float:
    return statistics.median(list(values))


#: how ``run`` may end, each timed in every round of the main and one-fold parts: the default
#: (it exits when MLflow has every run), the background exit (``LTR_BENCH_MLFLOW_WAIT=0``:
#: it exits after the summary table, the logging finishes after it), and ``--no-mlflow``
#: (the reference at the same load)
ENDINGS = (
    ("wait (default)", [], {}),
    ("background", [], {"LTR_BENCH_MLFLOW_WAIT": "0"}),
    ("--no-mlflow", ["--no-mlflow"], {}),
)


def _settle(work: Path) -> None:
    """Wait (untimed) until no background logger of ``work``'s store is left, so that the
    next timing does not share the machine with it."""
    from ltr_bench.tracking import default_tracking_uri
    from ltr_bench.tracking.background import wait_for_background_logging

    wait_for_background_logging(default_tracking_uri(work), timeout=600, say=lambda _: None)


def _endings(args: list[str], out: str, work: Path, env: dict, r: int) -> dict:
    """Each of :data:`ENDINGS` of ``args`` into ``<work>/<out>-<ending>-<r>``: name ->
    (start to exit, stage seconds, after the summary table, CPU)."""
    rows = {}
    for name, extra, more_env in ENDINGS:
        folder = work / f"{out}-{name.split()[0].strip('-')}-{r}"
        cpu = _children_cpu()
        wall = timed_lines([*args, *extra, "--results-dir", str(folder)], work, env | more_env)
        _settle(work)
        _reap()  # a background logger is reaped here: its CPU counts for its own run
        cpu = _children_cpu() - cpu
        rows[name] = (wall, stage_seconds(records(folder)), LAST_WAIT[0], cpu)
    return rows


def _rounds(
    title: str, args, out: str, work: Path, env: dict, repeat: int, figure, with_bare=False
) -> list:
    """``repeat`` rounds of :func:`_endings`, each printed with the load before and after and
    ``figure(wall, stages, bare)``, the part's own measure (``bare``: with ``with_bare``, a
    :func:`bare_import` timed just before the round's endings, else None); returns the
    rounds' ``(rows, bare)``."""
    rounds = []
    for r in range(repeat):
        before = load()
        bare = bare_import(work, env) if with_bare else None
        rows = _endings(args, out, work, env, r)
        rounds.append((rows, bare))
        print(f"{title}, round {r + 1}   [{before} -> {load()}]")
        if bare is not None:
            print(f"  bare import lightgbm, mlflow {bare:.2f} s")
        for name, (wall, stages, wait, cpu) in rows.items():
            print(
                f"  {name:15} start to exit {wall:.2f} s, stages {stages:.2f} s, "
                f"{figure(wall, stages, bare)}, {wait:.2f} s after the summary table; "
                f"CPU {cpu:.2f} s"
            )
    return rounds


def part_main(work: Path, env: dict, repeat: int = 1, threads: int = 1) -> None:
    """The README's main command, ``repeat`` rounds, each ending as :data:`ENDINGS` says
    (``--no-mlflow`` the reference at the same load): wall (start to exit) / stage time of
    each, the wait after the summary table, and the medians."""
    args = ["run", "--ranker", "lightgbm,xgboost-gbrt", "--dataset", "synthetic"]
    args += ["--threads", str(threads)]
    timed([*args, "--folds", "1", "--results-dir", str(work / "warm-main")], work, env)
    rounds = _rounds(
        "main command", args, "main", work, env, repeat,
        lambda wall, stages, _: f"ratio {wall / stages:.2f} (target <= 1.15)",
    )  # fmt: skip
    for name, _, _ in ENDINGS:
        ratio = _median(x[name][0] / x[name][1] for x, _ in rounds)
        after = _median(x[name][2] for x, _ in rounds)
        print(
            f"main command, {name}: median ratio {ratio:.2f} (target <= 1.15), median "
            f"{after:.2f} s after the summary table, of {repeat} round(s)"
        )


def part_one_fold(work: Path, env: dict, data: Path, repeat: int = 1, threads: int = 1) -> None:
    """One MQ2008-sized fold of ``lightgbm`` into an existing store, ``repeat`` rounds, each
    ending as :data:`ENDINGS` says (``--no-mlflow`` the reference at the same load): start
    to exit beyond the stage time (what MLflow and the framework make a user wait for), the
    part of it after the summary table (the wait at exit), and the medians."""
    args = ["run", "--ranker", "lightgbm", "--dataset", str(data), "--folds", "1"]
    args += ["--threads", str(threads)]
    timed([*args, "--results-dir", str(work / "warm-fold")], work, env)  # cache + store
    rounds = _rounds(
        "one MQ2008-sized fold", args, "fold", work, env, repeat,
        lambda wall, stages, bare: f"beyond the stages {wall - stages:.2f} s (target <= 2.0), "
        f"{(wall - stages) / bare:.2f}x the bare import (target <= 1.2)",
        with_bare=True,
    )  # fmt: skip
    ref = _median(x["--no-mlflow"][0] - x["--no-mlflow"][1] for x, _ in rounds)
    bare = _median(b for _, b in rounds)
    print(
        f"one MQ2008-sized fold: bare import lightgbm, mlflow median {bare:.2f} s "
        f"({', '.join(f'{b:.2f}' for _, b in rounds)})"
    )
    for name, _, _ in ENDINGS:
        beyond = _median(x[name][0] - x[name][1] for x, _ in rounds)
        ratio = beyond / bare  # the medians' ratio, as the finished re-run part's
        after = _median(x[name][2] for x, _ in rounds)
        print(
            f"one MQ2008-sized fold, {name}: median beyond the stages {beyond:.2f} s (target "
            f"<= 2.0; {beyond - ref:+.2f} s against --no-mlflow), {ratio:.2f}x the median bare "
            f"import (target <= 1.2), after the summary table {after:.2f} s, of {repeat} "
            "round(s)"
        )


def bare_import(work: Path, env: dict) -> float:
    """Wall seconds of a bare ``python -c "import lightgbm, mlflow"`` (interpreter start
    included), the yardstick of the one-fold and finished re-run parts."""
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import lightgbm, mlflow"], cwd=work, env=env, check=True)
    return time.perf_counter() - t


def part_rerun(work: Path, env: dict, repeat: int = 3) -> None:
    """The main command again when all its cells are finished and logged, against a bare
    ``import lightgbm, mlflow``, alternating, ``max(repeat, 3)`` rounds; medians and ratio."""
    args = ["run", "--ranker", "lightgbm,xgboost-gbrt", "--dataset", "synthetic"]
    args += ["--results-dir", str(work / "rerun")]
    timed(args, work, env)  # computes and logs the 10 cells (untimed)
    before = load()
    reruns, imports = [], []
    for _ in range(max(repeat, 3)):
        reruns.append(timed(args, work, env))
        imports.append(bare_import(work, env))
    rerun, bare_s = _median(reruns), _median(imports)
    print(
        f"finished re-run of the main command: median {rerun:.2f} s "
        f"({', '.join(f'{x:.2f}' for x in reruns)}); bare import lightgbm, mlflow: median "
        f"{bare_s:.2f} s ({', '.join(f'{x:.2f}' for x in imports)}); ratio "
        f"{rerun / bare_s:.2f} (target <= 1.1), {len(reruns)} rounds   [{before} -> {load()}]"
    )


def part_startup(work: Path, env: dict) -> None:
    """``--help``: median of 5. ``rankers``: its first call in the scratch folder's empty
    status cache ($LTR_BENCH_CACHE: every ranker imported, the answers stored) is timed alone
    and printed as "cold"; the median of the 5 calls after it is the warm-cache number the
    target is about."""
    for args, target in ((["--help"], 0.15), (["rankers"], 1.0)):
        before = load()
        first = warm = ""
        if args == ["rankers"]:
            wall = timed(args, work, env)
            cached = (Path(env["LTR_BENCH_CACHE"]) / "rankers-status.json").is_file()
            what = "cold (first call, empty status cache)" if cached else "first call"
            first = f"; {what} {wall:.3f} s, CPU {LAST_CPU[0]:.3f} s"
            warm = " (status cache warm)" if cached else " (this code writes no status cache)"
        walls, cpus = [], []
        for _ in range(5):
            walls.append(timed(args, work, env))
            cpus.append(LAST_CPU[0])
        print(
            f"ltr-bench {' '.join(args)}: median {statistics.median(walls):.3f} s of 5{warm} "
            f"(min {min(walls):.3f}, target < {target}); median CPU "
            f"{statistics.median(cpus):.3f} s{first}   [{before} -> {load()}]"
        )


def dask_args(data: Path) -> list[str]:
    """The ten cells of the Dask part (without ``--workers``)."""
    return [
        "run",
        "--ranker",
        "lightgbm,xgboost-gbrt",
        "--dataset",
        str(data),
        "--param",
        "lightgbm.n_estimators=200",
        "--param",
        "xgboost-gbrt.n_estimators=200",
        "--threads",
        "1",
    ]


def warm_dask(work: Path, env: dict, data: Path) -> None:
    """The MLflow store made and every fold in the parsed-data cache."""
    args = dask_args(data)
    timed([*args, "--folds", "1", "--results-dir", str(work / "warm-dask")], work, env)
    for k in range(2, 6):
        timed(
            [*args, "--folds", str(k), "--no-mlflow", "--results-dir", str(work / "warm-dask")],
            work,
            env,
        )


def part_dask(work: Path, env: dict, data: Path, workers: int) -> None:
    from bench_executors import parallel_capacity

    args = dask_args(data)
    warm_dask(work, env, data)
    for extra, name in (([], "MLflow on"), (["--no-mlflow"], "--no-mlflow")):
        tag = "" if not extra else "-nomlflow"
        before = load()
        here = timed([*args, *extra, "--results-dir", str(work / f"inproc{tag}")], work, env)
        here_cpu = LAST_CPU[0]
        mid = load()
        dask = timed(
            [*args, *extra, "--workers", str(workers), "--results-dir", str(work / f"dask{tag}")],
            work,
            env,
        )
        dask_cpu = LAST_CPU[0]
        after = load()
        a = {r["key"]: r["metrics"] for r in records(work / f"inproc{tag}")}
        b = {r["key"]: r["metrics"] for r in records(work / f"dask{tag}")}
        same = a == b and len(a) == 10
        print(
            f"ten cells, {name}: in process {here:.2f} s (CPU {here_cpu:.2f} s) [{before}], "
            f"--workers {workers} {dask:.2f} s (CPU {dask_cpu:.2f} s) [{mid} -> {after}], "
            f"speed-up {here / dask:.2f}x (target >= 1.6); parallel capacity now "
            f"{parallel_capacity(workers):.2f}; metrics identical: {same}"
        )
        if not same:
            raise SystemExit("the Dask run's metrics differ from the in-process run's")


def part_dask_interleaved(runs, data: Path, workers: int, repeat: int) -> None:
    """The Dask part ``repeat`` times, this checkout and the reference taking turns (in
    process, then ``--workers``, for each), so that both see the same load; prints every
    run and the median speed-up and CPU of each checkout."""
    from bench_executors import parallel_capacity

    for name, folder, run_env in runs:
        REFERENCE[:] = [Path(name)] if name != "this checkout" else []
        warm_dask(folder, run_env, data)
    args = dask_args(data)
    for extra, mode in (([], "MLflow on"), (["--no-mlflow"], "--no-mlflow")):
        seen: dict[str, list[tuple[float, float, float, float]]] = {}
        for r in range(repeat):
            for name, folder, run_env in runs:
                REFERENCE[:] = [Path(name)] if name != "this checkout" else []
                tag = f"{'-nomlflow' if extra else ''}-{r}"
                before = load()
                here = timed(
                    [*args, *extra, "--results-dir", str(folder / f"i{tag}")], folder, run_env
                )
                here_cpu = LAST_CPU[0]
                dask = timed(
                    [
                        *args,
                        *extra,
                        "--workers",
                        str(workers),
                        "--results-dir",
                        str(folder / f"d{tag}"),
                    ],
                    folder,
                    run_env,
                )
                dask_cpu = LAST_CPU[0]
                a = {x["key"]: x["metrics"] for x in records(folder / f"i{tag}")}
                b = {x["key"]: x["metrics"] for x in records(folder / f"d{tag}")}
                if a != b or len(a) != 10:
                    raise SystemExit(f"{name}: the Dask run's metrics differ from in process")
                seen.setdefault(name, []).append((here, dask, here_cpu, dask_cpu))
                print(
                    f"{mode}, {name}, round {r + 1}: in process {here:.2f} s (CPU "
                    f"{here_cpu:.2f} s), --workers {workers} {dask:.2f} s (CPU {dask_cpu:.2f} s), "
                    f"speed-up {here / dask:.2f}x; metrics identical   [{before} -> {load()}]"
                )
        print(f"parallel capacity now {parallel_capacity(workers):.2f}")
        for name, rows in seen.items():
            med = statistics.median
            print(
                f"{mode}, {name}: median of {len(rows)}: in process "
                f"{med(r[0] for r in rows):.2f} s "
                f"(CPU {med(r[2] for r in rows):.2f} s), --workers {workers} "
                f"{med(r[1] for r in rows):.2f} s (CPU {med(r[3] for r in rows):.2f} s), "
                f"speed-up {med(r[0] / r[1] for r in rows):.2f}x"
            )


def checkouts(work: Path, env: dict, reference: Path | None) -> list[tuple[str, Path, dict]]:
    """``(name, scratch folder, environment)`` of this checkout and, with ``--reference``,
    of that checkout's code (``PYTHONPATH``, same installed dependencies, its own cache)."""
    runs = [("this checkout", work, env)]
    if reference is not None:
        ref = reference.resolve()
        path = os.pathsep.join([str(ref), str(ref / "baselines")])
        ref_env = {**env, "PYTHONPATH": path, "LTR_BENCH_CACHE": str(work / "ref-cache")}
        (work / "ref").mkdir()
        runs.append((f"reference {ref}", work / "ref", ref_env))
    return runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--parts", default="main,fold,startup,dask,rerun")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--threads", type=int, default=1, help="main and fold: --threads of every run (default 1)"
    )
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="main and fold: N rounds, each beside its --no-mlflow reference, and the "
        "medians; with --parts dask alone: N times, this checkout and the --reference taking "
        "turns, and the medians (both see the same load)",
    )
    ap.add_argument(
        "--reference",
        type=Path,
        default=None,
        help="a checkout of another commit (git worktree add DIR COMMIT): the parts run "
        "again on its code (same installed dependencies), for a before/after at one load",
    )
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    work = Path(tempfile.mkdtemp(prefix="ltr-bench-overhead-"))
    env = {**os.environ, "LTR_BENCH_CACHE": str(work / "cache")}
    env.pop("MLFLOW_TRACKING_URI", None)
    env.pop("LTR_BENCH_MLFLOW_WAIT", None)  # each ending sets its own (ENDINGS)
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(
        f"commit {commit}; {os.cpu_count()} cores; --threads {args.threads}; {load()}; "
        f"scratch {work}"
    )
    try:
        data = write_letor(work / "MQ2008-like") if parts & {"fold", "dask"} else None
        runs = checkouts(work, env, args.reference)
        if args.repeat > 1 and parts == {"dask"}:
            part_dask_interleaved(runs, data, args.workers, args.repeat)
            return
        for name, folder, run_env in runs:
            REFERENCE[:] = [Path(name)] if name != "this checkout" else []
            print(f"-- {name}")
            if "startup" in parts:
                part_startup(folder, run_env)
            if "rerun" in parts:
                part_rerun(folder, run_env, args.repeat)
            if "main" in parts:
                part_main(folder, run_env, args.repeat, args.threads)
            if "fold" in parts:
                part_one_fold(folder, run_env, data, args.repeat, args.threads)
            if "dask" in parts:
                part_dask(folder, run_env, data, args.workers)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Results you can trust under bad data, damaged caches, crashes, full disks and concurrency.

The corpus (:data:`CASES`) runs ``ltr-bench run`` in-process on a tiny LETOR folder (or with a
bad option) and checks the exit code, a fragment of the message and that no traceback is
printed. The tests after it cover what a table cannot: a real SIGKILL of a subprocess and the
resume, SIGTERM, a concurrent first use of one MLflow store, a damaged cache entry, an edit
that keeps a file's size and mtime, concurrent claims on one cell, and a real full disk
(a 1 MiB tmpfs, when this process may mount one).

Set ``LTRB_CORPUS_TABLE=<file>`` to append each case's (case, exit code, message) to a file.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import ltrb_fake_rankers as fakes
import numpy as np
import pytest
from click.testing import CliRunner
from ltrb_processes import SLOW_RANKER, run_here, subprocess_env

from ltr_bench.cli import main
from ltr_bench.ranker import RankerInputError, check_ranking_input

FAKE = "fake-linear"


def _rows(n_queries=6, docs=5, labels=(0, 1, 2), n_features=3, qid0=1):
    """LETOR lines: every query has every grade in ``labels`` (so ranges are known)."""
    rng = np.random.default_rng(n_queries * 100 + qid0)
    out = []
    for q in range(qid0, qid0 + n_queries):
        for d in range(docs):
            lab = labels[d % len(labels)]
            feats = " ".join(f"{j + 1}:{rng.random():.4f}" for j in range(n_features))
            out.append(f"{lab} qid:{q} {feats}")
    return out


def _write(path: Path, lines) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def make_folder(root: Path) -> Path:
    """A one-fold LETOR folder: train.txt, vali.txt, test.txt (labels 0..2, 3 features)."""
    _write(root / "train.txt", _rows(8, qid0=1))
    _write(root / "vali.txt", _rows(4, qid0=100))
    _write(root / "test.txt", _rows(4, qid0=200))
    return root


def _set_line(path: Path, lineno: int, text: str) -> None:
    lines = path.read_text().splitlines()
    lines[lineno - 1] = text
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def env(tmp_path, monkeypatch, fake_rankers):
    """Working directory, cache and data folder of one case; ``env.run(*args)`` runs
    ``ltr-bench`` in-process and returns (exit code, all output)."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("LTR_BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)

    class Env:
        data = make_folder(tmp_path / "data")
        root = tmp_path

        @staticmethod
        def run(*args):
            result = CliRunner().invoke(main, list(args))
            if result.exception is not None and not isinstance(result.exception, SystemExit):
                raise result.exception  # an uncaught exception is itself a failure
            return result.exit_code, result.output

        @staticmethod
        def run_fake(*extra, dataset=None):
            return Env.run(
                "run",
                "--ranker",
                FAKE,
                "--dataset",
                str(dataset or Env.data),
                "--no-mlflow",
                "--metrics",
                "ndcg@10,err@10",
                *extra,
            )

    return Env


# -------------------------------------------------------------------------------- the corpus
# Each case: (name, setup(env) -> argv or None for the default fake run, exit code, fragment).
# ``{data}`` in a fragment is the data folder.


def _edit(split: str, lineno: int, text: str):
    def setup(e):
        _set_line(e.data / f"{split}.txt", lineno, text)

    return setup


def _replace_file(split: str, content: bytes):
    def setup(e):
        (e.data / f"{split}.txt").write_bytes(content)

    return setup


def _gz_damaged(e):
    raw = (e.data / "train.txt").read_bytes() * 40
    blob = bytearray(gzip.compress(raw))
    mid = len(blob) // 2
    blob[mid : mid + 64] = bytes(64)
    (e.data / "train.txt").unlink()
    (e.data / "train.txt.gz").write_bytes(bytes(blob))


def _gz_truncated(e):
    blob = gzip.compress((e.data / "test.txt").read_bytes())
    (e.data / "test.txt").unlink()
    (e.data / "test.txt.gz").write_bytes(blob[: len(blob) // 2])


def _folder_as_file(e):
    (e.data / "test.txt").unlink()
    (e.data / "test.txt").mkdir()


def _two_trains(e):
    (e.data / "train.txt.gz").write_bytes(gzip.compress((e.data / "train.txt").read_bytes()))


def _no_test(e):
    (e.data / "test.txt").unlink()


def _query_files(bad_line: bool):
    def setup(e):
        for split, nq in (("train", 8), ("test", 4)):
            lines = [
                " ".join(t for t in l.split() if not t.startswith("qid:"))
                for l in (e.data / f"{split}.txt").read_text().splitlines()
            ]
            (e.data / f"{split}.txt").unlink()
            _write(e.data / f"rank.{split}", lines)
            sizes = ["5"] * nq
            if bad_line:
                sizes[0] = "five"
            else:
                sizes[-1] = "4"  # one row short of the data file
            _write(e.data / f"rank.{split}.query", sizes)
        (e.data / "vali.txt").unlink()

    return setup


def _garbage_token(e):
    _set_line(e.data / "train.txt", 3, "1 qid:1 " + "x" * (1 << 20))


def _results_is_file(e):
    (e.root / "work" / "res").write_text("not a folder")
    return ["--results-dir", "res"]


def _results_under_file(e):
    (e.root / "work" / "res").write_text("not a folder")
    return ["--results-dir", "res/sub"]


def _output_is_folder(e):
    (e.root / "work" / "out").mkdir()
    return ["--output", "out"]


def _output_under_file(e):
    (e.root / "work" / "out").write_text("x")
    return ["--output", "out/results.json"]


def _cache_is_file(e):
    (e.root / "work" / "c").write_text("x")
    return ["--cache-dir", "c"]


def _store_under_file(e):
    (e.root / "work" / "f").write_text("x")
    return ["MLFLOW", "--tracking-uri", f"sqlite:///{e.root / 'work' / 'f' / 'mlflow.db'}"]


def _store_garbage_file(e):
    (e.root / "work" / "g.db").write_bytes(b"this is not a database" * 100)
    return ["MLFLOW", "--tracking-uri", f"sqlite:///{e.root / 'work' / 'g.db'}"]


def _store_half_created(e):
    db = e.root / "work" / "h.db"
    # what ltr-bench's interrupted creation leaves: its marker, some tables, no version
    (e.root / "work" / "h.db.creating").write_text("1\n")
    con = sqlite3.connect(db)
    con.execute("create table experiments (experiment_id integer primary key, name text)")
    con.execute("create table runs (run_uuid text primary key)")
    con.commit()
    con.close()
    return ["MLFLOW", "--tracking-uri", f"sqlite:///{db}"]


def _store_broken_with_runs(e):
    db = e.root / "work" / "b.db"
    con = sqlite3.connect(db)
    con.execute("create table runs (run_uuid text primary key)")
    con.execute("insert into runs values ('abc')")
    con.commit()
    con.close()
    return ["MLFLOW", "--tracking-uri", f"sqlite:///{db}"]


def _damage_results_json(e):
    code, out = e.run_fake("--results-dir", "res")
    assert code == 0, out
    for p in (e.root / "work" / "res").glob("*.json"):
        p.write_text("{ damaged")
    return ["--results-dir", "res"]


def _stale_result(e):
    code, out = e.run_fake("--results-dir", "res")
    assert code == 0, out
    _set_line(e.data / "test.txt", 2, "2 qid:200 1:0.5 2:0.5 3:0.5")
    return ["--results-dir", "res"]


def _cache_damage(how: str):
    def setup(e):
        code, out = e.run_fake("--results-dir", "res0")
        assert code == 0, out
        for entry in (e.root / "cache" / "letor").iterdir():
            if how == "x":
                x = entry / "X.f8"
                b = bytearray(x.read_bytes())
                b[:16] = np.array([7.0, 7.0]).tobytes()  # same size, other numbers
                x.write_bytes(bytes(b))
            elif how == "y":
                y = entry / "y.i8"
                y.write_bytes(np.full(y.stat().st_size // 8, 2, np.int64).tobytes())
            elif how == "meta":
                (entry / "meta.json").write_text("{")
            elif how == "truncate":
                (entry / "X.f8").write_bytes(b"\0" * 8)
        return ["--results-dir", "res"]

    return setup


PARAM = "--param"

CASES = [
    # bad data: a message naming file and line, exit 1
    (
        "test label outside the training range",
        _edit("test", 3, "7 qid:200 1:0.1 2:0.2 3:0.3"),
        1,
        "test.txt:3: the label 7 is outside",
    ),
    (
        "vali label outside the training range",
        _edit("vali", 2, "3 qid:100 1:0.1 2:0.2 3:0.3"),
        1,
        "vali.txt:2: the label 3 is outside",
    ),
    (
        "training label 5000",
        _edit("train", 4, "5000 qid:1 1:0.1 2:0.2 3:0.3"),
        1,
        "train.txt:4: the label 5000 is outside",
    ),
    (
        "negative label",
        _edit("train", 1, "-1 qid:1 1:0.1 2:0.2 3:0.3"),
        1,
        "train.txt:1: the label -1 is outside",
    ),
    (
        "label is text",
        _edit("train", 2, "abc qid:1 1:0.1"),
        1,
        "train.txt:2: cannot parse the label",
    ),
    ("label is nan", _edit("test", 2, "nan qid:200 1:0.1"), 1, "test.txt:2: the label is 'nan'"),
    (
        "label is fractional",
        _edit("train", 2, "1.5 qid:1 1:0.1"),
        1,
        "train.txt:2: the label '1.5' is not an integer",
    ),
    ("label 1e400", _edit("train", 2, "1e400 qid:1 1:0.1"), 1, "train.txt:2: the label is '1e400'"),
    ("missing qid", _edit("train", 5, "1 1:0.1 2:0.2"), 1, "train.txt:5: the line has no qid"),
    ("qid is text", _edit("train", 5, "1 qid:abc 1:0.1"), 1, "train.txt:5: the query id 'abc'"),
    ("qid beyond int64", _edit("train", 5, f"1 qid:{2**64} 1:0.1"), 1, "train.txt:5: the query id"),
    ("qid after features", _edit("train", 5, "1 1:0.1 qid:1"), 1, "train.txt:5:"),
    ("feature index 0", _edit("train", 6, "1 qid:2 0:0.1"), 1, "train.txt:6: feature index '0'"),
    (
        "feature indices decreasing",
        _edit("train", 6, "1 qid:2 2:0.1 1:0.3"),
        1,
        "train.txt:6: feature index 1 comes after index 2",
    ),
    (
        "feature index 2^40",
        _edit("train", 6, f"1 qid:2 {2**40}:0.1"),
        1,
        f"train.txt:6: feature index {2**40} is beyond 65536",
    ),
    (
        "feature index 10^9",
        _edit("test", 6, "1 qid:201 1000000000:0.1"),
        1,
        "test.txt:6: feature index 1000000000 is beyond 65536",
    ),
    (
        "feature index beyond int64",
        _edit("test", 6, f"1 qid:201 {2**70}:0.1"),
        1,
        "test.txt:6: feature index",
    ),
    (
        "feature value nan",
        _edit("train", 7, "1 qid:2 1:nan"),
        1,
        "train.txt:7: feature 1 has the value 'nan'",
    ),
    (
        "feature value inf",
        _edit("vali", 7, "1 qid:101 1:inf"),
        1,
        "vali.txt:7: feature 1 has the value 'inf'",
    ),
    (
        "feature value text",
        _edit("train", 7, "1 qid:2 1:abc"),
        1,
        "train.txt:7: cannot parse the value of feature 1",
    ),
    (
        "token without colon",
        _edit("train", 7, "1 qid:2 12"),
        1,
        "train.txt:7: cannot parse '12' as index:value",
    ),
    ("1 MiB garbage token", _garbage_token, 1, "characters)"),
    ("binary garbage file", _replace_file("train", bytes(range(256)) * 50), 1, "train.txt:"),
    ("empty test file", _replace_file("test", b""), 1, "test.txt: the file has no data lines"),
    (
        "comments only",
        _replace_file("vali", b"# nothing\n# here\n"),
        1,
        "vali.txt: the file has no data lines",
    ),
    ("gzip damaged mid-stream", _gz_damaged, 1, "train.txt.gz: the compressed file is damaged"),
    (
        "gzip truncated",
        _gz_truncated,
        1,
        "test.txt.gz: the compressed file is damaged or truncated",
    ),
    ("test.txt is a folder", _folder_as_file, 1, "test.txt: is a folder"),
    ("train.txt and train.txt.gz", _two_trains, 1, "keep only one"),
    ("no test file", _no_test, 1, "no test file"),
    (
        "query file does not add up",
        _query_files(False),
        1,
        "rank.train.query: the group sizes add up to",
    ),
    ("query file bad line", _query_files(True), 1, "rank.train.query:1: cannot parse 'five'"),
    (
        "label above label_max option",
        lambda e: ["--dataset-option", "label_max=1"],
        1,
        "the label 2 is outside",
    ),
    (
        "feature beyond n_features option",
        lambda e: ["--dataset-option", "n_features=2"],
        1,
        "feature index 3 is beyond the 2 features",
    ),
    (
        "dataset folder missing",
        lambda e: ["--dataset", str(e.root / "nowhere")],
        1,
        "does not exist",
    ),
    # bad invocations: exit 2 naming the option and what is allowed
    (
        "lightgbm num_leaves=abc",
        lambda e: ["--ranker", "lightgbm", PARAM, "lightgbm.num_leaves=abc"],
        2,
        "'num_leaves' parameter of LightGBMRanker must be an int in the range [2, inf)",
    ),
    (
        "lightgbm n_estimators=-5",
        lambda e: ["--ranker", "lightgbm", PARAM, "lightgbm.n_estimators=-5"],
        2,
        "'n_estimators' parameter",
    ),
    (
        "lightgbm learning_rate=0",
        lambda e: ["--ranker", "lightgbm", PARAM, "lightgbm.learning_rate=0"],
        2,
        "'learning_rate' parameter",
    ),
    (
        "lightgbm preset=foo",
        lambda e: ["--ranker", "lightgbm", PARAM, "lightgbm.preset=foo"],
        2,
        "'preset' parameter of LightGBMRanker must be a str among",
    ),
    (
        "lightgbm unknown parameter",
        lambda e: ["--ranker", "lightgbm", PARAM, "lightgbm.num_leafs=3"],
        2,
        "num_leafs",
    ),
    (
        "xgboost max_depth=-1",
        lambda e: ["--ranker", "xgboost-gbrt", PARAM, "xgboost-gbrt.max_depth=-1"],
        2,
        "'max_depth' parameter of XGBoostGBRTRanker",
    ),
    (
        "xgboost eval_at=0",
        lambda e: ["--ranker", "xgboost-lambdamart", PARAM, "xgboost-lambdamart.eval_at=0"],
        2,
        "'eval_at' parameter",
    ),
    ("mlr k=0", lambda e: ["--ranker", "mlr", PARAM, "mlr.k=0"], 2, "k must be an integer >= 1"),
    (
        "mlr loss=foo",
        lambda e: ["--ranker", "mlr", PARAM, "mlr.loss=foo"],
        2,
        "loss must be one of",
    ),
    ("unknown ranker", lambda e: ["--ranker", "lightgbn"], 2, "lightgbm"),
    ("unknown dataset", lambda e: ["--dataset", "ohsumd"], 2, "ohsumed"),
    ("fold that does not exist", lambda e: ["--folds", "9"], 2, "has no fold 9"),
    ("unknown folder option", lambda e: ["--dataset-option", "bogus=1"], 2, "bogus"),
    ("unknown metric", lambda e: ["--metrics", "ndcg@x"], 2, "ndcg@x"),
    ("negative seed", lambda e: ["--seed", "-1"], 2, "--seed"),
    ("zero threads", lambda e: ["--threads", "0"], 2, "--threads"),
    (
        "tracking uri nonsense://x",
        lambda e: ["MLFLOW", "--tracking-uri", "nonsense://x"],
        2,
        "unknown scheme 'nonsense'",
    ),
    (
        "tracking uri sqlite with two slashes",
        lambda e: ["MLFLOW", "--tracking-uri", "sqlite://x.db"],
        2,
        "three slashes",
    ),
    ("results dir is a file", _results_is_file, 2, "'--results-dir': Directory 'res' is a file"),
    ("results dir under a file", _results_under_file, 2, "--results-dir res/sub is not usable"),
    ("output is a folder", _output_is_folder, 2, "'--output': File 'out' is a directory"),
    ("output under a file", _output_under_file, 2, "--output out/results.json: its folder"),
    ("cache dir is a file", _cache_is_file, 2, "--cache-dir"),
    # stores, caches, results: kept working, or a clear exit 1
    ("store folder is a file", _store_under_file, 1, "cannot create the store"),
    ("store is not a database", _store_garbage_file, 1, "is not an SQLite database"),
    ("store half-created", _store_half_created, 0, ""),
    ("store broken but holding runs", _store_broken_with_runs, 2, ".broken"),
    ("result file damaged", _damage_results_json, 0, "ndcg@10"),
    ("saved result on changed data", _stale_result, 0, "(split fingerprints changed); recomputing"),
    ("cache X overwritten in place", _cache_damage("x"), 0, "is damaged"),
    ("cache labels overwritten in place", _cache_damage("y"), 0, "is damaged"),
    ("cache meta.json garbage", _cache_damage("meta"), 0, "is damaged"),
    ("cache array truncated", _cache_damage("truncate"), 0, "is damaged"),
]


@pytest.mark.parametrize("name,setup,code,fragment", CASES, ids=[c[0] for c in CASES])
def test_corpus_case_exits_with_its_code_and_message_and_no_traceback(
    env, name, setup, code, fragment
):
    args = list(setup(env) or [])
    mlflow = bool(args) and args[0] == "MLFLOW"
    if mlflow:
        args = args[1:]
    dataset = None
    if "--dataset" in args:
        i = args.index("--dataset")
        dataset = args[i + 1]
        del args[i : i + 2]
    ranker = FAKE
    if "--ranker" in args:
        i = args.index("--ranker")
        ranker = args[i + 1]
        del args[i : i + 2]
    argv = [
        "run",
        "--ranker",
        ranker,
        "--dataset",
        dataset or str(env.data),
        "--metrics",
        "ndcg@10,err@10",
        *([] if mlflow else ["--no-mlflow"]),
        *args,
    ]
    t0 = time.monotonic()
    exit_code, out = env.run(*argv)
    seconds = time.monotonic() - t0
    table = os.environ.get("LTRB_CORPUS_TABLE")
    if table:
        msg = next(
            (
                l
                for l in out.splitlines()
                if l.startswith(("Error", "warning", "stopped")) or "FAILED" in l or "failed" in l
            ),
            out.strip().splitlines()[-1:] or [""],
        )
        with open(table, "a") as fh:
            fh.write(json.dumps([name, exit_code, msg[:300]]) + "\n")
    assert exit_code == code, out
    assert fragment in out, out
    assert "Traceback (most recent call last)" not in out, out
    assert max(len(l) for l in out.splitlines()) < 3000  # bounded, whatever the input
    assert seconds < 30  # an unusable store fails in seconds, not after minutes of retries


def test_corpus_has_at_least_sixty_cases():
    assert len(CASES) >= 60


# ------------------------------------------------------------------------- labels and ERR


def test_err_top_grade_comes_from_the_training_split_not_the_test_split(env, tmp_path):
    code, out = env.run_fake("--output", "a.json", "--results-dir", "ra")
    assert code == 0, out
    before = json.loads((env.root / "work" / "a.json").read_text())[0]["metrics"]["err@10"]
    # a test split whose top grade the training split lacks is refused, not renormalised
    _set_line(env.data / "test.txt", 1, "3 qid:200 1:0.1 2:0.2 3:0.3")
    code, out = env.run_fake("--results-dir", "rb")
    assert code == 1 and "test.txt:1: the label 3 is outside" in out
    assert before > 0


# ----------------------------------------------------------------------- content-tied resume


def test_edit_keeping_size_and_mtime_is_found_by_cache_verify_and_then_recomputed(env):
    big = env.data / "train.txt"
    # > 2 MiB (middle not hashed) in 6,500 lines, not 65,000: each line carries a comment of
    # 340 bytes (LETOR's "# ..." tail, skipped by the reader) so that parsing and fitting stay small
    pad = " # " + "x" * 340
    _write(big, [row + pad for row in _rows(n_queries=1300, docs=5, n_features=3)])
    assert big.stat().st_size > 2 * (1 << 20)
    code, out = env.run_fake("--results-dir", "res", "--output", "a.json")
    assert code == 0, out
    st = big.stat()
    data = bytearray(big.read_bytes())
    mid = data.index(b"\n", len(data) // 2) + 1
    data[mid : mid + 1] = b"2" if data[mid : mid + 1] != b"2" else b"1"
    big.write_bytes(bytes(data))
    os.utime(big, ns=(st.st_atime_ns, st.st_mtime_ns))
    code, out = env.run("cache", "verify")
    assert code == 1 and "changed since the entry was built; removed" in out
    code, out = env.run_fake("--results-dir", "res", "--output", "b.json")
    assert code == 0 and "(split fingerprints changed); recomputing" in out, out
    a = json.loads((env.root / "work" / "a.json").read_text())[0]
    b = json.loads((env.root / "work" / "b.json").read_text())[0]
    assert a["fingerprints"]["train"] != b["fingerprints"]["train"]
    code, out = env.run("cache", "verify")
    assert code == 0 and "0 stale or damaged" in out


def test_damaged_cache_entry_is_reparsed_and_gives_the_numbers_of_the_clean_data(env):
    code, out = env.run_fake("--results-dir", "r1", "--output", "a.json")
    assert code == 0, out
    for x in (env.root / "cache" / "letor").glob("*/X.f8"):
        b = bytearray(x.read_bytes())
        b[8:16] = np.float64(123.0).tobytes()
        x.write_bytes(bytes(b))
    code, out = env.run_fake("--results-dir", "r2", "--output", "b.json")
    assert code == 0 and "is damaged" in out, out
    a = json.loads((env.root / "work" / "a.json").read_text())[0]
    b = json.loads((env.root / "work" / "b.json").read_text())[0]
    assert a["fingerprints"] == b["fingerprints"] and a["metrics"] == b["metrics"]


# --------------------------------------------------------------------------------- disk full


def test_full_disk_mid_run_stops_cleanly_and_keeps_the_saved_cells(env, monkeypatch):
    import ltr_bench.results.store as results  # where the store looks the writer up

    real = results.atomic_write_many
    calls = {"n": 0}

    def failing(items):
        path = items[-1][0]  # the record, written last
        if Path(path).suffix == ".json" and ".claims" not in str(path):
            calls["n"] += 1
            if calls["n"] == 2:  # the second record: the disk is full now
                raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(items)

    monkeypatch.setattr(results, "atomic_write_many", failing)
    code, out = env.run(
        "run",
        "--ranker",
        "fake-linear,fake-other",
        "--dataset",
        str(env.data),
        "--no-mlflow",
        "--results-dir",
        "res",
    )
    assert code == 1 and "stopped: cannot write" in out and "no space left" in out, out
    assert "1 cell(s) finished and saved" in out and "most recent call" not in out
    monkeypatch.setattr(results, "atomic_write_many", real)
    code, out = env.run(
        "run",
        "--ranker",
        "fake-linear,fake-other",
        "--dataset",
        str(env.data),
        "--no-mlflow",
        "--results-dir",
        "res",
    )
    assert code == 0 and "finished earlier, skipped" in out, out


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_output_that_cannot_be_written_still_prints_the_summary_and_keeps_the_device(env):
    import stat

    code, out = env.run_fake("--output", "/dev/full")  # a real device: every write is ENOSPC
    assert code == 1, out
    assert "--output /dev/full: cannot write it: no space left on the device" in out, out
    assert "dataset" in out and "ranker" in out  # the summary table
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)  # written to, never replaced


def test_full_disk_for_results_fails_before_any_fit(env, tiny_tmpfs):
    fakes.FITS.clear()
    code, out = env.run_fake("--results-dir", str(tiny_tmpfs / "res"))
    assert code == 2 and "no space left on the device" in out, out
    assert fakes.FITS == []


# ------------------------------------------------------------------------------ claims


def test_a_cell_claimed_by_another_process_is_waited_for_and_not_computed_twice(env, tmp_path):
    from ltr_bench.results import ResultStore
    from ltr_bench.run.cells import expand_plan
    from ltr_bench.run.harness import run_plan
    from ltr_bench.run.plan_options import CommandLine, build_plan
    from ltr_bench.run.unit import run_cell

    plan = build_plan(CommandLine(rankers=(FAKE,), datasets=(str(env.data),)))
    expanded = expand_plan(plan)
    cell = expanded.cells[0]
    other = ResultStore(tmp_path / "res")
    claim = other.claim(cell.key)  # "another process" is computing the cell
    record = run_cell(cell)
    fakes.FITS.clear()

    def finish_elsewhere():
        time.sleep(0.5)
        other.save(record)
        claim.release()

    t = threading.Thread(target=finish_elsewhere)
    t.start()
    warnings = []
    report = run_plan(expanded, ResultStore(tmp_path / "res"), warn=warnings.append)
    t.join()
    assert fakes.FITS == [] and report.n_run == 0 and report.n_skipped == 1
    assert report.records[0].metrics == record.metrics
    assert any("another process is computing this cell" in w for w in warnings)


def test_a_claim_left_by_a_dead_process_does_not_block(env, tmp_path):
    code = subprocess.run(
        [
            sys.executable,
            "-c",
            (
                "import os,sys; from ltr_bench.results import ResultStore;"
                f"c = ResultStore({str(tmp_path / 'res')!r}).claim('k'); os._exit(0)"
            ),
        ]
    ).returncode
    assert code == 0
    from ltr_bench.results import ResultStore

    claim = ResultStore(tmp_path / "res").claim("k")
    assert claim is not None
    claim.release()


# -------------------------------------------------------------------- ranker input contract


@pytest.mark.parametrize(
    "X,fragment",
    [
        (np.ones((4, 2)) + 1j, "complex"),
        (np.ones((4, 0)), "no features"),
        (np.array([[True], [False], [True], [True]]), "numeric"),
    ],
    ids=["complex", "zero features", "boolean"],
)
def test_check_ranking_input_rejects_what_would_be_silently_wrong(X, fragment):
    with pytest.raises(RankerInputError, match=fragment):
        check_ranking_input(X, np.zeros(4), np.zeros(4))


def test_check_ranking_input_names_sparse_input():
    import scipy.sparse as sp

    with pytest.raises(RankerInputError, match="sparse matrix"):
        check_ranking_input(sp.csr_matrix(np.ones((4, 2))), np.zeros(4), np.zeros(4))


# ------------------------------------------------------------ subprocesses: kill, term, store


#: a fake ranker whose fits after the ``$LTRB_HOLD_AFTER``-th (in one process) wait until the
#: process is stopped: a run is stopped half-way, its first cells saved, at the moment the test
#: chooses (no fixed fit time to wait out, none in the resume, which does not set it)
HELD_RANKER = """
import os, time
from ltrb_fake_rankers import LinearRanker

_FITS = [0]

class SlowRanker(LinearRanker):
    def fit(self, X, y, *, qid, eval_set=None):
        _FITS[0] += 1
        hold = os.environ.get("LTRB_HOLD_AFTER")
        if hold and _FITS[0] > int(hold):
            while True:
                time.sleep(0.05)
        return super().fit(X, y, qid=qid, eval_set=eval_set)
"""


def _subprocess_env(tmp_path):
    """The slow fake (``ltrb_slow:SlowRanker``, 0.7 s fits) for a real run: other files'
    tests stop a run's logging process, not the run, and need every fit to end."""
    return subprocess_env(tmp_path, {"ltrb_slow": SLOW_RANKER})


def _held_subprocess_env(tmp_path):
    """``ltrb_slow:SlowRanker`` whose fits 3 and 4 wait until the run is stopped (after 2
    cells)."""
    return subprocess_env(tmp_path, {"ltrb_slow": HELD_RANKER}, LTRB_HOLD_AFTER="2")


def _folds(root: Path, n: int) -> Path:
    for k in range(1, n + 1):
        make_folder(root / f"Fold{k}")
    return root


def _slow_cmd(data, tmp_path, ranker="ltrb_slow:SlowRanker"):
    """``python -m ltr_bench.cli run`` of ``ranker`` (the slow fake by default) on ``data``,
    its results in ``tmp_path/res`` and its MLflow store in ``tmp_path/ml``."""
    return [
        sys.executable,
        "-m",
        "ltr_bench.cli",
        "run",
        "--ranker",
        ranker,
        "--dataset",
        str(data),
        "--results-dir",
        str(tmp_path / "res"),
        "--tracking-uri",
        f"sqlite:///{tmp_path / 'ml' / 'mlflow.db'}",
        "--metrics",
        "ndcg@10",
    ]


def _wait_for_results(folder: Path, n: int, proc, timeout=90.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if len([p for p in folder.glob("*.json")]) >= n:
            return
        if proc.poll() is not None:
            raise AssertionError(proc.communicate())
        time.sleep(0.1)
    raise AssertionError("no result appeared")


@pytest.mark.slow
def test_sigkill_mid_run_then_resume_keeps_finished_cells_and_closes_the_parent(
    tmp_path, monkeypatch
):
    data = _folds(tmp_path / "data", 4)
    env = _held_subprocess_env(tmp_path)
    proc = subprocess.Popen(
        _slow_cmd(data, tmp_path),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for_results(tmp_path / "res", 2, proc)  # fit 3 holds
    proc.kill()  # SIGKILL: no handler runs; the parent run stays RUNNING in the store
    proc.communicate()
    saved = {p.name for p in (tmp_path / "res").glob("*.json")}
    assert len(saved) == 2
    # the resume in this process: the kill is the subject, not the second start-up
    code, out = run_here(_slow_cmd(data, tmp_path), tmp_path, monkeypatch)
    assert code == 0, out
    assert "most recent call" not in out
    assert out.count("finished earlier, skipped") == len(saved)
    assert len(list((tmp_path / "res").glob("*.json"))) == 4
    con = sqlite3.connect(tmp_path / "ml" / "mlflow.db")
    statuses = con.execute(
        "select r.status from runs r join tags t on t.run_uuid = r.run_uuid"
        " where t.key = 'ltr_bench_role' and t.value = 'parent'"
    ).fetchall()
    con.close()
    assert statuses == [("FINISHED",)]


@pytest.mark.slow
@pytest.mark.subprocess_coverage  # the SIGTERM handler runs in the real process only
def test_sigterm_stops_like_ctrl_c_and_keeps_finished_cells(tmp_path):
    data = _folds(tmp_path / "data", 4)
    env = _held_subprocess_env(tmp_path)
    cmd = _slow_cmd(data, tmp_path)  # 4 folds, the third held: stopped half-way
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for_results(tmp_path / "res", 2, proc)  # the first fold is logged by then
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)  # not waiting long on a slow logging process
    assert proc.returncode == 130, err
    assert "interrupted" in err and "most recent call" not in out + err
    # which then finishes in the background (on a loaded machine), as `report` waits for it
    from ltr_bench.tracking.background import wait_for_background_logging

    uri = f"sqlite:///{tmp_path / 'ml' / 'mlflow.db'}"
    assert wait_for_background_logging(uri, timeout=120, say=lambda m: None), err
    con = sqlite3.connect(tmp_path / "ml" / "mlflow.db")
    statuses = con.execute(
        "select r.status from runs r join tags t on t.run_uuid = r.run_uuid"
        " where t.key = 'ltr_bench_role' and t.value = 'parent'"
    ).fetchall()
    con.close()
    assert statuses == [("KILLED",)]


@pytest.mark.slow
def test_two_processes_creating_one_new_store_both_succeed(tmp_path):
    uri = f"sqlite:///{tmp_path / 'ml' / 'mlflow.db'}"
    code = (
        "import sys; from ltr_bench.tracking import Tracker; t = Tracker(sys.argv[1]); "
        "t.check(); t.experiment_id('ds' + sys.argv[2]); print('ok')"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, uri, str(i)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    outs = [p.communicate(timeout=180) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0 and out.strip() == "ok", err
        assert "most recent call" not in err


def test_uncreatable_store_fails_in_seconds(tmp_path):
    from ltr_bench.tracking import Tracker, TrackingError

    (tmp_path / "f").write_text("x")
    t0 = time.monotonic()
    with pytest.raises(TrackingError, match="cannot create the store"):
        Tracker(f"sqlite:///{tmp_path / 'f' / 'sub' / 'mlflow.db'}").check()
    assert time.monotonic() - t0 < 5

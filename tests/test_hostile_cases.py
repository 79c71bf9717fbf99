"""Issue 27's corpus: what a hostile or unlucky user does to ``tune``, ``report``, plans and
shared stores, and what must still hold afterwards.

Each case of :data:`CASES` is (name, setup, exit code, message fragment, check): ``setup(env)``
prepares files and returns the argv of one ``ltr-bench`` command (run in-process); the command
must exit with the code, print the fragment, print no traceback; then ``check(env)`` asserts
what must still be on disk (the user's rows, a device node, a symlink). The tests after the
corpus use real processes and signals (a second process holding a lock, a kill between saving
and logging, two ``tune`` processes on one study).
"""

from __future__ import annotations

import importlib.util
import os
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from ltrb_processes import run_here, untraced_env
from test_reliability import FAKE, make_folder

from ltr_bench.cli import main


@pytest.fixture
def env(tmp_path, monkeypatch, fake_rankers):
    """Working directory ``work``, cache, and a one-fold LETOR folder ``data``."""
    return make_env(tmp_path, monkeypatch, fake_rankers)


def make_env(tmp_path, monkeypatch, fake_rankers):
    """The ``env`` of this module's tests (and of ``test_damaged_records``): ``env.run``
    invokes ``ltr-bench`` in-process; ``env.fakes`` is the fake rankers' module."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("LTR_BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)

    class Env:
        data = make_folder(tmp_path / "data")
        root = tmp_path
        cwd = work
        fakes = fake_rankers

        @staticmethod
        def run(*args):
            result = CliRunner().invoke(main, [str(a) for a in args])
            if result.exception is not None and not isinstance(result.exception, SystemExit):
                raise result.exception  # an uncaught exception is itself a failure
            return result.exit_code, result.output

        @staticmethod
        def fake_run(*extra):
            """A fast ``run`` of the fake ranker on the data folder (local results ``res``)."""
            return Env.run(
                "run",
                "--ranker",
                FAKE,
                "--dataset",
                Env.data,
                "--metrics",
                "ndcg@10,err@10",
                "--results-dir",
                "res",
                *extra,
            )

    return Env


def _run_argv(e, *extra):
    return [
        "run",
        "--ranker",
        FAKE,
        "--dataset",
        e.data,
        "--metrics",
        "ndcg@10,err@10",
        "--results-dir",
        "res",
        *extra,
    ]


def _report_argv(e, *extra):
    code, out = e.fake_run("--no-mlflow")
    assert code == 0, out
    return ["report", "--results-dir", "res", *extra]


# ------------------------------------------------------------------- foreign SQLite stores


def _lab_db(e) -> Path:
    """A user's own database: one table ``experiments(id, sample, result)`` of 1,000 rows."""
    db = e.cwd / "lab.db"
    con = sqlite3.connect(db)
    con.execute("create table experiments (id integer primary key, sample text, result real)")
    con.executemany(
        "insert into experiments values (?, ?, ?)", [(i, f"s{i}", i / 7) for i in range(1000)]
    )
    con.commit()
    con.close()
    return db


def _lab_db_no_clash(e) -> Path:
    db = e.cwd / "lab.db"
    con = sqlite3.connect(db)
    con.execute("create table samples (id integer primary key, note text)")
    con.execute("insert into samples values (1, 'keep me')")
    con.commit()
    con.close()
    return db


def _rows_of(db: Path, table: str) -> int:
    con = sqlite3.connect(db)
    try:
        return con.execute(f"select count(*) from {table}").fetchone()[0]
    finally:
        con.close()


def _tables_of(db: Path) -> list[str]:
    con = sqlite3.connect(db)
    try:
        return [r[0] for r in con.execute("select name from sqlite_master where type='table'")]
    finally:
        con.close()


def _foreign_run(e):
    return _run_argv(e, "--tracking-uri", f"sqlite:///{_lab_db(e)}")


def _foreign_tune(e):
    return [
        "tune",
        "--ranker",
        "ridge",
        "--dataset",
        e.data,
        "--trials",
        "2",
        "--results-dir",
        "res",
        "--tracking-uri",
        f"sqlite:///{_lab_db(e)}",
    ]


def _foreign_no_clash(e):
    return _run_argv(e, "--tracking-uri", f"sqlite:///{_lab_db_no_clash(e)}")


def _foreign_report(e):
    return ["report", "--dataset", "data", "--tracking-uri", f"sqlite:///{_lab_db(e)}"]


def _user_rows_kept(e):
    db = e.cwd / "lab.db"
    assert _tables_of(db) == ["experiments"]
    assert _rows_of(db, "experiments") == 1000
    assert not (e.cwd / "res").exists() or not list((e.cwd / "res").glob("*.json"))


def _no_clash_kept(e):
    assert _tables_of(e.cwd / "lab.db") == ["samples"]


def _truncated_store(e):
    """A real MLflow store holding runs, then cut to half its size (a full disk, a bad copy)."""
    code, out = e.fake_run("--tracking-uri", "sqlite:///" + str(e.cwd / "m.db"))
    assert code == 0, out
    db = e.cwd / "m.db"
    size = db.stat().st_size
    with open(db, "r+b") as fh:
        fh.truncate(size // 2)
    e.kept_size = size // 2
    return _run_argv(e, "--force", "--tracking-uri", f"sqlite:///{db}")


def _truncated_kept(e):
    db = e.cwd / "m.db"
    assert db.exists() and db.stat().st_size == e.kept_size  # neither deleted nor rebuilt


# ------------------------------------------------------------------------------- outputs


def _report_to_symlink(e):
    argv = _report_argv(e)
    (e.cwd / "real.md").write_text("old\n")
    (e.cwd / "link.md").symlink_to("real.md")
    return [*argv, "--output", "link.md"]


def _symlink_kept(e):
    assert (e.cwd / "link.md").is_symlink()
    assert "ndcg@10" in (e.cwd / "real.md").read_text().lower()


def _report_to_dev_full(e):
    return [*_report_argv(e), "--output", "/dev/full"]


def _device_kept(e):
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def _report_to_proc(e):
    return [*_report_argv(e), "--output", "/proc/version"]


def _report_to_fifo(e):
    argv = _report_argv(e)
    os.mkfifo(e.cwd / "pipe")
    return [*argv, "--output", "pipe"]


def _fifo_kept(e):
    assert stat.S_ISFIFO(os.stat(e.cwd / "pipe").st_mode)


def _report_plots_into_file(e):
    argv = _report_argv(e)
    (e.cwd / "plots").write_text("a file\n")
    return [*argv, "--plots", "plots"]


def _plots_file_kept(e):
    assert (e.cwd / "plots").read_text() == "a file\n"


def _report_plots_to_dev_full(e):
    argv = _report_argv(e)
    (e.cwd / "plots").mkdir()
    (e.cwd / "plots" / "data_ndcg_at_10_per_fold.png").symlink_to("/dev/full")
    return [*argv, "--plots", "plots", "--no-log-plots"]


def _run_output_to_fifo(e):
    os.mkfifo(e.cwd / "pipe")
    return _run_argv(e, "--no-mlflow", "--output", "pipe")


def _nothing(e):
    pass


# ------------------------------------------------------------- numbers a machine cannot do


def _run_with(*extra):
    def setup(e):
        return _run_argv(e, "--no-mlflow", *extra)

    return setup


def _store_is_folder(e):
    return _run_argv(e, "--tracking-uri", f"sqlite:///{e.cwd}")


def _store_dangling(e):
    (e.cwd / "m.db").symlink_to(e.root / "no-such-folder" / "m.db")
    return _run_argv(e, "--tracking-uri", f"sqlite:///{e.cwd / 'm.db'}")


def _report_on_fifo(e):
    os.mkfifo(e.cwd / "pipe")  # the name _fifo_kept checks
    return ["report", "--dataset", "data", "--tracking-uri", f"sqlite:///{e.cwd / 'pipe'}"]


def _synthetic(*options, dataset="synthetic"):
    def setup(e):
        argv = ["run", "--ranker", FAKE, "--dataset", dataset, "--folds", "1", "--no-mlflow"]
        for o in options:
            argv += ["--dataset-option", o]
        return argv

    return setup


def _no_results(e):
    assert not (e.cwd / "res").exists() or not list((e.cwd / "res").glob("*.json"))


def _one_result(e):
    assert len(list((e.cwd / "res").glob("*.json"))) == 1


# --------------------------------------------------------------------- --optuna-storage


def _tune_timeout_inf(e):
    return _tune_argv(e, "--timeout", "inf")


def _tune_argv(e, *extra, dataset=None):
    return [
        "tune",
        "--ranker",
        "ridge",
        "--dataset",
        dataset or e.data,
        "--trials",
        "2",
        "--no-mlflow",
        "--results-dir",
        "res",
        *extra,
    ]


def _storage(value):
    """A bad --optuna-storage with a dataset that does not exist: the storage is named, so
    it was checked before the data."""

    def setup(e):
        v = value(e) if callable(value) else value
        return _tune_argv(e, "--optuna-storage", v, dataset=e.root / "no-such-data")

    return setup


def _journal_folder(e):
    (e.cwd / "s.journal").mkdir()
    return "s.journal"


def _optuna_foreign(e):
    return f"sqlite:///{_lab_db(e)}"


def _journal_damaged(e):
    code, out = e.run(*_tune_argv(e, "--optuna-storage", "s.journal"))
    assert code == 0, out
    j = e.cwd / "s.journal"
    lines = j.read_text().splitlines()
    lines[2] = lines[2][: len(lines[2]) // 2]  # a damaged line in the middle
    j.write_text("\n".join(lines) + "\n")
    return _tune_argv(e, "--optuna-storage", "s.journal", "--trials", "3")


def _journal_kept(e):
    assert (e.cwd / "s.journal").exists()


def _optuna_db_with_hot_journal(e):
    """An Optuna SQLite storage whose last writer was SIGKILLed mid-transaction."""
    import optuna
    from ltrb_processes import leave_hot_journal

    db = e.cwd / "optuna.db"
    optuna.create_study(storage=f"sqlite:///{db}", study_name="earlier")
    leave_hot_journal(db)
    return _tune_argv(e, "--optuna-storage", f"sqlite:///{db}")


def _hot_journal_recovered(e):
    import optuna

    db = e.cwd / "optuna.db"
    assert not Path(f"{db}-journal").exists() or Path(f"{db}-journal").stat().st_size == 0
    assert "ltrb_unfinished" not in _tables_of(db)  # the killed transaction was undone
    names = {s.study_name for s in optuna.get_all_study_summaries(f"sqlite:///{db}")}
    assert "earlier" in names and len(names) == 2  # the earlier study and this run's


def _report_on_empty_file(e):
    (e.cwd / "empty.db").touch()
    return ["report", "--dataset", "data", "--tracking-uri", f"sqlite:///{e.cwd / 'empty.db'}"]


def _empty_file_kept(e):
    assert (e.cwd / "empty.db").stat().st_size == 0  # a report never creates a store


def _report_on_folder(e):
    (e.cwd / "dir.db").mkdir()
    return ["report", "--dataset", "data", "--tracking-uri", f"sqlite:///{e.cwd / 'dir.db'}"]


def _report_on_dead_server(e):
    return ["report", "--dataset", "data", "--tracking-uri", "http://127.0.0.1:1"]


DEV_FULL = Path("/dev/full").exists()


def _missing_driver_url() -> str | None:
    import importlib.util

    for url, driver in (("postgresql://nohost/x", "psycopg2"), ("mysql://nohost/x", "MySQLdb")):
        if importlib.util.find_spec(driver) is None:
            return url
    return None


MISSING_DRIVER = _missing_driver_url()
NO_POSTGRES = all(
    __import__("importlib.util").util.find_spec(m) is None for m in ("psycopg", "psycopg2")
)


def _run_on_postgres(e):
    return _run_argv(e, "--tracking-uri", "postgresql://nohost/x")


# ---------------------------------------------------------------------------- issue 33

CONVENTIONS = "letor4,letor3,trec,nonempty"


def _report_of_conventions(e):
    code, out = e.run(*_run_argv(e, "--no-mlflow", "--metrics", "ndcg@10,mrr"),
                      "--convention", CONVENTIONS)  # fmt: skip
    assert code == 0, out
    return ["report", "--results-dir", "res", "--convention", "letor3", "--metric", "mrr"]


def _per_query_numbers(e):
    from ltr_bench.results import read_per_query_csv

    (csv,) = (e.cwd / "res").glob("*.per_query.csv")
    assert "mrr_letor4" in read_per_query_csv(csv)  # every value read back as a number


def _edited_param_file(e):
    scale = e.cwd / "scale.txt"
    scale.write_text("1\n")
    argv = [
        "run",
        "--ranker",
        "fake-file",
        "--param",
        f"fake-file.scale_file={scale}",
        "--dataset",
        e.data,
        "--metrics",
        "ndcg@10",
        "--results-dir",
        "res",
        "--no-mlflow",
    ]
    code, out = e.run(*argv)
    assert code == 0, out
    scale.write_text("-1\n")  # the same path, another content
    return argv


def _param_file_edited_during_the_fit(e):
    scale = e.cwd / "scale.txt"
    scale.write_text("1\n")
    ranker = "ltrb_fake_rankers:EditedFileRanker"  # appends to its file as it fits
    return ["run", "--ranker", ranker, "--param", f"{ranker}.scale_file={scale}", "--dataset",
            e.data, "--metrics", "ndcg@10", "--results-dir", "res", "--no-mlflow"]  # fmt: skip


def _two_results(e):
    assert len(list((e.cwd / "res").glob("*.json"))) == 2


def _output_onto_data(e):
    return _run_argv(e, "--no-mlflow", "--output", e.data / "test.txt")


def _data_kept(e):
    assert (e.data / "test.txt").read_text().startswith(("0 qid:", "1 qid:", "2 qid:"))


def _output_into_store(e):
    return _run_argv(e, "--no-mlflow", "--output", "res/all.json")


def _output_onto_mlflow(e):
    return _run_argv(e, "--tracking-uri", f"sqlite:///{e.cwd / 'm.db'}", "--output", "m.db")


def _neural(*params, config=None):
    def setup(e):
        argv = ["run", "--ranker", "neural", "--dataset", e.data, "--no-mlflow"]
        if config is not None:
            import copy
            import json

            cfg = copy.deepcopy(ALLRANK_MLP)
            for dotted, value in config.items():
                *parents, last = dotted.split(".")
                node = cfg
                for key in parents:
                    node = node.setdefault(key, {})
                node[last] = value
            (e.cwd / "mlp.json").write_text(json.dumps(cfg))
            argv += ["--param", "neural.config=mlp.json"]
        for p in params:
            argv += ["--param", f"neural.{p}"]
        return argv

    return setup


def _default_beside_config(e):
    """``--param neural.epochs=<the plugin's default>`` beside a config with other epochs
    (issue 33 had the optimizer: whatever the defaults become, this stays the case)."""
    from ltr_bench_neural.ranker import NeuralRanker

    default = NeuralRanker().epochs
    return _neural(f"epochs={default}", config={"training.epochs": default + 1})(e)


ALLRANK_MLP = {  # allRank's config_template.json layout, small
    "model": {"fc_model": {"sizes": [8], "activation": "ReLU", "dropout": 0.0},
              "transformer": None, "post_model": {"output_activation": None, "d_output": 1}},
    "loss": {"name": "listNet", "args": {}},
    "optimizer": {"name": "Adam", "args": {"lr": 0.001}},
    "training": {"epochs": 2},
    "data": {"batch_size": 4, "slate_length": 8},
}  # fmt: skip
# the neural plugin and torch installed here (found without importing torch)
NEURAL = all(importlib.util.find_spec(m) is not None for m in ("ltr_bench_neural", "torch"))


CASES = [
    # never write into (or delete) a database that is not an MLflow store
    ("run on a user's database", _foreign_run, 2, "not an MLflow store", _user_rows_kept),
    ("tune on a user's database", _foreign_tune, 2, "its tables: experiments", _user_rows_kept),
    ("report on a user's database", _foreign_report, 2, "lab.db is an SQLite", _user_rows_kept),
    ("run on a database without clash", _foreign_no_clash, 2, "tables: samples", _no_clash_kept),
    ("run on a truncated store with runs", _truncated_store, 1, "mv ", _truncated_kept),
    ("report on an empty file", _report_on_empty_file, 1, "an empty file", _empty_file_kept),
    ("report on a folder", _report_on_folder, 1, "is a folder, not an MLflow", _nothing),
    ("report on a dead server", _report_on_dead_server, 1, "could not connect", _nothing),
    # one writer for every output
    ("report --output through a symlink", _report_to_symlink, 0, "report written", _symlink_kept),
    ("report --output to a named pipe", _report_to_fifo, 2, "is a named pipe", _fifo_kept),
    ("report --output impossible", _report_to_proc, 2, "--output /proc/version", _nothing),
    ("report --plots is a file", _report_plots_into_file, 2, "--plots", _plots_file_kept),
    ("run --output to a named pipe", _run_output_to_fifo, 2, "is a named pipe", _fifo_kept),
    # threads, seeds and generated sizes bounded by the machine, checked before any work
    ("threads beyond the CPUs", _run_with("--threads", "1000"), 0, "CPU(s) of this", _one_result),
    ("threads 100000", _run_with("--threads", "100000"), 2, "--threads 100000", _no_results),
    ("a million seeds", _run_with("--seeds", "1000000"), 2, "--seeds (a count)", _no_results),
    ("a seed too large", _run_with("--seeds", "0,99999999999"), 2, "0 to 2147483647", _nothing),
    ("seed too large", _run_with("--seed", "99999999999"), 2, "'--seed'", _nothing),
    ("seeds not numbers", _run_with("--seeds", "0,x"), 2, "expected seeds like", _nothing),
    ("seeds with an empty item", _run_with("--seeds", "0,,1"), 2, "got '0,,1'", _nothing),
    ("a store that is a folder", _store_is_folder, 2, "not a regular file", _no_results),
    ("a store link to nowhere", _store_dangling, 2, "whose folder does not", _no_results),
    ("report on a named pipe", _report_on_fifo, 1, "not a regular file, not an", _fifo_kept),
    ("a parameter nan", _run_with("--param", f"{FAKE}.scale=nan"), 2, "not a finite", _nothing),
    ("a swept value inf", _run_with("--sweep", f"{FAKE}.scale=1,inf"), 2, "inf is not", _nothing),
    ("label_noise nan", _synthetic("label_noise=nan"), 2, "label_noise=nan", _nothing),
    ("label_noise negative", _synthetic("label_noise=-1"), 2, "label_noise must be", _nothing),
    ("n_queries inf", _synthetic("n_queries=inf"), 2, "n_queries=inf", _nothing),
    ("docs_per_query 2.5", _synthetic("docs_per_query=2.5"), 2, "finite int", _nothing),
    ("a fold larger than memory", _synthetic("docs_per_query=1000000000"), 2, "GiB", _nothing),
    # click options that do not apply: refused before any work, with close matches (issue 32)
    ("clicks=pmb", _run_with("--dataset-option", "clicks=pmb"), 2, "Did you mean 'pbm'", _nothing),
    ("clicks eta -1", _synthetic("clicks=pbm", "eta=-1"), 2, "eta=-1", _nothing),
    ("clicks fraction 0", _synthetic("clicks=dbn", "logging_fraction=0"), 2, "(0, 1]", _nothing),
    ("clicks frac 1.5", _synthetic("clicks=pbm", "logging_fraction=1.5"), 2, "1.5 must", _nothing),
    ("clicks on wine", _synthetic("clicks=pbm", dataset="wine"), 2, "query-by-exa", _nothing),
    ("clicks gamma on cascade", _synthetic("clicks=cascade", "gamma=0.5"), 2, "gamma", _nothing),
    # --optuna-storage: checked before the data, named, exit 2 (damage: file and line, exit 1)
    ("storage not a storage", _storage("optuna"), 2, "--optuna-storage optuna: not a", _nothing),
    ("storage unknown dialect", _storage("nosuchdb://h/x"), 2, "no database driver", _nothing),
    ("storage bad URL", _storage("sqlite://:x:y"), 2, "--optuna-storage sqlite://", _nothing),
    ("storage in memory", _storage("sqlite:///:memory:"), 2, "in-memory", _nothing),
    ("storage journal is a folder", _storage(_journal_folder), 2, "is not a file", _nothing),
    ("storage journal impossible", _storage("/proc/x.journal"), 2, "its folder", _nothing),
    ("storage user's database", _storage(_optuna_foreign), 2, "not an Optuna", _user_rows_kept),
    ("journal damaged mid-file", _journal_damaged, 1, "s.journal:3: damaged", _journal_kept),
    (
        "an Optuna database left with a hot journal",
        _optuna_db_with_hot_journal,
        0,
        "ndcg@10",
        _hot_journal_recovered,
    ),
    ("a tuning timeout inf", _tune_timeout_inf, 2, "--timeout must be a finite", _no_results),
]
CASES += [  # issue 33
    ("report of a --convention run", _report_of_conventions, 0, "mrr_letor3", _per_query_numbers),
    ("an edited file a parameter names", _edited_param_file, 0, "fake-file", _two_results),
    ("a parameter file edited while the run is going", _param_file_edited_during_the_fit, 1,
     "the file changed while the run was going", _no_results),
    ("run --output onto the data", _output_onto_data, 2, "an input of this run", _data_kept),
    ("run --output into the store", _output_into_store, 2, "the results store", _no_results),
    ("run --output onto MLflow", _output_onto_mlflow, 2, "the MLflow store", _nothing),
    ("a parameter beyond 64-bit", _run_with("--param", f"{FAKE}.scale=1{'0' * 400}"), 2,
     "an integer of 401 digits", _nothing),
]  # fmt: skip
if NEURAL:
    SIGMA = "loss_args sigma: must be a finite number > 0"
    NO_EFFECT = "would have no effect"
    CASES += [  # issue 33: loss arguments that flip a loss; allRank configs; overrides
        ("lambdaloss sigma -1", _neural("loss=lambdaloss", "loss_args={sigma=-1}"), 2, SIGMA,
         _nothing),
        ("rmse no_of_levels -1", _neural("loss=rmse", "loss_args={no_of_levels=-1}"), 2,
         "no_of_levels: must be a finite number > 0", _nothing),
        ("wpll gamma -5", _neural("loss=wpll", "loss_args={gamma=-5}"), 2,
         "gamma: must be a finite number > 0", _nothing),
        ("config loss sigma -1", _neural(config={"loss": {"name": "lambdaLoss",
         "args": {"sigma": -1}}}), 2, "key 'loss.args.sigma'", _nothing),
        ("config override equal to the default", _default_beside_config, 2, NO_EFFECT,
         _nothing),
        ("config optimizer args a list", _neural(config={"optimizer.args": [0.1]}), 2,
         "key 'optimizer.args': must be a JSON object", _nothing),
        ("config loss name a list", _neural(config={"loss.name": ["listNet"]}), 2,
         "key 'loss.name': must be a string", _nothing),
        ("config sizes an int", _neural(config={"model.fc_model.sizes": 8}), 2,
         "key 'model.fc_model.sizes': must be a list", _nothing),
        ("config lr overflows", _neural(config={"optimizer.args.lr": float("inf")}), 2,
         "key 'optimizer.args.lr': must be a finite number > 0, got the number inf", _nothing),
        ("config lr an integer too large", _neural(config={"optimizer.args.lr": 10**400}), 2,
         "key 'optimizer.args.lr': must be a finite number > 0, got the integer 1000", _nothing),
        ("config scheduler argument text", _neural(config={"lr_scheduler": {"name": "StepLR",
         "args": {"step_size": "5"}}}), 2, "key 'lr_scheduler.args.step_size'", _nothing),
        ("config outputs do not fit the loss", _neural(config={"model.post_model.d_output": 3}),
         2, "key 'model.post_model.d_output': must be 1", _nothing),
    ]  # fmt: skip


# ------------------------------------------- click surfaces, tried as a hostile user (issue 32)


def _click_model_file(section):
    """A run whose click_model is an allRank config file holding ``section``."""

    def setup(e):
        import json

        (e.cwd / "allrank.json").write_text(json.dumps({"click_model": section}))
        return _synthetic(f"click_model={e.cwd / 'allrank.json'}")(e)

    return setup


def _one_per_query_file(e):
    assert len(list(e.cwd.rglob("*.per_query.csv"))) == 1


def _report_of_click_rows_only(e):
    code, out = e.run(*_synthetic("clicks=pbm")(e), "--results-dir", "res")
    assert code == 0, out
    return ["report", "--results-dir", "res", "--dataset", "synthetic"]


def _damaged_click_log(e):
    """A click run, then one byte of its cached click labels flipped (a bad disk)."""
    code, out = e.run(*_synthetic("clicks=pbm")(e))
    assert code == 0, out
    (labels,) = (e.root / "cache" / "clicks").glob("*/train_y.i8")
    data = bytearray(labels.read_bytes())
    data[-1] ^= 1
    labels.write_bytes(bytes(data))
    return ["cache", "verify"]


def _damaged_click_log_removed(e):
    assert not list((e.root / "cache" / "clicks").glob("*/train_y.i8"))


def _clicks_with(ranker, *options):
    def setup(e):
        argv = _synthetic("clicks=pbm", *options)(e)
        return [*argv[:2], ranker, *argv[3:]]

    return setup


def _with_args(setup, *extra):
    def with_args(e):
        return [*setup(e), *extra]

    return with_args


def _with_params(setup, *params):
    return _with_args(setup, *(a for p in params for a in ("--param", p)))


CASES += [
    ("clicks sessions 1e12", _synthetic("clicks=pbm", "sessions=1e12"), 2, "[1, 100000]", _nothing),
    (
        "clicks metric misspelt",
        _synthetic("clicks=everything-but-duplicates", "metric=euclidian"),
        2,
        "Did you mean 'euclidean'",
        _nothing,
    ),
    (
        "click option misspelt",
        _synthetic("clicks=pbm", "sesions=5"),
        2,
        "mean 'sessions'",
        _nothing,
    ),
    (
        "click_model args a list",
        _click_model_file({"name": "pbm", "args": [1, 2]}),
        2,
        "args must be an object",
        _nothing,
    ),
    (
        "click_model name a list",
        _click_model_file({"name": ["BaseCascadeModel"]}),
        2,
        "allrank.json click_model: name must be",
        _nothing,
    ),
    (
        "click_model probabilities an object",
        _click_model_file(
            {
                "name": "multiple",
                "args": {"click_models": [{"name": "pbm"}], "probabilities": {"a": 1}},
            }
        ),
        2,
        "must be a list",
        _nothing,
    ),
    (
        "allRank multiple click model (nested models) runs",
        _click_model_file(
            {
                "name": "MultipleClickModel",
                "args": {
                    "click_models": [{"name": "pbm"}, {"name": "cascade"}],
                    "probabilities": [0.5, 0.5],
                },
            }
        ),
        0,
        "ndcg@10",
        _one_per_query_file,
    ),
    (
        "logging ranker fails to fit",
        _synthetic("clicks=pbm", "logging_ranker=ltrb_fake_rankers:FailingRanker"),
        1,
        "logging_ranker 'ltrb_fake_rankers:FailingRanker' failed to fit",
        _nothing,
    ),
    (
        "logging ranker scores NaN",
        _synthetic("clicks=pbm", "logging_ranker=ltrb_fake_rankers:NaNScoreRanker"),
        1,
        "score that is not a finite number",
        _nothing,
    ),
    (
        "report of click-trained rows only says so",
        _report_of_click_rows_only,
        0,
        "was trained on clicks pbm(eps=0.1, eta=1.0), 10 sessions",
        _nothing,
    ),
    (
        "IPS on cascade clicks (propensity 0 below a top-grade document)",
        _clicks_with("ltrb_fake_rankers:PropensityRanker", "clicks=cascade"),
        2,
        "click model 'cascade' has none for some shown rows",
        _nothing,
    ),
    (
        "IPS on allRank random clicks (no examination step)",
        _clicks_with("ltrb_fake_rankers:PropensityRanker", "clicks=random", "n_clicks=1"),
        2,
        "click model 'random' has none",
        _nothing,
    ),
    (
        "IPS on pbm clicks runs",
        _clicks_with("ltrb_fake_rankers:PropensityRanker"),
        0,
        "ndcg@10",
        _one_per_query_file,
    ),
    (
        "clicks on synthetic and wine name wine",
        _synthetic("clicks=pbm", dataset="synthetic,wine"),
        2,
        "do not apply to dataset 'wine'",
        _nothing,
    ),
    (
        "cache verify on a damaged click log",
        _damaged_click_log,
        1,
        "its arrays changed after writing; removed",
        _damaged_click_log_removed,
    ),
    (
        "click counts above what the metrics can score",
        _synthetic("clicks=pbm", "sessions=2000"),
        2,
        "more than ltr-bench's metrics (gain 2^label - 1) (labels up to 1000)",
        _nothing,
    ),
    (
        "click counts above lightgbm's labels",
        _with_params(_clicks_with("lightgbm", "sessions=40"), "lightgbm.gain=exp"),
        2,
        "go up to 40, more than 'lightgbm[gain=exp]' (labels up to 30)",
        _no_results,
    ),
    (
        "position correction on clicked-at-least-once clicks",
        _with_params(
            _clicks_with("lightgbm", "aggregate=any", "sessions=5"), "lightgbm.unbiased=true"
        ),
        2,
        "whose expectation 1 - (1 - theta_k alpha)^S is not proportional",
        _no_results,
    ),
    (
        "a sweep of a name that is neither a ranker nor a dataset",
        _with_args(_synthetic("clicks=pbm"), "--sweep", "synthtic.sessions=10,100"),
        2,
        "neither a ranker nor a dataset",
        _nothing,
    ),
]
if MISSING_DRIVER:  # a dialect SQLAlchemy knows whose driver is not installed here
    CASES.append(
        ("storage driver missing", _storage(MISSING_DRIVER), 2, "no database driver", _nothing)
    )
if NO_POSTGRES:  # MLflow's store then can never open: refused before any work
    CASES.append(
        ("run on a store without its driver", _run_on_postgres, 2, "driver is not", _no_results)
    )
if DEV_FULL:
    CASES += [
        ("report --output /dev/full", _report_to_dev_full, 1, "no space left", _device_kept),
        ("report --plots onto /dev/full", _report_plots_to_dev_full, 1, "no space", _device_kept),
    ]


@pytest.mark.parametrize("name,setup,code,fragment,check", CASES, ids=[c[0] for c in CASES])
def test_hostile_case_exits_with_its_code_and_message_and_keeps_what_it_must(
    env, name, setup, code, fragment, check
):
    argv = setup(env)
    exit_code, out = env.run(*argv)
    assert exit_code == code, out
    assert fragment in out, out
    assert "Traceback (most recent call last)" not in out, out
    check(env)


# ------------------------------------------------------------ stores held by other processes


class _QuickSqlite:
    """``sqlite3`` whose ``connect`` waits at most 0.2 s on a lock: the store checks of
    ``ltr_bench.tracking.sqlite_read`` meet the held lock in 0.2 s instead of their 5 s and
    1 s (the same refusal by the same code, seconds sooner)."""

    def __getattr__(self, name):
        return getattr(sqlite3, name)

    @staticmethod
    def connect(*args, timeout=5.0, **kwargs):
        return sqlite3.connect(*args, timeout=min(timeout, 0.2), **kwargs)


@pytest.mark.slow  # another process holds the store locked
def test_a_locked_store_is_refused_and_not_deleted(env, tmp_path, monkeypatch):
    """Another process holds an exclusive lock on a real store for 30 s: the run neither
    deletes nor rebuilds it; once the lock is gone the store has its runs and opens. (Not
    after MLflow's 20 s busy timeout either: the run must refuse before MLflow opens it.)"""
    from ltr_bench.tracking import sqlite_read

    db = env.cwd / "m.db"
    code, out = env.fake_run("--tracking-uri", f"sqlite:///{db}")
    assert code == 0, out
    runs_before = _rows_of(db, "runs")
    monkeypatch.setattr(sqlite_read, "sqlite3", _QuickSqlite())
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time\n"
            f"con = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
            "con.execute('begin exclusive')\n"
            "print('locked', flush=True)\n"
            "time.sleep(30)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=untraced_env(),  # runs none of our code
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        t0 = time.monotonic()
        code, out = env.fake_run("--force", "--tracking-uri", f"sqlite:///{db}")
        assert time.monotonic() - t0 < 25
    finally:
        holder.kill()
        holder.wait()
    assert code == 1, out
    assert "locked by another process" in out and "Traceback" not in out, out
    assert _rows_of(db, "runs") == runs_before


def test_an_interrupted_creation_by_ltr_bench_is_rebuilt_but_the_same_file_without_marker_is_not(
    env,
):
    db = env.cwd / "h.db"

    def half_created():
        con = sqlite3.connect(db)
        con.execute("create table experiments (experiment_id integer primary key, name text)")
        con.commit()
        con.close()

    half_created()
    code, out = env.fake_run("--tracking-uri", f"sqlite:///{db}")
    assert code == 2 and "not an MLflow store" in out, out
    assert _tables_of(db) == ["experiments"]

    (env.cwd / "h.db.creating").write_text("12345\n")  # what ltr-bench's creation leaves
    code, out = env.fake_run("--tracking-uri", f"sqlite:///{db}")
    assert code == 0, out
    assert "alembic_version" in _tables_of(db) and _rows_of(db, "runs") > 0
    assert not (env.cwd / "h.db.creating").exists()


# -------------------------------------------------------------------- tune: journal, MLflow


def _mlflow_trial_runs(db: Path) -> list[tuple[str, str]]:
    """(trial key, status) of every live trial run in an MLflow SQLite store."""
    con = sqlite3.connect(db)
    try:
        return sorted(
            con.execute(
                "select t.value, r.status from runs r join tags t on t.run_uuid = r.run_uuid"
                " where t.key = 'ltr_bench_trial_key' and r.lifecycle_stage = 'active'"
            ).fetchall()
        )
    finally:
        con.close()


def _statuses(db: Path) -> set[str]:
    con = sqlite3.connect(db)
    try:
        return {
            r[0] for r in con.execute("select status from runs where lifecycle_stage = 'active'")
        }
    finally:
        con.close()


def test_a_torn_last_journal_line_is_cut_off_and_tuning_resumes(env):
    argv = _tune_argv(env, "--optuna-storage", "s.journal")
    code, out = env.run(*argv)
    assert code == 0, out
    j = env.cwd / "s.journal"
    with open(j, "ab") as fh:
        fh.write(b'{"op_code": 4, "worker_id": "x", "trial_id"')  # a power cut mid-append
    code, out = env.run(*[a if a != "2" else "3" for a in argv])  # one more trial
    assert code == 0 and "Traceback" not in out, out
    import json

    assert all(isinstance(json.loads(line), dict) for line in j.read_text().splitlines())
    assert (env.cwd / "s.journal.torn").read_bytes().startswith(b'{"op_code": 4')


def test_trials_that_never_reached_mlflow_are_logged_from_the_journal_on_the_next_run(env):
    """The state a kill between saving the tuned record and logging its trials leaves (the
    record saved, its trials only in the journal) is made here with --no-mlflow; the same
    command with MLflow then logs every trial, without tuning again."""
    argv = _tune_argv(env, "--trials", "3")
    code, out = env.run(*argv)
    assert code == 0, out
    db = env.cwd / "m.db"
    with_mlflow = [a for a in argv if a != "--no-mlflow"] + ["--tracking-uri", f"sqlite:///{db}"]
    code, out = env.run(*with_mlflow)
    assert code == 0 and "finished earlier" in out, out
    runs = _mlflow_trial_runs(db)
    assert len(runs) == 3 and {s for _, s in runs} <= {"FINISHED", "KILLED", "FAILED"}, runs
    code, out = env.run(*with_mlflow)  # idempotent: nothing logged twice
    assert code == 0 and _mlflow_trial_runs(db) == runs
    assert "RUNNING" not in _statuses(db)


SLOW_TUNABLE = """
import os
import time
from ltrb_fake_rankers import LinearRanker

class SlowTunable(LinearRanker):
    SEARCH_SPACE = {"scale": {"low": 0.5, "high": 2.0}}

    def fit(self, X, y, *, qid, eval_set=None):
        gate = os.environ.get("LTRB_FIT_GATE")  # a file: fits wait until it exists
        while gate and not os.path.exists(gate):
            time.sleep(0.05)
        time.sleep(float(os.environ.get("LTRB_FIT_SECONDS", "0.25")))
        return super().fit(X, y, qid=qid, eval_set=eval_set)
"""


def _tune_subprocess(tmp_path, data, *extra, trials=6):
    from ltrb_processes import subprocess_env

    env = subprocess_env(tmp_path, {"ltrb_slow_tunable": SLOW_TUNABLE})
    cmd = [
        sys.executable,
        "-m",
        "ltr_bench.cli",
        "tune",
        "--ranker",
        "ltrb_slow_tunable:SlowTunable",
        "--dataset",
        str(data),
        "--trials",
        str(trials),
        "--metrics",
        "ndcg@10",
        "--results-dir",
        str(tmp_path / "res"),
        "--optuna-storage",
        str(tmp_path / "s.journal"),
        "--tracking-uri",
        f"sqlite:///{tmp_path / 'm.db'}",
        *extra,
    ]
    return cmd, env


def _journal_trials(journal: Path) -> int:
    """Trials that reached a finished state in a journal (op 6: set_trial_state_values)."""
    import json

    done = 0
    for line in journal.read_text().splitlines():
        op = json.loads(line)
        if op.get("op_code") == 6 and op.get("state") in (1, 2, 3):
            done += 1
    return done


@pytest.mark.slow
def test_sigkill_right_after_saving_a_tuned_record_loses_no_trial_in_mlflow(tmp_path, monkeypatch):
    data = make_folder(tmp_path / "data")
    cmd, env = _tune_subprocess(tmp_path, data)
    env["LTRB_FIT_SECONDS"] = "0"  # the kill comes after the record is saved: no fit to wait on
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    t0 = time.monotonic()
    while not list((tmp_path / "res").glob("*.json")):  # the tuned record is saved ...
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - t0 < 120
        time.sleep(0.005)
    proc.send_signal(9)  # ... and the process is killed at once, before or while logging
    proc.wait()
    # the re-run in this process: the kill is the subject, not the second start-up
    code, out = run_here(cmd, tmp_path, monkeypatch)
    assert code == 0, out
    assert "Traceback" not in out
    runs = _mlflow_trial_runs(tmp_path / "m.db")
    assert len(runs) == 6, runs  # every trial of the study, each once
    assert "RUNNING" not in _statuses(tmp_path / "m.db")


@pytest.mark.slow
def test_a_second_tune_of_one_study_waits_for_the_first_and_reuses_its_result(
    tmp_path, monkeypatch
):
    from ltr_bench.tune import storage

    data = make_folder(tmp_path / "data")
    cmd, env = _tune_subprocess(tmp_path, data, trials=8)
    gate = tmp_path / "gate"
    # the first (a real process) takes the study, but its fits wait at the gate until the
    # second (this process: another process all the same, another flock) has found the
    # study held: the second meets the first on the study however slowly either starts.
    # Same parameters: the same study.
    first = subprocess.Popen(
        cmd,
        env={**env, "LTRB_FIT_GATE": str(gate), "LTRB_FIT_SECONDS": "0"},  # the gate orders them
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    locks = tmp_path / "s.journal.locks"
    t0 = time.monotonic()
    while not any(p.read_text().strip() == str(first.pid) for p in locks.glob("*.lock")):
        assert first.poll() is None, first.communicate()  # the first holds the study now
        assert time.monotonic() - t0 < 120
        time.sleep(0.05)
    try_lock = storage._try_lock

    def try_lock_then_open_the_gate(fd: int) -> bool:
        taken = try_lock(fd)
        if not taken:  # held by the first: the second waits for it from now on
            gate.touch()
        return taken

    monkeypatch.setattr(storage, "_try_lock", try_lock_then_open_the_gate)
    try:
        code, text = run_here(cmd, tmp_path, monkeypatch)
    finally:
        gate.touch()
        out1, err1 = first.communicate(timeout=300)
    assert first.returncode == 0, err1
    assert code == 0, text
    assert f"another process (pid {first.pid}) is tuning" in text, text
    assert "finished earlier" in text, text  # its record reused, not computed again
    assert "Traceback" not in text and b"Traceback" not in err1
    assert _journal_trials(tmp_path / "s.journal") == 8  # no trial marked stale, none redone


def test_clicks_that_cannot_fit_in_memory_fail_their_cell_with_the_sizes_not_a_memory_error(
    env, monkeypatch
):
    """Sessions within the up-front bound can still exceed the memory once the split's size
    is known: the cell fails naming sessions and the estimate, before anything is allocated."""
    import psutil

    class Tiny:  # room for the generated fold (a few MiB), not for 100000 sessions of it
        available = 200 * 2**20

    monkeypatch.setattr(psutil, "virtual_memory", lambda: Tiny)
    code, out = env.run(*_synthetic("clicks=pbm", "sessions=100000", "aggregate=any")(env))
    assert code == 1, out
    assert "sessions=100000: simulating 100000 sessions" in out and "GiB" in out, out
    assert "Traceback (most recent call last)" not in out, out

"""The README's "Next steps" 2, 6, 7 and 8 work as written for a new user, in an empty folder,
after the README's main command: the commands are read from README.md itself (so the README
cannot drift from what works) and run in this process through the console script's ``main``
(click's runner, split as a shell would), sparing each its own imports and MLflow logging
process. The console script itself is proved apart: its entry point by ``test_packaging``,
``console_main`` by ``python -m ltr_bench`` (``test_package_root``), and CI's last step types
the README's main command into a shell. The things filled in are the ``<run id>``
of steps 7 and 8, taken from the table step 7's own ``ltr-bench models`` prints, and step 7's
query file, which a user brings."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_docs import README, _fenced_blocks, _section

from ltr_bench.cli import main

RUN_ID = "<run id>"


def _steps(text: str) -> dict[int, str]:
    """The numbered items of the "Next steps" section, each one line of text."""
    body = _section(text, "Next steps")
    items = re.split(r"^(\d+)\. ", body, flags=re.M)[1:]
    return {int(n): " ".join(item.split()) for n, item in zip(items[::2], items[1::2])}


def _commands(step: str) -> list[str]:
    """The ``ltr-bench ...`` commands a step shows (its inline code spans)."""
    return [c for c in re.findall(r"`([^`]+)`", step) if c.startswith("ltr-bench ")]


def test_the_next_steps_are_read_as_whole_commands():
    steps = _steps(README.read_text(encoding="utf-8"))
    for n in (2, 6, 7, 8):
        assert _commands(steps[n]), f"README next step {n} shows no whole `ltr-bench ...` command"
    assert any(c.startswith("ltr-bench models") for c in _commands(steps[7])), (
        "README next step 7 must say how to find the run id (`ltr-bench models ...`)"
    )
    (predict,) = [c for c in _commands(steps[7]) if c.startswith("ltr-bench predict")]
    assert RUN_ID in predict


def _step(command: str) -> tuple[str, str]:
    """A step's ``ltr-bench ...`` command in this process, in the working directory (the
    main command's folder): its stdout and stderr. What a step proves is that it works as
    typed after the main command."""
    args = shlex.split(command)
    assert args[0] == "ltr-bench", command
    result = CliRunner().invoke(main, args[1:])
    assert result.exit_code == 0 and result.exception is None, (
        f"{command}\n{result.output}\n{result.exception!r}"
    )
    return result.stdout, result.stderr


def _first_run_id(table: str) -> str:
    """The "run id" column of the first row of ``ltr-bench models``' table."""
    header, rule, first, *_ = table.splitlines()
    start = header.index("run id")
    end = start + len(rule[start:].split(" ")[0])  # the column's dashes give its width
    run_id = first[start:end].strip()
    assert re.fullmatch(r"[0-9a-f]{32}", run_id), table
    return run_id


def _query_file(path: Path) -> int:
    """A LETOR file of 30-feature rows (a user's queries: the synthetic data's fold 1 test
    split, each line with a ``#docid``); returns its row count."""
    from ltr_bench.data import load_fold

    test = load_fold("synthetic", 1).test
    with open(path, "w") as fh:
        for i in range(test.n_docs):
            feats = " ".join(f"{j + 1}:{v!r}" for j, v in enumerate(test.X[i].tolist()))
            fh.write(f"{test.y[i]} qid:{test.qid[i]} {feats} #docid = doc-{i}\n")
    return test.n_docs


@pytest.mark.slow
def test_readme_next_steps_2_6_7_and_8_run_as_written_in_an_empty_folder(tmp_path, monkeypatch):
    text = README.read_text(encoding="utf-8")
    (main_block,) = _fenced_blocks(_section(text, "Main command"), "bash")
    steps = _steps(text)
    monkeypatch.chdir(tmp_path)
    _step(main_block.strip())

    (report,) = _commands(steps[2])
    assert "lightgbm" in _step(report)[0]

    for command in _commands(steps[6]):
        _step(command)

    step7 = _commands(steps[7])
    (models,) = [c for c in step7 if c.startswith("ltr-bench models")]
    (predict,) = [c for c in step7 if c.startswith("ltr-bench predict")]
    run_id = _first_run_id(_step(models)[0])
    args = shlex.split(predict)
    data = tmp_path / args[args.index("--data") + 1]
    rows = _query_file(data)
    stdout, _ = _step(predict.replace(RUN_ID, run_id))
    assert "ndcg@10" in stdout
    ranking = (tmp_path / args[args.index("--output") + 1]).read_text().splitlines()
    assert len(ranking) == rows
    assert {line.split()[2] for line in ranking} == {f"doc-{i}" for i in range(rows)}

    pytest.importorskip("onnxruntime")  # step 8 says to install the onnx extra first
    (export,) = _commands(steps[8])
    assert RUN_ID in export
    stdout, stderr = _step(export.replace(RUN_ID, run_id))
    assert "holds" in stdout + stderr
    args = shlex.split(export)
    assert (tmp_path / args[args.index("--output") + 1]).stat().st_size > 0

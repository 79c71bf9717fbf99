"""Without torch, ``ltr-bench rankers`` lists ``neural`` as unavailable with the command that
installs it, every other ranker stays usable, and nothing imports torch. Run in a fresh
interpreter in which torch is neither importable nor installed as far as metadata says."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import textwrap
from importlib import metadata

import pytest

# the plugin's code without torch runs in those interpreters only
pytestmark = pytest.mark.subprocess_coverage

#: the plugin's torch requirement as its metadata declares it (a range: a user's own CUDA torch
#: in it is kept)
TORCH_REQUIREMENT = next(
    r for r in metadata.distribution("ltr-bench-neural").requires or [] if r.startswith("torch")
)

BLOCK_TORCH = textwrap.dedent("""
    import importlib.metadata as md, json, sys

    class _NoTorch:
        def find_spec(self, name, path=None, target=None):
            if name == "torch" or name.startswith("torch."):
                raise ModuleNotFoundError("No module named 'torch'", name="torch")

    sys.meta_path.insert(0, _NoTorch())
    _version = md.version

    def _version_without_torch(name):
        if name.lower() == "torch":
            raise md.PackageNotFoundError(name)
        return _version(name)

    md.version = _version_without_torch
""")


def _run(code: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", BLOCK_TORCH + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_rankers_lists_neural_unavailable_with_the_install_command_and_imports_no_torch():
    result = _run("""
        from click.testing import CliRunner
        from ltr_bench.cli import main
        res = CliRunner().invoke(main, ["rankers"])
        print(json.dumps({"code": res.exit_code, "out": res.output,
                          "torch": "torch" in sys.modules}))
    """)
    assert result["code"] == 0
    assert not result["torch"]
    lines = {line.split()[0]: line for line in result["out"].splitlines()[2:] if line.strip()}
    expected = f"unavailable: needs {TORCH_REQUIREMENT}; install: pip install "
    assert expected + shlex.quote(TORCH_REQUIREMENT) in lines["neural"]
    others = {name: line for name, line in lines.items() if name != "neural"}
    assert others and all(line.rstrip().endswith(" ok") for line in others.values()), others


def test_loading_neural_without_torch_fails_with_the_install_command():
    result = _run("""
        from ltr_bench.registry import RankerLoadError, make_ranker
        try:
            make_ranker("neural")
            message = None
        except RankerLoadError as exc:
            message = str(exc)
        print(json.dumps({"message": message, "torch": "torch" in sys.modules}))
    """)
    assert result["message"]
    assert f"pip install {shlex.quote(TORCH_REQUIREMENT)}" in result["message"]
    assert not result["torch"]


@pytest.mark.slow
def test_the_plugin_and_its_ranker_module_import_without_torch():
    # validating parameters before any data is loaded must not need torch either
    result = _run("""
        import ltr_bench_neural, ltr_bench_neural.ranker as r
        r.NeuralRanker(loss="pl", weight="inv-log-pos").validate_params()
        print(json.dumps({"torch": "torch" in sys.modules}))
    """)
    assert not result["torch"]

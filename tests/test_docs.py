"""The README and the documentation site (``mkdocs.yml``, ``docs/``) stay true and buildable.

The site builds with ``mkdocs build --strict`` when mkdocs and its plugins are installed (the
``docs`` extra) and those tests skip otherwise; the other tests need nothing but the
repository: the README's length, its links, its Setup and Tests commands against ``.ci/run``,
the example plugin of ``docs/plugins.md`` against the conformance suite, and the ranker pages
against the rankers' real parameters.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from ltrb_processes import untraced_env

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
MAX_README_LINES = 149  # under 150: a new user reads it top to bottom

HAVE_MKDOCS = all(
    importlib.util.find_spec(m) is not None for m in ("mkdocs", "material", "mkdocstrings")
)
needs_mkdocs = pytest.mark.skipif(
    not HAVE_MKDOCS, reason='mkdocs is not installed (python -m pip install -e ".[docs]")'
)


def _mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess:
    env = untraced_env(NO_MKDOCS_2_WARNING="1")
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=config.parent,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def _fenced_blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", text, flags=re.M | re.S)


def _section(text: str, heading: str) -> str:
    """The body of the ``## heading`` section of a Markdown text."""
    m = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    assert m, f"no '## {heading}' section"
    return m.group(1)


# ------------------------------------------------------------------------------ README


def test_readme_is_under_150_lines():
    n = len(README.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_README_LINES, f"README.md has {n} lines; move detail into docs/"


def _ci_command(marker: str) -> str:
    """The command line under ``# --- README <marker> command`` in .ci/run."""
    lines = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if line.startswith(f"# --- README {marker} command"):
            return lines[i + 1]
    raise AssertionError(f".ci/run has no '# --- README {marker} command' marker")


@pytest.mark.parametrize(("section", "marker"), [("Setup", "setup"), ("Tests", "test")])
def test_readme_commands_are_the_ones_ci_runs(section, marker):
    command = _ci_command(marker)
    if marker == "test":  # CI tees the output to a log it checks; the user's command is the head
        command = command.split(" 2>&1")[0]
    body = _section(README.read_text(encoding="utf-8"), section)
    shown = [line for block in _fenced_blocks(body, "bash") for line in block.splitlines()]
    assert command in shown, f"README '{section}' does not show .ci/run's command {command!r}"


def test_ci_reads_the_readme_main_command_whole_under_pipefail_whatever_the_section_size(
    tmp_path,
):
    """.ci/run's extraction of the main command, run by bash with ``set -euo pipefail`` on the
    README and on one whose section is far beyond a pipe buffer (64 KiB): a pipe whose reader
    quits early killed the writer with SIGPIPE (exit 141) once the section passed 4 KiB."""
    script = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    start = script.index('main_cmd="$(')
    snippet = script[start : script.index("esac", start) + len("esac")]
    readme = README.read_text(encoding="utf-8")
    head, rest = readme.split("## Main command\n", 1)
    padded = tmp_path / "README.md"
    padded.write_text(head + "## Main command\n" + "filler line\n" * 20000 + rest)
    for folder in (REPO, tmp_path):
        out = subprocess.run(
            [
                "bash",
                "-c",
                f'set -euo pipefail\ncd "$1"\n{snippet}\necho "$main_cmd"',
                "ci",
                str(folder),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip().startswith("ltr-bench run ")
        shown = _fenced_blocks(_section(readme, "Main command"), "bash")[0].splitlines()[0]
        assert out.stdout.strip() == shown


def test_readme_links_point_at_files_that_exist():
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [link.split("#")[0] for link in links if "://" not in link and link[0] != "#"]
    assert local, "the README links into the docs"
    missing = [link for link in local if link and not (REPO / link).exists()]
    assert not missing, f"README links to missing files: {missing}"


# ------------------------------------------------------------------------------ the site


@needs_mkdocs
@pytest.mark.slow
def test_the_site_builds_with_mkdocs_strict(tmp_path):
    result = _mkdocs_build(REPO / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "index.html").exists()
    # the API pages render the docstrings, not an empty page
    api = (tmp_path / "site" / "api" / "testing" / "index.html").read_text(encoding="utf-8")
    assert "check_ranker" in api and "parametrize_with_checks" in api


def _validation_block() -> str:
    text = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    m = re.search(r"^validation:\n(?:[ ]+.*\n)+", text, flags=re.M)
    assert m, "mkdocs.yml has no validation block"
    return m.group(0)


def _tiny_site(root: Path, pages: dict[str, str]) -> Path:
    """A site with this project's validation rules, only index.md in the nav."""
    (root / "docs").mkdir()
    for name, body in pages.items():
        (root / "docs" / name).write_text(body, encoding="utf-8")
    config = root / "mkdocs.yml"
    config.write_text("site_name: t\nnav:\n  - index.md\n" + _validation_block(), encoding="utf-8")
    return config


@needs_mkdocs
@pytest.mark.parametrize(
    ("pages", "complaint"),
    [
        ({"index.md": "# Home\n", "orphan.md": "# Orphan\n"}, "not included in the"),
        ({"index.md": "# Home\n[gone](missing.md)\n"}, "missing.md"),
        ({"index.md": "# Home\n[no such anchor](#nowhere)\n"}, "nowhere"),
    ],
    ids=["orphan-page", "broken-link", "broken-anchor"],
)
def test_the_validation_rules_make_a_strict_build_fail(tmp_path, pages, complaint):
    result = _mkdocs_build(_tiny_site(tmp_path, pages), tmp_path / "site")
    assert result.returncode != 0, "the strict build passed"
    assert complaint in result.stdout + result.stderr


@needs_mkdocs
def test_the_validation_rules_pass_a_clean_site(tmp_path):
    result = _mkdocs_build(_tiny_site(tmp_path, {"index.md": "# Home\n"}), tmp_path / "site")
    assert result.returncode == 0, result.stdout + result.stderr


# ------------------------------------------------------------------------------ pages vs code


#: paths in the docs that name files of other projects (LightGBM's repository), not ours
OTHER_PROJECTS_PATHS = {"examples/lambdarank", "docs/Experiments.rst"}


def test_every_repository_path_the_docs_name_exists():
    top = "ltr_bench|baselines|plugins|tests|experiments|benchmarks|examples|docs|\\.ci"
    pattern = rf"`((?:{top})/[^`\s]*)`"
    missing = []
    for page in [README, *sorted(DOCS.rglob("*.md"))]:
        for path in re.findall(pattern, page.read_text(encoding="utf-8")):
            path = path.split("#")[0]
            path, _, test = path.partition("::")  # a pytest node id: the test must exist too
            if any(c in path for c in "*<{") or path in OTHER_PROJECTS_PATHS:
                continue  # a pattern (``Fold*/``, ``plugins/<name>``), or not ours
            target = REPO / path
            if not target.exists() or (
                test and f"def {test}(" not in target.read_text(encoding="utf-8")
            ):
                missing.append(f"{page.relative_to(REPO)}: {path}{'::' + test if test else ''}")
    assert not missing, "the docs name paths that do not exist:\n" + "\n".join(missing)


def test_the_example_plugin_of_the_docs_passes_the_conformance_suite():
    from ltr_bench.testing import check_ranker

    text = (DOCS / "plugins.md").read_text(encoding="utf-8")
    [source] = [b for b in _fenced_blocks(text, "python") if b.startswith("# my_plugin/ranker.py")]
    namespace: dict = {}
    exec(compile(textwrap.dedent(source), "docs/plugins.md", "exec"), namespace)
    check_ranker(namespace["MyRidge"]())


#: family page -> the registered rankers whose parameters it must list
RANKER_PAGES = {
    "rankers/linear.md": ["ridge", "listnet"],
    "rankers/mlr.md": ["mlr", "rmlr"],
    "rankers/lgmml.md": ["lgmml"],
    "rankers/gbdt.md": ["lightgbm", "xgboost-gbrt", "xgboost-lambdamart", "catboost"],
    "rankers/classical.md": [
        "ranksvm",
        "ranksvm-letor",
        "adarank",
        "rankboost",
        "coordinate-ascent",
    ],
    "rankers/neural.md": ["neural"],
}


@pytest.mark.parametrize(("page", "names"), sorted(RANKER_PAGES.items()), ids=sorted(RANKER_PAGES))
def test_each_ranker_page_lists_every_parameter_of_its_rankers(page, names):
    from ltr_bench.registry import RegistryError, load_ranker_class

    rows = [
        line for line in (DOCS / page).read_text(encoding="utf-8").splitlines() if line[:2] == "| "
    ]
    documented = {name for row in rows for name in re.findall(r"`(\w+)`", row.split("|")[1])}
    for name in names:
        try:
            cls = load_ranker_class(name)
        except RegistryError as exc:  # a plugin that is not installed here
            pytest.skip(f"{name} is not available: {exc}")
        missing = sorted(set(cls().get_params()) - documented)
        assert not missing, f"{page} does not list {name}'s parameters {missing}"


def test_every_decision_anchor_is_listed_on_the_decisions_index():
    # code cites docs/decisions.md#<anchor>; the index keeps every such citation landing
    index = (DOCS / "decisions.md").read_text(encoding="utf-8")
    listed = set(re.findall(r'<a id="([a-z0-9-]+)"></a>', index))
    on_pages = {
        anchor: page.name
        for page in sorted((DOCS / "decisions").glob("*.md"))
        for anchor in re.findall(r"^#+ .* \{#([a-z0-9-]+)\}$", page.read_text("utf-8"), re.M)
    }
    assert len(on_pages) >= 40, "the decision pages lost their explicit anchors"
    assert set(on_pages) == listed, {
        "not on the index": sorted(set(on_pages) - listed),
        "on the index but on no page": sorted(listed - set(on_pages)),
    }

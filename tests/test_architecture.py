"""The house rules of the package layout, checked over the static import graph.

Every ``import`` and ``from ... import`` statement of every module (top level or inside a
function: a lazy import is still a dependency) of ``ltr_bench``, the built-in baselines and
every plugin under ``plugins/`` is read with :mod:`ast`. The wings of ``ltr_bench`` may import
only the wings listed for them in :data:`ALLOWED` (data flows one way, cli -> run -> (data,
rankers, evaluation) -> results -> tracking / report, with tune reading results back); rankers
import only the root contract and ``evaluation``; there is no import cycle anywhere; no module
is longer than 500 lines; the core never imports torch and only ``tracking`` (and the CLI's
``ui`` command) imports MLflow.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: import name -> source folder of every package the rules cover
PACKAGES: dict[str, Path] = {
    "ltr_bench": REPO / "ltr_bench",
    "ltr_bench_baselines": REPO / "baselines" / "ltr_bench_baselines",
    **{
        pkg.name: pkg
        for plugin in sorted((REPO / "plugins").iterdir())
        if plugin.is_dir()
        for pkg in sorted(plugin.glob("ltr_bench_*"))
        if (pkg / "__init__.py").exists()
    },
}

WINGS = {
    "cli",
    "run",
    "evaluation",
    "results",
    "report",
    "tune",
    "tracking",
    "data",
    "clicks",
    "models",
}
RANKERS = "rankers"  # the baselines and every plugin

#: wing -> the other wings it may import ("root" = the contract modules at the top level)
ALLOWED: dict[str, set[str]] = {
    "root": set(),
    "data": {"root"},
    "evaluation": {"root"},
    "results": {"root", "evaluation"},
    "run": {"root", "data", "evaluation", "results", "clicks", "models"},
    # clicks: simulated click logs transform loaded folds; the registry (root) builds the
    # logging ranker
    "clicks": {"root", "data"},
    "tracking": {"root", "evaluation", "results", "models"},
    "tune": {"root", "data", "evaluation", "results", "run", "tracking", "models"},
    # data: the published-results table checks its dataset names and fold counts against the
    # dataset specs (metadata only; the report never loads data)
    "report": {"root", "data", "evaluation", "results"},
    # models: the saved-model format; data for the preprocessing a model expects
    # (query_level_norm), results for its atomic-write conventions
    "models": {"root", "data", "evaluation", "results"},
    "cli": {"root", *WINGS, RANKERS},
    RANKERS: {"root", "evaluation"},
}

#: (module, imported module) pairs that break the table on purpose, each with its reason
EXCEPTIONS = {
    # `python -m ltr_bench` is the CLI's launcher, not part of the contract
    ("ltr_bench.__main__", "ltr_bench.cli.app"),
    # check_ranker's export check hands the ranker the builders its export_onnx hook takes
    # and runs ONNX Runtime on the graph, as `ltr-bench export` does
    ("ltr_bench.testing.export_check", "ltr_bench.models.onnx"),
}

MAX_LINES = 500


def _modules() -> dict[str, Path]:
    mods = {}
    for pkg, root in PACKAGES.items():
        for path in root.rglob("*.py"):
            parts = [pkg, *path.relative_to(root).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = path
    return mods


MODULES = _modules()


def _imports(module: str, path: Path) -> set[str]:
    """Every name ``module`` imports: internal ones resolved to the module they load (a
    ``from pkg import sub`` of a submodule points at the submodule), external ones as written."""
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            subs = {f"{origin}.{a.name}" for a in node.names} & MODULES.keys()
            found.update(subs)
            if len(subs) < len(node.names):  # some names are attributes of `origin`
                found.add(origin)
    return found


def _internal(name: str) -> str | None:
    """The module of ours that importing ``name`` loads, or None for an external name."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


GRAPH: dict[str, set[str]] = {}
EXTERNAL: dict[str, set[str]] = {}
for _mod, _path in MODULES.items():
    _names = _imports(_mod, _path)
    # a module's own ancestors are initialised by Python before it in any case
    GRAPH[_mod] = {
        target
        for n in _names
        if (target := _internal(n)) and target != _mod and not _mod.startswith(target + ".")
    }
    EXTERNAL[_mod] = {n.split(".")[0] for n in _names if _internal(n) is None}


def _wing(module: str) -> str:
    parts = module.split(".")
    if parts[0] != "ltr_bench":
        return RANKERS
    if len(parts) > 1 and parts[1] in WINGS:
        return parts[1]
    return "root"


def test_the_rules_cover_the_core_the_baselines_and_every_plugin():
    assert {"ltr_bench", "ltr_bench_baselines", "ltr_bench_lgmml"} <= PACKAGES.keys()
    assert {_wing(m) for m in MODULES} == {"root", RANKERS, *WINGS}


def test_every_import_between_wings_follows_the_one_way_data_flow():
    wrong = sorted(
        f"{mod} ({_wing(mod)}) imports {target} ({_wing(target)})"
        for mod, targets in GRAPH.items()
        for target in targets
        if _wing(target) != _wing(mod)
        and _wing(target) not in ALLOWED[_wing(mod)]
        and (mod, target) not in EXCEPTIONS
    )
    assert not wrong, "imports against the data flow:\n" + "\n".join(wrong)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_planted_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_in_the_core_the_baselines_or_the_plugins():
    assert _cycles(GRAPH) == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_longer_than_500_lines(module):
    n = len(MODULES[module].read_text(encoding="utf-8").splitlines())
    assert n <= MAX_LINES, f"{MODULES[module].relative_to(REPO)} has {n} lines"


def test_the_core_never_imports_torch():
    users = sorted(m for m, ext in EXTERNAL.items() if "torch" in ext and _wing(m) != RANKERS)
    assert users == []


def test_only_tracking_and_the_cli_import_mlflow():
    users = sorted(m for m, ext in EXTERNAL.items() if "mlflow" in ext)
    assert users, "the graph found no MLflow import at all: the test would prove nothing"
    wrong = [m for m in users if _wing(m) not in {"tracking", "cli"}]
    assert wrong == []


def test_every_wing_says_what_it_owns_and_may_import():
    for wing in WINGS:
        doc = ast.get_docstring(ast.parse((REPO / "ltr_bench" / wing / "__init__.py").read_text()))
        assert doc and "import" in doc, f"ltr_bench/{wing}/__init__.py"


def test_the_allowed_table_names_only_known_wings():
    known = {"root", RANKERS, *WINGS}
    assert ALLOWED.keys() == known
    assert all(targets <= known for targets in ALLOWED.values())

"""The import graph of advisor/ has no circle, and the layers of docs/design.md hold, with no exception.

The graph is read with `ast` (nothing is imported): module-level and function-level imports alike,
absolute (`from advisor.x import y`) and relative (`from . import x`), imports under `if TYPE_CHECKING:`
(a type-only import is still a dependency that a reader and mypy follow), and a string that is exactly
the name of a module of advisor/ (what `import_module` or `python -m` is handed: estimate/__init__.py's
lazy names, the probe's worker). `from package import name` counts as importing the submodule when
`name` is one, otherwise the package. A "module:function" string (a namespace's `builder`, shown by
`gpu-advise facts`) names without importing and is not an edge.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ADVISOR = Path(__file__).resolve().parents[2] / "advisor"

# The layers, lowest first: a module may import its own layer and the layers above it in this table,
# never one below. A layer is its folder (docs/design.md's layout); every module must be in one.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("core", ("advisor.core",)),  # positions, provenance, findings, errors, escaping, expressions
    # readers: files -> Documents; the settings, schemas, project boundary and launchers
    ("sources", ("advisor.sources",)),
    ("estimate", ("advisor.estimate",)),  # parameter, memory and time models over plain numbers
    ("plan", ("advisor.plan",)),  # runs and their merged RunPlan; the base revision
    ("facts", ("advisor.facts",)),  # what follows from a plan
    ("engine", ("advisor.engine",)),  # rules over facts, and what is done with their findings
    ("report", ("advisor.report",)),  # reporters and the results they render: build nothing
    ("pipeline", ("advisor.pipeline",)),  # builds the results: check, estimate, probe, policy
    ("cli", ("advisor.cli", "advisor.commands", "advisor.__main__")),  # the app and its command modules
]

# The package itself (advisor/__init__.py: the version and the package folder) belongs to core by its
# exact name: a prefix "advisor" would put any module outside the folders above into core unnoticed.
ROOT = "advisor"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ADVISOR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return found


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom, known: set[str]) -> set[str]:
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            package = package[: len(package) - (node.level - 1)]
            base = ".".join([*package, *([node.module] if node.module else [])])
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
    out = set()
    for name in names:
        while name and name not in known:  # `import advisor.x.y` names advisor.x.y; a symbol's module
            name = name.rpartition(".")[0]
        if name and name != module:
            out.add(name)
    return out


def edges_of(module: str, is_package: bool, tree: ast.AST, known: set[str]) -> set[str]:
    """The modules of `known` that `module` depends on: its imports, and the strings naming one."""
    edges: set[str] = set()
    for node in _imports(tree):
        edges |= _targets(module, is_package, node, known)
    named = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return edges | ((named & known) - {module})


def import_graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in ADVISOR.rglob("*.py")}
    known = set(files)
    return {
        module: edges_of(
            module,
            path.name == "__init__.py",
            ast.parse(path.read_text(encoding="utf-8"), filename=str(path)),
            known,
        )
        for module, path in files.items()
    }


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def find_cycle(graph: dict[str, set[str]], within: frozenset[str]) -> list[str]:
    """One circle through the modules of `within`, as a path that ends where it starts."""
    start = min(within)
    paths = {start: [start]}
    todo = [start]
    while todo:  # breadth first: the shortest way back to start
        node = todo.pop(0)
        for nxt in sorted(graph[node] & within):
            if nxt == start:
                return [*paths[node], start]
            if nxt not in paths:
                paths[nxt] = [*paths[node], nxt]
                todo.append(nxt)
    raise AssertionError(f"{sorted(within)} is not a circle")


def layer_of(module: str) -> int:
    if module == ROOT:
        return 0
    best, rank = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), i
    assert rank is not None, f"{module} is in no layer of LAYERS: place it"
    return rank


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_the_graph_sees_function_level_and_relative_imports(graph: dict[str, set[str]]) -> None:
    assert "advisor.engine.suppress" in graph["advisor.pipeline.check"]  # inside post_engine
    assert "advisor.sources.shell" in graph["advisor.sources.launch"]  # `from advisor.sources.shell import`
    toy = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(toy) == [frozenset("abc")]
    assert find_cycle(toy, frozenset("abc")) == ["a", "b", "c", "a"]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_type_only_dynamic_and_nested_imports_are_edges() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from advisor.plan.run_plan import RunPlan\n"
        "def f():\n    from ..engine import fix\n"
        "LAZY = {'x': 'advisor.report.results'}\n"
        "BUILDER = 'advisor.pipeline.check:run_check'\n"
    )
    known = {"advisor.facts.x", "advisor.plan.run_plan", "advisor.engine.fix", "advisor.report.results"}
    known |= {"advisor.pipeline.check"}
    edges = edges_of("advisor.facts.x", False, ast.parse(source), known)
    assert edges == {"advisor.plan.run_plan", "advisor.engine.fix", "advisor.report.results"}


def test_no_import_circle(graph: dict[str, set[str]]) -> None:
    found = circles(graph)
    assert not found, "import circles:\n" + "\n".join(" -> ".join(find_cycle(graph, c)) for c in found)


def test_every_module_has_a_layer(graph: dict[str, set[str]]) -> None:
    for module in graph:
        layer_of(module)
    with pytest.raises(AssertionError, match="in no layer"):
        layer_of("advisor.loose_module")  # a module outside the folders is refused, not taken for core


def test_no_module_imports_a_higher_layer(graph: dict[str, set[str]]) -> None:
    wrong = [
        f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if layer_of(target) > layer_of(module)
    ]
    assert not wrong, "\n".join(wrong)


def test_reporters_only_render(graph: dict[str, set[str]]) -> None:
    # the results they render are handed down: no reporter reaches the pipeline, the facts or discovery
    # (a reporter may name the type it renders: RunPlan for `gpu-advise plan`)
    above = (
        "advisor.pipeline",
        "advisor.facts",
        "advisor.plan.discover",
    )
    for module in (m for m in graph if m.startswith("advisor.report")):
        assert not [t for t in graph[module] if t.startswith(above)], module


def test_no_module_is_over_800_lines() -> None:
    # issue 13: a module past this has more than one job; split it rather than raise the limit
    long = {
        str(p.relative_to(ADVISOR.parent)): n
        for p in ADVISOR.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 800
    }
    assert not long, long

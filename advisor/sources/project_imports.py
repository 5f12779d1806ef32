"""The project's own Python modules a training script imports, read (never imported or run) so that its
argument dataclasses and its parser are found where they live (advisor.facts.script_ast.project_modules,
advisor.plan.run_plan.script_arguments, and discovery's `-m pkg.mod` launches).

lm-sys/FastChat @0e6d3e4b: fastchat/train/train_lora.py imports ModelArguments from
fastchat.train.train; fastchat/train/train_mem.py only calls train() of it, whose HfArgumentParser is at
fastchat/train/train.py:259. A module is a file under the import roots (the script's folder and its
parents up to the project root), inside the boundary, read with the safe reader; at most MAX_MODULES of
them, re-exports followed MAX_DEPTH deep; the rest stays unresolved."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import Any

from advisor.sources.known_keys import HF_ARGUMENT_PARSERS
from advisor.sources.python_source import parsed, tree_nodes

MAX_MODULES = 20
MAX_DEPTH = 3
MAX_MODULE_BYTES = 2 * 1024 * 1024  # as a training script (advisor.facts.script_ast.MAX_SCRIPT_BYTES)
# Packages never looked up in the project (their classes are library data, or nothing we read).
LIBRARIES = {"transformers", "trl", "peft", "alignment", "open_r1", "torch", "deepspeed", "accelerate"}


def _last_id(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def _is_parser_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and _last_id(node.func) in HF_ARGUMENT_PARSERS


class ProjectModule:
    def __init__(self, path: Path, tree: ast.Module, text: str, package: str) -> None:
        self.path, self.tree, self.lines = path, tree, text.splitlines()
        self.imports = _imports(tree, package)
        self.classes = {n.name: n for n in reversed(tree.body) if isinstance(n, ast.ClassDef)}
        self.functions = {
            n.name: n for n in reversed(tree.body) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        }

    def resolve(self, node: ast.AST) -> str | None:
        from advisor.core.expr import dotted_path

        dotted = dotted_path(node)
        if not dotted:
            return None
        origin = self.imports.get(dotted[0])
        return ".".join([origin, *dotted[1:]] if origin else dotted)


def _imports(tree: ast.Module, package: str) -> dict[str, str]:
    """Local name -> qualified name of the module's imports (relative ones against its package)."""
    out: dict[str, str] = {}
    for node in tree_nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    out[alias.asname] = alias.name
                else:
                    out.setdefault(alias.name.split(".", 1)[0], alias.name.split(".", 1)[0])
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                if node.level - 1 >= len(parts):  # beyond the top package: Python raises ImportError
                    continue
                base = ".".join([*parts[: len(parts) - (node.level - 1)], *([base] if base else [])])
            for alias in node.names if base else ():
                if alias.name != "*":
                    out[alias.asname or alias.name] = f"{base}.{alias.name}"
    return out


class ProjectModules:
    """The project modules reachable from one script, loaded on demand within the bounds."""

    def __init__(self, roots: list[Path], inside: Callable[[Path], bool]) -> None:
        self.roots, self.inside = roots, inside
        self.loaded: dict[str, ProjectModule | None] = {}

    def module(self, dotted: str) -> ProjectModule | None:
        if dotted in self.loaded or len(self.loaded) >= MAX_MODULES:
            return self.loaded.get(dotted)
        self.loaded[dotted] = None
        parts = dotted.split(".")
        if parts[0] in LIBRARIES or not all(p.isidentifier() for p in parts):
            return None
        for root in self.roots:
            for candidate, package in zip(
                module_files(root, parts, "__init__.py"), (".".join(parts[:-1]), dotted), strict=True
            ):
                found = self._read(candidate, package)
                if found is not None:
                    self.loaded[dotted] = found
                    return found
        return None

    def _read(self, path: Path, package: str) -> ProjectModule | None:
        from advisor.sources.read import ReadRefused, read_text_file

        try:
            if not path.is_file() or not self.inside(path):
                return None
            text = read_text_file(path, MAX_MODULE_BYTES)
            tree = parsed(text)
            return ProjectModule(path, tree, text, package) if tree is not None else None
        except (ReadRefused, OSError, ValueError, SyntaxError, RecursionError, MemoryError):
            return None

    def definition(self, qualified: str, kind: str, depth: int = 0) -> tuple[Any, ProjectModule] | None:
        """The top-level class ("class") or function ("function") a qualified name names in a project
        module, following re-exports (``from .train import ModelArguments``) MAX_DEPTH deep."""
        owner, _, name = qualified.rpartition(".")
        module = self.module(owner) if owner and depth <= MAX_DEPTH else None
        if module is None:
            return None
        node = (module.classes if kind == "class" else module.functions).get(name)
        if node is not None:
            return node, module
        again = module.imports.get(name)
        return self.definition(again, kind, depth + 1) if again else None

    def lookup_class(self, qualified: str) -> tuple[ast.ClassDef, dict[str, ast.ClassDef], Any, Path] | None:
        """(class, its module's classes, its module's resolve, its file) of a project class."""
        found = self.definition(qualified, "class")
        return None if found is None else (found[0], found[1].classes, found[1].resolve, found[1].path)


def _top_level_calls(tree: ast.Module) -> list[ast.Call]:
    """Calls made as statements at the script's top level (``if __name__ == "__main__":`` included)."""
    out: list[ast.Call] = []
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        stmt = todo.pop(0)
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            out.append(stmt.value)
        elif isinstance(stmt, ast.If | ast.Try | ast.With):
            todo.extend(stmt.body)
    return out


def called_project_functions(
    tree: ast.Module, resolve: Callable[[ast.AST], str | None], modules: ProjectModules
) -> list[tuple[Any, ProjectModule]]:
    """The project functions the script's top level calls that build an argument parser; none when the
    script builds a parser or touches sys.argv itself (the called parser may not see the flags then)."""
    for node in tree_nodes(tree):
        if _is_parser_call(node) or (isinstance(node, ast.Attribute) and node.attr == "argv"):
            return []
        if isinstance(node, ast.Call) and _last_id(node.func) == "ArgumentParser":
            return []
    found: list[tuple[Any, ProjectModule]] = []
    for qualified in dict.fromkeys(resolve(call.func) for call in _top_level_calls(tree)):
        definition = modules.definition(qualified, "function") if qualified else None
        if definition is not None and any(_is_parser_call(n) for n in ast.walk(definition[0])):
            found.append(definition)
    return found


# (file, the parser call, the file's nodes, its resolve, the lookup of project classes)
ParserSite = tuple[Path, ast.Call, list[ast.AST], Callable[[ast.AST], str | None], Any]


def parser_site(path: Path, text: str, project_roots: tuple[Path, ...], inside: Any) -> ParserSite | None:
    """The one HF parser call of the script, or of the one project function its top level calls."""
    roots = import_roots(path, project_roots)
    try:
        tree = parsed(text) if roots else None
        if tree is None:
            return None
        module, modules = ProjectModule(path, tree, text, ""), ProjectModules(roots, inside)
        own = [n for n in tree_nodes(tree) if isinstance(n, ast.Call) and _is_parser_call(n)]
        if not own:
            found = called_project_functions(tree, module.resolve, modules)
            if len(found) != 1:
                return None
            module = found[0][1]
            own = [n for n in ast.walk(found[0][0]) if isinstance(n, ast.Call) and _is_parser_call(n)]
        return module.path, own[0], list(tree_nodes(module.tree)), module.resolve, modules.lookup_class
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def module_files(folder: Path, parts: list[str], package_file: str) -> tuple[Path, Path]:
    """The two files a dotted module name may be under one import root: `a/b/c.py`, or the package's
    `a/b/c/<package_file>` (`__init__.py` when imported, `__main__.py` when run with -m)."""
    return folder.joinpath(*parts[:-1], parts[-1] + ".py"), folder.joinpath(*parts, package_file)


def import_roots(script: Path, project_roots: tuple[Path, ...]) -> list[Path]:
    """The script's folder and its parents up to the project root that holds it; [] when none does."""
    here = script.resolve().parent
    root = next((r for r in project_roots if here == r or here.is_relative_to(r)), None)
    out = [here] if root is not None else []
    while out and here != root and here.parent != here:
        here = here.parent
        out.append(here)
    return out

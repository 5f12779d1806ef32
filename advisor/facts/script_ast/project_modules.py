"""The training script's argument parsers with the project's own modules it imports read
(advisor.plan.discover.ProjectModules): its dataclasses looked up there like local ones, or the parser of the
project function its top level calls (lm-sys/FastChat @0e6d3e4b: fastchat/train/train_mem.py calls
fastchat.train.train.train(), whose HfArgumentParser is at fastchat/train/train.py:259; train_lora.py
imports ModelArguments from there). Anything not found stays unresolved, and the flags unjudged.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import Any

from advisor.facts.script_ast.argument_parsers import find_argument_parsers
from advisor.facts.script_ast.results import ArgumentParsing
from advisor.sources.project_imports import (
    ProjectModule,
    ProjectModules,
    called_project_functions,
    import_roots,
)
from advisor.sources.python_source import parsed


def _positions(module: ProjectModule) -> Callable[[ast.AST], tuple[int, int]]:
    """1-based (line, col) of a node of the module, the column in characters (ast gives UTF-8 bytes)."""

    def pos(node: ast.AST) -> tuple[int, int]:
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        if 1 <= line <= len(module.lines) and not module.lines[line - 1].isascii():
            col = len(module.lines[line - 1].encode("utf-8")[:col].decode("utf-8", errors="replace"))
        return line, col + 1

    return pos


def called_module_parsers(
    tree: ast.Module, resolve: Callable[[ast.AST], str | None], modules: ProjectModules
) -> tuple[ArgumentParsing, ...] | None:
    """The parsers inside the project function the script's top level calls (``train()`` imported from
    fastchat.train.train), with the module file as their source; None unless exactly one called
    function builds them and the script reads no arguments itself."""
    found = called_project_functions(tree, resolve, modules)
    if len(found) != 1:
        return None
    func, module = found[0]
    return find_argument_parsers(
        module.tree,
        module.resolve,
        _positions(module),
        lookup=modules.lookup_class,
        scope=func,
        source=str(module.path),
    )


def follow_argument_parsers(
    path: Path, text: str, own: tuple[ArgumentParsing, ...], project_roots: tuple[Path, ...], inside: Any
) -> tuple[ArgumentParsing, ...]:
    """The script's parsers with the project modules it imports read: its own ones with their
    dataclasses looked up there, or, when it builds none, those of the project function it calls."""
    roots = import_roots(path, project_roots)
    if not roots:
        return own
    tree = parsed(text)
    if tree is None:
        return own
    script = ProjectModule(path, tree, text, "")
    modules = ProjectModules(roots, inside)
    try:
        if own:
            pos = _positions(script)
            return find_argument_parsers(tree, script.resolve, pos, lookup=modules.lookup_class)
        return called_module_parsers(tree, script.resolve, modules) or own
    except RecursionError:
        return own

"""A Python file's syntax tree, parsed once per text: the training script is read (never run) by
discovery (its project imports), the plan (its own parser's defaults) and several facts (the script's
AST facts, device maps, PEFT calls), and each used to parse it again. Nobody mutates the tree."""

from __future__ import annotations

import ast
from functools import lru_cache

from advisor.core.records import record


@record(frozen=True, slots=True)
class PythonSyntaxError:
    """Why the text does not parse, and where (1-based)."""

    message: str
    line: int
    col: int


# Over this size a Python file is not parsed. The check walks the tree about ten times (script facts,
# parsers, model loads, device maps, LoRA, project imports), ~8 s a MB of dense code: a 256 KB script
# takes ~2 s, a 4.9 MB one took 11 s and 0.9 GB (issue 17). Training scripts are 5-50 KB; the largest
# upstream parser module we follow, Megatron-LM megatron/training/arguments.py, is 207 KB.
MAX_SOURCE_CHARS = 256 * 1024


def too_large(text: str) -> str | None:
    """Why a Python file is not analysed, or None."""
    if len(text) <= MAX_SOURCE_CHARS:
        return None
    return f"{len(text) / 1024:.0f} KB: over {MAX_SOURCE_CHARS // 1024} KB a Python file is not analysed"


@lru_cache(maxsize=32)
def python_tree(text: str) -> ast.Module | PythonSyntaxError:
    """The module's tree (a leading BOM dropped), or why it does not parse."""
    reason = too_large(text)
    if reason is not None:
        return PythonSyntaxError(reason, 1, 1)
    try:
        return ast.parse(text.removeprefix("\ufeff"))
    except SyntaxError as exc:
        return PythonSyntaxError(exc.msg or "invalid syntax", exc.lineno or 1, exc.offset or 1)
    except (ValueError, RecursionError, MemoryError) as exc:  # a NUL byte, nesting too deep
        return PythonSyntaxError(f"cannot parse script: {type(exc).__name__}", 1, 1)


@lru_cache(maxsize=32)
def tree_nodes(tree: ast.AST) -> tuple[ast.AST, ...]:
    """Every node of a parsed tree, in ast.walk's order, walked once per tree: the check's readers each
    walked the training script's whole tree, ~20 times in the bundled example's check. Read only, as the
    tree (python_tree keeps one tree per text, so the same tree comes back here)."""
    return tuple(ast.walk(tree))


def parsed(text: str) -> ast.Module | None:
    """The module's tree, or None when it does not parse."""
    tree = python_tree(text)
    return tree if isinstance(tree, ast.Module) else None

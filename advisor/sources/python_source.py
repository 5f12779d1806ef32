"""A Python file's syntax tree, parsed once per text: the training script is read (never run) by
discovery (its project imports), the plan (its own parser's defaults) and several facts (the script's
AST facts, device maps, PEFT calls), and each used to parse it again. Nobody mutates the tree."""

from __future__ import annotations

import ast
from functools import lru_cache

from advisor.records import record


@record(frozen=True, slots=True)
class PythonSyntaxError:
    """Why the text does not parse, and where (1-based)."""

    message: str
    line: int
    col: int


@lru_cache(maxsize=32)
def python_tree(text: str) -> ast.Module | PythonSyntaxError:
    """The module's tree (a leading BOM dropped), or why it does not parse."""
    try:
        return ast.parse(text.removeprefix("\ufeff"))
    except SyntaxError as exc:
        return PythonSyntaxError(exc.msg or "invalid syntax", exc.lineno or 1, exc.offset or 1)
    except (ValueError, RecursionError, MemoryError) as exc:  # a NUL byte, nesting too deep
        return PythonSyntaxError(f"cannot parse script: {type(exc).__name__}", 1, 1)


def parsed(text: str) -> ast.Module | None:
    """The module's tree, or None when it does not parse."""
    tree = python_tree(text)
    return tree if isinstance(tree, ast.Module) else None

"""``*.from_pretrained(...)`` calls of a training script and the keyword arguments that decide the
memory of the loaded model (for the estimator)."""

from __future__ import annotations

import ast
from typing import Any

from advisor.facts.script_ast.results import LoadCall

# from_pretrained keyword arguments that decide the memory of the loaded model (LoadCall)
LOAD_KWARGS = frozenset(
    {
        "dtype",
        "torch_dtype",
        "quantization_config",
        "device_map",
        "attn_implementation",
        "load_in_4bit",
        "load_in_8bit",
    }
)


def find_load_calls(tree: ast.Module, pos: Any) -> tuple[LoadCall, ...]:
    """Every ``*.from_pretrained(...)`` call with its model-loading keyword arguments, in source order."""
    bound: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            bound.setdefault(node.targets[0].id, []).append(node.value)
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "from_pretrained":
            continue
        kwargs = []
        for kw in node.keywords:
            if kw.arg in LOAD_KWARGS:
                value = kw.value
                if isinstance(value, ast.Name) and len(bound.get(value.id, ())) == 1:
                    value = bound[value.id][0]
                kwargs.append((kw.arg, ast.unparse(value)[:2000]))
        line, col = pos(node)
        star = any(kw.arg is None for kw in node.keywords)
        out.append(LoadCall(ast.unparse(node.func)[:200], line, col, tuple(kwargs), star))
    return tuple(sorted(out, key=lambda c: (c.line, c.col)))

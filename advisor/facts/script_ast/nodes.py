"""Small helpers over ast nodes: dotted names, constants, keyword arguments, statement bodies."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from advisor.core.expr import dotted_path
from advisor.facts.script_ast.vocabulary import EXIT_CALLS, MAIN_RANK_VALUES


def last_id(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def dotted_name(node: ast.AST) -> str | None:
    path = dotted_path(node)
    return ".".join(path) if path else None


def const(node: ast.AST | None) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int
    ):
        return -node.operand.value
    return None


def is_main_value(value: object) -> bool:
    return type(value) in (int, str) and value in MAIN_RANK_VALUES


def kwarg(call: ast.Call, name: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


FLIP: dict[type, ast.cmpop] = {
    ast.Lt: ast.Gt(),
    ast.Gt: ast.Lt(),
    ast.LtE: ast.GtE(),
    ast.GtE: ast.LtE(),
}


def is_self_or_super(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id == "self"
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def display(key: str | None) -> str | None:
    if key is None:
        return None
    return ".".join(part.split("#", 1)[0] for part in key.split("."))


def is_write_mode(node: ast.expr | None) -> bool:
    value = const(node)
    if not isinstance(value, str):
        return False
    return any(c in value for c in "wax+")


def stmt_bodies(node: ast.stmt) -> Iterator[list[ast.stmt]]:
    for name in ("body", "orelse", "finalbody"):
        body = getattr(node, name, None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            yield body
    for handler in getattr(node, "handlers", ()) or ():
        yield handler.body
    for case in getattr(node, "cases", ()) or ():
        yield case.body


def terminates(body: list[ast.stmt]) -> bool:
    """The block never falls through its end (return, raise, continue, break, sys.exit())."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, ast.Return | ast.Raise | ast.Continue | ast.Break):
        return True
    if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call):
        return dotted_name(last.value.func) in EXIT_CALLS
    if isinstance(last, ast.If):
        return terminates(last.body) and terminates(last.orelse)
    if isinstance(last, ast.With | ast.AsyncWith):
        return terminates(last.body)
    return False

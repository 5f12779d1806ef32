"""The `parser.add_argument(...)` calls of a script's syntax tree (read, never run), by the dest argparse
gives each: `dest=` when written, else the first long option with dashes made underscores (Python 3.11
argparse.py _ActionsContainer._get_optional_kwargs)."""

from __future__ import annotations

import ast

from advisor.sources.python_source import tree_nodes

# the default argparse gives a switch written without one (argparse.py _StoreTrueAction, _StoreFalseAction)
SWITCH_DEFAULTS = {"store_true": False, "store_false": True}


def add_arguments(tree: ast.AST) -> dict[str, ast.Call]:
    """dest -> the first add_argument call that declares it."""
    out: dict[str, ast.Call] = {}
    for node in tree_nodes(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "add_argument":
            continue
        dest = dest_of(node)
        if dest and dest not in out:
            out[dest] = node
    return out


def keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def switch_default(call: ast.Call) -> bool | None:
    """False / True for a store_true / store_false switch written without a default, else None."""
    action = keyword(call, "action")
    if (
        keyword(call, "default") is None
        and isinstance(action, ast.Constant)
        and action.value in SWITCH_DEFAULTS
    ):
        return SWITCH_DEFAULTS[str(action.value)]
    return None


def dest_of(call: ast.Call) -> str | None:
    """The dest argparse gives an add_argument call; None for a positional-only or unnamed one."""
    dest = keyword(call, "dest")
    if isinstance(dest, ast.Constant) and isinstance(dest.value, str):
        return dest.value or None
    options = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    long = next((o for o in options if o.startswith("--")), None)
    return long[2:].replace("-", "_") if long else None

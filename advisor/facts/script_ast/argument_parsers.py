"""HfArgumentParser((ModelArguments, DataArguments, TrainingArguments)), TrlParser: the dataclasses a
script parses its arguments into, their fields and library bases, and how the result is parsed."""

from __future__ import annotations

import ast
from typing import Any

from advisor.facts.script_ast.nodes import const, kwarg, last_id
from advisor.facts.script_ast.results import ArgumentClass, ArgumentParsing
from advisor.sources.known_keys import HF_ARGUMENT_PARSERS
from advisor.sources.python_source import tree_nodes

# The methods of the parser classes (advisor.sources.known_keys.HF_ARGUMENT_PARSERS) that fill their
# dataclasses (transformers hf_argparser.py, trl scripts/utils.py TrlParser.parse_args_and_config).
_PARSER_CLASSES = HF_ARGUMENT_PARSERS
HF_PARSER_NAMES = HF_ARGUMENT_PARSERS
_PARSE_METHODS = frozenset(
    {
        "parse_args_into_dataclasses",
        "parse_args_and_config",
        "parse_yaml_file",
        "parse_json_file",
        "parse_dict",
        "parse_known_args",
        "parse",
    }
)
# Library modules whose classes we have key data for; any other base is unreadable from here.
LIBRARY_PACKAGES = ("transformers", "trl", "peft", "alignment", "open_r1")
_MAX_CLASS_DEPTH = 16


def _is_dataclass_decorator(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    return last_id(target) in ("dataclass", "dataclasses.dataclass")


def _class_fields(node: ast.ClassDef) -> list[str]:
    """Annotated class-level names: the fields of a dataclass (ClassVar excluded)."""
    out = []
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            ann = ast.unparse(stmt.annotation)
            if "ClassVar" in ann or "InitVar" in ann:
                continue
            out.append(stmt.target.id)
    return out


def find_argument_parsers(
    tree: ast.Module,
    resolve: Any,
    pos: Any,
    lookup: Any = None,
    scope: ast.AST | None = None,
    source: str | None = None,
) -> tuple[ArgumentParsing, ...]:
    """The parsers built in ``scope`` (the whole tree by default). ``lookup(qualified)`` gives
    (class node, its module's classes, its module's resolve, its file) for a class of a project module
    (advisor.plan.discover.ProjectModules.lookup_class), read like a local one; None: unresolved."""
    classes: dict[str, ast.ClassDef] = {}
    bound: dict[str, ast.expr] = {}
    for node in tree_nodes(tree):
        if isinstance(node, ast.ClassDef):
            classes.setdefault(node.name, node)
        elif (
            isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
        ):
            bound[node.targets[0].id] = node.value

    def describe(name_node: ast.expr) -> ArgumentClass:
        name = last_id(name_node) or ast.unparse(name_node)[:80]
        fields: list[str] = []
        library: list[str] = []
        resolved = True
        seen: set[int] = set()
        todo: list[tuple[ast.expr, int, dict[str, ast.ClassDef], Any]] = [(name_node, 0, classes, resolve)]
        while todo:
            expr, depth, scope_classes, scope_resolve = todo.pop()
            simple = last_id(expr)
            local = scope_classes.get(simple) if isinstance(expr, ast.Name) and simple else None
            if local is not None and id(local) in seen:
                local = None  # `class TrainingArguments(TrainingArguments)`: the base is the import
            qualified = "" if local is not None else scope_resolve(expr) or ""
            if local is None and lookup is not None and qualified.split(".", 1)[0] not in LIBRARY_PACKAGES:
                found = lookup(qualified) if "." in qualified else None
                if found is not None and id(found[0]) not in seen:
                    local, scope_classes, scope_resolve = found[:3]
            if local is not None:
                if depth > _MAX_CLASS_DEPTH:
                    resolved = False
                    continue
                seen.add(id(local))
                fields.extend(_class_fields(local))
                todo.extend((b, depth + 1, scope_classes, scope_resolve) for b in local.bases)
                continue
            if qualified.split(".", 1)[0] in LIBRARY_PACKAGES:
                library.append(qualified)
            elif qualified not in ("object", "ABC", "abc.ABC", "Generic"):
                resolved = False
        return ArgumentClass(name, tuple(dict.fromkeys(fields)), tuple(dict.fromkeys(library)), resolved)

    def class_nodes(arg: ast.expr) -> list[ast.expr] | None:
        if isinstance(arg, ast.Name) and arg.id in bound and arg.id not in classes:
            arg = bound[arg.id]
        if isinstance(arg, ast.Tuple | ast.List):
            if all(isinstance(e, ast.Name | ast.Attribute) for e in arg.elts):
                return list(arg.elts)
            return None
        if isinstance(arg, ast.Name | ast.Attribute):
            return [arg]
        return None

    assigned: dict[int, list[str]] = {}
    for node in tree_nodes(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Call):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            assigned[id(node.value)] = [t.id for t in targets if isinstance(t, ast.Name)]
    parsers: dict[str, tuple[ast.Call, str, list[ArgumentClass] | None]] = {}
    anonymous: list[tuple[ast.Call, str, list[ArgumentClass] | None]] = []
    within = tree_nodes(tree) if scope is None else tuple(ast.walk(scope))
    for call in within:
        if not isinstance(call, ast.Call) or last_id(call.func) not in _PARSER_CLASSES:
            continue
        arg = call.args[0] if call.args else kwarg(call, "dataclass_types")
        nodes = class_nodes(arg) if arg is not None else None
        described = [describe(n) for n in nodes] if nodes is not None else None
        found = (call, last_id(call.func) or "", described)
        names = assigned.get(id(call), [])
        for n in names:
            parsers[n] = found
        if not names:
            anonymous.append(found)

    methods: dict[int, list[str]] = {}
    drops: dict[int, tuple[int, int, str]] = {}
    reads: dict[int, tuple[int, str, tuple[int, ...] | None]] = {}
    # `a, b, remaining = parser.parse_args_into_dataclasses(return_remaining_strings=True)`: the last name
    leftovers = {
        id(n.value): n.targets[0].elts[-1].id
        for n in tree_nodes(tree)
        if isinstance(n, ast.Assign)
        and len(n.targets) == 1
        and isinstance(n.targets[0], ast.Tuple)
        and n.targets[0].elts
        and isinstance(n.targets[0].elts[-1], ast.Name)
    }
    for node in within:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in _PARSE_METHODS:
            continue
        receiver = node.func.value
        entry: tuple[ast.Call, str, list[ArgumentClass] | None] | None = None
        if isinstance(receiver, ast.Name) and receiver.id in parsers:
            entry = parsers[receiver.id]
        elif isinstance(receiver, ast.Call):
            entry = next((e for e in anonymous if e[0] is receiver), None)
        if entry is None:
            continue
        key = id(entry[0])
        methods.setdefault(key, []).append(node.func.attr)
        for flag in ("return_remaining_strings", "allow_extra_keys"):
            value = kwarg(node, flag)
            if value is not None and const(value) is True and key not in drops:
                line, col = pos(value)
                drops[key] = (line, col, f"{flag}=True")
                read = (
                    _leftovers_read(tree, leftovers.get(id(node)))
                    if flag == "return_remaining_strings"
                    else None
                )
                if read is not None:
                    reads[key] = read
        if node.func.attr == "parse_known_args" and key not in drops:
            line, col = pos(node)
            drops[key] = (line, col, "parse_known_args()")

    out = []
    seen_calls: set[int] = set()
    for call, parser, described in [*parsers.values(), *anonymous]:
        if id(call) in seen_calls:
            continue
        seen_calls.add(id(call))
        line, col = pos(call)
        if described is None:
            described = [ArgumentClass("?", (), (), False)]
        out.append(
            ArgumentParsing(
                parser=parser,
                line=line,
                col=col,
                classes=tuple(described),
                methods=tuple(dict.fromkeys(methods.get(id(call), ()))),
                drops_unknown=None if _reads_all(reads.get(id(call))) else drops.get(id(call)),
                reads_leftovers=reads.get(id(call)),
                source=source,
            )
        )
    return tuple(sorted(out, key=lambda p: (p.line, p.col)))


def _reads_all(read: tuple[int, str, tuple[int, ...] | None] | None) -> bool:
    """The script reads every leftover string (a loop over them, a computed index): none is dropped."""
    return read is not None and read[2] is None


def _leftovers_read(tree: ast.Module, name: str | None) -> tuple[int, str, tuple[int, ...] | None] | None:
    """Where the script reads the leftover strings by value (`int(remaining_args[1])`, `for a in rest`), not
    only checks them (`if remaining_args: raise ...`, `len(rest)`): (line, as written, the constant indices
    read, None for all of them); None when it does not read them."""
    if name is None:
        return None
    first: tuple[int, str] | None = None
    indices: set[int] | None = set()
    for node in tree_nodes(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == name:
            first = first or (node.lineno, ast.unparse(node)[:80])
            index = node.slice
            if isinstance(index, ast.Constant) and type(index.value) is int and index.value >= 0:
                indices = None if indices is None else indices | {index.value}
            else:
                indices = None
        elif isinstance(node, ast.For) and isinstance(node.iter, ast.Name) and node.iter.id == name:
            first, indices = first or (node.lineno, name), None
    if first is None:
        return None
    return first[0], first[1], None if indices is None else tuple(sorted(indices))

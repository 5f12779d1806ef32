"""Convert the tree's plain-data classes to the one struct idiom, `@record` (issue 19 item 5).

benchmarks/struct_idiom.py gives the figures the choice rests on: msgspec.Struct builds, hashes and decodes
faster, but its import alone (~20 ms on the check path: inspect, dis, tokenize, typing_extensions, uuid,
decimal, datetime) outweighs what it saves there (~8-11 ms); its errors lose a table key (`$.severity[...]`)
and stop at the first problem; it has no compare=False field (positions use five). So records stay, and
what is declared some other way becomes a record:

  - `class X(NamedTuple)` -> `@record(frozen=True, slots=True)` class X (same fields, defaults, order,
    positional construction, hash); `expr._replace(...)` -> `replace(expr, ...)` in the modules that define
    or import a converted class;
  - a class with `__slots__` whose `__init__` only stores each of its parameters in the slot of the same
    name (plain data with methods) -> `@record(slots=True, eq=False)` with the parameters' annotations and
    defaults as fields; eq=False keeps the identity equality and hash the hand class had. Classes whose
    __init__ computes anything are behaviour, not data, and are left alone (listed with --dry-run).

Idempotent: a converted file has no NamedTuple and no qualifying __slots__ class left, so a second run
changes nothing. Text edits, bottom-up, keep every comment and the formatting around them; run
`ruff check --fix --select I` (the new import's place) and `ruff format` on the changed files after.

    python tools/convert_structs.py [--dry-run] [ROOT]      (ROOT: the checkout, default: this one)

What it cannot do (hand edits, listed in its output): comments that explain why a class was a
NamedTuple, code that indexes or unpacks a converted NamedTuple as a tuple (reported where ast can see
`x[0]`-style subscripts on its names), and the pydantic/record mirror of advisor/sources/schema (see the end).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

MANUAL = """\
Hand edits the script does not make:
  1. The schema mirror (advisor/sources/schema/*.py pydantic models + settings_types.py, the
  RuleSpec/Machine/GpuSpec
     records, tests/core/test_schema_views.py): one record per input type, with its constraints on the field
     (`field(metadata={"alias": "effective-batch", "ge": 1, "le": 2**63 - 1, "description": ...})`),
     validated by advisor/core/datacodec.py at the boundary (a `validate(cls, data)` next to `decode` that
     honours
     aliases, bounds, min_length, extra keys refused, and raises with the key path as a tuple, which
     advisor/sources/settings.py `_line_of`, advisor/sources/hardware.py `_mark_of` and
     advisor/engine/rule_engine.py
     `_field_lines` already map to file:line), plus a JSON-schema writer from the same fields for
     `gpu-advise schema`. pydantic then leaves the dependencies; the parity test goes. Keep today's
     wording ("Input should be ...") where tests/gate/test_settings.py and tests/hardware assert it.
  2. Comments that explain a NamedTuple choice (advisor/estimate/params/families.py: "NamedTuples, not
     dataclasses ..."): records compile no __init__ until a class's 17th instance, so the reason is gone.
  3. Anything the script reports below as tuple-style use of a converted class.
"""


def _base_names(node: ast.ClassDef) -> list[str]:
    return [
        b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else ""
        for b in node.bases
    ]


def _slots(node: ast.ClassDef) -> list[str] | None:
    for stmt in node.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id == "__slots__"
            and isinstance(stmt.value, ast.Tuple | ast.List)
            and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in stmt.value.elts)
        ):
            return [e.value for e in stmt.value.elts]  # type: ignore[attr-defined]
    return None


def _plain_init(node: ast.ClassDef, slots: list[str]) -> ast.FunctionDef | None:
    """The class's __init__ if it only stores each parameter in the slot of its name."""
    init = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
    if init is None or init.args.vararg or init.args.kwarg or init.args.posonlyargs or init.decorator_list:
        return None
    params = [a.arg for a in init.args.args[1:] + init.args.kwonlyargs]
    if sorted(params) != sorted(slots) or any(a.annotation is None for a in init.args.args[1:]):
        return None
    self_name = init.args.args[0].arg
    stored = []
    for stmt in init.body:
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
        if isinstance(stmt, ast.AnnAssign):
            target = stmt.target
        value = stmt.value if isinstance(stmt, ast.Assign | ast.AnnAssign) else None
        if not (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == self_name
            and isinstance(value, ast.Name)
            and value.id == target.attr
        ):
            return None
        stored.append(target.attr)
    return init if sorted(stored) == sorted(slots) else None


class _Edits:
    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))
        self.edits: list[tuple[int, int, str]] = []

    def offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + len(self.lines[line - 1].encode()[:col].decode())

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (
            self.offset(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            self.offset(node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
        )

    def replace(self, start: int, end: int, new: str) -> None:
        self.edits.append((start, end, new))

    def apply(self) -> str:
        out = self.text
        for start, end, new in sorted(self.edits, reverse=True):
            out = out[:start] + new + out[end:]
        return out


_UNHASHABLE = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
_HASHABLE_CALLS = {"frozenset", "tuple", "str", "int", "float", "bool"}


def _needs_factory(value: ast.expr) -> bool:
    """A default a record refuses as mutable (its type's __hash__ is None, as dataclasses checks): a
    display of a list, dict or set, or a call that may build one (MappingProxyType({...}) is unhashable)."""
    if isinstance(value, _UNHASHABLE):
        return True
    return isinstance(value, ast.Call) and _root_name(value.func) not in _HASHABLE_CALLS


def _convert_namedtuple(node: ast.ClassDef, ed: _Edits) -> bool:
    """Rewrite the class header; True when a default had to become a default_factory."""
    factory = False
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and stmt.value is not None and _needs_factory(stmt.value):
            start, end = ed.span(stmt.value)
            ed.replace(start, end, f"field(default_factory=lambda: {ed.text[start:end]})")
            factory = True
    start = ed.offset(node.lineno, 0)
    indent = re.match(r"\s*", ed.lines[node.lineno - 1]).group(0)  # type: ignore[union-attr]
    header_end = ed.offset(node.body[0].lineno, 0) if node.body else ed.span(node)[1]
    header = ed.text[start:header_end]
    new_header = re.sub(r"\(\s*(typing\.)?NamedTuple\s*\)", "", header, count=1)
    ed.replace(start, header_end, f"{indent}@record(frozen=True, slots=True)\n{new_header}")
    return factory


def _convert_slots(node: ast.ClassDef, init: ast.FunctionDef, ed: _Edits) -> None:
    indent = re.match(r"\s*", ed.lines[node.lineno - 1]).group(0)  # type: ignore[union-attr]
    inner = indent + "    "
    args = init.args.args[1:]
    defaults: list[ast.expr | None] = [None] * (len(args) - len(init.args.defaults)) + list(
        init.args.defaults
    )
    fields = []
    for a, d in zip(args, defaults, strict=True):
        ann = ast.get_source_segment(ed.text, a.annotation) if a.annotation else "object"
        default = f" = {ast.get_source_segment(ed.text, d)}" if d is not None else ""
        fields.append(f"{inner}{a.arg}: {ann}{default}\n")
    for a, d in zip(init.args.kwonlyargs, init.args.kw_defaults, strict=True):
        ann = ast.get_source_segment(ed.text, a.annotation) if a.annotation else "object"
        default = f" = {ast.get_source_segment(ed.text, d)}" if d is not None else ""
        fields.append(f"{inner}{a.arg}: {ann}{default}\n")
    kw = ", kw_only=True" if init.args.kwonlyargs and not args else ""
    start = ed.offset(node.lineno, 0)
    ed.replace(start, start, f"{indent}@record(slots=True, eq=False{kw})\n")
    slots_stmt = next(s for s in node.body if isinstance(s, ast.Assign) and _is_slots(s))
    s0 = ed.offset(slots_stmt.lineno, 0)
    s1 = ed.starts[slots_stmt.end_lineno]  # type: ignore[index]
    ed.replace(s0, s1, "".join(fields))
    i0 = ed.offset(init.lineno, 0)
    i1 = ed.starts[init.end_lineno]  # type: ignore[index]
    # the blank line after the removed __init__ goes with it
    while i1 < len(ed.text) and ed.text[i1] == "\n":
        i1 += 1
    ed.replace(i0, i1, "")


def _is_slots(stmt: ast.Assign) -> bool:
    return (
        len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == "__slots__"
    )


def _ensure_import(text: str, names: set[str]) -> str:
    """`from advisor.core.records import ...` with `names` added (after the last top-level import)."""
    tree = ast.parse(text)
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.ImportFrom)
            and stmt.module == "advisor.core.records"
            and stmt.col_offset == 0
        ):
            have = {a.name for a in stmt.names}
            if names <= have:
                return text
            new = ", ".join(sorted(have | names))
            lines = text.splitlines(keepends=True)
            before = "".join(lines[: stmt.lineno - 1])
            after = "".join(lines[stmt.end_lineno :])  # type: ignore[misc]
            return f"{before}from advisor.core.records import {new}\n{after}"
    last = max(
        (s.end_lineno or 0 for s in tree.body if isinstance(s, ast.Import | ast.ImportFrom)),
        default=0,
    )
    lines = text.splitlines(keepends=True)
    line = f"from advisor.core.records import {', '.join(sorted(names))}\n"
    return "".join(lines[:last]) + line + "".join(lines[last:])


def _drop_namedtuple_import(text: str) -> str:
    tree = ast.parse(text)
    still_used = any(isinstance(n, ast.Name) and n.id == "NamedTuple" for n in ast.walk(tree)) or any(
        isinstance(n, ast.Attribute) and n.attr == "NamedTuple" for n in ast.walk(tree)
    )
    if still_used:
        return text
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "typing":
            names = [a for a in stmt.names if a.name != "NamedTuple"]
            if len(names) == len(stmt.names):
                continue
            lines = text.splitlines(keepends=True)
            before = "".join(lines[: stmt.lineno - 1])
            after = "".join(lines[stmt.end_lineno :])  # type: ignore[misc]
            kept = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in names)
            body = f"from typing import {kept}\n"
            return before + (body if names else "") + after
    return text


def _replace_calls(text: str, receivers_in: set[str]) -> tuple[str, int]:
    """`x._replace(a=1)` -> `replace(x, a=1)`; with `receivers_in`, only where x's root name is one of
    them. Innermost calls first, one at a time (`A._replace(moe=B._replace(...))` nests)."""
    count = 0
    while True:
        tree = ast.parse(text)
        calls = [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "_replace"
            and (not receivers_in or _root_name(n.func.value) in receivers_in)
        ]
        innermost = [c for c in calls if not any(o is not c and o in ast.walk(c) for o in calls)]
        if not innermost:
            return text, count
        node = innermost[0]
        ed = _Edits(text)
        assert isinstance(node.func, ast.Attribute)
        recv = ast.get_source_segment(text, node.func.value)
        start, end = ed.span(node)
        inner = text[ed.span(node.func)[1] : end].strip()[1:-1].strip()
        ed.replace(start, end, f"replace({recv}, {inner})" if inner else f"replace({recv})")
        text = ed.apply()
        count += 1


def _root_name(node: ast.AST) -> str:
    while isinstance(node, ast.Attribute | ast.Call | ast.Subscript):
        node = node.value if not isinstance(node, ast.Call) else node.func
    return node.id if isinstance(node, ast.Name) else ""


def convert_file(path: Path, report: list[str]) -> str | None:
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    ed = _Edits(text)
    converted: list[str] = []
    needs = {"record"}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        if "NamedTuple" in _base_names(node) and len(node.bases) == 1 and not node.keywords:
            if _convert_namedtuple(node, ed):
                needs.add("field")
                report.append(f"{path}:{node.lineno}: {node.name}: an unhashable default -> default_factory")
            converted.append(node.name)
            report.append(f"{path}:{node.lineno}: NamedTuple {node.name} -> @record(frozen=True, slots=True)")
            continue
        slots = _slots(node)
        if slots is None or node.bases or node.decorator_list:
            continue
        init = _plain_init(node, slots)
        if init is None:
            report.append(
                f"{path}:{node.lineno}: left alone: {node.name} has __slots__ and an __init__ that computes"
            )
            continue
        _convert_slots(node, init, ed)
        converted.append(node.name)
        report.append(f"{path}:{node.lineno}: __slots__ class {node.name} -> @record(slots=True, eq=False)")
    if not converted:
        return None
    new = ed.apply()
    new, n = _replace_calls(new, set())
    if n:
        needs.add("replace")
        report.append(f"{path}: {n} `._replace(...)` -> `replace(...)`")
    new = _ensure_import(new, needs)
    new = _drop_namedtuple_import(new)
    for name in converted:
        for m in re.finditer(rf"\b{re.escape(name)}\b[^\n]*\[\s*\d+\s*\]", new):
            line = new.count("\n", 0, m.start()) + 1
            report.append(f"{path}:{line}: check by hand: a subscript near {name} (tuple-style use?)")
    return new


def _importers(root: Path, module: str, names: list[str], skip: Path) -> list[Path]:
    out = []
    for path in sorted((root / "advisor").rglob("*.py")):
        if path == skip:
            continue
        text = path.read_text(encoding="utf-8")
        if module in text and any(re.search(rf"\b{n}\b", text) for n in names) and "._replace(" in text:
            out.append(path)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description="Convert plain-data classes to @record.")
    parser.add_argument("root", nargs="?", type=Path, default=REPO)
    parser.add_argument("--dry-run", action="store_true", help="print what would change, write nothing")
    args = parser.parse_args()
    root: Path = args.root.resolve()
    report: list[str] = []
    changed: list[Path] = []
    for path in sorted((root / "advisor").rglob("*.py")):
        if "records" in path.relative_to(root / "advisor").parts[:1]:
            continue
        before = len(report)
        new = convert_file(path, report)
        if new is None:
            continue
        compile(new, str(path), "exec")  # never write a file that does not parse
        names = [r.split()[2] for r in report[before:] if " -> @record" in r]
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        for other in _importers(root, module, names, path):
            text = other.read_text(encoding="utf-8")
            out, n = _replace_calls(text, set(names))
            if n:
                out = _ensure_import(out, {"replace"})
                report.append(f"{other}: {n} `._replace(...)` on {', '.join(names)} -> `replace(...)`")
                if not args.dry_run:
                    other.write_text(out, encoding="utf-8")
                changed.append(other)
        if not args.dry_run:
            path.write_text(new, encoding="utf-8")
        changed.append(path)
    print("\n".join(report) or "nothing to convert")
    if changed:
        print(f"\n{'would change' if args.dry_run else 'changed'} {len(changed)} files; then run:")
        files = " ".join(str(p.relative_to(root)) for p in changed)
        print(f"  ruff check --fix --select I {files} && ruff format {files}")
    print("\n" + MANUAL)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Every public function and method of advisor/ (no leading underscore, at module level or in a public
class) annotates each parameter and its return, so the type checker sees the boundaries between layers."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

PACKAGE = REPO / "advisor"
Function = ast.FunctionDef | ast.AsyncFunctionDef


def _is_static(fn: Function) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)


def _unannotated(fn: Function, in_class: bool) -> list[str]:
    args = fn.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    params += [a for a in (args.vararg, args.kwarg) if a is not None]
    if in_class and not _is_static(fn) and params and params[0].arg in ("self", "cls"):
        params = params[1:]
    missing = [p.arg for p in params if p.annotation is None]
    return [*missing, "return"] if fn.returns is None else missing


def public_functions_missing_annotations(path: Path, root: Path = REPO) -> list[str]:
    """`file:line name [missing]` for each public function or method of a public class in path."""
    out: list[str] = []

    def walk(body: list[ast.stmt], prefix: str, in_class: bool) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                walk(node.body, f"{prefix}{node.name}.", True)
            elif isinstance(node, Function) and not node.name.startswith("_"):
                missing = _unannotated(node, in_class)
                if missing:
                    out.append(f"{path.relative_to(root)}:{node.lineno} {prefix}{node.name} {missing}")

    walk(ast.parse(path.read_text(encoding="utf-8")).body, "", False)
    return out


def test_every_public_function_in_advisor_is_annotated() -> None:
    missing = [m for p in sorted(PACKAGE.rglob("*.py")) for m in public_functions_missing_annotations(p)]
    assert not missing, "\n".join(missing)


def test_the_check_finds_a_missing_parameter_and_return_annotation(tmp_path: Path) -> None:
    probe = tmp_path / "module.py"
    probe.write_text(
        "def typed(a: int) -> int:\n    return a\n\n"
        "def untyped(a, *, b: int):\n    return a\n\n"
        "class Public:\n    def method(self, x) -> None: ...\n    def _private(self, y): ...\n"
        "    @staticmethod\n    def static(self) -> None: ...\n",
        encoding="utf-8",
    )
    found = public_functions_missing_annotations(probe, root=tmp_path)
    assert [f.split(" ", 1)[1] for f in found] == [
        "untyped ['a', 'return']",
        "Public.method ['x']",
        "Public.static ['self']",
    ]

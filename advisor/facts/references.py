"""The load-time check of a rule against the fact catalogue (advisor/facts/catalogue.py).

Every name an expression of the rule reads, and every dotted path it points `at`, `related`, `requires`
or fixes, must be a declared namespace and fact (or a local: `item` in a `for_each` rule, a `let` name,
a comprehension variable); a comparison must not set a string fact against a number (or another pair of
types that never compare equal); a call must name a helper. A refusal says what is wrong and, where a
declared name is close, which one was meant. The engine turns it into the rule file and line.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator
from typing import Any

from advisor.core.expr import Expression, dotted_path, references
from advisor.core.suggest import close_matches
from advisor.facts.catalogue import Fact, NamespaceDecl, by_name, dynamic_keys, namespaces

Problem = tuple[str, str | None, str]  # field of the rule file, the expression's text, what is wrong

_CATEGORY = {
    "int": "number",
    "float": "number",
    "number": "number",
    "bool": "number",  # Python compares booleans with numbers, and rules do (count == True is rare)
    "str": "string",
    "dict": "mapping",
}


def _category(type_: str) -> str | None:
    kinds = {("list" if t.startswith("list") else _CATEGORY.get(t)) for t in type_.split("|")}
    return kinds.pop() if len(kinds) == 1 else None


def _did_you_mean(name: str, choices: Collection[str]) -> str:
    close = close_matches(name, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


class _RuleChecker:
    def __init__(self, rule: Any, helpers: Collection[str]) -> None:
        self.rule = rule
        self.helpers = helpers
        self.scope: dict[str, NamespaceDecl] = namespaces(rule.spec.scope)
        self.locals: set[str] = set(rule.spec.let)
        self.item_keys: tuple[str, ...] | None = None  # None: the items are not a declared fact list
        if rule.spec.for_each:
            self.locals.add("item")
            self.item_keys = self._items_of(rule.spec.for_each.strip())

    def _items_of(self, source: str) -> tuple[str, ...] | None:
        """The declared item keys of a for_each: a fact list, a filter of one (`[p for p in FACT if ...]`),
        or a concatenation of such; None when the items are built some other way."""
        try:
            tree = ast.parse(source, mode="eval").body
        except SyntaxError:
            return None
        return self._items_of_node(tree)

    def _items_of_node(self, node: ast.AST) -> tuple[str, ...] | None:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self._items_of_node(node.left), self._items_of_node(node.right)
            return tuple(sorted({*left, *right})) if left is not None and right is not None else None
        if isinstance(node, ast.ListComp) and len(node.generators) == 1:
            gen = node.generators[0]
            if (
                isinstance(gen.target, ast.Name)
                and isinstance(node.elt, ast.Name)
                and node.elt.id == gen.target.id
            ):
                return self._items_of_node(gen.iter)
            return None
        path = dotted_path(node)
        fact = self.fact_of(path) if path is not None and len(path) == 2 else None
        return fact.items if fact is not None and fact.items else None

    # -- names

    def fact_of(self, path: tuple[str, ...]) -> Fact | None:
        decl = self.scope.get(path[0])
        return decl.fact(path[1]) if decl is not None and len(path) > 1 else None

    def name_problem(self, path: tuple[str, ...], known_locals: Collection[str]) -> str | None:
        head = path[0]
        if head in known_locals:
            keys = self.item_keys if head == "item" and len(path) > 1 else None
            if keys is not None and path[1] not in keys:
                return (
                    f"item.{path[1]}: the items of {self.rule.spec.for_each.strip()} have no key "
                    f"{path[1]!r}{_did_you_mean(path[1], keys)}"
                )
            return None
        decl = self.scope.get(head)
        if decl is None:
            if head in self.locals:
                return f"let name {head!r} cannot be read here (a let reads the lets above it, for_each none)"
            if head in by_name():
                return f"{head!r} is not read in a {self.rule.spec.scope}-scoped rule"
            choices = [*self.scope, *known_locals]
            hint = _did_you_mean(head, choices) or f" (namespaces: {', '.join(sorted(self.scope))})"
            return f"unknown name {head!r}{hint}"
        if len(path) < 2 or decl.open:
            return None
        key = path[1]
        if decl.keys_from:
            known = dynamic_keys(decl.name)
            if key in known:
                return None
            return f"{head}.{key}: no key {key!r} in the key data of {head}{_did_you_mean(key, known)}"
        if decl.fact(key) is None:
            names = [f.name for f in decl.facts]
            return f"unknown fact {head}.{key}{_did_you_mean(key, names)} (see `gpu-advise facts {head}`)"
        return None

    # -- comparisons

    def _side(self, node: ast.AST) -> tuple[str | None, str] | None:
        """(category, what it is) of a constant or a declared fact, else None."""
        if isinstance(node, ast.Constant):
            if node.value is None:
                return None
            kind = type(node.value).__name__
            return _CATEGORY.get(kind), f"the {'string' if kind == 'str' else 'number'} {node.value!r}"
        path = dotted_path(node)
        if path is None:
            return None
        fact = self.fact_of(path)
        if fact is None:
            return None
        category = _category(fact.type)
        return (category, f"{'.'.join(path[:2])} ({fact.type})") if category else None

    def comparison_problems(self, tree: ast.AST, bound: Collection[str]) -> Iterator[str]:
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare):
                continue
            left = node.left
            for op, right in zip(node.ops, node.comparators, strict=True):
                yield from self._compare(left, op, right, bound)
                left = right

    def _compare(self, left: ast.AST, op: ast.cmpop, right: ast.AST, bound: Collection[str]) -> Iterator[str]:
        if isinstance(op, ast.Is | ast.IsNot):
            return
        if any(p is not None and p[0] in bound for p in (dotted_path(left), dotted_path(right))):
            return
        a = self._side(left)
        if isinstance(op, ast.In | ast.NotIn):
            if a is None or not isinstance(right, ast.Tuple | ast.List):
                return
            for element in right.elts:
                b = self._side(element)
                if b is not None and b[0] != a[0]:
                    yield f"{a[1]} is compared with {b[1]}: they are never equal"
                    return
            return
        b = self._side(right)
        if a is not None and b is not None and a[0] != b[0]:
            yield f"{a[1]} is compared with {b[1]}: they are never equal" + (
                "" if isinstance(op, ast.Eq | ast.NotEq) else " and do not order"
            )


def _comprehension_names(tree: ast.AST) -> set[str]:
    return {
        n.id
        for node in ast.walk(tree)
        if isinstance(node, ast.comprehension)
        for n in ast.walk(node.target)
        if isinstance(n, ast.Name)
    }


def check_rule(rule: Any, helpers: Collection[str]) -> Iterator[Problem]:
    """Each problem of a compiled rule (advisor.engine.rule_engine.CompiledRule) against the catalogue."""
    checker = _RuleChecker(rule, helpers)
    spec = rule.spec
    let_names = list(spec.let)
    for part, expr in rule.expressions():
        yield from _expression_problems(checker, part, expr, let_names)
    dotted: list[tuple[str, str]] = [("requires", r) for r in spec.requires]
    dotted += [("at", alt.strip()) for alt in (spec.at or "").split(" or ") if alt.strip()]
    dotted += [("related", r) for r in spec.related]
    if spec.fix is not None:
        dotted += [("fix", t) for t in [*spec.fix.set, *spec.fix.delete]]
    for part, path in dotted:
        problem = checker.name_problem(tuple(path.split(".")), checker.locals)
        if problem:
            yield part, path, problem


def _expression_problems(
    checker: _RuleChecker, part: str, expr: Expression, let_names: list[str]
) -> Iterator[Problem]:
    # a let reads the let names above it; for_each none (the lets are bound per item); the others all
    if part == "for_each":
        visible: set[str] = set()
    else:
        visible = set(let_names[: let_names.index(part[4:])] if part.startswith("let.") else let_names)
    locals_ = visible | ({"item"} if checker.rule.spec.for_each and part != "for_each" else set())
    for ref in references(expr):
        if ref.bound:
            continue
        if ref.kind == "call":
            if ref.path[0] not in checker.helpers:  # parse() refuses it already; a cached rule may not
                hint = _did_you_mean(ref.path[0], checker.helpers)
                yield part, expr.source, f"{ref.path[0]}() is not a helper{hint}"
            continue
        problem = checker.name_problem(ref.path, locals_)
        if problem:
            yield part, expr.source, problem
    bound = _comprehension_names(expr.tree) | locals_
    for problem in checker.comparison_problems(expr.tree, bound):
        yield part, expr.source, problem

"""Rule expressions: a small whitelist evaluator over Python's `ast`, safe on rule files from a pull request.

A rule's `when`, `for_each`, message templates and fix values are Python-syntax expressions. What they
may do is listed here, not what they may not: literals, names (fact namespaces and the locals the engine
binds, such as `item`), attribute access on fact namespaces (through `Namespace.read`, never `getattr`)
and key access on plain mappings, subscripts and slices of plain lists, tuples, strings and mappings,
comparisons, boolean and arithmetic operators, conditional expressions, bounded comprehensions, and calls
of the helpers the engine names. Nothing else parses: no method calls, no lambdas, no f-strings, no
walrus, no starred arguments, no names or attributes starting with `_`.

Values that reach an expression are plain data (None, bool, int, float, str, lists, tuples and dicts of
those) or fact namespaces: `Evaluator.plain` converts facts on the way in (a Location becomes a mapping
of file, line, col and key; a path its text; a dataclass the mapping of its fields) and refuses anything
else. Work is bounded twice: at load (source length, node count, nesting depth) and while evaluating
(string, list and integer sizes, comprehension lengths, an operation budget, a characters-and-elements
allocation budget, a work budget charged by the deep size of what a comparison, hash, search or helper
touches, each charged before the step runs, and a time backstop read on every expensive step), so no
expression can exhaust memory or hang.

`references` lists the dotted names and helper calls of an expression with their positions, for a
static check against a fact catalogue. advisor/engine/evaluator.py evaluates checked expressions.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator

from advisor.core.records import record
from advisor.core.suggest import close_matches


@record(frozen=True, slots=True)
class Limits:
    source_chars: int = 10_000  # one expression's text
    nodes: int = 2_000  # AST nodes of one expression
    depth: int = 100  # AST nesting; the evaluator recurses once per level
    generators: int = 4  # `for` clauses of one comprehension
    string_chars: int = 100_000  # any string an expression produces
    items: int = 100_000  # any list, tuple or dict an expression produces; iterations of one comprehension
    int_bits: int = 65_536  # any integer an expression produces
    operations: int = 1_000_000  # evaluation steps per budget (one rule on one run or document)
    allocation: int = 10_000_000  # characters, elements and 64-bit words of integers produced per budget
    # elements and characters compared, hashed, searched, sorted or summed per budget (a value's deep size:
    # a list that repeats one long list 99,999 times is small to build and 10**10 steps to compare)
    work: int = 20_000_000
    seconds: float = 2.0  # wall-clock backstop per budget


LIMITS = Limits()


class ExprError(ValueError):
    """An expression refused at load; `line` and `col` (1-based) are within the expression's text."""

    def __init__(self, message: str, line: int = 1, col: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.col = col

    def __str__(self) -> str:
        return f"{self.message} (line {self.line}, column {self.col} of the expression)"


class EvalError(Exception):
    """An expression that failed while evaluating: a type error, a missing key, a size limit."""


class BudgetError(EvalError):
    """An evaluation that ran out of its operation, allocation or time budget."""


class Expression:
    """A checked expression. `parse` checks it at once; `deferred` on first use of `tree`, for text that
    passed `parse` before (the cached catalog: a check reads few of its messages, so most are never parsed).
    A `checked` one (the package's prebuilt catalog: `parse` checked that very text when the package was
    built, and its key is the rule files' content) is only parsed on first use, not checked again.
    """

    __slots__ = ("_checked", "_helpers", "_limits", "_tree", "source")

    def __init__(
        self,
        source: str,
        tree: ast.expr | None,
        helpers: Collection[str] = (),
        limits: Limits | None = None,
        checked: bool = False,
    ) -> None:
        self.source = source
        self._tree = tree
        self._helpers = helpers
        self._limits = limits or LIMITS
        self._checked = checked

    @property
    def tree(self) -> ast.expr:
        """The checked body of the `ast.Expression`; raises ExprError for a deferred one that is refused."""
        if self._tree is None:
            if self._checked:
                self._tree = ast.parse(self.source.strip(), mode="eval").body
            else:
                self._tree = parse(self.source, self._helpers, self._limits).tree
        return self._tree

    def __repr__(self) -> str:
        return f"Expression({self.source!r})"


@record(frozen=True, slots=True)
class Reference:
    """A dotted name (`batch.world_size`, `item.kind`) or a helper call (`join`) in an expression."""

    kind: str  # "name" or "call"
    path: tuple[str, ...]
    line: int
    col: int
    bound: bool = False  # the first name is a comprehension variable, not a fact namespace


# ---------------------------------------------------------------------------------------------------
# Load: parse and check


_ALLOWED_NODES: frozenset[type] = frozenset(
    {
        ast.Expression,
        ast.Constant,
        ast.Name,
        ast.Load,
        ast.Attribute,
        ast.Subscript,
        ast.Slice,
        ast.List,
        ast.Tuple,
        ast.Dict,
        ast.BinOp,
        ast.UnaryOp,
        ast.BoolOp,
        ast.Compare,
        ast.IfExp,
        ast.Call,
        ast.ListComp,
        ast.GeneratorExp,
        ast.DictComp,
        ast.comprehension,
        ast.Store,
        *(
            ast.Add,
            ast.Sub,
            ast.Mult,
            ast.Div,
            ast.FloorDiv,
            ast.Mod,
            ast.Pow,
            ast.BitAnd,
            ast.BitOr,
            ast.BitXor,
            ast.LShift,
            ast.RShift,
        ),
        ast.Not,
        ast.USub,
        ast.UAdd,
        ast.Invert,
        ast.And,
        ast.Or,
        *(ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn, ast.Is, ast.IsNot),
    }
)

# What a refused construct is called in the error message.
_REFUSED_NAMES: dict[type, str] = {
    ast.Lambda: "lambda",
    ast.NamedExpr: "assignment expression (:=)",
    ast.JoinedStr: "f-string",
    ast.FormattedValue: "f-string",
    ast.Starred: "starred expression",
    ast.Set: "set",
    ast.SetComp: "set comprehension",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.MatMult: "the @ operator",
}


def parse(source: str, helpers: Collection[str], limits: Limits = LIMITS) -> Expression:
    """Parse and check one expression; raises ExprError naming what is refused and where."""
    if not isinstance(source, str):
        raise ExprError(f"an expression must be text, not {type(source).__name__}")
    if len(source) > limits.source_chars:
        raise ExprError(f"expression is {len(source)} characters long; the limit is {limits.source_chars}")
    try:
        module = ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"expression does not parse: {exc.msg}", exc.lineno or 1, exc.offset or 1) from None
    except (RecursionError, MemoryError):  # too deeply nested for the parser
        raise ExprError(f"expression is too deeply nested (more than {limits.depth} levels)") from None
    except ValueError as exc:  # a NUL byte
        raise ExprError(f"expression does not parse: {exc}") from None
    check(module.body, helpers, limits)
    return Expression(source, module.body)


def deferred(
    source: str, helpers: Collection[str], limits: Limits = LIMITS, *, checked: bool = False
) -> Expression:
    """An expression parsed (and, unless `checked` already, checked) when first evaluated (an ExprError
    then is an EvalError)."""
    if not isinstance(source, str):
        raise ExprError(f"an expression must be text, not {type(source).__name__}")
    return Expression(source, None, helpers, limits, checked)


def _at(node: ast.AST) -> tuple[int, int]:
    return getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1


def check(tree: ast.AST, helpers: Collection[str], limits: Limits = LIMITS) -> None:
    """Refuse any node outside the whitelist, over the size limits, or reaching outside plain data.

    Iterative (an explicit stack), so a deep tree is refused rather than overflowing the interpreter's."""
    stack: list[tuple[ast.AST, int]] = [(tree, 1)]
    count = 0
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > limits.nodes:
            raise ExprError(f"expression has more than {limits.nodes} parts", *_at(tree))
        if depth > limits.depth:
            raise ExprError(f"expression is nested more than {limits.depth} levels deep", *_at(node))
        kind = type(node)
        if kind not in _ALLOWED_NODES:
            what = _REFUSED_NAMES.get(kind, kind.__name__)
            raise ExprError(f"{what} is not allowed in a rule expression", *_at(node))
        _check_node(node, helpers, limits)
        # ast.iter_child_nodes, inlined: its generators were a third of loading the rule catalog
        for name in node._fields:
            child = getattr(node, name, None)
            if isinstance(child, ast.AST):
                stack.append((child, depth + 1))
            elif isinstance(child, list):
                stack.extend((item, depth + 1) for item in child if isinstance(item, ast.AST))


def _check_node(node: ast.AST, helpers: Collection[str], limits: Limits) -> None:
    if isinstance(node, ast.Constant):
        value = node.value
        if not (value is None or isinstance(value, bool | int | float | str)):
            raise ExprError(f"a {type(value).__name__} literal is not allowed", *_at(node))
        if isinstance(value, str) and len(value) > limits.string_chars:
            raise ExprError("string literal is too long", *_at(node))
    elif isinstance(node, ast.Name):
        if node.id.startswith("_"):
            raise ExprError(f"name {node.id!r}: names starting with '_' are not allowed", *_at(node))
    elif isinstance(node, ast.Attribute):
        if node.attr.startswith("_"):
            raise ExprError(f"attribute {node.attr!r}: names starting with '_' are not allowed", *_at(node))
    elif isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):  # point at the method's name, not the start of the call
            at = (func.end_lineno or 1, (func.end_col_offset or len(func.attr)) - len(func.attr) + 1)
            raise ExprError(
                f".{func.attr}(): values have no methods; the helpers are {', '.join(sorted(helpers))}", *at
            )
        if not isinstance(func, ast.Name):
            raise ExprError(f"only helpers can be called: {', '.join(sorted(helpers))}", *_at(node))
        if func.id not in helpers:
            close = close_matches(func.id, list(helpers), n=1)
            hint = f"did you mean {close[0]}()? " if close else ""
            raise ExprError(
                f"{func.id}() is not a helper; {hint}the helpers are {', '.join(sorted(helpers))}",
                *_at(node),
            )
        if node.keywords:
            raise ExprError(f"{func.id}(): keyword arguments are not allowed", *_at(node))
    elif isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ExprError("** in a mapping literal is not allowed", *_at(node))
    elif isinstance(node, ast.ListComp | ast.GeneratorExp | ast.DictComp):
        if len(node.generators) > limits.generators:
            raise ExprError(f"a comprehension may have at most {limits.generators} for clauses", *_at(node))
    elif isinstance(node, ast.comprehension):
        if node.is_async:
            raise ExprError("async comprehensions are not allowed", *_at(node.target))
        for target in [node.target, *(node.target.elts if isinstance(node.target, ast.Tuple) else [])]:
            if target is node.target and isinstance(target, ast.Tuple):
                continue
            if not isinstance(target, ast.Name):
                raise ExprError("a comprehension binds plain names only", *_at(target))


def references(expr: Expression) -> Iterator[Reference]:
    """Every dotted name path and helper call of an expression, with its position, in source order."""
    found: list[Reference] = []
    _collect(expr.tree, frozenset(), found)
    yield from sorted(found, key=lambda r: (r.line, r.col))


def _collect(node: ast.AST, bound: frozenset[str], out: list[Reference]) -> None:
    stack: list[tuple[ast.AST, frozenset[str]]] = [(node, bound)]
    while stack:
        node, bound = stack.pop()
        if isinstance(node, ast.Attribute | ast.Name):
            path = dotted_path(node)
            if path is not None:
                out.append(Reference("name", path, *_at(node), bound=path[0] in bound))
                continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            out.append(Reference("call", (node.func.id,), *_at(node)))
            stack.extend((a, bound) for a in node.args)
            continue
        if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.DictComp):
            inner = bound
            for gen in node.generators:
                stack.append((gen.iter, inner))  # the iterable is read before its own names exist
                inner = inner | {n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name)}
                stack.extend((cond, inner) for cond in gen.ifs)
            parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            stack.extend((p, inner) for p in parts)
            continue
        stack.extend((child, bound) for child in ast.iter_child_nodes(node))


def dotted_path(node: ast.AST) -> tuple[str, ...] | None:
    """`a.b.c` as ('a', 'b', 'c'); None for anything but a name with attributes."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return tuple(reversed(parts))

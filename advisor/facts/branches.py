"""Whether a run reaches a line of its training script: the `if` conditions around the line, each decided
from the run's known flag values (written in a file or the launch, else the script's own dataclass or
argparse default), never by running the script.

A condition is decided when every operand it depends on is known: a constant, a flag (`args.x`, `x`),
`not`, `and`/`or` (decided by one side alone when that side settles it), a comparison (`==`, `!=`, `is`,
`<`, `<=`, `>`, `>=`, chained) and membership (`in` / `not in` a literal container, or Python's substring
test of one string in another: `"70B" in cfg.model_name`, simplescaling/s1 train/sft.py:37). Anything else
(a script variable, a call, a flag with no known value) leaves it undecided, and so does a flag the
launcher sets in every process at run time (a rank, the world size): its default is not its value there.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from advisor.core.document import Location
from advisor.core.provenance import Value
from advisor.facts.namespace_entries import truth, written
from advisor.sources.argparse_calls import dest_of, keyword, switch_default
from advisor.sources.python_source import tree_nodes

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan

# torchrun/accelerate/deepspeed give each process its own value (LOCAL_RANK, RANK, WORLD_SIZE, the
# deepspeed launcher's `--local_rank`): a default such as `local_rank: int = -1` is not the run's value
_RUNTIME_FLAGS = frozenset(
    {
        "local_rank",
        "rank",
        "global_rank",
        "node_rank",
        "world_rank",
        "world_size",
        "local_world_size",
        "process_index",
        "local_process_index",
        "num_processes",
        "n_gpu",
    }
)
_NO_VALUE = object()
_ORDER: dict[type, Callable[[Any, Any], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


@lru_cache(maxsize=8)
def indexed(tree: ast.Module) -> tuple[list[ast.AST], dict[ast.AST, ast.AST]]:
    """Every node of a script's tree (ast.walk keeps its own queue: no recursion) and each node's parent,
    built once per tree (python_tree keeps the tree of a text). Read only; never changed by a caller."""
    nodes = list(tree_nodes(tree))
    return nodes, {child: node for node in nodes for child in ast.iter_child_nodes(node)}


def called(node: ast.Call) -> str:
    """The called name: `f` of `f(...)` and of `x.f(...)`."""
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def decide(plan: RunPlan, test: ast.AST, tree: ast.Module | None = None) -> bool | None:
    """An `if` condition decided from the run's known flags; None when any part it depends on is not known.
    `tree`: the script, whose own argparse/dataclass defaults give a flag not written."""
    if isinstance(test, ast.Constant):
        return bool(test.value)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        v = decide(plan, test.operand, tree)
        return None if v is None else not v
    if isinstance(test, ast.BoolOp):
        vals = [decide(plan, v, tree) for v in test.values]
        stop = isinstance(test.op, ast.Or)  # `or` is decided by any True, `and` by any False
        if any(v is stop for v in vals):
            return stop
        return None if any(v is None for v in vals) else not stop
    if isinstance(test, ast.Compare):
        return compare(plan, test, tree)
    if _is_flag(test):
        return truth(flag_value(plan, test, tree))
    return None


def _is_flag(node: ast.AST) -> bool:
    """`args.x` (a parsed dataclass or namespace one attribute deep) or a bare name `x`."""
    if isinstance(node, ast.Name):
        return node.id not in {"None", "True", "False"}
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)


def flag_value(plan: RunPlan, node: ast.AST, tree: ast.Module | None) -> Value | None:
    """The run's value of the flag `args.x` / `x` names: written (a file, the launch), else the script's
    own default for it (read here: run_plan keeps only the defaults of keys the estimator reads). None for
    a flag the launcher sets per process (a rank, the world size)."""
    flag = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    if not flag or flag.lower() in _RUNTIME_FLAGS:
        return None
    v = written(plan.training, flag)
    if v is not None or tree is None:
        return v
    return script_default(plan, tree, flag)


def compare(plan: RunPlan, test: ast.Compare, tree: ast.Module | None) -> bool | None:
    """`flag == 4`, `flag != "full"`, `flag in ("lora", "qlora")`, `"70B" in flag`, `flag >= 8`,
    `0 < flag <= 4`: every operand a literal or a flag with a known value; None otherwise."""
    if ast.unparse(test).replace("'", '"') in {'__name__ == "__main__"', '"__main__" == __name__'}:
        return True  # the script is run, not imported
    operands = [test.left, *test.comparators]
    values = [_operand(plan, node, tree) for node in operands]
    if any(v is _NO_VALUE for v in values):
        return None
    for i, op in enumerate(test.ops):
        (left, right), (a, b) = operands[i : i + 2], values[i : i + 2]
        a, b = _coerce(a, b, left), _coerce(b, a, right)
        got = _apply(op, a, b)
        if got is None:
            return None
        if not got:
            return False
    return True


def _operand(plan: RunPlan, node: ast.AST, tree: ast.Module | None) -> Any:
    """A literal's value, a known flag's value, else _NO_VALUE."""
    if _is_flag(node):
        v = flag_value(plan, node, tree)
        return v.value if v is not None and v.known else _NO_VALUE
    if isinstance(node, ast.Attribute | ast.Name):  # model.config.model_type, torch.float16: not a flag
        return _NO_VALUE
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NO_VALUE


def _coerce(value: Any, other: Any, node: ast.AST) -> Any:
    """A flag's text as the literal it is compared with reads it (`--bits 4` against `4`, `--lora True`
    against `True`): HfArgumentParser and argparse's `type=` convert it before the script compares."""
    if isinstance(node, ast.Constant) or not isinstance(value, str):
        return value
    if isinstance(other, list | tuple | set | frozenset) and other:
        other = next(iter(other))  # `--bits 4` against `(4, 8)`
    if isinstance(other, bool):
        return {"true": True, "false": False}.get(value.strip().lower(), value)
    if isinstance(other, int | float):
        try:
            return type(other)(value)
        except (TypeError, ValueError):
            return value
    return value


def _apply(op: ast.cmpop, a: Any, b: Any) -> bool | None:
    if isinstance(op, ast.Is | ast.IsNot) and not any(v is None or isinstance(v, bool) for v in (a, b)):
        return None  # identity of other objects is not their value
    if isinstance(op, ast.Eq | ast.Is):
        return bool(a == b)
    if isinstance(op, ast.NotEq | ast.IsNot):
        return bool(a != b)
    if isinstance(op, ast.In | ast.NotIn):
        if isinstance(b, str):
            found = a in b if isinstance(a, str) else None  # `"70B" in name`: Python's substring test
        elif isinstance(b, list | tuple | set | frozenset | dict):
            try:
                found = a in b
            except TypeError:  # an unhashable flag value against a set
                return None
        else:
            return None
        return None if found is None else found == isinstance(op, ast.In)
    order = _ORDER.get(type(op))
    if order is None:
        return None
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (a, b))
    if not numbers and not all(isinstance(v, str) for v in (a, b)):
        return None
    return bool(order(a, b))


@lru_cache(maxsize=8)
def _declared_defaults(tree: ast.Module) -> dict[str, tuple[Any, ast.AST] | None]:
    """The default the script declares for each flag and where (None: declared with a default that is not a
    literal, or more than once with different ones), built once per tree: a walk of the tree for each `if`
    decided was quadratic in the script's size (6,000 `if` lines took a check 78 s)."""
    found: dict[str, list[tuple[Any, ast.AST]]] = {}
    for node in indexed(tree)[0]:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            got = node.value
            if isinstance(got, ast.Call) and called(got) == "field":
                got = keyword(got, "default")
            if got is not None:
                found.setdefault(node.target.id, []).append((got, got))
        elif isinstance(node, ast.Call) and called(node) == "add_argument":
            dest = dest_of(node)
            if dest is None:
                continue
            given = keyword(node, "default")
            value = given if given is not None else ast.Constant(switch_default(node))  # or argparse's None
            found.setdefault(dest, []).append((value, node))
    return {flag: _one_literal(declared) for flag, declared in found.items()}


def _one_literal(declared: list[tuple[Any, ast.AST]]) -> tuple[Any, ast.AST] | None:
    values = []
    for expr, where in declared:
        try:
            values.append((ast.literal_eval(expr), where))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
    if any(v != values[0][0] for v, _ in values):
        return None
    return values[0]


def script_default(plan: RunPlan, tree: ast.Module, flag: str) -> Value | None:
    """The script's own default of `flag`: a dataclass field (`full_finetune: bool = field(default=False)`,
    `x: int = 4`) or `parser.add_argument("--flag", default=..., action="store_true")`; None when the script
    declares it nowhere or more than once with different defaults."""
    path = getattr(plan.spec.script, "path", None)
    declared = _declared_defaults(tree).get(flag)
    if declared is None:
        return None
    value, where = declared
    loc = Location(path, getattr(where, "lineno", 1), getattr(where, "col_offset", 0) + 1) if path else None
    return Value(value, loc, "script", note=f"the script's own default of {flag}")


def conditions_at(tree: ast.Module, line: int, col: int | None = None) -> list[tuple[ast.expr, bool]]:
    """The conditions a position (1-based line, 1-based column or None for the whole line) sits under,
    outermost first, each with the value that reaches it: (test, True) in an `if`'s body or a conditional
    expression's value, (test, False) in its `else`/`elif`. A function's body counts as run (the script
    calls its own functions); loops and `try` are not conditions here."""
    here = (line, (col - 1) if col is not None else None)
    out: list[tuple[ast.expr, bool]] = []
    for node in _branches_by_line(tree).get(line, ()):
        if isinstance(node, ast.If):
            if _within(node.body, here):
                out.append((node.test, True))
            elif _within(node.orelse, here):
                out.append((node.test, False))
        elif isinstance(node, ast.IfExp) and here[1] is not None:
            if _within([node.body], here):
                out.append((node.test, True))
            elif _within([node.orelse], here):
                out.append((node.test, False))
    out.sort(key=lambda c: (c[0].lineno, c[0].col_offset))
    return out


@lru_cache(maxsize=8)
def _branches_by_line(tree: ast.Module) -> dict[int, list[ast.If | ast.IfExp]]:
    """Each line's enclosing `if` statements and conditional expressions, built once per tree: asking
    every node for every side effect was quadratic (10,001 `os.makedirs` lines took a check 64 s)."""
    out: dict[int, list[ast.If | ast.IfExp]] = {}
    for node in indexed(tree)[0]:
        if isinstance(node, (ast.If, ast.IfExp)):
            for ln in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                out.setdefault(ln, []).append(node)
    return out


def _within(nodes: list[Any], here: tuple[int, int | None]) -> bool:
    if not nodes:
        return False
    first, last = nodes[0], nodes[-1]
    start = (first.lineno, first.col_offset)
    end = (
        last.end_lineno or last.lineno,
        last.end_col_offset if last.end_col_offset is not None else 1 << 30,
    )
    line, col = here
    if col is None:
        return start[0] <= line <= end[0]
    return start <= (line, col) < end


def reached(plan: RunPlan, tree: ast.Module, line: int, col: int | None = None) -> tuple[bool | None, str]:
    """(whether the run reaches the position, the conditions in words): False when a condition around it
    is decided against it, None when one is not decided (then the words name it), True otherwise."""
    undecided = ""
    for test, wanted in conditions_at(tree, line, col):
        got = decide(plan, test, tree)
        shown = ast.unparse(test)[:80]
        if got is None:
            undecided = undecided or (
                f"`{shown}` is {wanted} (line {test.lineno}), which the run's known flags do not decide"
            )
        elif got != wanted:
            return False, f"`{shown}` (line {test.lineno}) is {got} in this run"
    return (None, undecided) if undecided else (True, "")

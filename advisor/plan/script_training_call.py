"""TrainingArguments a training script builds itself: `transformers.TrainingArguments(fp16=True,
per_device_train_batch_size=micro_batch_size, gradient_accumulation_steps=gradient_accumulation_steps, ...)`
(tloen/alpaca-lora @8bb8579 finetune.py:236-256, and the many scripts built from it). Its keywords are the
run's training settings: a literal is the value; a name is followed to what the script binds it to, a
parameter of the function `fire.Fire` runs (fire maps `--micro_batch_size=8` onto `train(micro_batch_size)`:
fire 0.5 core.py _ParseArgs / parser.py DefaultParseValue, which reads each value as a Python literal and
keeps a bare word as a string), or an argparse flag (`args.batch_size`); integer arithmetic of known
values is computed (`batch_size // micro_batch_size`). A keyword whose value cannot be followed is unknown,
with the reason, never the TrainingArguments default.

Read from the AST, never run. Only a script that builds exactly one such object and does not parse
TrainingArguments from the command line (HfArgumentParser) is read this way."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

from advisor.core.document import Document, Location
from advisor.core.provenance import Value
from advisor.core.records import record
from advisor.sources.argparse_calls import add_arguments, keyword, switch_default
from advisor.sources.python_source import parsed, tree_nodes

# transformers' TrainingArguments classes and TRL's trainer configs (their subclasses): the object a
# Trainer takes as `args`
_TRANSFORMERS = frozenset({"TrainingArguments", "Seq2SeqTrainingArguments"})
_TRL = frozenset(
    {
        "SFTConfig",
        "DPOConfig",
        "ORPOConfig",
        "KTOConfig",
        "CPOConfig",
        "RewardConfig",
        "GRPOConfig",
        "PPOConfig",
        "RLOOConfig",
        "BCOConfig",
        "OnlineDPOConfig",
        "GKDConfig",
        "PRMConfig",
    }
)
_HF_PARSERS = frozenset({"HfArgumentParser", "TrlParser", "H4ArgumentParser"})
_LIBRARIES = frozenset({"transformers", "trl"})  # the packages these classes are imported from
_MAX_DEPTH = 6  # names bound to names bound to a literal: followed this far
_MAX_INT = 10**12


@record(frozen=True, slots=True)
class CallKeyword:
    """One keyword of the call, as the run gives it: `value` when known, else `unknown` says why.
    `flag` names the command-line flag the value came from; (line, col) is the keyword in the script."""

    key: str
    text: str
    line: int
    col: int
    value: Any = None
    unknown: str | None = None
    flag: str | None = None


@record(frozen=True, slots=True)
class TrainingCall:
    consumer: str
    line: int
    col: int
    keywords: tuple[CallKeyword, ...]
    spread: bool  # `**kwargs` too: keys not written here may be set


def training_call(tree: ast.Module, flags: Mapping[str, Any]) -> TrainingCall | None:
    """The script's one TrainingArguments (or TRL config) call with its keywords resolved against the
    run's flags (`flags`: the command's script arguments, name -> the launch's Word: `text`, `raw`,
    `unknown`); None when the script builds none, builds several, or parses TrainingArguments from the
    command line."""
    site = _call_site(tree)
    if site is None:
        return None
    call, consumer = site
    scope = _Scope(tree, call, flags)
    keywords = tuple(scope.keyword(kw) for kw in call.keywords if kw.arg is not None)
    spread = any(kw.arg is None for kw in call.keywords) or bool(call.args)
    return TrainingCall(consumer, call.lineno, call.col_offset + 1, keywords, spread)


@lru_cache(maxsize=16)
def _call_site(tree: ast.Module) -> tuple[ast.Call, str] | None:
    """(the call, its class) of training_call, found once per parsed script (the tree is
    advisor.sources.python_source's cached one): the plan asks whether the script builds one, then reads
    it."""
    imported = _imported(tree)
    if imported & _HF_PARSERS:
        return None
    calls = [
        (node, name)
        for node in tree_nodes(tree)
        if isinstance(node, ast.Call) and (name := _consumer(node, imported))
    ]
    return calls[0] if len(calls) == 1 else None


def _imported(tree: ast.Module) -> set[str]:
    """Names the script imports from transformers or trl, and `transformers` / `trl` themselves."""
    out: set[str] = set()
    for node in tree_nodes(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in _LIBRARIES:
            out.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.asname or a.name for a in node.names if a.name in _LIBRARIES)
    return out


def _consumer(call: ast.Call, imported: set[str]) -> str | None:
    func = call.func
    if isinstance(func, ast.Name) and func.id in imported and func.id in _TRANSFORMERS | _TRL:
        return func.id
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id in imported
        and func.attr in (_TRANSFORMERS if func.value.id == "transformers" else _TRL)
    ):
        return func.attr
    return None


class _Unknown(Exception):
    pass


class _Scope:
    """The names a keyword's value reads, as the function around the call and the module bind them."""

    def __init__(self, tree: ast.Module, call: ast.Call, flags: Mapping[str, Any]) -> None:
        self.tree = tree
        self.flags = flags
        self.functions = _enclosing(tree, call)
        self.fire = _fire_targets(tree)
        self.argparse = _argparse_defaults(tree)
        self.flag_used: str | None = None

    def keyword(self, kw: ast.keyword) -> CallKeyword:
        text = ast.unparse(kw.value)[:200]
        self.flag_used = None
        try:
            value = self.value(kw.value, len(self.functions) - 1, 0)
        except _Unknown as exc:
            return CallKeyword(kw.arg or "", text, kw.value.lineno, kw.value.col_offset + 1, unknown=str(exc))
        line, col = kw.value.lineno, kw.value.col_offset + 1
        return CallKeyword(kw.arg or "", text, line, col, value=value, flag=self.flag_used)

    def value(self, node: ast.expr, level: int, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise _Unknown(f"{ast.unparse(node)[:80]} is not followed this deep")
        if isinstance(node, ast.Constant) and type(node.value) in (int, float, str, bool):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -_number(self.value(node.operand, level, depth + 1), node)
        if isinstance(node, ast.BinOp):
            return _arith(
                node, self.value(node.left, level, depth + 1), self.value(node.right, level, depth + 1)
            )
        if isinstance(node, ast.Name):
            return self.name(node.id, level, depth)
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.attr in self.argparse
        ):
            return self.flag(node.attr, self.argparse[node.attr], f"the default of --{node.attr}")
        raise _Unknown(f"{ast.unparse(node)[:80]} is computed at run time")

    def name(self, name: str, level: int, depth: int) -> Any:
        for i in range(level, -1, -1):
            func = self.functions[i]
            bound = list(_stores(func.body, name))
            if bound:
                return self.bound(name, bound, i, depth)
            params = _params(func)
            if name in params:
                if func.name not in self.fire or i != 0:
                    raise _Unknown(f"{name} is a parameter of {func.name}()")
                return self.flag(name, params[name], f"the default of {func.name}({name}=...)")
        bound = list(_stores(self.tree.body, name))
        if bound:
            return self.bound(name, bound, -1, depth)
        raise _Unknown(f"{name} is not bound in the script")

    def bound(self, name: str, bound: list[ast.AST], level: int, depth: int) -> Any:
        if len(bound) != 1 or not isinstance(bound[0], ast.Assign):
            raise _Unknown(f"{name} is assigned more than once")
        return self.value(bound[0].value, level, depth + 1)

    def flag(self, name: str, default: ast.expr | None, what: str) -> Any:
        if name in self.flags:
            self.flag_used = name
            word = self.flags[name]
            if word.text is None:
                raise _Unknown(f"--{name} is not known statically ({word.unknown or word.raw})")
            return True if str(word.raw).startswith("-") else _fire_value(word.text)
        if default is None:
            raise _Unknown(f"--{name} is not given and has no default")
        if not (isinstance(default, ast.Constant) and type(default.value) in (int, float, str, bool)):
            raise _Unknown(f"{what} is computed")
        return default.value


def _enclosing(tree: ast.Module, target: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The functions around `target`, outermost first."""

    def walk(node: ast.AST, path: list[Any]) -> list[Any] | None:
        for child in ast.iter_child_nodes(node):
            if child is target:
                return path
            inner = [*path, child] if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else path
            found = walk(child, inner)
            if found is not None:
                return found
        return None

    return walk(tree, []) or []


def _stores(body: list[ast.stmt], name: str) -> Iterator[ast.AST]:
    """The statements of `body` (not of functions or classes inside it) that bind `name`."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        if any(
            isinstance(t, ast.Name) and t.id == name for target in _targets(node) for t in ast.walk(target)
        ) or (
            isinstance(node, ast.Import | ast.ImportFrom)
            and any((a.asname or a.name) == name for a in node.names)
        ):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _targets(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For | ast.AsyncFor | ast.NamedExpr):
        return [node.target]
    if isinstance(node, ast.With | ast.AsyncWith):
        return [i.optional_vars for i in node.items if i.optional_vars is not None]
    return []


def _params(func: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, ast.expr | None]:
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    out = {p.arg: d for p, d in zip(positional, defaults, strict=True)}
    out.update({p.arg: d for p, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)})
    return out


def _fire_targets(tree: ast.Module) -> set[str]:
    """The functions the script hands to fire.Fire (`fire.Fire(train)`, `Fire(main)`)."""
    out = set()
    for node in tree_nodes(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name):
            func = node.func
            if (isinstance(func, ast.Attribute) and func.attr == "Fire") or (
                isinstance(func, ast.Name) and func.id == "Fire"
            ):
                out.add(node.args[0].id)
    return out


def _argparse_defaults(tree: ast.Module) -> dict[str, ast.expr | None]:
    """dest -> the default of each `add_argument(...)` (a store_true switch's False as a constant)."""
    out: dict[str, ast.expr | None] = {}
    for dest, call in add_arguments(tree).items():
        switch = switch_default(call)
        out[dest] = ast.Constant(switch) if switch is not None else keyword(call, "default")
    return out


def _fire_value(text: str) -> Any:
    """A flag's value as fire reads it: a Python literal, else the text itself (a bare switch is True)."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return text
    return value if type(value) in (int, float, str, bool) else text


def _number(value: Any, node: ast.AST) -> int | float:
    if type(value) not in (int, float):
        raise _Unknown(f"{ast.unparse(node)[:80]} is not a number")
    return value


def _arith(node: ast.BinOp, left: Any, right: Any) -> int | float:
    a, b = _number(left, node.left), _number(right, node.right)
    op = node.op
    if isinstance(op, ast.Add):
        out = a + b
    elif isinstance(op, ast.Sub):
        out = a - b
    elif isinstance(op, ast.Mult):
        out = a * b
    elif isinstance(op, ast.FloorDiv | ast.Div) and b != 0:
        out = a // b if isinstance(op, ast.FloorDiv) else a / b
    else:
        raise _Unknown(f"{ast.unparse(node)[:80]} is not computed statically")
    if abs(out) > _MAX_INT:
        raise _Unknown(f"{ast.unparse(node)[:80]} is out of range")
    return out


def script_training_call(spec: Any) -> TrainingCall | None:
    """The TrainingArguments the run's script builds itself, resolved against the launch's flags; None when
    it builds none or parses them from the command line."""
    tree = _script_tree(spec)
    return training_call(tree, spec.command.script_args) if tree is not None else None


def builds_training_arguments(spec: Any) -> bool:
    """Whether the run's script builds its TrainingArguments itself (its keywords are not resolved here)."""
    tree = _script_tree(spec)
    return tree is not None and _call_site(tree) is not None


def _script_tree(spec: Any) -> ast.Module | None:
    script, command = spec.script, spec.command
    text = script.text if script is not None else None
    if command is None or not isinstance(text, str):
        return None
    return parsed(text)  # None as well for a file too large to analyse (python_source.MAX_SOURCE_CHARS)


def call_value(kw: CallKeyword, call: TrainingCall, script: Document, command: Any, root: Document) -> Value:
    """One keyword of the script's TrainingArguments call as the run's value: at the launch's flag when a
    flag gives it, else at the keyword in the script."""
    where = f"{script.path.name}:{kw.line} {call.consumer}({kw.key}={kw.text})"
    if kw.flag is not None:
        word = command.script_args[kw.flag]
        loc = Location(root.path, word.span.line, word.span.col)
        return Value(kw.value, loc, "launch", note=f"--{kw.flag} into {where}")
    loc = Location(script.path, kw.line, kw.col)
    if kw.unknown is not None:
        return Value(None, loc, "script", unknown=f"{where}: {kw.unknown}")
    return Value(kw.value, loc, "script", note=where)

"""A DeepSpeed config the training script builds in Python (issue 20 item 12), read from its AST (never run).

The config reaches DeepSpeed as a dict: `deepspeed.initialize(config=ds_config)` (or `config_params=`;
deepspeed 0.19.8 __init__.py initialize(), which takes a path or a dict), or `TrainingArguments(deepspeed=
ds_config)` (transformers 5.24 training_args.py: `deepspeed` is a path or a dict, handed to
HfTrainerDeepSpeedConfig). The upstream form is DeepSpeed-Chat (microsoft/DeepSpeedExamples
applications/DeepSpeed-Chat): `ds_config = get_train_ds_config(offload=args.offload,
stage=args.zero_stage)` from a project module (training/utils/ds_utils.py, a dict literal returned with
module constants GLOBAL_BATCH_SIZE / MICRO_BATCH_SIZE and the parameters in it), then
`ds_config['train_micro_batch_size_per_gpu'] = args.per_device_train_batch_size` before
`deepspeed.initialize(..., config=ds_config)`.

The dict is read when it is literal enough: constants, names bound once (a module constant, a local, a
parameter bound at the call), the script's own flags (`args.zero_stage`: their values come from the plan,
``flag``), conditional expressions on those, simple arithmetic. A value that is not is kept as not read
(its key stays, its value unknown); a key that is computed, or a dict changed by code not read
(`.update`, `del`, a key set under a condition), leaves the whole config not read, with why: a missing key
would otherwise read as DeepSpeed's default.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from pathlib import Path
from typing import Any

from advisor.core.records import record

_MAX_DEPTH = 6
_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
}
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {ast.Eq: operator.eq, ast.NotEq: operator.ne}
_INITIALIZE = frozenset({"deepspeed.initialize"})
_CONFIG_KEYWORDS = ("config", "config_params")
_TRAINING_PACKAGES = ("transformers", "trl")
_TRAINING_KEYWORD = "deepspeed"  # TrainingArguments(deepspeed=<path or dict>)
_FILE_LOADERS = frozenset(
    {"json.load", "json.loads", "yaml.safe_load", "yaml.load", "yaml.full_load", "omegaconf.OmegaConf.load"}
)


@record(frozen=True, slots=True)
class Leaf:
    """One value of the config: the value, where it is written, and why it is not read (None: read)."""

    value: Any
    file: Path | None  # None: the script itself
    line: int
    col: int
    unread: str | None = None
    flag: str | None = None  # the script's flag it comes from
    # what an unread value is: "dict" (a dict the code builds, not read), "file" (loaded from a file in
    # code), "value" (anything else: a parameter, a flag, an expression; most often a path)
    kind: str = "value"


@record(frozen=True, slots=True)
class Mapping:
    """A dict of the config: key -> (Leaf | Mapping, the key's line, col), in the written order."""

    items: dict[str, tuple[Any, int, int]]
    file: Path | None
    line: int
    col: int


@record(frozen=True, slots=True)
class CodeDeepSpeed:
    """Where the script hands DeepSpeed a config built in code, and what of it is read."""

    call: str  # "deepspeed.initialize(config=)" or "TrainingArguments(deepspeed=)"
    line: int
    col: int
    config: Mapping | None  # None: not read
    why: str | None  # why it is not read
    built_at: tuple[Path | None, int, int] | None  # the dict literal (or the helper that returns it)


class _NotRead(Exception):
    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


class _Module:
    """One module's tree as the evaluator needs it: resolve names, find functions, module constants."""

    def __init__(
        self, tree: ast.Module, path: Path | None, resolve: Callable[[ast.AST], str | None], imports: Any
    ) -> None:
        self.tree, self.path, self.resolve, self.imports = tree, path, resolve, imports
        self.functions = {
            n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        self.constants = _bound_once(tree.body)


def _bound_once(body: list[ast.stmt]) -> dict[str, ast.AST]:
    """Names assigned exactly once among these statements and those nested in them (not in functions)."""
    counts: dict[str, list[ast.AST]] = {}

    def visit(stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                counts.setdefault(stmt.name, []).append(stmt)
                continue
            for node in ast.walk(stmt):
                if isinstance(node, ast.Assign):
                    for t in node.targets:
                        for name in _bound_names(t):
                            counts.setdefault(name.id, []).append(node.value if name is t else node)
                elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For | ast.comprehension):
                    if isinstance(node.target, ast.Name):  # not a single binding
                        counts.setdefault(node.target.id, []).extend([node, node])
                elif isinstance(node, ast.withitem) and isinstance(node.optional_vars, ast.Name):
                    counts.setdefault(node.optional_vars.id, []).extend([node, node])

    visit(body)
    return {name: nodes[0] for name, nodes in counts.items() if len(nodes) == 1}


def _bound_names(target: ast.AST) -> list[ast.Name]:
    """The names an assignment target binds (`a`, `a, b`, `*a`), not those of `a[k] = v` or `a.x = v`."""
    if isinstance(target, ast.Name):
        return [target]
    if isinstance(target, ast.Tuple | ast.List):
        return [n for e in target.elts for n in _bound_names(e)]
    if isinstance(target, ast.Starred):
        return _bound_names(target.value)
    return []


class _Evaluator:
    def __init__(self, modules: Any, flag: Callable[[str], tuple[bool, Any]]) -> None:
        self.modules = modules  # advisor.sources.project_imports.ProjectModules, or None
        self.flag = flag

    def value(self, node: ast.AST, env: dict[str, Any], module: _Module, depth: int = 0) -> Any:
        if depth > 40:
            raise _NotRead("the config is nested too deeply to read")
        line, col = getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1
        here = module.path
        if isinstance(node, ast.Constant):
            return Leaf(node.value, here, line, col)
        if isinstance(node, ast.Dict):
            items: dict[str, tuple[Any, int, int]] = {}
            for k, v in zip(node.keys, node.values, strict=True):
                if k is None:
                    raise _NotRead(f"`**` merges another mapping into it at line {line}")
                key = self.value(k, env, module, depth + 1)
                if not isinstance(key, Leaf) or key.unread is not None or not isinstance(key.value, str):
                    raise _NotRead(f"a key is computed at {_where(module, k)}")
                items[key.value] = (self.value(v, env, module, depth + 1), k.lineno, k.col_offset + 1)
            return Mapping(items, here, line, col)
        if isinstance(node, ast.UnaryOp):
            inner = self.value(node.operand, env, module, depth + 1)
            if isinstance(inner, Leaf) and inner.unread is None:
                if isinstance(node.op, ast.USub) and isinstance(inner.value, int | float):
                    return Leaf(-inner.value, here, line, col)
                if isinstance(node.op, ast.Not):
                    return Leaf(not inner.value, here, line, col)
            return self._unread(node, module, "an expression")
        if isinstance(node, ast.List | ast.Tuple):
            elts = [self.value(e, env, module, depth + 1) for e in node.elts]
            if all(isinstance(e, Leaf) and e.unread is None for e in elts):
                return Leaf([e.value for e in elts], here, line, col)
            return self._unread(node, module, "a list")
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            bound = module.constants.get(node.id)
            if bound is not None and not isinstance(bound, ast.stmt):
                return self.value(bound, {}, module, depth + 1)
            return self._unread(node, module, f"`{node.id}`")
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            base = node.value.id
            if _names_flags(base) and base not in module.imports and not isinstance(env.get(base), Mapping):
                known, value = self.flag(node.attr)
                if known:
                    return Leaf(value, here, line, col, flag=node.attr)
                return Leaf(
                    None, here, line, col, unread=f"the flag --{node.attr} is not known", flag=node.attr
                )
            return self._unread(node, module, f"`{ast.unparse(node)}`")
        if isinstance(node, ast.IfExp):
            test = self.value(node.test, env, module, depth + 1)
            if isinstance(test, Leaf) and test.unread is None:
                return self.value(node.body if test.value else node.orelse, env, module, depth + 1)
            return self._unread(node, module, "a condition")
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            a = self.value(node.left, env, module, depth + 1)
            b = self.value(node.right, env, module, depth + 1)
            if _numbers(a, b):
                try:
                    return Leaf(_BINOPS[type(node.op)](a.value, b.value), here, line, col)
                except (ArithmeticError, TypeError):
                    pass
            return self._unread(node, module, "an expression")
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
            a = self.value(node.left, env, module, depth + 1)
            b = self.value(node.comparators[0], env, module, depth + 1)
            if isinstance(a, Leaf) and isinstance(b, Leaf) and a.unread is None and b.unread is None:
                return Leaf(_COMPARE[type(node.ops[0])](a.value, b.value), here, line, col)
            return self._unread(node, module, "a comparison")
        if isinstance(node, ast.Call):
            return self.call(node, env, module, depth + 1)
        return self._unread(node, module, "an expression")

    @staticmethod
    def _unread(node: ast.AST, module: _Module, what: str) -> Leaf:
        line, col = getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1
        return Leaf(None, module.path, line, col, unread=f"{what} computed in code ({_where(module, node)})")

    def call(self, node: ast.Call, env: dict[str, Any], module: _Module, depth: int) -> Any:
        loader = module.resolve(node.func)
        if loader in _FILE_LOADERS:
            where = _where(module, node)
            return Leaf(
                None,
                module.path,
                node.lineno,
                node.col_offset + 1,
                unread=f"loaded from a file in code ({loader} at {where}), whose path is not followed",
                kind="file",
            )
        found = self._function(node.func, module)
        if found is None:
            return self._unread(node, module, f"`{ast.unparse(node.func)}(...)`")
        func, callee = found
        returns = [n.value for n in ast.walk(func) if isinstance(n, ast.Return) and n.value is not None]
        if not any(_builds_dict(r, func) for r in returns):
            return self._unread(node, module, f"`{ast.unparse(node.func)}(...)`")  # not a config builder
        try:
            return self._returned(node, func, callee, returns, env, module, depth)
        except _NotRead as exc:  # what the helper returns is not read; the caller decides if it matters
            return Leaf(None, module.path, node.lineno, node.col_offset + 1, unread=exc.why, kind="dict")

    def _returned(
        self,
        node: ast.Call,
        func: ast.FunctionDef | ast.AsyncFunctionDef,
        callee: _Module,
        returns: list[ast.expr],
        env: dict[str, Any],
        module: _Module,
        depth: int,
    ) -> Any:
        if depth > _MAX_DEPTH * 8:
            raise _NotRead("the helpers call each other too deeply to read")
        if len(returns) != 1:
            raise _NotRead(f"{func.name} returns in {len(returns)} places ({_where(callee, func)})")
        params = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
        bound: dict[str, Any] = {}
        for name, arg in zip(params, node.args, strict=False):
            if isinstance(arg, ast.Starred):
                raise _NotRead(f"`*` arguments to {func.name} at {_where(module, node)}")
            bound[name] = self.value(arg, env, module, depth + 1)
        for kw in node.keywords:
            if kw.arg is None:
                raise _NotRead(f"`**` arguments to {func.name} at {_where(module, node)}")
            bound[kw.arg] = self.value(kw.value, env, module, depth + 1)
        defaults = func.args.defaults
        for name, default in zip(params[len(params) - len(defaults) :], defaults, strict=True):
            bound.setdefault(name, self.value(default, {}, callee, depth + 1))
        for a, kw_default in zip(func.args.kwonlyargs, func.args.kw_defaults, strict=True):
            if kw_default is not None:
                bound.setdefault(a.arg, self.value(kw_default, {}, callee, depth + 1))
        return self.body(func.body, returns[0], bound, callee, depth + 1)

    def _function(self, func: ast.AST, module: _Module) -> tuple[Any, _Module] | None:
        if isinstance(func, ast.Name) and func.id in module.functions:
            return module.functions[func.id], module
        if self.modules is None:
            return None
        qualified = module.resolve(func)
        if not qualified or "." not in qualified:
            return None
        found = self.modules.definition(qualified, "function")
        if found is None:
            return None
        node, project = found
        return node, _Module(project.tree, project.path, project.resolve, project.imports)

    def body(
        self, stmts: list[ast.stmt], result: ast.AST, env: dict[str, Any], module: _Module, depth: int
    ) -> Any:
        """``result`` evaluated in a function body: its names bound once there, and the keys its top level
        sets on the dict it returns (`ds_config["k"] = v`); a change under a condition or through a method
        leaves it not read."""
        local = dict(env)
        once = _bound_once(stmts)
        for name, bound in once.items():
            if name not in local and not isinstance(bound, ast.stmt):
                local[name] = _Lazy(bound)
        resolved = _Resolved(self, local, module, depth)
        value = resolved.get(result)
        target = result.id if isinstance(result, ast.Name) else None
        if target is None or not isinstance(value, Mapping):
            return value
        return self.apply_sets(stmts, target, value, resolved, module)

    def apply_sets(
        self, stmts: list[ast.stmt], target: str, value: Mapping, resolved: _Resolved, module: _Module
    ) -> Mapping:
        items = dict(value.items)
        for stmt in stmts:
            for node in ast.walk(stmt):
                changed = _changes(node, target)
                if changed is None:
                    continue
                if changed is not node or not isinstance(stmt, ast.Assign) or node is not stmt:
                    raise _NotRead(
                        f"the script changes `{target}` at {_where(module, changed)} in a way not read"
                    )
                sub = node.targets[0]
                assert isinstance(sub, ast.Subscript)
                key = resolved.get(sub.slice)
                if not isinstance(key, Leaf) or key.unread is not None or not isinstance(key.value, str):
                    raise _NotRead(f"a key is computed at {_where(module, sub)}")
                items[key.value] = (resolved.get(node.value), sub.lineno, sub.col_offset + 1)
        return Mapping(items, value.file, value.line, value.col)


@record(frozen=True, slots=True)
class _Lazy:
    node: ast.AST


class _Resolved:
    """A scope's names, each evaluated on first use."""

    def __init__(self, ev: _Evaluator, env: dict[str, Any], module: _Module, depth: int) -> None:
        self.ev, self.env, self.module, self.depth = ev, env, module, depth
        self.busy: set[str] = set()

    def get(self, node: ast.AST) -> Any:
        for name, bound in list(self.env.items()):
            if isinstance(bound, _Lazy) and _uses(node, name):
                if name in self.busy:
                    raise _NotRead(f"`{name}` is defined in terms of itself")
                self.busy.add(name)
                self.env[name] = self.get(bound.node)
                self.busy.discard(name)
        return self.ev.value(node, self.env, self.module, self.depth)


# The names scripts give what their parser returns (`args = parser.parse_args()`, HfArgumentParser's
# `training_args`, `script_args`, ...): an attribute of one is a flag of the run.
_FLAG_HOLDERS = frozenset({"opt", "opts", "hparams", "flags", "FLAGS", "cfg_args"})


def _names_flags(name: str) -> bool:
    return name.endswith("args") or name in _FLAG_HOLDERS


def _builds_dict(result: ast.AST, func: ast.AST) -> bool:
    """Whether a function returns a dict it writes: `return {...}`, or a name bound to one in it."""
    if isinstance(result, ast.Dict):
        return True
    if not isinstance(result, ast.Name):
        return False
    return any(
        isinstance(n, ast.Assign)
        and isinstance(n.value, ast.Dict)
        and any(isinstance(t, ast.Name) and t.id == result.id for t in n.targets)
        for n in ast.walk(func)
    )


def _uses(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _changes(node: ast.AST, target: str) -> ast.AST | None:
    """The node when it changes the dict bound to ``target`` (a key set, deleted, updated), else None."""
    if isinstance(node, ast.Assign):
        for t in node.targets:
            if isinstance(t, ast.Subscript) and _is_name(t.value, target):
                return node if len(node.targets) == 1 else t
            if isinstance(t, ast.Subscript) and _root_is(t.value, target):
                return t  # ds_config["zero_optimization"]["stage"] = ...: a nested change
    if isinstance(node, ast.AugAssign | ast.AnnAssign) and isinstance(node.target, ast.Subscript):
        return node if _root_is(node.target, target) else None
    if isinstance(node, ast.Delete) and any(_root_is(t, target) for t in node.targets):
        return node
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("update", "pop", "setdefault", "clear", "popitem")
        and _root_is(node.func.value, target)
    ):
        return node
    return None


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _root_is(node: ast.AST, name: str) -> bool:
    while isinstance(node, ast.Subscript | ast.Attribute):
        node = node.value
    return _is_name(node, name)


def _numbers(a: Any, b: Any) -> bool:
    return all(
        isinstance(x, Leaf)
        and x.unread is None
        and isinstance(x.value, int | float)
        and not isinstance(x.value, bool)
        for x in (a, b)
    )


def _where(module: _Module, node: ast.AST) -> str:
    name = module.path.name if module.path is not None else "the script"
    return f"{name}:{getattr(node, 'lineno', 1)}"


# --------------------------------------------------------------------------------------------------
# the sites
# --------------------------------------------------------------------------------------------------


def code_deepspeed_configs(
    tree: ast.Module,
    resolve: Callable[[ast.AST], str | None],
    imports: Any,
    modules: Any = None,
    flag: Callable[[str], tuple[bool, Any]] | None = None,
) -> list[CodeDeepSpeed]:
    """Every place the script hands DeepSpeed a config that is not a path, and what of it is read.
    ``resolve`` gives a node's qualified name through the script's imports; ``modules`` finds project
    functions (advisor.sources.project_imports.ProjectModules); ``flag(name)`` gives (known, value) of the
    script's flag ``name`` in this run."""
    module = _Module(tree, None, resolve, imports)
    ev = _Evaluator(modules, flag or (lambda _name: (False, None)))
    scopes: list[tuple[list[ast.stmt], ast.AST]] = [(tree.body, tree)]
    scopes += [(n.body, n) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    out: list[CodeDeepSpeed] = []
    for body, owner in scopes:
        for node in _own_nodes(body):
            if not isinstance(node, ast.Call):
                continue
            site = _site(node, resolve)
            if site is None:
                continue
            call, arg = site
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str | type(None)):
                continue  # a path (a file the run names) or nothing
            try:
                value = ev.body(body, arg, _params_unknown(owner), module, 0)
            except (_NotRead, RecursionError) as exc:
                why = exc.why if isinstance(exc, _NotRead) else "the config is nested too deeply to read"
                out.append(CodeDeepSpeed(call, node.lineno, node.col_offset + 1, None, why, None))
                continue
            if isinstance(value, Mapping):
                built = (value.file, value.line, value.col)
                out.append(CodeDeepSpeed(call, node.lineno, node.col_offset + 1, value, None, built))
            elif isinstance(value, Leaf) and isinstance(value.value, str) and value.unread is None:
                continue  # a path after all (a constant, a flag's value)
            elif isinstance(value, Leaf) and value.unread is not None and value.kind in ("dict", "file"):
                out.append(CodeDeepSpeed(call, node.lineno, node.col_offset + 1, None, value.unread, None))
            # else: a parameter, a flag, an expression: most often a path (--deepspeed ds.json), the
            # run's file, which the launch names
    return out


def _params_unknown(owner: ast.AST) -> dict[str, Any]:
    """A function's parameters, when its config is read where it is built: not known."""
    if not isinstance(owner, ast.FunctionDef | ast.AsyncFunctionDef):
        return {}
    args = owner.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    return {
        n: Leaf(None, None, owner.lineno, owner.col_offset + 1, unread=f"the parameter `{n}` of {owner.name}")
        for n in names
    }


def _own_nodes(body: list[ast.stmt]) -> list[ast.AST]:
    """The nodes of these statements, not those of functions defined in them."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return out


def _site(call: ast.Call, resolve: Callable[[ast.AST], str | None]) -> tuple[str, ast.AST] | None:
    """(what, the config argument) of a call that hands DeepSpeed its config."""
    q = resolve(call.func) or ""
    keywords = {k.arg: k.value for k in call.keywords if k.arg is not None}
    if q in _INITIALIZE:
        for name in _CONFIG_KEYWORDS:
            if name in keywords:
                return f"deepspeed.initialize({name}=)", keywords[name]
        return None
    head, _, name = q.partition(".")
    cls = q.rsplit(".", 1)[-1]
    wants = cls.endswith("TrainingArguments") or cls.endswith("Config")
    config = keywords.get(_TRAINING_KEYWORD)
    if head in _TRAINING_PACKAGES and name and wants and config is not None:
        return f"{cls}(deepspeed=)", config
    return None

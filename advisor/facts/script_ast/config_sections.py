"""Configs a training script loads itself, in its own layout (issue 20 item 7): the YAML/JSON load, and
where each section of what it loads goes, followed in the script's AST (never run).

THUDM/ChatGLM3 finetune_demo/finetune_hf.py (@732294f) is the upstream form: `_get_yaml_parser()`
returns `ruamel.yaml.YAML(typ='safe', pure=True)` (line 122), `FinetuningConfig.from_file` loads the file
named on the command line and hands it on as `cls.from_dict(**kwargs)` (lines 205-208), which builds
`Seq2SeqTrainingArguments(**training_args)` from `kwargs.get('training_args')`, `DataConfig(**data_config)`
and `get_peft_config(peft_config)`, and ends in `cls(**kwargs)` (lines 182-202).

Each consumer takes the section's keys as keyword arguments: a dataclass's `__init__` raises TypeError
on one it does not declare, so the section is judged against that class (a library class at the
project's pinned release, the script's own dataclass by its fields). The loader says how the file's
scalars are typed: PyYAML is YAML 1.1; ruamel.yaml is YAML 1.2 (ruamel.yaml 0.18.6 compat.py:28
_DEFAULT_YAML_VERSION = (1, 2); resolver.py:25-44, 1.2 booleans are only true/false and `5e-5` is a
float); OmegaConf.load is PyYAML's SafeLoader plus a float resolver (omegaconf 2.3.0 _utils.py:136-166),
so `5e-5` is a float there while `yes` stays a boolean.

The analysis is flow-insensitive and bounded: names bound in a scope (a function's or the module's),
calls of the module's own functions and methods (arguments bound to parameters, returns followed),
subscripts, `.get`/`.pop` and (OmegaConf) attribute access."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from advisor.core.records import record
from advisor.sources.python_source import parsed

# PyYAML's loading functions (pyyaml 6.0 yaml/__init__.py load, full_load, safe_load, unsafe_load).
_PYYAML_LOADS = frozenset({"yaml.load", "yaml.safe_load", "yaml.full_load", "yaml.unsafe_load"})
_PASS_THROUGH = frozenset(
    {
        "dict",
        "copy.deepcopy",
        "copy.copy",
        "omegaconf.OmegaConf.to_container",
        "omegaconf.OmegaConf.to_object",
        "omegaconf.OmegaConf.create",
    }
)
# peft mapping.py get_peft_config(config_dict):
#   PEFT_TYPE_TO_CONFIG_MAPPING[config_dict["peft_type"]](**config_dict)
_BY_PEFT_TYPE = frozenset({"peft.get_peft_config", "peft.mapping.get_peft_config"})
PEFT_TYPE_CLASSES = {"LORA": "LoraConfig"}
_DICT_METHODS = frozenset({"get", "pop", "items", "keys", "values", "update", "setdefault", "copy"})
_MAX_PASSES = 8
ANY_KEY = "*"  # SectionUse.exempt: the script removes keys it computes, so any key may be gone
_MAX_VALUES = 64


@record(frozen=True, slots=True)
class SectionUse:
    """One section of the loaded mapping (``()`` the top level) handed as keyword arguments to a class."""

    path: tuple[str, ...]
    consumer: str  # the class's name: "Seq2SeqTrainingArguments", "LoraConfig", "DataConfig"
    package: str | None  # "transformers", "peft", ...; None for the script's own dataclass
    fields: frozenset[str] | None  # the script's own dataclass's fields (None: not read whole)
    line: int  # the consuming call
    col: int
    by_peft_type: bool = False  # get_peft_config(section): the class follows the section's peft_type
    exempt: frozenset[str] = frozenset()  # keys the script pops or deletes before handing it on
    # the library class it is (its name), or the script's dataclass subclasses (`class MyArguments(
    # TrainingArguments)`: package "transformers", library "TrainingArguments", fields its own)
    library: str | None = None


@record(frozen=True, slots=True)
class ConfigLoad:
    """A config file the script loads: with which loader, from where, and where its sections go."""

    loader: str  # "pyyaml" | "ruamel" | "omegaconf" | "json"
    line: int
    col: int
    literal: str | None  # the path when written in the script; None: it comes from outside (argv, a flag)
    sections: tuple[SectionUse, ...]
    flags: frozenset[str] = frozenset()  # the flags the path is read from (`args.config`), when it is one


@record(frozen=True, slots=True)
class _Load:
    index: int  # which load


@record(frozen=True, slots=True)
class _Cfg:
    index: int
    path: tuple[str, ...]


@record(frozen=True, slots=True)
class _Parser:
    loader: str


@record(frozen=True, slots=True)
class _Class:
    name: str  # a class of the module (`cls` in its classmethods)


class _Analysis:
    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.imports: dict[str, str] = {}
        self.functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.owner: dict[int, ast.ClassDef] = {}  # id(method) -> its class
        self.scope_of: dict[int, ast.AST] = {}  # id(node) -> the function (or module) it runs in
        self.bindings: dict[tuple[int, str], set[Any]] = {}
        self.loads: list[tuple[str, ast.Call, ast.AST]] = []
        self.changed = False
        # names a scope also binds to something else (`cfg = {k: v for k, v in cfg.items() if ...}`,
        # a loop, `+=`): what reaches a consumer through them is not known
        self.tainted: set[tuple[int, str]] = set()

    # ---------------------------------------------------------------- collection
    def collect(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.imports[alias.asname] = alias.name
                    else:
                        head = alias.name.split(".")[0]
                        self.imports[head] = head
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        for stmt in self.tree.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions[stmt.name] = stmt
            elif isinstance(stmt, ast.ClassDef):
                self.classes[stmt.name] = stmt
                for item in stmt.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        self.owner[id(item)] = stmt
        self._scopes(self.tree, self.tree)

    def _scopes(self, node: ast.AST, scope: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) else scope
            self.scope_of[id(child)] = inner
            self._scopes(child, inner)

    def qualified(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            return self.imports.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.qualified(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    # ---------------------------------------------------------------- values
    def bind(self, scope: ast.AST, name: str, values: set[Any]) -> None:
        if not values or (id(scope), name) in self.tainted:
            return
        have = self.bindings.setdefault((id(scope), name), set())
        new = values - have
        if new and len(have) < _MAX_VALUES:
            have |= new
            self.changed = True

    def lookup(self, scope: ast.AST, name: str) -> set[Any]:
        found = self.bindings.get((id(scope), name))
        if found is None and scope is not self.tree:
            found = self.bindings.get((id(self.tree), name))
        return found or set()

    def value(self, node: ast.AST | None, scope: ast.AST) -> set[Any]:
        if node is None:
            return set()
        if isinstance(node, ast.Name):
            found = set(self.lookup(scope, node.id))
            if node.id in self.classes:
                found.add(_Class(node.id))
            return found
        if isinstance(node, ast.Subscript):
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                return self._child(self.value(node.value, scope), key.value)
            return set()
        if isinstance(node, ast.Attribute):
            base = self.value(node.value, scope)
            if node.attr in _DICT_METHODS:
                return set()
            omega = {v for v in base if isinstance(v, _Cfg) and self.loads[v.index][0] == "omegaconf"}
            return self._child(omega, node.attr)
        if isinstance(node, ast.Call):
            return self._call_value(node, scope)
        if isinstance(node, ast.IfExp):
            return self.value(node.body, scope) | self.value(node.orelse, scope)
        if isinstance(node, ast.BoolOp):
            out: set[Any] = set()
            for v in node.values:
                out |= self.value(v, scope)
            return out
        if isinstance(node, ast.Await):
            return self.value(node.value, scope)
        return set()

    @staticmethod
    def _child(values: set[Any], key: str) -> set[Any]:
        return {_Cfg(v.index, (*v.path, key)) for v in values if isinstance(v, _Cfg)}

    def _load_index(self, kind: str, call: ast.Call, scope: ast.AST) -> int:
        for i, (_, seen, _) in enumerate(self.loads):
            if seen is call:
                return i
        self.loads.append((kind, call, scope))
        return len(self.loads) - 1

    def _call_value(self, call: ast.Call, scope: ast.AST) -> set[Any]:
        q = self.qualified(call.func)
        if q in _PYYAML_LOADS:
            return {_Cfg(self._load_index("pyyaml", call, scope), ())}
        if q == "omegaconf.OmegaConf.load":
            return {_Cfg(self._load_index("omegaconf", call, scope), ())}
        if q == "json.load":
            return {_Cfg(self._load_index("json", call, scope), ())}
        if q == "ruamel.yaml.YAML":
            return {_Parser("ruamel")}
        if q in _PASS_THROUGH and call.args:
            return {v for v in self.value(call.args[0], scope) if isinstance(v, _Cfg)}
        func = call.func
        if isinstance(func, ast.Attribute):
            base = self.value(func.value, scope)
            if func.attr == "load" and any(isinstance(v, _Parser) for v in base):
                return {_Cfg(self._load_index("ruamel", call, scope), ())}
            if func.attr in ("get", "pop") and call.args:
                key = call.args[0]
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    return self._child(base, key.value)
            if func.attr == "copy":
                return {v for v in base if isinstance(v, _Cfg)}
        target = self._callee(call, scope)
        if isinstance(target, ast.FunctionDef | ast.AsyncFunctionDef):
            return set(self.lookup(target, "<return>"))
        return set()

    def _callee(self, call: ast.Call, scope: ast.AST) -> ast.AST | None:
        """The module's own function or method a call runs, or the module class it builds."""
        func = call.func
        if isinstance(func, ast.Name):
            if func.id in self.functions:
                return self.functions[func.id]
            if func.id in self.classes:
                return self.classes[func.id]
            if func.id == "cls":
                return self._enclosing_class(scope)
            return None
        if isinstance(func, ast.Attribute):
            cls: ast.ClassDef | None = None
            if isinstance(func.value, ast.Name) and func.value.id in self.classes:
                cls = self.classes[func.value.id]
            elif isinstance(func.value, ast.Name) and func.value.id in ("cls", "self"):
                cls = self._enclosing_class(scope)
            if cls is not None:
                for item in cls.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == func.attr:
                        return item
        return None

    def _enclosing_class(self, scope: ast.AST) -> ast.ClassDef | None:
        return self.owner.get(id(scope))

    # ---------------------------------------------------------------- propagation
    def propagate(self) -> None:
        for _ in range(_MAX_PASSES):
            self.changed = False
            for node in ast.walk(self.tree):
                scope = self.scope_of.get(id(node), self.tree)
                if isinstance(node, ast.Assign):
                    values = self.value(node.value, scope)
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            self.bind(scope, target.id, values)
                elif isinstance(node, ast.AnnAssign | ast.NamedExpr):
                    if isinstance(node.target, ast.Name):
                        self.bind(scope, node.target.id, self.value(node.value, scope))
                elif isinstance(node, ast.withitem) and isinstance(node.optional_vars, ast.Name):
                    self.bind(scope, node.optional_vars.id, self.value(node.context_expr, scope))
                elif isinstance(node, ast.Return):
                    self.bind(scope, "<return>", self.value(node.value, scope))
                elif isinstance(node, ast.Call):
                    self.value(node, scope)  # registers the loads it makes
                    self._bind_arguments(node, scope)
            if not self.changed:
                return

    def taint(self) -> bool:
        """Mark the names also bound to values that are not the config's; True when any is."""
        for node in ast.walk(self.tree):
            scope = self.scope_of.get(id(node), self.tree)
            names: list[str] = []
            if isinstance(node, ast.Assign) and not self.value(node.value, scope):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and isinstance(node.target, ast.Name):
                names = (
                    [node.target.id] if node.value is not None and not self.value(node.value, scope) else []
                )
            elif isinstance(node, ast.AugAssign | ast.For | ast.AsyncFor) and isinstance(
                node.target, ast.Name
            ):
                names = [node.target.id]
            for name in names:
                if (id(scope), name) in self.bindings:
                    self.tainted.add((id(scope), name))
        return bool(self.tainted)

    def _bind_arguments(self, call: ast.Call, scope: ast.AST) -> None:
        target = self._callee(call, scope)
        if not isinstance(target, ast.FunctionDef | ast.AsyncFunctionDef):
            return
        args = target.args
        params = [a.arg for a in (*args.posonlyargs, *args.args)]
        if id(target) in self.owner and params and not _is_static(target):
            params = params[1:]  # self / cls
        for name, arg in zip(params, call.args, strict=False):
            if not isinstance(arg, ast.Starred):
                self.bind(target, name, self.value(arg, scope))
        for kw in call.keywords:
            values = self.value(kw.value, scope)
            if kw.arg is not None:
                self.bind(target, kw.arg, values)
                continue
            if args.kwarg is not None:
                self.bind(target, args.kwarg.arg, values)
            for name in params + [a.arg for a in args.kwonlyargs]:
                self.bind(target, name, self._child(values, name))

    # ---------------------------------------------------------------- results
    def results(self) -> tuple[ConfigLoad, ...]:
        uses: dict[int, list[SectionUse]] = {}
        exempt = self._removed_keys()
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Call):
                continue
            scope = self.scope_of.get(id(node), self.tree)
            for values, by_type in self._handed_on(node, scope):
                consumer = self._consumer(node, scope)
                if consumer is None:
                    continue
                name, package, fields, library = consumer
                for v in values:
                    if isinstance(v, _Cfg):
                        use = SectionUse(
                            v.path,
                            name,
                            package,
                            fields,
                            node.lineno,
                            node.col_offset + 1,
                            by_type,
                            frozenset(exempt.get((v.index, v.path), ())),
                            library,
                        )
                        uses.setdefault(v.index, []).append(use)
        out = []
        for i, (kind, call, scope) in enumerate(self.loads):
            literal, flags = self._path_source(call, scope)
            handed = tuple(uses.get(i, ()))
            out.append(ConfigLoad(kind, call.lineno, call.col_offset + 1, literal, handed, frozenset(flags)))
        return tuple(out)

    def _handed_on(self, call: ast.Call, scope: ast.AST) -> Iterator[tuple[set[Any], bool]]:
        for kw in call.keywords:
            if kw.arg is None:
                yield self.value(kw.value, scope), False
        if self.qualified(call.func) in _BY_PEFT_TYPE and call.args:
            yield self.value(call.args[0], scope), True

    def _consumer(
        self, call: ast.Call, scope: ast.AST
    ) -> tuple[str, str | None, frozenset[str] | None, str | None] | None:
        """(name, package, own fields, library class) of the class a call builds."""
        q = self.qualified(call.func)
        if q in _BY_PEFT_TYPE:
            return "get_peft_config", "peft", None, "get_peft_config"
        if q is not None:
            parts = q.split(".")
            return parts[-1], parts[0], None, parts[-1]
        target = self._callee(call, scope)
        if isinstance(target, ast.ClassDef):
            fields, library = self._dataclass_fields(target, 0), self._library_base(target, 0)
            if library is not None:
                return target.name, library.split(".")[0], fields, library.rsplit(".", 1)[-1]
            return target.name, None, fields, None
        return None

    def _library_base(self, cls: ast.ClassDef, depth: int) -> str | None:
        """The one imported class (`transformers.TrainingArguments`) the module's class derives from."""
        found = None
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in self.classes and depth < 8:
                found = found or self._library_base(self.classes[base.id], depth + 1)
            elif (q := self.qualified(base)) is not None:
                found = found or q
        return found

    def _dataclass_fields(self, cls: ast.ClassDef, depth: int) -> frozenset[str] | None:
        """The fields `__init__` takes, for a @dataclass of the module whose bases are read (an imported
        base, the library class, adds its own: advisor.facts.script_layout judges those); else None."""
        if depth > 8 or not any(self._is_dataclass_decorator(d) for d in cls.decorator_list):
            return None
        if any(isinstance(s, ast.FunctionDef) and s.name == "__init__" for s in cls.body):
            return None  # @dataclass keeps a class's own __init__ (dataclasses._set_new_attribute)
        fields: set[str] = set()
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id == "object":
                continue
            if isinstance(base, ast.Name) and base.id in self.classes:
                inherited = self._dataclass_fields(self.classes[base.id], depth + 1)
                if inherited is None:
                    return None
                fields |= inherited
                continue
            if self.qualified(base) is not None:
                continue  # the library base: its fields come from the shipped key data
            return None
        for stmt in cls.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                annotation = ast.unparse(stmt.annotation)
                if "ClassVar" not in annotation and not _init_false(stmt.value):
                    fields.add(stmt.target.id)
        return frozenset(fields)

    def _is_dataclass_decorator(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Call):
            if any(k.arg == "init" for k in node.keywords):
                return False
            node = node.func
        return self.qualified(node) == "dataclasses.dataclass"

    def _removed_keys(self) -> dict[tuple[int, tuple[str, ...]], set[str]]:
        """Keys the script pops or deletes from a section: those never reach the consumer (ANY_KEY: one it
        computes, `for k in drop: cfg.pop(k)`, so any key may be gone; `.clear()` too)."""
        out: dict[tuple[int, tuple[str, ...]], set[str]] = {}
        for node in ast.walk(self.tree):
            scope = self.scope_of.get(id(node), self.tree)
            targets: list[tuple[ast.AST, ast.AST]] = []
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr in ("pop", "popitem", "clear"):
                    targets.append((node.func.value, node.args[0] if node.args else node))
            elif isinstance(node, ast.Delete):
                for t in node.targets:
                    if isinstance(t, ast.Subscript):
                        targets.append((t.value, t.slice))
            for holder, key in targets:
                name = key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else ANY_KEY
                for v in self.value(holder, scope):
                    if isinstance(v, _Cfg):
                        out.setdefault((v.index, v.path), set()).add(name)
        return out

    def _path_source(self, call: ast.Call, scope: ast.AST) -> tuple[str | None, set[str]]:
        """(the path when the script writes it, the flags it comes from): `open("cfg.yaml")` is a literal,
        `load_config(args.config)` into `open(path)` the flag `config`."""
        arg: ast.AST | None = call.args[0] if call.args else None
        flags: set[str] = set()
        todo: list[tuple[ast.AST | None, ast.AST, int]] = [(arg, scope, 0)]
        literal = None
        while todo:
            node, where, depth = todo.pop()
            if node is None or depth > 6:
                continue
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                literal = node.value
            elif isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Name | ast.Attribute):
                name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
                if name in ("open", "Path", "read_text", "_resolve_path", "abspath", "expanduser", "join"):
                    todo.append((node.args[0] if name != "join" else node.args[-1], where, depth + 1))
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                flags.add(node.attr)
            elif isinstance(node, ast.Name):
                bound = _single_assignment(self.tree, where, node.id)
                if bound is not None:
                    todo.append((bound, where, depth + 1))
                elif isinstance(where, ast.FunctionDef | ast.AsyncFunctionDef):
                    todo.extend((a, s, depth + 1) for a, s in self._arguments_for(where, node.id))
        return literal, flags

    def _arguments_for(
        self, func: ast.FunctionDef | ast.AsyncFunctionDef, param: str
    ) -> list[tuple[ast.AST, ast.AST]]:
        """(argument, the scope it is written in) at each call of the module's ``func`` for ``param``."""
        params = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
        if id(func) in self.owner and params and not _is_static(func):
            params = params[1:]
        out: list[tuple[ast.AST, ast.AST]] = []
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Call):
                continue
            scope = self.scope_of.get(id(node), self.tree)
            if self._callee(node, scope) is not func:
                continue
            for name, arg in zip(params, node.args, strict=False):
                if name == param:
                    out.append((arg, scope))
            out.extend((kw.value, scope) for kw in node.keywords if kw.arg == param)
        return out


def _single_assignment(tree: ast.Module, scope: ast.AST, name: str) -> ast.AST | None:
    """The value a name is bound to in its scope when it is bound exactly once (a `with open(x) as f`
    item included), else None."""
    found: list[ast.AST] = []
    for node in ast.walk(scope if scope is not tree else tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            found.append(node.value)
        elif (
            isinstance(node, ast.withitem)
            and isinstance(node.optional_vars, ast.Name)
            and node.optional_vars.id == name
        ):
            found.append(node.context_expr)
    return found[0] if len(found) == 1 else None


def _is_static(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in func.decorator_list)


def _init_false(value: ast.AST | None) -> bool:
    """`x: int = field(init=False)`: not an `__init__` argument."""
    if not isinstance(value, ast.Call):
        return False
    return any(
        k.arg == "init" and isinstance(k.value, ast.Constant) and k.value.value is False
        for k in value.keywords
    )


@lru_cache(maxsize=16)
def config_loads(text: str) -> tuple[ConfigLoad, ...]:
    """The configs the script loads itself and where their sections go; () when none (or unparsable)."""
    tree = parsed(text)
    if tree is None:
        return ()
    analysis = _Analysis(tree)
    try:
        analysis.collect()
        analysis.propagate()
        if analysis.taint():  # again, without what the tainted names carried
            analysis.bindings = {}
            analysis.propagate()
        return analysis.results()
    except RecursionError:
        return ()

"""``*.from_pretrained(...)`` calls of a training script: the keyword arguments that decide the memory of
the loaded model, and what a model class is given to load (for the estimator; read, never run)."""

from __future__ import annotations

import ast
import re
from typing import Any

from advisor.facts.script_ast.nodes import kwarg, last_id
from advisor.facts.script_ast.results import FieldReference, LoadCall, ModelArgument
from advisor.sources.argparse_calls import dest_of
from advisor.sources.python_source import tree_nodes

# from_pretrained keyword arguments that decide the memory of the loaded model (LoadCall)
LOAD_KWARGS = frozenset(
    {
        "dtype",
        "torch_dtype",
        "quantization_config",
        "device_map",
        "attn_implementation",
        "load_in_4bit",
        "load_in_8bit",
    }
)
# The classes whose from_pretrained loads the model that trains: transformers' Auto classes
# (AutoModelForCausalLM, TRL's AutoModelForCausalLMWithValueHead) and the concrete model classes
# (LlamaForCausalLM, GPT2LMHeadModel, T5ForConditionalGeneration, BertModel); not a tokenizer, config or
# processor, and not PEFT's PeftModel / AutoPeftModel*, whose argument is an adapter.
MODEL_CLASS = re.compile(r"AutoModel\w*|\w*Model|\w+For[A-Z]\w*")
_NOT_MODEL_CLASS = re.compile(r"Peft|Fast|Tokenizer|Processor|Config|FeatureExtractor")
_MAX_FOLLOW = 4  # names bound to names bound to a literal: followed this far
# the bitsandbytes options of a `quantization_config=BitsAndBytesConfig(...)` read from a parsed field
_BNB_FIELDS = ("load_in_4bit", "load_in_8bit", "bnb_4bit_quant_storage")
MAX_FIELD_SITES = 20


def is_model_class(name: str | None) -> bool:
    return bool(name and MODEL_CLASS.fullmatch(name) and not _NOT_MODEL_CLASS.search(name))


def find_load_calls(tree: ast.Module, pos: Any) -> tuple[LoadCall, ...]:
    """Every ``*.from_pretrained(...)`` call with its model-loading keyword arguments, in source order."""
    bound = _bound_once(tree)
    defaults: _Defaults | None = None
    out = []
    for node in tree_nodes(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "from_pretrained":
            continue
        kwargs = []
        fields: list[tuple[str, FieldReference]] = []
        for kw in node.keywords:
            if kw.arg in LOAD_KWARGS:
                value = kw.value
                if isinstance(value, ast.Name) and len(bound.get(value.id, ())) == 1:
                    value = bound[value.id][0]
                kwargs.append((kw.arg, ast.unparse(value)[:2000]))
                if defaults is None:
                    defaults = _Defaults(tree, pos)
                fields.extend(_kwarg_fields(kw.arg, kw.value, bound, defaults, pos))
        line, col = pos(node)
        star = any(kw.arg is None for kw in node.keywords)
        model = None
        arg = node.args[0] if node.args else kwarg(node, "pretrained_model_name_or_path")
        if arg is not None and is_model_class(last_id(node.func.value)):
            if defaults is None:
                defaults = _Defaults(tree, pos)
            model = _model_argument(arg, bound, defaults, pos)
        out.append(
            LoadCall(ast.unparse(node.func)[:200], line, col, tuple(kwargs), star, model, tuple(fields))
        )
    return tuple(sorted(out, key=lambda c: (c.line, c.col)))


def find_field_keywords(tree: ast.Module, pos: Any, name: str) -> tuple[FieldReference, ...]:
    """Each `name=<parsed field>` keyword of any call and `"name": <parsed field>` entry of a dict literal
    (`model_kwargs = dict(device_map=script_args.device_map)`), in source order, at most MAX_FIELD_SITES."""
    bound = _bound_once(tree)
    defaults: _Defaults | None = None
    out: list[FieldReference] = []
    for node in tree_nodes(tree):
        if isinstance(node, ast.Call):
            values = [kw.value for kw in node.keywords if kw.arg == name]
        elif isinstance(node, ast.Dict):
            values = [
                v
                for k, v in zip(node.keys, node.values, strict=True)
                if isinstance(k, ast.Constant) and k.value == name
            ]
        else:
            continue
        for value in values:
            if defaults is None:
                defaults = _Defaults(tree, pos)
            ref = _field_reference(value, bound, defaults, pos)
            if ref is not None:
                out.append(ref)
                if len(out) >= MAX_FIELD_SITES:
                    return tuple(sorted(out, key=lambda r: (r.line, r.col)))
    return tuple(sorted(out, key=lambda r: (r.line, r.col)))


def _bound_once(tree: ast.Module) -> dict[str, list[ast.expr]]:
    """Names by the values plain assignments bind them to; an attribute the script assigns
    (`script_args.device_map = {"": local_rank}`) is listed under ".attr", so a field it rewrites is
    not read as its default."""
    bound: dict[str, list[ast.expr]] = {}
    for node in tree_nodes(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            bound.setdefault(node.targets[0].id, []).append(node.value)
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for t in ast.walk(target):
                    if isinstance(t, ast.Attribute) and isinstance(t.ctx, ast.Store):
                        bound.setdefault(f".{t.attr}", []).append(node.value or t)
        elif isinstance(node, ast.Call) and last_id(node.func) == "setattr":
            bound.setdefault(".?", []).append(node)  # setattr(args, name, value): any field may change
    return bound


def _kwarg_fields(
    name: str, value: ast.expr, bound: dict[str, list[ast.expr]], defaults: _Defaults, pos: Any
) -> list[tuple[str, FieldReference]]:
    """The parsed fields a from_pretrained keyword reads: the keyword itself (`device_map=args.device_map`)
    or, for quantization_config=BitsAndBytesConfig(...), its bitsandbytes options."""
    ref = _field_reference(value, bound, defaults, pos)
    if ref is not None:
        return [(name, ref)]
    if name != "quantization_config":
        return []
    for _ in range(_MAX_FOLLOW):
        if not (isinstance(value, ast.Name) and len(bound.get(value.id, ())) == 1):
            break
        value = bound[value.id][0]
    if not (isinstance(value, ast.Call) and last_id(value.func) == "BitsAndBytesConfig"):
        return []
    out = []
    for kw in value.keywords:
        if kw.arg in _BNB_FIELDS:
            inner = _field_reference(kw.value, bound, defaults, pos)
            if inner is not None:
                out.append((f"quantization_config.{kw.arg}", inner))
    return out


def _field_reference(
    arg: ast.expr, bound: dict[str, list[ast.expr]], defaults: _Defaults, pos: Any
) -> FieldReference | None:
    """`args.X` (through names bound once, and `getattr(torch, args.X)`) as the field X it reads."""
    line, col = pos(arg)
    text = ast.unparse(arg)[:200]
    value = arg
    for _ in range(_MAX_FOLLOW):
        if isinstance(value, ast.Name) and len(bound.get(value.id, ())) == 1:
            value = bound[value.id][0]
        elif (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "getattr"
            and len(value.args) == 2
            and last_id(value.args[0]) == "torch"
        ):
            value = value.args[1]  # getattr(torch, model_args.torch_dtype)
        else:
            break
    if not (isinstance(value, ast.Attribute) and _is_arguments(value.value)):
        return None
    key = value.attr
    if f".{key}" in bound or ".?" in bound:
        return None  # the script sets the field itself: which value the load sees is not followed
    default, flags = defaults.of(key, arg, constants=True)
    return FieldReference(text, line, col, key, flags, default)


def _model_argument(arg: ast.expr, bound: dict[str, list[ast.expr]], defaults: _Defaults, pos: Any) -> Any:
    line, col = pos(arg)
    text = ast.unparse(arg)[:200]
    value = arg
    for _ in range(_MAX_FOLLOW):
        if not (isinstance(value, ast.Name) and len(bound.get(value.id, ())) == 1):
            break
        value = bound[value.id][0]
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return ModelArgument(text, line, col, literal=value.value[:1000], literal_at=pos(value))
    key = None
    if isinstance(value, ast.Attribute) and _is_arguments(value.value):
        key = value.attr  # args.base_model, model_args.model_name_or_path, self.args.model_path
    elif isinstance(value, ast.Name) and value.id not in bound and defaults.fire:
        key = value.id  # fire.Fire(train): train(base_model: str = "...") takes --base_model
    if key is None:
        return ModelArgument(text, line, col)
    default, flags = defaults.of(key, arg)
    return ModelArgument(text, line, col, key=key, flags=flags, default=default)


def _is_arguments(node: ast.expr) -> bool:
    """`args`, `model_args`, `self.args`: a plain name or one attribute of self (not `cfg.model`)."""
    if isinstance(node, ast.Name):
        return True
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


class _Defaults:
    """The script's own literal string defaults by flag / field name: dataclass fields (`model_path: str =
    "..."`, `field(default="...")`), `add_argument("--base_model", default="...")` (dest as argparse
    derives it) and, when the script hands a function to fire.Fire, that function's parameters. A name
    two places give different defaults has none (which one the run reads is not followed)."""

    def __init__(self, tree: ast.Module, pos: Any) -> None:
        self.pos = pos
        self.found: dict[str, list[tuple[str, int, int, str]]] = {}
        # every literal default (str, bool, int, float), for the fields a keyword argument reads
        self.constants: dict[str, list[tuple[object, int, int, str]]] = {}
        self.flags: dict[str, tuple[str, ...]] = {}
        self.fire = False
        self.functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        for node in tree_nodes(tree):
            if isinstance(node, ast.ClassDef):
                self._class(node)
            elif isinstance(node, ast.Call):
                name = last_id(node.func)
                if name == "add_argument":
                    self._argument(node)
                elif name == "Fire":
                    self.fire = True
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions.append(node)

    def _put(self, name: str, value: ast.expr, declared: str) -> None:
        if not (isinstance(value, ast.Constant) and isinstance(value.value, str | bool | int | float)):
            return
        line, col = self.pos(value)
        literal = value.value[:1000] if isinstance(value.value, str) else value.value
        self.constants.setdefault(name, []).append((literal, line, col, declared))
        if isinstance(literal, str):
            self.found.setdefault(name, []).append((literal, line, col, declared))

    def _class(self, node: ast.ClassDef) -> None:
        for stmt in node.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            value = stmt.value
            if isinstance(value, ast.Call) and last_id(value.func) == "field":
                value = kwarg(value, "default")
            if value is not None:
                self._put(stmt.target.id, value, f"{node.name}.{stmt.target.id}")

    def _argument(self, node: ast.Call) -> None:
        options = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        long = next((o for o in options if o.startswith("--")), None)
        dest = dest_of(node)
        if not dest:
            return
        flags = tuple(o.lstrip("-") for o in options if o.startswith("--"))
        self.flags[dest] = tuple(dict.fromkeys((*self.flags.get(dest, ()), *flags)))
        default = kwarg(node, "default")
        if default is not None:
            self._put(dest, default, long or dest)

    def of(self, key: str, arg: ast.expr, constants: bool = False) -> tuple[Any, tuple[str, ...]]:
        """(the one literal default of `key` (a string; any literal with `constants`), the flags that set
        it)."""
        found: list[Any] = list((self.constants if constants else self.found).get(key, ()))
        if self.fire:  # fire.Fire(train): the parameter of the innermost function around the call
            around = [f for f in self.functions if any(n is arg for n in ast.walk(f))]
            func = around[-1] if around else None  # ast.walk is breadth-first: the innermost comes last
            if func is not None:
                params = [*func.args.posonlyargs, *func.args.args]
                values = [None] * (len(params) - len(func.args.defaults)) + list(func.args.defaults)
                params += func.args.kwonlyargs
                values += list(func.args.kw_defaults)
                for p, v in zip(params, values, strict=True):
                    kinds = (str, bool, int, float) if constants else (str,)
                    if p.arg == key and isinstance(v, ast.Constant) and isinstance(v.value, kinds):
                        line, col = self.pos(v)
                        literal = v.value[:1000] if isinstance(v.value, str) else v.value
                        found = [(literal, line, col, f"{func.name}({key}=...)")]
        flags = self.flags.get(key, (key,))
        if len({f[0] for f in found}) != 1:
            return None, flags
        return found[0], flags

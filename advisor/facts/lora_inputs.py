"""The LoRA settings of a run that the estimator reads: whether the script wraps the model with PEFT,
the target modules, rank and dropout (written, a script dataclass default, or a literal LoraConfig(...)
in the script), and modules_to_save (fully trained copies)."""

from __future__ import annotations

import ast
from typing import Any

from advisor.facts.namespace_entries import truth, written
from advisor.provenance import Value
from advisor.sources.document import Location
from advisor.sources.python_source import parsed

_MAX_SCRIPT_CHARS = 2_000_000


def _script_tree(doc: Any, needle: str) -> ast.Module | None:
    """The training script's tree when its text names `needle` (a cheap test before the tree is read)."""
    text = doc.text if doc is not None else None
    if not isinstance(text, str) or needle not in text or len(text) > _MAX_SCRIPT_CHARS:
        return None
    return parsed(text)


def script_wraps_peft(plan: Any) -> bool:
    """The training script calls get_peft_model outside any `if` (FastChat train_lora.py:165): LoRA
    whatever the flags say. Read from the AST, never run; a conditional call is left to the flags."""
    doc = plan.spec.script
    tree = _script_tree(doc, "get_peft_model(")
    if tree is None:
        return False

    def unconditional(node: ast.AST) -> bool:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If | ast.IfExp | ast.Try | ast.While | ast.For | ast.Match):
                continue
            if isinstance(child, ast.Call):
                f = child.func
                name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
                if name == "get_peft_model":
                    return True
            if unconditional(child):
                return True
        return False

    return unconditional(tree)


def lora_targets(plan: Any) -> list[str] | None:
    t = plan.training
    v = script_lora(plan, "target_modules")
    if v is None:
        if truth(written(t, "lora_target_linear")):
            return ["all-linear"]
        v = written(t, "lora_target_modules", "lora_target", "target_modules")
    if v is None or not v.known or v.value is None:
        return None
    raw = v.value
    if isinstance(raw, str):
        parts = [p.strip() for p in raw.replace(" ", ",").split(",") if p.strip()]
    elif isinstance(raw, list):
        parts = [str(p).strip() for p in raw if str(p).strip()]
    else:
        return None
    if any(p.lower() in {"all", "all-linear", "all_linear"} for p in parts):
        return ["all-linear"]
    return parts or None


# LoraConfig's keywords the estimator reads (peft 0.17.1 tuners/lora/config.py LoraConfig: r,
# target_modules, lora_dropout)
_LORA_CONFIG_KEYS = frozenset({"r", "target_modules", "lora_dropout"})


def script_lora(plan: Any, key: str) -> Value | None:
    """LoraConfig(key=...) in the training script (read from the AST, never run), where the script gives it
    a literal (`r=8`, `target_modules=["q_proj", "v_proj"]`, `lora_dropout=0.1`) or one of the run's
    known flags (`r=lora_args.lora_r`: the run's value of lora_r, written or its dataclass default);
    None when the script builds no LoraConfig, gives the keyword otherwise, or its calls disagree."""
    got = _script_lora_settings(plan)
    return got.get(key) if got is not None else None


def _script_lora_settings(plan: Any) -> dict[str, Value] | None:
    doc = plan.spec.script
    tree = _script_tree(doc, "LoraConfig")
    if tree is None:
        return None
    path = getattr(doc, "path", None)
    found: dict[str, list[Value | None]] = {}
    calls = 0
    try:
        nodes = list(ast.walk(tree))
    except RecursionError:
        return None
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if name != "LoraConfig":
            continue
        calls += 1
        for kw in node.keywords:
            if kw.arg in _LORA_CONFIG_KEYS:
                found.setdefault(kw.arg, []).append(_lora_argument(plan, kw.value, path, nodes))
    out: dict[str, Value] = {}
    for key, values in found.items():
        # every call gives the key the same known value (one LoraConfig, or one per branch that agree)
        first = values[0]
        if (
            len(values) == calls
            and first is not None
            and all(v is not None and v.value == first.value for v in values)
        ):
            out[key] = first
    return out


def _lora_argument(plan: Any, node: Any, path: Any, nodes: list[Any]) -> Value | None:
    """A LoraConfig keyword's value: a literal; a name or attribute the run has as a flag; else a plain
    name the script assigns once, a literal (`target_modules = ["q_proj", "v_proj"]`)."""
    if isinstance(node, ast.Attribute | ast.Name):
        flag = node.attr if isinstance(node, ast.Attribute) else node.id
        v = written(plan.training, flag)
        if v is not None:
            return v if v.known else None
        if not isinstance(node, ast.Name):
            return None
        bound = [
            n.value
            for n in nodes
            if isinstance(n, ast.Assign | ast.AnnAssign | ast.AugAssign)
            and any(
                isinstance(t, ast.Name) and t.id == node.id
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
            )
        ]
        if len(bound) != 1 or bound[0] is None or isinstance(bound[0], ast.Name | ast.Attribute):
            return None
        node = bound[0]
    try:
        raw = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    ok = type(raw) in (int, float, str) or (
        isinstance(raw, list | tuple) and raw and all(isinstance(p, str) for p in raw)
    )
    if not ok:
        return None
    where = Location(path, node.lineno, node.col_offset + 1) if path is not None else None
    value = list(raw) if isinstance(raw, tuple) else raw
    return Value(value, where, "script", note="the script's LoraConfig")


def _names(raw: Any) -> list[str] | None:
    if isinstance(raw, str):
        return [p.strip() for p in raw.replace(" ", ",").split(",") if p.strip()] or None
    if isinstance(raw, list | tuple) and all(isinstance(p, str) for p in raw):
        return [p.strip() for p in raw if p.strip()] or None
    return None


def modules_to_save(plan: Any, a: list[str]) -> list[str] | None:
    """PEFT's modules_to_save as the run writes it: axolotl `lora_modules_to_save` (a list; axolotl 0.19.0
    utils/schemas/peft.py), `modules_to_save`, LLaMA-Factory `additional_target` (a comma-separated string
    split into LoraConfig(modules_to_save=...) by model/adapter.py), else the script's
    LoraConfig(modules_to_save=...) (Qwen finetune.py:331-342)."""
    v = written(plan.training, "lora_modules_to_save", "modules_to_save", "additional_target")
    if v is not None and v.known:
        return _names(v.value)
    return _script_modules_to_save(plan, a)


def _script_modules_to_save(plan: Any, a: list[str]) -> list[str] | None:
    """LoraConfig(modules_to_save=...) in the training script, read from the AST (never run): a list of
    strings, or a name assigned such a list. A name assigned a list on one branch (and None on another,
    as Qwen's `if lora_args.q_lora or is_chat_model: modules_to_save = None else: [...]`) is counted with
    the branch stated: the list is what a plain LoRA run of a base model gets."""
    doc = plan.spec.script
    tree = _script_tree(doc, "modules_to_save")
    if tree is None:
        return None

    def literal(node: ast.AST) -> list[str] | None:
        if isinstance(node, ast.List | ast.Tuple) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
        ):
            return [str(e.value) for e in node.elts if isinstance(e, ast.Constant)] or None
        return None

    arg: ast.AST | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name == "LoraConfig":
                for kw in node.keywords:
                    if kw.arg == "modules_to_save":
                        arg = kw.value
    if arg is None:
        return None
    direct = literal(arg)
    if direct is not None or not isinstance(arg, ast.Name):
        return direct
    lists: list[tuple[list[str], int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == arg.id for t in node.targets
        ):
            got = literal(node.value)
            if got is not None:
                lists.append((got, node.lineno))
    if len(lists) != 1:
        if len(lists) > 1:
            a.append(f"modules_to_save: the script assigns {arg.id} more than one list: not counted")
        return None
    names, line = lists[0]
    where = getattr(doc, "path", None)
    a.append(
        f"modules_to_save {names} from the script's LoraConfig ({getattr(where, 'name', 'script')}:{line}), "
        "assumed the branch that sets it is taken"
    )
    return names

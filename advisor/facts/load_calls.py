"""The training script's model loads (from_pretrained calls, read from its syntax tree, never run) as
the dtype, precision and estimate facts read them: which quantization config a call passes and whether it
is in force (`BitsAndBytesConfig(...) if args.q_lora else None` follows the written flag), and which model
a model class loads (a literal, or the run's flag or the script's default that `args.base_model` reads)."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.core.document import Location
from advisor.core.paths import relative
from advisor.core.provenance import Namespace, Value

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan


def written_value(ns: Namespace, *keys: str) -> Value | None:
    for key in keys:
        v = ns.known_value(key)
        if v is not None and v.source != "default":
            return v
    return None


def load_calls(names: dict[str, Any]) -> list[dict[str, Any]]:
    script = names.get("script")
    calls = script.load_calls if script is not None else None
    if not isinstance(calls, list):
        return []
    # Unsloth's FastLanguageModel.from_pretrained is not a transformers load (the estimator says so)
    return [c for c in calls if "Fast" not in str(c.get("callee", "")).split(".")[0]]


def shown_path(path: Path) -> Path:
    """A script's path as the script facts show it (relative to the current folder)."""
    return Path(relative(path)) if path.is_absolute() else path


def script_facts(plan: RunPlan) -> Any:
    """The training script's ScriptFacts (the analysis the `script` namespace is built from, cached)."""
    from advisor.facts.script_ast import analyse_script

    doc = plan.spec.script
    if doc is None or not isinstance(doc.text, str):
        return None
    text = doc.text
    return plan.context.derived("script-facts", doc.path, lambda: analyse_script(text))


def script_trainer(plan: RunPlan) -> Any:
    """The preference trainer the training script instantiates (script_ast/trainers.py), or None."""
    from advisor.facts.script_ast.trainers import preference_trainer
    from advisor.sources.python_source import parsed

    doc = plan.spec.script
    if doc is None or not isinstance(doc.text, str):
        return None
    text = doc.text

    def read() -> Any:
        tree = parsed(text)
        return preference_trainer(tree) if tree is not None else None

    return plan.context.derived("preference-trainer", doc.path, read)


def call_fields(plan: RunPlan, call: dict[str, Any]) -> dict[str, Any]:
    """The parsed fields the keyword arguments of a from_pretrained call read (`device_map=
    script_args.device_map` -> {"device_map": FieldReference}), found by the call's position."""
    facts = script_facts(plan)
    loc = call.get("location")
    if facts is None or loc is None:
        return {}
    for c in facts.load_calls:
        if (c.line, c.col) == (loc.line, loc.col):
            return dict(c.fields)
    return {}


def field_value(plan: RunPlan, ref: Any) -> Value | None:
    """The value a parsed field has in this run: what the run writes for it (a launch flag or a config key,
    under any of its flag names), else the script's own literal default (the dataclass field, the
    add_argument default); None when neither is known."""
    flags = list(dict.fromkeys([*ref.flags, ref.key]))
    spelled = list(dict.fromkeys([*flags, *(f.replace("_", "-") for f in flags)]))
    written = _written(plan.training, spelled)
    if written is not None:
        key, v = written
        if not v.known:
            return None
        shown = f"--{key}" if v.source == "launch" else key
        return Value(v.value, v.origin, v.source, note=f"{shown}, read as {ref.text}")
    if ref.default is None:
        return None
    value, line, col, declared = ref.default
    doc = plan.spec.script
    origin = Location(shown_path(doc.path), line, col) if doc is not None else None
    return Value(value, origin, "script", note=f"the default of {declared}, read as {ref.text}")


def call_where(call: dict[str, Any], key: str) -> str:
    loc = call["location"]
    return f"{loc.file.name}:{loc.line} from_pretrained({key}=...)"


def script_model(plan: RunPlan, names: dict[str, Any]) -> tuple[Value | None, str | None]:
    """The model the training script's from_pretrained loads (the first model-class load whose argument
    is known), with where it is written: the string literal in the script, the run's flag or config key
    that an attribute such as `args.base_model` reads, or the script's own literal default for it. (None,
    why) when a load is found whose argument cannot be told; (None, None) when the script loads none."""
    found: list[Value] = []
    unresolved = None
    for call in load_calls(names):
        arg = call.get("model")
        if not isinstance(arg, dict):
            continue
        value, why = _followed(plan, call, arg)
        if value is not None:
            found.append(value)
        elif unresolved is None:
            unresolved = why
    if not found:
        return None, unresolved
    first = found[0]
    others = list(dict.fromkeys(str(v.value) for v in found[1:] if v.value != first.value))
    if others:
        first.note = f"{first.note}; the first of the script's model loads (also {', '.join(others[:3])})"
    return first, None


def _followed(plan: RunPlan, call: dict[str, Any], arg: dict[str, Any]) -> tuple[Value | None, str]:
    loc = call["location"]
    where = f"{loc.file.as_posix()}:{loc.line} {call['callee']}({arg['text']})"
    if isinstance(arg.get("literal"), str):
        at = f"{loc.file.as_posix()}:{loc.line} {call['callee']}()"
        return Value(arg["literal"], arg.get("literal_location") or arg["location"], "script", note=at), ""
    key = arg.get("key")
    if not isinstance(key, str):
        return None, f"{where} loads a value that is not read statically (a literal, a flag or a field is)"
    flags = list(dict.fromkeys([*arg.get("flags", ()), key]))
    spelled = list(dict.fromkeys([*flags, *(f.replace("_", "-") for f in flags)]))
    written = _written(plan.training, spelled)
    if written is not None:
        v = written[1]
        shown = f"--{written[0]}" if v.source == "launch" else written[0]
        if not v.known:
            return None, f"{where}: {shown} cannot be resolved statically ({v.unknown})"
        if not isinstance(v.value, str) or not v.value.strip():
            return None, f"{where}: {shown} is {v.value!r}, not a model name"
        return Value(v.value, v.origin, v.source, note=f"{shown} into {where}"), ""
    default = arg.get("default")
    if isinstance(default, str) and default.strip():
        note = f"the default of {loc.file.as_posix()}'s {arg.get('default_declared')}, into {where}"
        return Value(default, arg.get("default_location") or arg["location"], "script", note=note), ""
    return (
        None,
        f"{where}: the run sets no --{flags[0]} and the script gives it no literal default; "
        f"pass --{flags[0]} ORG/NAME",
    )


def _written(ns: Namespace, keys: list[str]) -> tuple[str, Value] | None:
    """The first of `keys` the run writes (a flag or a config key, not a default), known or not."""
    for key in keys:
        v = ns.entry(key)
        if isinstance(v, Value) and v.source != "default":
            return key, v
    return None


def condition_flag(t: Namespace, cond: str) -> Value | None:
    """The run's written value of a condition that is one flag (`lora_args.q_lora` -> q_lora), else None."""
    if re.fullmatch(r"[A-Za-z_][\w.]*", cond) is None:
        return None
    return written_value(t, cond.rsplit(".", 1)[-1])


def bnb_kind(text: object) -> str | None:
    if not isinstance(text, str):
        return None
    if re.search(r"load_in_4bit\s*=\s*True", text):
        return "nf4"
    if re.search(r"load_in_8bit\s*=\s*True", text):
        return "int8"
    return None


def conditional(text: str, config: re.Pattern[str] | None = None) -> tuple[str, bool] | None:
    """For `A if COND else B` (read, never run), the condition's text and whether the quantization config
    is in force when it holds (True: in A; False: in B, or `not COND`); None when it is not conditional."""
    if " if " not in text or len(text) > 4000:
        return None
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if not isinstance(node, ast.IfExp):
        return None
    body = ast.unparse(node.body)
    in_body = (bnb_kind(body) if config is None else config.search(body)) is not None
    test = node.test
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    if negated:
        test = test.operand  # type: ignore[attr-defined]
    return ast.unparse(test), in_body != negated

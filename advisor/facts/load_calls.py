"""The training script's model loads (from_pretrained calls, read from its syntax tree, never run) as
the dtype and precision facts read them: which quantization config a call passes and whether it is in
force (`BitsAndBytesConfig(...) if args.q_lora else None` follows the written flag), and whether the base
runs in fp16 only (GPTQ / AWQ)."""

from __future__ import annotations

import ast
import re
from typing import Any

from advisor.facts.namespace_entries import truth
from advisor.provenance import Namespace, Value


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


def call_where(call: dict[str, Any], key: str) -> str:
    loc = call["location"]
    return f"{loc.file.name}:{loc.line} from_pretrained({key}=...)"


def condition_flag(t: Namespace, cond: str) -> Value | None:
    """The run's written value of a condition that is one flag (`lora_args.q_lora` -> q_lora), else None."""
    if re.fullmatch(r"[A-Za-z_][\w.]*", cond) is None:
        return None
    return written_value(t, cond.rsplit(".", 1)[-1])


FP16_ONLY_NAME = re.compile(r"(?i)(?:^|[-_./])(gptq|awq|int4|int8)(?:$|[-_./])")
FP16_ONLY_CONFIG = re.compile(r"\b(GPTQConfig|AwqConfig)\s*\(")


def fp16_only_base(plan: Any, names: dict[str, Any]) -> Value | None:
    """Why the base model runs in fp16 only (GPTQ / AWQ kernels: the checkpoint's scales and the kernels'
    activations are fp16), or None: a model name with GPTQ/AWQ/Int4/Int8 (Qwen/Qwen-7B-Chat-Int4), or a
    GPTQConfig/AwqConfig in the script's from_pretrained that is in force (a condition on one flag is
    followed; any other condition leaves it unknown, None)."""
    name = plan.model.known_value("name") if plan.model is not None else None
    if name is not None and isinstance(name.value, str):
        m = FP16_ONLY_NAME.search(name.value.strip())
        if m is not None:
            return Value(
                f"{name.value} ({m.group(1)}-quantized checkpoint: fp16 kernels)", name.origin, "derived"
            )
    for call in load_calls(names):
        text = call["kwargs"].get("quantization_config")
        m = FP16_ONLY_CONFIG.search(text) if isinstance(text, str) else None
        if m is None:
            continue
        branch = conditional(text, FP16_ONLY_CONFIG)
        if branch is not None:
            cond, quantized_when = branch
            v = condition_flag(plan.training, cond)
            if v is None or truth(v) != quantized_when:
                continue
        return Value(
            f"{call_where(call, 'quantization_config')} ({m.group(1)}: fp16 kernels)",
            call["location"],
            "derived",
        )
    return None


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

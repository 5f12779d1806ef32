"""Mixed precision as each file asks for it, and what is in force."""

from __future__ import annotations

from typing import Any

from advisor.provenance import Namespace, Value

MODES = {"bf16", "fp16", "fp32", "fp8"}


def _entry(ns: Namespace, dotted: str) -> Value | None:
    e = ns.lookup(dotted)
    return e if isinstance(e, Value) and e.known else None


def _truth(v: Value | None) -> bool | str | None:
    if v is None:
        return None
    if isinstance(v.value, bool):
        return v.value
    if isinstance(v.value, str):
        low = v.value.lower()
        if low in {"true", "false"}:
            return low == "true"
        return low  # "auto"
    return None


def training_mode(plan: Any) -> Value | None:
    """bf16/fp16/fp32 as TrainingArguments asks, only when written (defaults say fp32 silently)."""
    t = plan.training
    bf16, fp16 = _entry(t, "bf16"), _entry(t, "fp16")
    b, f = _truth(bf16), _truth(fp16)
    if b is True or (b == "auto" and bf16 is not None and bf16.source != "default"):
        return Value("bf16" if b is True else "auto", bf16.origin, bf16.source)
    if f is True:
        return Value("fp16", fp16.origin, fp16.source)
    explicit = [v for v in (bf16, fp16) if v is not None and v.source != "default"]
    if explicit:
        return Value("fp32", explicit[0].origin, explicit[0].source, note="bf16 and fp16 are false")
    pure = _entry(t, "pure_bf16")
    if pure is not None and pure.value is True:
        return Value("bf16", pure.origin, pure.source)
    return None


def accelerate_mode(plan: Any) -> Value | None:
    v = _entry(plan.accelerate, "mixed_precision")
    if v is None:
        return None
    raw = v.value
    mode = "fp32" if raw is False or str(raw).lower() == "no" else str(raw).lower()
    return Value(mode, v.origin, v.source)


def deepspeed_mode(plan: Any) -> Value | None:
    ds = plan.deepspeed
    for key in ("bf16.enabled", "bfloat16.enabled", "fp16.enabled"):
        v = _entry(ds, key)
        truth = _truth(v)
        if truth is True:
            return Value("fp16" if key.startswith("fp16") else "bf16", v.origin, v.source)
        if truth == "auto":
            return Value("auto", v.origin, v.source)
    explicit = [_entry(ds, k) for k in ("bf16.enabled", "fp16.enabled")]
    explicit = [v for v in explicit if v is not None]
    if explicit:
        return Value("fp32", explicit[0].origin, explicit[0].source)
    return None


def precision_facts(plan: Any, names: dict[str, Any]) -> Namespace:
    ns = Namespace("precision")
    sources = {"training": training_mode(plan), "accelerate": accelerate_mode(plan), "deepspeed": deepspeed_mode(plan)}
    for key, v in sources.items():
        if v is not None:
            ns.set(key, v)
    # What is in force: TrainingArguments' bf16/fp16 override accelerate's env; DeepSpeed 'auto' follows.
    in_force = sources["training"] or sources["accelerate"] or sources["deepspeed"]
    if in_force is not None and in_force.value != "auto":
        ns.set("mode", in_force)
    explicit = {k: v for k, v in sources.items() if v is not None and v.value in MODES}
    modes = {v.value for v in explicit.values()}
    conflicts = []
    if len(modes) > 1:
        first, *rest = explicit.items()
        for name, v in rest:
            if v.value != first[1].value:
                conflicts.append({"location": v.origin, "mode": v.value, "source": name,
                                  "other": first[0], "other_mode": first[1].value,
                                  "other_location": first[1].origin})
    ns.set("conflicts", Value(conflicts, None, "derived"))
    tf32 = _entry(plan.training, "tf32")
    if tf32 is not None and _truth(tf32) is True:
        ns.set("tf32", tf32)
    hw = names.get("hardware")
    ns.set("bf16_hardware", Value(bool(hw and hw.bf16), None, "hardware"))
    return ns

"""Mixed precision as each file asks for it, what is in force, and where the files disagree.

Who wins (transformers 4.x/5.x `TrainingArguments.__post_init__`, HF and accelerate DeepSpeed
integrations):
- `accelerate launch` exports ACCELERATE_MIXED_PRECISION; TrainingArguments' fp16/bf16, when set,
  silently replace it (tf5 training_args.py:1612-1618). Unset, accelerate's value is in force.
- A DeepSpeed JSON's `fp16.enabled` / `bf16.enabled` of "auto" follow TrainingArguments; any other
  value must equal TrainingArguments' (fp16|fp16_full_eval, bf16|bf16_full_eval; the defaults are
  False), or `trainer.train()` raises
  "ds fp16.enabled=True vs hf fp16|fp16_full_eval+fp16_backend(amp)=False".
- accelerate with DeepSpeed: `--mixed_precision bf16` while the DeepSpeed JSON enables fp16 (or the
  reverse) raises "`--mixed_precision` arg cannot be set to `bf16` when `fp16` is set in the
  DeepSpeed config file" (accelerate DeepSpeedPlugin.set_mixed_precision).
- DeepSpeed itself asserts "bfloat16 and fp16 modes cannot be simultaneously enabled";
  TrainingArguments raises "At most one of fp16 and bf16 can be True, but not both".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.core.provenance import Value
from advisor.facts.declare import ANY, FactNamespace, fact
from advisor.facts.model_naming import fp16_only_base

if TYPE_CHECKING:
    from advisor.facts.hardware import HardwareFacts
    from advisor.facts.training_script import TrainingScriptFacts
    from advisor.plan.run_plan import RunPlan


class PrecisionFacts(
    FactNamespace, name="precision", doc="The precision each config asks for and the one in force."
):
    training = fact(str, "precision TrainingArguments asks for (bf16, fp16, no)")
    accelerate = fact(str, "mixed_precision of the accelerate config")
    deepspeed = fact(str, "precision the DeepSpeed config enables")
    mode = fact(str, "the precision in force")
    conflicts = fact(
        list[dict],
        "configs that ask for different precisions",
        items=("detail", "fix_here", "kind", "location", "related", "severity"),
    )
    ds_auto_bf16 = fact(ANY, "DeepSpeed bf16.enabled is auto (filled by the Trainer)")
    ds_auto_fp16 = fact(ANY, "DeepSpeed fp16.enabled is auto (filled by the Trainer)")
    bf16_requests = fact(
        list[dict], "settings that ask for bf16", items=("key", "location", "raises", "source", "what")
    )
    tf32 = fact(bool, "tf32 as TrainingArguments asks for it")
    bf16_hardware = fact(bool, "the machine's GPUs compute in bf16")
    fp16_only_base = fact(
        str, "why the base model runs in fp16 only (a GPTQ/AWQ checkpoint or config), unset otherwise"
    )


MODES = {"bf16", "fp16", "fp32", "fp8"}


def _truth(v: Value | None) -> bool | str | None:
    if v is None:
        return None
    if isinstance(v.value, bool):
        return v.value
    if isinstance(v.value, str):
        low = v.value.strip().lower()
        if low in {"true", "yes", "1"}:
            return True
        if low in {"false", "no", "0"}:
            return False
        return low  # "auto"
    if isinstance(v.value, int):
        return bool(v.value)
    return None


def _written(v: Value | None) -> bool:
    return v is not None and v.source != "default"


def training_mode(plan: RunPlan) -> Value | None:
    """bf16/fp16/fp32 as TrainingArguments asks, only when written (defaults say fp32 silently).
    axolotl's `bf16: auto` gives "auto" (bf16 where the GPU has it)."""
    t = plan.training
    bf16, fp16 = t.known_value("bf16"), t.known_value("fp16")
    b, f = _truth(bf16), _truth(fp16)
    if b is True and _written(bf16):
        assert bf16 is not None
        return Value("bf16", bf16.origin, bf16.source)
    if f is True and _written(fp16):
        assert fp16 is not None
        return Value("fp16", fp16.origin, fp16.source)
    if b == "auto" and _written(bf16):
        assert bf16 is not None
        return Value("auto", bf16.origin, bf16.source)
    pure = t.known_value("pure_bf16")
    if pure is not None and _truth(pure) is True:
        return Value("bf16", pure.origin, pure.source)
    explicit = [v for v in (bf16, fp16) if v is not None and _written(v) and _truth(v) is False]
    if explicit:
        return Value("fp32", explicit[0].origin, explicit[0].source, note="bf16 and fp16 are false")
    return None


def accelerate_mode(plan: RunPlan) -> Value | None:
    v = plan.accelerate.known_value("mixed_precision")
    if v is None:
        return None
    raw = v.value
    mode = "fp32" if raw is False or str(raw).lower() in {"no", "false"} else str(raw).lower()
    return Value(mode, v.origin, v.source)


def deepspeed_mode(plan: RunPlan) -> Value | None:
    """The DeepSpeed JSON's own choice: bf16/fp16 when enabled is true, "auto" when it defers to
    TrainingArguments, fp32 when an enabled flag is written false and nothing is on."""
    ds = plan.deepspeed
    autos: list[Value] = []
    for key in ("bf16.enabled", "bfloat16.enabled", "fp16.enabled"):
        v = ds.known_value(key)
        truth = _truth(v)
        if truth is True:
            assert v is not None
            return Value("fp16" if key.startswith("fp16") else "bf16", v.origin, v.source)
        if truth == "auto" and v is not None:
            autos.append(v)
    if autos:
        return Value("auto", autos[0].origin, autos[0].source)
    explicit = [v for k in ("bf16.enabled", "fp16.enabled") if (v := ds.known_value(k)) is not None]
    if explicit:
        return Value("fp32", explicit[0].origin, explicit[0].source)
    return None


def _ds_flags(plan: RunPlan) -> dict[str, Value]:
    """DeepSpeed's fp16.enabled / bf16.enabled as written (not "auto")."""
    out = {}
    for dtype, keys in (("fp16", ("fp16.enabled",)), ("bf16", ("bf16.enabled", "bfloat16.enabled"))):
        for key in keys:
            v = plan.deepspeed.known_value(key)
            if v is not None and _truth(v) in (True, False):
                out[dtype] = v
                break
    return out


def _has_training_arguments(plan: RunPlan) -> bool:
    from advisor.facts.batch import has_training_arguments

    return has_training_arguments(plan)


def precision_conflicts(plan: RunPlan) -> list[dict[str, Any]]:
    """GA504's evidence: one item per pair of files that disagree, with what the consumer does."""
    out: list[dict[str, Any]] = []
    t = plan.training
    bf16, fp16 = t.known_value("bf16"), t.known_value("fp16")
    ta = training_mode(plan)
    acc = accelerate_mode(plan)
    ds_flags = _ds_flags(plan)

    def add(at: Value, other: Value | None, severity: str, kind: str, detail: str) -> None:
        out.append(
            {
                "location": at.origin,
                "related": [other.origin] if other is not None and other.origin else [],
                "severity": severity,
                "kind": kind,
                "detail": detail,
            }
        )

    # TrainingArguments against itself
    if _truth(bf16) is True and _truth(fp16) is True and _written(bf16) and _written(fp16):
        assert bf16 is not None and fp16 is not None
        add(
            fp16,
            bf16,
            "error",
            "ta_both",
            "fp16 and bf16 are both true: TrainingArguments raises "
            "'At most one of fp16 and bf16 can be True, but not both'",
        )
    # the DeepSpeed JSON against itself
    if all(_truth(ds_flags.get(d)) is True for d in ("fp16", "bf16")):
        add(
            ds_flags["bf16"],
            ds_flags["fp16"],
            "error",
            "ds_both",
            "fp16.enabled and bf16.enabled are both true: DeepSpeed asserts 'bfloat16 and fp16 modes cannot "
            "be simultaneously enabled'",
        )
    # the DeepSpeed JSON against TrainingArguments (HF's fill_match; defaults are False)
    if plan.spec.deepspeed is not None and _has_training_arguments(plan):
        hf = {
            "fp16": _truth(fp16) is True,
            "bf16": _truth(bf16) is True or (ta is not None and ta.value == "bf16"),
        }
        hf_src = {"fp16": fp16, "bf16": bf16 if _written(bf16) else (ta if ta is not None else bf16)}
        for dtype, v in ds_flags.items():
            want = _truth(v)
            if want != hf[dtype]:
                other = hf_src[dtype]
                written = other is not None and _written(other)
                add(
                    v,
                    other if written else None,
                    "error",
                    "ds_vs_ta",
                    f"ds {dtype}.enabled={want} vs hf {dtype}={hf[dtype]}"
                    + ("" if written else " (the default)")
                    + ": the Trainer raises ValueError at train()",
                )
    # accelerate's mixed_precision against the DeepSpeed JSON (accelerate raises)
    if acc is not None and acc.value in {"fp16", "bf16", "fp8"} and ds_flags:
        mine = "fp16" if acc.value == "fp16" else "bf16"
        other_dtype = "bf16" if mine == "fp16" else "fp16"
        other = ds_flags.get(other_dtype)
        ta_16bit = ta is not None and ta.value in {"fp16", "bf16"}
        if other is not None and _truth(other) is True and not ta_16bit:
            add(
                acc,
                other,
                "error",
                "accelerate_vs_ds",
                f"mixed_precision {acc.value} while the DeepSpeed file enables {other_dtype}: "
                f"accelerate raises '--mixed_precision arg cannot be set to {acc.value} when {other_dtype} "
                "is set in the DeepSpeed "
                "config file'",
            )
    # accelerate against TrainingArguments (TrainingArguments silently wins)
    if (
        acc is not None
        and ta is not None
        and ta.value in {"bf16", "fp16"}
        and acc.value in MODES
        and acc.value != ta.value
    ):
        shown = "'no'" if acc.value == "fp32" else acc.value
        add(
            acc,
            ta,
            "warning",
            "accelerate_vs_ta",
            f"accelerate mixed_precision {shown} vs TrainingArguments {ta.value}: TrainingArguments "
            f"silently replaces accelerate's setting, so {ta.value} is in force",
        )
    return out


def bf16_requests(plan: RunPlan) -> list[dict[str, Any]]:
    """Every explicit request for bf16 or tf32 (GA501's evidence)."""
    out: list[dict[str, Any]] = []
    t = plan.training
    for key, what in (("bf16", "bf16"), ("bf16_full_eval", "bf16"), ("pure_bf16", "bf16"), ("tf32", "tf32")):
        v = t.known_value(key)
        if v is not None and _written(v) and _truth(v) is True:
            out.append(
                {
                    "location": v.origin,
                    "what": what,
                    "key": key,
                    "source": "TrainingArguments",
                    "raises": True,
                }
            )
    acc = accelerate_mode(plan)
    if acc is not None and acc.value == "bf16":
        out.append(
            {
                "location": acc.origin,
                "what": "bf16",
                "key": "mixed_precision",
                "source": "accelerate",
                "raises": False,
            }
        )
    v = _ds_flags(plan).get("bf16")
    if v is not None and _truth(v) is True:
        out.append(
            {
                "location": v.origin,
                "what": "bf16",
                "key": "bf16.enabled",
                "source": "DeepSpeed",
                "raises": False,
            }
        )
    return out


def in_force_mode(sources: dict[str, Value | None]) -> Value:
    """The precision the run trains in, when the files say it: TrainingArguments (when written)
    replace accelerate's setting; a DeepSpeed value that is not "auto" is used as written (with
    accelerate's mixed_precision 'no', DeepSpeed's own fp16/bf16 block still applies); accelerate's
    mixed_precision otherwise. "auto" anywhere in the deciding place leaves it unknown."""
    ta, acc, ds = sources["training"], sources["accelerate"], sources["deepspeed"]
    if ta is not None and ta.value == "auto":
        return Value(None, ta.origin, ta.source, unknown="bf16: auto")
    if ta is not None and ta.value != "fp32":
        return ta
    if ds is not None and ds.value in {"bf16", "fp16"}:
        return ds
    if acc is not None and acc.value != "fp32":
        return acc  # bf16/fp16 false in TrainingArguments keep ACCELERATE_MIXED_PRECISION
    if ta is not None:
        return ta
    if acc is not None:
        return acc
    if ds is not None and ds.value != "auto":
        return ds
    return Value(None, None, "derived", unknown="no file sets the precision")


def ds_auto_edits(plan: RunPlan) -> dict[str, Value]:
    """GA504's fix for a DeepSpeed file that disagrees with TrainingArguments: where to write
    "auto" for fp16 and for bf16. An existing `enabled` is replaced; a missing block is added as
    {"enabled": "auto"} (harmless: the HF Trainer fills it from TrainingArguments)."""
    doc = plan.spec.deepspeed
    if doc is None:
        return {}
    from advisor.core.document import Location

    out = {}
    for dtype, blocks in (("fp16", ("fp16",)), ("bf16", ("bf16", "bfloat16"))):
        for block in blocks:
            v = plan.deepspeed.lookup(f"{block}.enabled")
            if isinstance(v, Value) and v.origin is not None and v.origin.key:
                out[dtype] = Value("auto", v.origin, "derived")
                break
            parent = plan.deepspeed.lookup(block)
            if parent is not None:
                break  # a block that is not a mapping, or has no `enabled`: leave it to the user
        else:
            out[dtype] = Value({"enabled": "auto"}, Location(doc.path, 1, 1, f"/{dtype}"), "derived")
    return out


def precision_facts(plan: RunPlan, hardware: HardwareFacts, script: TrainingScriptFacts) -> PrecisionFacts:
    names: dict[str, Any] = {"hardware": hardware, "script": script}  # what the dtype helpers read
    ns = PrecisionFacts()
    sources = {
        "training": training_mode(plan),
        "accelerate": accelerate_mode(plan),
        "deepspeed": deepspeed_mode(plan),
    }
    for key, v in sources.items():
        if v is not None:
            ns.set(key, v)
    # What is in force: TrainingArguments' bf16/fp16 override accelerate's env; DeepSpeed "auto" follows.
    ns.mode = in_force_mode(sources)
    conflicts = precision_conflicts(plan)
    ns.conflicts = Value(conflicts, None, "derived")
    ds_items = [c for c in conflicts if c["kind"] == "ds_vs_ta"]
    for i, c in enumerate(ds_items):
        c["fix_here"] = i == 0  # one fix sets both blocks: offer it on the first finding only
    if ds_items:
        for dtype, v in ds_auto_edits(plan).items():
            ns.set(f"ds_auto_{dtype}", v)
    ns.bf16_requests = Value(bf16_requests(plan), None, "derived")
    tf32 = plan.training.known_value("tf32")
    if tf32 is not None and _truth(tf32) is True:
        ns.tf32 = tf32
    hw = hardware
    ns.bf16_hardware = Value(bool(hw and hw.bf16), None, "hardware")
    fp16_only = fp16_only_base(plan, names)
    if fp16_only is not None:
        ns.fp16_only_base = fp16_only
    return ns

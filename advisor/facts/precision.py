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

import re
from dataclasses import dataclass
from typing import Any

from advisor.provenance import Namespace, Value
from advisor.sources.document import Location

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


def training_mode(plan: Any) -> Value | None:
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
    explicit = [v for v in (bf16, fp16) if _written(v) and _truth(v) is False]
    if explicit:
        return Value("fp32", explicit[0].origin, explicit[0].source, note="bf16 and fp16 are false")
    return None


def accelerate_mode(plan: Any) -> Value | None:
    v = plan.accelerate.known_value("mixed_precision")
    if v is None:
        return None
    raw = v.value
    mode = "fp32" if raw is False or str(raw).lower() in {"no", "false"} else str(raw).lower()
    return Value(mode, v.origin, v.source)


def deepspeed_mode(plan: Any) -> Value | None:
    """The DeepSpeed JSON's own choice: bf16/fp16 when enabled is true, "auto" when it defers to
    TrainingArguments, fp32 when an enabled flag is written false and nothing is on."""
    ds = plan.deepspeed
    autos = []
    for key in ("bf16.enabled", "bfloat16.enabled", "fp16.enabled"):
        v = ds.known_value(key)
        truth = _truth(v)
        if truth is True:
            assert v is not None
            return Value("fp16" if key.startswith("fp16") else "bf16", v.origin, v.source)
        if truth == "auto":
            autos.append(v)
    if autos:
        return Value("auto", autos[0].origin, autos[0].source)
    explicit = [ds.known_value(k) for k in ("bf16.enabled", "fp16.enabled")]
    explicit = [v for v in explicit if v is not None]
    if explicit:
        return Value("fp32", explicit[0].origin, explicit[0].source)
    return None


def _ds_flags(plan: Any) -> dict[str, Value]:
    """DeepSpeed's fp16.enabled / bf16.enabled as written (not "auto")."""
    out = {}
    for dtype, keys in (("fp16", ("fp16.enabled",)), ("bf16", ("bf16.enabled", "bfloat16.enabled"))):
        for key in keys:
            v = plan.deepspeed.known_value(key)
            if v is not None and _truth(v) in (True, False):
                out[dtype] = v
                break
    return out


def _has_training_arguments(plan: Any) -> bool:
    from advisor.facts.batch import has_training_arguments

    return has_training_arguments(plan)


def precision_conflicts(plan: Any) -> list[dict[str, Any]]:
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
        v = ds_flags.get(other_dtype)
        if v is not None and _truth(v) is True and not (ta is not None and ta.value in {"fp16", "bf16"}):
            add(
                acc,
                v,
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


def bf16_requests(plan: Any) -> list[dict[str, Any]]:
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


def ds_auto_edits(plan: Any) -> dict[str, Value]:
    """GA504's fix for a DeepSpeed file that disagrees with TrainingArguments: where to write
    "auto" for fp16 and for bf16. An existing `enabled` is replaced; a missing block is added as
    {"enabled": "auto"} (harmless: the HF Trainer fills it from TrainingArguments)."""
    doc = plan.spec.deepspeed
    if doc is None:
        return {}
    from advisor.sources.document import Location

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


def precision_facts(plan: Any, names: dict[str, Any]) -> Namespace:
    ns = Namespace("precision")
    sources = {
        "training": training_mode(plan),
        "accelerate": accelerate_mode(plan),
        "deepspeed": deepspeed_mode(plan),
    }
    for key, v in sources.items():
        if v is not None:
            ns.set(key, v)
    # What is in force: TrainingArguments' bf16/fp16 override accelerate's env; DeepSpeed "auto" follows.
    ns.set("mode", in_force_mode(sources))
    conflicts = precision_conflicts(plan)
    ns.set("conflicts", Value(conflicts, None, "derived"))
    ds_items = [c for c in conflicts if c["kind"] == "ds_vs_ta"]
    for i, c in enumerate(ds_items):
        c["fix_here"] = i == 0  # one fix sets both blocks: offer it on the first finding only
    if ds_items:
        for dtype, v in ds_auto_edits(plan).items():
            ns.set(f"ds_auto_{dtype}", v)
    ns.set("bf16_requests", Value(bf16_requests(plan), None, "derived"))
    tf32 = plan.training.known_value("tf32")
    if tf32 is not None and _truth(tf32) is True:
        ns.set("tf32", tf32)
    hw = names.get("hardware")
    ns.set("bf16_hardware", Value(bool(hw and hw.bf16), None, "hardware"))
    return ns


# ---- the three dtype facts of a run: storage, compute, optimizer state ------------------------------
# (issue 10 section 1). Each is read from where its consumer takes it; `source` says where.


@dataclass(frozen=True, slots=True)
class DtypeFact:
    """One dtype decision: the dtype (None = unknown), where it comes from, and its position."""

    dtype: str | None
    source: str
    origin: Location | None = None
    assumed: bool = False  # not written anywhere: a default of the consumer the files do not pin


@dataclass(frozen=True, slots=True)
class RunDtypes:
    storage: DtypeFact  # base weights as held during training (fp32 | bf16 | fp16)
    trainable: DtypeFact  # trainable parameters (None: the estimator's PEFT default)
    autocast: DtypeFact  # bf16 | fp16 | off
    quantization: DtypeFact  # nf4 | int8 | None (base Linears)
    master: DtypeFact  # "fp32" when an fp32 master copy carries the optimizer, else None
    load: DtypeFact | None = None  # what from_pretrained loads, before a trainer or engine recasts it

    def sources(self) -> dict[str, str]:
        """Where each of the estimate's dtype rows (storage, trainable, compute, optimizer) comes from."""
        quant = self.quantization
        return {
            "storage": self.storage.source
            + (f"; Linear weights {quant.dtype}: {quant.source}" if quant.dtype else ""),
            "trainable": self.trainable.source,
            "compute": self.autocast.source,
            "optimizer": self.master.source
            if self.master.dtype == "fp32"
            else "follows the trainable parameters",
        }


_DTYPE_NAMES = {
    "bfloat16": "bf16",
    "bf16": "bf16",
    "float16": "fp16",
    "fp16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "fp32": "fp32",
    "float": "fp32",
    "auto": "auto",
}


def dtype_name(raw: object) -> str | None:
    """'torch.bfloat16', "bfloat16", 'bf16' -> 'bf16'; "auto" stays; anything else None."""
    if not isinstance(raw, str):
        return None
    low = raw.strip().strip("'\"").lower()
    low = low.removeprefix("torch.")
    return _DTYPE_NAMES.get(low)


def _written_value(ns: Namespace, *keys: str) -> Value | None:
    for key in keys:
        v = ns.known_value(key)
        if v is not None and v.source != "default":
            return v
    return None


def _where(v: Value, key: str) -> str:
    loc = v.origin
    return f"{loc.file.name}:{loc.line} {key}" if loc is not None else key


def _load_calls(names: dict[str, Any]) -> list[dict[str, Any]]:
    script = names.get("script")
    calls = script.load_calls if script is not None else None
    if not isinstance(calls, list):
        return []
    # Unsloth's FastLanguageModel.from_pretrained is not a transformers load (the estimator says so)
    return [c for c in calls if "Fast" not in str(c.get("callee", "")).split(".")[0]]


def _call_where(call: dict[str, Any], key: str) -> str:
    loc = call["location"]
    return f"{loc.file.name}:{loc.line} from_pretrained({key}=...)"


def _auto(checkpoint: str | None, why: str, origin: Location | None = None) -> DtypeFact:
    if checkpoint in {"bf16", "fp16", "fp32"}:
        return DtypeFact(checkpoint, f"{why}: the checkpoint's dtype, {checkpoint} (config.json)", origin)
    return DtypeFact(None, f"{why}: the checkpoint's dtype, not in its config.json", origin)


_TRL_IMPORT = re.compile(r"^\s*(?:from|import)\s+trl\b", re.MULTILINE)


def trl_trains(plan: Any) -> bool:
    """TRL's trainer loads and wraps the model: the `trl` launcher, a script that imports trl, or a TRL
    recipe with no script to say otherwise."""
    launcher = plan.launch.known_value("launcher") if plan.launch is not None else None
    if launcher is not None and launcher.value == "trl":
        return True
    doc = plan.spec.script
    if doc is not None and isinstance(doc.text, str):
        return bool(_TRL_IMPORT.search(doc.text[:2_000_000]))
    dialect = plan.training.known_value("dialect")
    return dialect is not None and dialect.value == "trl"


def load_dtype(plan: Any, names: dict[str, Any], checkpoint: str | None) -> DtypeFact:
    """The dtype from_pretrained loads the weights in."""
    t = plan.training
    dialect = t.known_value("dialect")
    dialect = dialect.value if dialect is not None else "hf"
    if dialect == "llamafactory":
        return _auto(
            checkpoint, "LLaMA-Factory loads with torch_dtype='auto' (llamafactory 0.9.5 loader.py:155)"
        )
    calls = _load_calls(names)
    for call in calls:  # a literal in the script is what the consumer gets
        for key in ("dtype", "torch_dtype"):
            text = call["kwargs"].get(key)
            d = dtype_name(text)
            if d == "auto":
                return _auto(checkpoint, _call_where(call, key), call["location"])
            if d is not None:
                return DtypeFact(d, _call_where(call, key), call["location"])
    for key in (
        "model_init_kwargs.dtype",
        "model_init_kwargs.torch_dtype",
        "dtype",
        "torch_dtype",
        "model_dtype",
    ):
        v = _written_value(t, key)
        d = dtype_name(v.value) if v is not None else None
        if v is not None and v.value is None:
            # `dtype: null`: TRL passes None through (trl 1.16 trainer/utils.py:1333) and from_pretrained
            # turns None into "auto" (transformers 5 modeling_utils.py:4186-4187)
            d = "auto"
        if v is not None and d == "auto":
            return _auto(checkpoint, _where(v, key), v.origin)
        if v is not None and d is not None:
            return DtypeFact(d, _where(v, key), v.origin)
    if calls and not any(c.get("star_kwargs") or {"dtype", "torch_dtype"} & set(c["kwargs"]) for c in calls):
        call = calls[0]
        # transformers 5: `dtype` defaults to "auto" (modeling_utils.py:4186-4187)
        return _auto(
            checkpoint,
            f"{_call_where(call, 'dtype').replace('dtype=...', '')} without dtype "
            "(transformers 5 default 'auto')",
            call["location"],
        )
    if not calls and trl_trains(plan):
        # TRL loads the model itself: ModelConfig.dtype defaults to "float32" (trl 1.16
        # trainer/model_config.py:89-90, scripts/sft.py:76-84; create_model_from_path trainer/utils.py:1332)
        return DtypeFact("fp32", "TRL's default dtype float32 (trl trainer/model_config.py:89)")
    if checkpoint in {"bf16", "fp16", "fp32"}:
        return DtypeFact(
            checkpoint,
            f"no dtype written and the loading script unknown: transformers 5's from_pretrained default "
            f"'auto' assumed, the checkpoint's {checkpoint}",
            assumed=True,
        )
    return DtypeFact(None, "no dtype/torch_dtype in the files, and no training script that loads the model")


def quantization(plan: Any, names: dict[str, Any]) -> DtypeFact:
    """nf4 / int8 base weights (bitsandbytes), from the recipe's flags or the script's from_pretrained."""
    t = plan.training
    for keys, kind in (
        (("load_in_4bit", "use_4bit_quantization", "q_lora"), "nf4"),
        (("load_in_8bit", "use_8bit_quantization"), "int8"),
    ):
        v = _written_value(t, *keys)
        if v is not None and _truth(v) is True:
            key = next((k for k in keys if t.known_value(k) is v), keys[0])
            return DtypeFact(kind, _where(v, key), v.origin)
    v = _written_value(t, "quantization_bit", "bits")
    if v is not None and str(v.value).strip() in {"4", "8"}:
        kind = "nf4" if str(v.value).strip() == "4" else "int8"
        return DtypeFact(kind, _where(v, "quantization_bit"), v.origin)
    for call in _load_calls(names):
        text = " ".join(f"{k}={x}" for k, x in call["kwargs"].items())
        if re.search(r"load_in_4bit\s*=\s*True", text):
            return DtypeFact("nf4", _call_where(call, "quantization_config"), call["location"])
        if re.search(r"load_in_8bit\s*=\s*True", text):
            return DtypeFact("int8", _call_where(call, "quantization_config"), call["location"])
    return DtypeFact(None, "no quantization")


def mode_fact(plan: Any, names: dict[str, Any]) -> DtypeFact:
    """The 16-bit mode the trainer asks for (bf16 | fp16), "fp32" when it asks for none, None unknown."""
    prec = names.get("precision")
    mode_v = prec.entry("mode") if prec is not None else None
    mode = mode_v.value if isinstance(mode_v, Value) else None
    origin = mode_v.origin if isinstance(mode_v, Value) else None
    if mode == "fp8":
        mode = "bf16"
    if isinstance(mode_v, Value) and not mode_v.known:
        bf16 = _written_value(plan.training, "bf16")
        if bf16 is not None and str(bf16.value).strip().lower() == "auto":
            hw = names.get("hardware")
            mode = "fp16" if (hw is not None and hw.bf16 is False) else "bf16"
            origin = bf16.origin
    if training_mode(plan) is None and trl_trains(plan):
        # TRL's configs set bf16 = not fp16 when bf16 is unset (trl 1.16 trainer/base_config.py:108), and
        # TrainingArguments' bf16 replaces accelerate's mixed_precision (training_args.py:1614-1618)
        return DtypeFact("bf16", "TRL's default bf16=True (trl trainer/base_config.py:108)")
    if mode in {"bf16", "fp16"}:
        where = f"{origin.file.name}:{origin.line}" if origin is not None else "the launcher"
        return DtypeFact(mode, f"{where} ({mode})", origin)
    reads = plan.training.known_value("reads_training_arguments")
    if mode == "fp32" or (reads is not None and reads.value):
        # TrainingArguments: mixed_precision is ACCELERATE_MIXED_PRECISION or "no" unless bf16/fp16
        # (transformers 5 training_args.py:1614-1618)
        return DtypeFact("fp32", "bf16/fp16 not set: no autocast (TrainingArguments' default)", origin)
    return DtypeFact(None, "no file sets the precision")


def autocast_fact(plan: Any, names: dict[str, Any], deepspeed: bool) -> DtypeFact:
    """Autocast on (in which dtype) or off, as the trainer decides it."""
    mode = mode_fact(plan, names)
    if deepspeed:
        # accelerate enables native AMP only outside DeepSpeed (accelerate 1.15 accelerator.py:566-600): the
        # engine casts the module to its fp16/bf16 dtype instead
        return DtypeFact("off", "DeepSpeed: no autocast, the engine casts the module", mode.origin)
    if mode.dtype == "fp32":
        return DtypeFact("off", mode.source, mode.origin)
    return mode


_KBIT_PREPARE = re.compile(r"\bprepare_model_for_kbit_training\s*\(")


def kbit_preparation(plan: Any) -> DtypeFact:
    """Whether PEFT's prepare_model_for_kbit_training runs on a quantized base (it casts every
    non-quantized parameter to fp32 and turns on gradient checkpointing): "yes" / "no" / None unknown."""
    dialect = plan.training.known_value("dialect")
    if dialect is not None and dialect.value == "llamafactory":
        # LLaMA-Factory's own prepare_model_for_training upcasts only layer norms, on request
        # (llamafactory 0.9.5 model/model_utils/checkpointing.py:143-155)
        return DtypeFact("no", "LLaMA-Factory does not call prepare_model_for_kbit_training")
    doc = plan.spec.script
    if doc is not None and isinstance(doc.text, str):
        if _KBIT_PREPARE.search(doc.text[:2_000_000]):
            return DtypeFact("yes", f"{doc.path.name} calls prepare_model_for_kbit_training")
        if _TRL_IMPORT.search(doc.text[:2_000_000]) is None:
            return DtypeFact("no", f"{doc.path.name} does not call prepare_model_for_kbit_training")
    if trl_trains(plan):
        # TRL's SFTTrainer wraps a quantized model with get_peft_model only (trl 1.16 sft_trainer.py:870)
        return DtypeFact("no", "TRL's SFTTrainer does not call prepare_model_for_kbit_training")
    return DtypeFact(None, "unknown")


def run_dtypes(
    plan: Any,
    names: dict[str, Any],
    *,
    strategy: str,
    method: str,
    checkpoint: str | None,
) -> RunDtypes:
    """Storage, trainable, compute and master dtypes of a run as its consumers resolve them."""
    t = plan.training
    dialect_v = t.known_value("dialect")
    dialect = dialect_v.value if dialect_v is not None else "hf"
    deepspeed = strategy in {"zero0", "zero1", "zero2", "zero3"}
    compute = autocast_fact(plan, names, deepspeed)
    quant = quantization(plan, names)
    if dialect == "axolotl":
        d = (
            compute.dtype
            if compute.dtype in {"bf16", "fp16"}
            else ("fp32" if compute.dtype == "off" else None)
        )
        load = DtypeFact(d, "axolotl loads the model in the training dtype (bf16/fp16)", compute.origin)
    else:
        load = load_dtype(plan, names, checkpoint)
    storage = load
    trainable = DtypeFact(None, "PEFT default" if method != "full" else "as stored")
    pure = _written_value(t, "pure_bf16", "use_badam")
    lf_upcast = (
        dialect == "llamafactory"
        and not (pure is not None and _truth(pure) is True)
        and not (strategy == "zero3" and quant.dtype is None)
    )
    if lf_upcast:
        # LLaMA-Factory casts the trainable parameters to fp32 unless pure_bf16 / BAdam / ZeRO-3
        # (llamafactory 0.9.5 model/adapter.py:313-325)
        trainable = DtypeFact("fp32", "LLaMA-Factory upcasts trainable parameters to fp32 (adapter.py:325)")
        if method == "full":
            storage = DtypeFact("fp32", trainable.source)
    elif method != "full":
        off = _written_value(t, "autocast_adapter_dtype")
        if off is not None and _truth(off) is False and storage.dtype is not None:
            trainable = DtypeFact(storage.dtype, _where(off, "autocast_adapter_dtype"), off.origin)
        elif quant.dtype is not None and trl_trains(plan):
            # TRL casts the adapters of a quantized model to bf16 (trl 1.16 trainer/sft_trainer.py:908-911)
            trainable = DtypeFact("bf16", "TRL casts QLoRA adapters to bf16 (sft_trainer.py:908)")
    fsdp = strategy in {"fsdp", "fsdp_grad_op"}
    if fsdp and method == "full" and quant.dtype is None and compute.dtype in {"bf16", "fp16"}:
        # accelerate holds FSDP's trainable parameters in fp32 when mixed precision is on, whatever the load
        # dtype (accelerate 1.15 utils/fsdp_utils.py:814-820 for FSDP2, accelerator.py:1997-2038 for FSDP1);
        # MixedPrecision's param_dtype gathers them in the compute dtype
        why = f"accelerate upcasts FSDP's trainable parameters to fp32 under {compute.dtype} mixed precision"
        storage = DtypeFact("fp32", why)
        trainable = DtypeFact("fp32", why)
    master = DtypeFact(None, "none: the optimizer runs on the parameters")
    if deepspeed:
        ds = deepspeed_mode(plan)
        ds_dtype = ds.value if ds is not None and ds.value in {"bf16", "fp16"} else None
        if ds_dtype is None and (ds is None or ds.value == "auto"):
            # "auto", or no DeepSpeed JSON (accelerate's deepspeed_config): the HF integration / accelerate's
            # DeepSpeedPlugin fill bf16/fp16.enabled from the precision in force
            mode = mode_fact(plan, names).dtype
            ds_dtype = mode if mode in {"bf16", "fp16"} else None
        if ds_dtype is not None:
            # the engine casts every parameter (deepspeed 0.19.8 runtime/engine.py:2080-2088) and keeps an
            # fp32 master partition of the trainable ones (runtime/bf16_optimizer.py:182)
            where = f" ({ds.origin.file.name}:{ds.origin.line})" if ds is not None and ds.origin else ""
            storage = DtypeFact(ds_dtype, f"DeepSpeed {ds_dtype}{where}: the engine casts the module")
            trainable = DtypeFact(ds_dtype, storage.source)
            master = DtypeFact("fp32", "DeepSpeed fp32 master copy of the trainable parameters")
            compute = DtypeFact("off", f"DeepSpeed {ds_dtype}: no autocast, the module runs in {ds_dtype}")
    return RunDtypes(
        storage=storage, trainable=trainable, autocast=compute, quantization=quant, master=master, load=load
    )

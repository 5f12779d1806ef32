"""The three dtype facts of a run (issue 10 section 1), each read from where its consumer takes it:

storage    the dtype the base weights are held in during training: what from_pretrained loads (a literal in
           the script, model_init_kwargs / dtype / torch_dtype in the recipe, TRL's float32 default,
           transformers 5's "auto"), then what a trainer or engine recasts (LLaMA-Factory's fp32 upcast of
           trainable parameters, accelerate's fp32 FSDP shards under mixed precision, DeepSpeed's module cast)
trainable  the trainable parameters (PEFT's fp32 adapters, TRL's bf16 QLoRA adapters, DeepSpeed's cast)
compute    autocast on (bf16 / fp16) or off (DeepSpeed, TrainingArguments without bf16/fp16)
master     an fp32 master copy that carries the optimizer state (DeepSpeed)

Every fact carries `source`, the file:line or the upstream default it follows, for `gpu-advise estimate`.
Nothing here executes the script: its from_pretrained keyword arguments come from the script facts (AST).
"""

from __future__ import annotations

import re
from typing import Any

from advisor.core.document import Location
from advisor.core.lazy_pattern import LazyPattern
from advisor.core.provenance import Value
from advisor.core.records import record
from advisor.facts.load_calls import (
    bnb_kind,
    call_fields,
    call_where,
    condition_flag,
    conditional,
    field_value,
    load_calls,
    written_value,
)
from advisor.facts.namespace_entries import integer, value_at
from advisor.facts.precision import _truth, deepspeed_mode, training_mode
from advisor.plan.run_plan import RunPlan
from advisor.sources import launchers

__all__ = [
    "DtypeFact",
    "RunDtypes",
    "autocast_fact",
    "double_quant",
    "dtype_name",
    "kbit_preparation",
    "load_dtype",
    "mode_fact",
    "quant_storage",
    "quantization",
    "run_dtypes",
    "trl_release",
    "trl_trains",
]


@record(frozen=True, slots=True)
class DtypeFact:
    """One dtype decision: the dtype (None = unknown), where it comes from, and its position."""

    dtype: str | None
    source: str
    origin: Location | None = None
    assumed: bool = False  # not written anywhere: a default of the consumer the files do not pin


@record(frozen=True, slots=True)
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


def _where(v: Value, key: str) -> str:
    loc = v.origin
    return f"{loc.file.name}:{loc.line} {key}" if loc is not None else key


def _auto(checkpoint: str | None, why: str, origin: Location | None = None) -> DtypeFact:
    if checkpoint in {"bf16", "fp16", "fp32"}:
        return DtypeFact(checkpoint, f"{why}: the checkpoint's dtype, {checkpoint} (config.json)", origin)
    return DtypeFact(None, f"{why}: the checkpoint's dtype, not in its config.json", origin)


_TRL_IMPORT = LazyPattern(r"^\s*(?:from|import)\s+trl\b", re.MULTILINE)


def trl_trains(plan: RunPlan) -> bool:
    """TRL's trainer loads and wraps the model: the `trl` launcher, a script that imports trl, or a TRL
    recipe with no script to say otherwise."""
    launcher = plan.launch.known_value("launcher") if plan.launch is not None else None
    if launcher is not None and launchers.spec_of(launcher.value).runs_trl:
        return True
    doc = plan.spec.script
    if doc is not None and isinstance(doc.text, str):
        return bool(_TRL_IMPORT.search(doc.text[:2_000_000]))
    dialect = plan.training.known_value("dialect")
    return dialect is not None and dialect.value == "trl"


def load_dtype(plan: RunPlan, names: dict[str, Any], checkpoint: str | None) -> DtypeFact:
    """The dtype from_pretrained loads the weights in."""
    t = plan.training
    known = t.known_value("dialect")
    dialect = known.value if known is not None else "hf"
    if dialect == "llamafactory":
        return _auto(
            checkpoint, "LLaMA-Factory loads with torch_dtype='auto' (llamafactory 0.9.5 loader.py:155)"
        )
    calls = load_calls(names)
    for call in calls:  # a literal in the script is what the consumer gets
        fields = call_fields(plan, call)
        for key in ("dtype", "torch_dtype"):
            text = call["kwargs"].get(key)
            d = dtype_name(text)
            where = call_where(call, key)
            if d is None and key in fields:
                # `torch_dtype=model_args.torch_dtype`: the run's flag, else the dataclass default
                v = field_value(plan, fields[key])
                d = dtype_name(v.value) if v is not None else None
                where = f"{where} as {v.note}" if v is not None else where
            if d == "auto":
                return _auto(checkpoint, where, call["location"])
            if d is not None:
                return DtypeFact(d, where, call["location"])
    for key in (
        "model_init_kwargs.dtype",
        "model_init_kwargs.torch_dtype",
        "dtype",
        "torch_dtype",
        "model_dtype",
    ):
        v = written_value(t, key)
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
            f"{call_where(call, 'dtype').replace('dtype=...', '')} without dtype "
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


def quantization(plan: RunPlan, names: dict[str, Any]) -> DtypeFact:
    """nf4 / int8 base weights (bitsandbytes), from the recipe's flags or the script's from_pretrained."""
    t = plan.training
    for keys, kind in (
        (("load_in_4bit", "use_4bit_quantization", "q_lora"), "nf4"),
        (("load_in_8bit", "use_8bit_quantization"), "int8"),
    ):
        v = written_value(t, *keys)
        if v is not None and _truth(v) is True:
            key = next((k for k in keys if t.known_value(k) is v), keys[0])
            return DtypeFact(kind, _where(v, key), v.origin)
    v = written_value(t, "quantization_bit", "bits")
    if v is not None and str(v.value).strip() in {"4", "8"}:
        kind = "nf4" if str(v.value).strip() == "4" else "int8"
        return DtypeFact(kind, _where(v, "quantization_bit"), v.origin)
    for call in load_calls(names):
        fields = call_fields(plan, call)
        for flag, kind in (("load_in_4bit", "nf4"), ("load_in_8bit", "int8")):
            # `load_in_4bit=script_args.load_in_4bit`, `BitsAndBytesConfig(load_in_4bit=args.load_in_4bit)`:
            # the run's flag, else the dataclass default
            for key in (flag, f"quantization_config.{flag}"):
                v = field_value(plan, fields[key]) if key in fields else None
                if v is not None and _truth(v) is True:
                    return DtypeFact(kind, f"{call_where(call, key)} as {v.note}", call["location"])
        for key, text in call["kwargs"].items():
            # `from_pretrained(..., load_in_8bit=True)` itself (transformers < 5 accepts the keyword and
            # builds the BitsAndBytesConfig: modeling_utils.py from_pretrained), or in quantization_config=
            bnb = bnb_kind(f"{key}={text}") if key in ("load_in_4bit", "load_in_8bit") else bnb_kind(text)
            if bnb is None:
                continue
            branch = conditional(text)
            if branch is None:
                return DtypeFact(bnb, call_where(call, key), call["location"])
            # `BitsAndBytesConfig(...) if lora_args.q_lora else None` (FastChat train_lora.py:138-145): the
            # config is in force only when the condition holds; follow the flag when the run writes it
            cond, quantized_when = branch
            v = condition_flag(t, cond)
            flag = cond.rsplit(".", 1)[-1]
            truth = _truth(v) if v is not None else None
            if v is None or truth is None:
                return DtypeFact(
                    "unknown",
                    f"unknown, because it depends on {cond} ({call_where(call, key)})",
                    call["location"],
                )
            if truth == quantized_when:
                return DtypeFact(bnb, f"{call_where(call, key)} as {_where(v, flag)}", call["location"])
    return DtypeFact(None, "no quantization")


def quant_storage(plan: RunPlan, names: dict[str, Any]) -> DtypeFact:
    """bnb_4bit_quant_storage: a float dtype lets FSDP2 shard the 4-bit weights; None = uint8 (default)."""
    t = plan.training
    dialect = t.known_value("dialect")
    if dialect is not None and dialect.value == "llamafactory":
        # llamafactory 0.9.5 model/model_utils/quantization.py:178 stores 4-bit weights in the compute dtype
        return DtypeFact(
            "bf16", "LLaMA-Factory stores 4-bit weights in the compute dtype (quantization.py:178)"
        )
    v = written_value(t, "bnb_4bit_quant_storage")
    if v is not None and dtype_name(v.value) in {"bf16", "fp16", "fp32"}:
        return DtypeFact(dtype_name(v.value), _where(v, "bnb_4bit_quant_storage"), v.origin)
    for call in load_calls(names):
        m = re.search(
            r"bnb_4bit_quant_storage\s*=\s*([\w.'\"]+)", call["kwargs"].get("quantization_config", "")
        )
        if m is not None and dtype_name(m.group(1)) in {"bf16", "fp16", "fp32"}:
            return DtypeFact(
                dtype_name(m.group(1)), call_where(call, "quantization_config"), call["location"]
            )
    return DtypeFact(None, "bnb_4bit_quant_storage not set: uint8")


_DOUBLE_QUANT = LazyPattern(r"bnb_4bit_use_double_quant\s*=\s*(True|False|[\w.]+)")


def double_quant(plan: RunPlan, names: dict[str, Any]) -> DtypeFact:
    """Whether bitsandbytes' 4-bit weights use double quantization ("yes" / "no"): it is off by default
    in HF's BitsAndBytesConfig (transformers 5.24 utils/quantization_config.py:450) and in TRL
    (ModelConfig.use_bnb_nested_quant False, trl 0.26 trainer/model_config.py:175, utils.py:666); on in
    axolotl's QLoRA config (loaders/model.py:718@067b021c) and LLaMA-Factory's double_quantization."""
    t = plan.training
    dialect_v = t.known_value("dialect")
    dialect = dialect_v.value if dialect_v is not None else "hf"
    for key in ("use_bnb_nested_quant", "bnb_4bit_use_double_quant", "double_quantization"):
        v = written_value(t, key)
        if v is not None and _truth(v) is not None:
            return DtypeFact("yes" if _truth(v) else "no", _where(v, key), v.origin)
    for call in load_calls(names):
        m = _DOUBLE_QUANT.search(call["kwargs"].get("quantization_config", ""))
        if m is not None and m.group(1) in ("True", "False"):
            return DtypeFact(
                "yes" if m.group(1) == "True" else "no",
                call_where(call, "quantization_config"),
                call["location"],
            )
    if dialect == "axolotl":
        return DtypeFact("yes", "axolotl's QLoRA config sets double quantization (loaders/model.py:718)")
    if dialect == "llamafactory":
        return DtypeFact("yes", "LLaMA-Factory's double_quantization default True (hparams/model_args.py)")
    return DtypeFact(
        "no",
        "double quantization off: the BitsAndBytesConfig / TRL default (quantization_config.py:450)",
        assumed=True,
    )


def mode_fact(plan: RunPlan, names: dict[str, Any]) -> DtypeFact:
    """The 16-bit mode the trainer asks for (bf16 | fp16), "fp32" when it asks for none, None unknown."""
    prec = names.get("precision")
    mode_v = prec.entry("mode") if prec is not None else None
    mode = mode_v.value if isinstance(mode_v, Value) else None
    origin = mode_v.origin if isinstance(mode_v, Value) else None
    if mode == "fp8":
        mode = "bf16"
    if isinstance(mode_v, Value) and not mode_v.known:
        bf16 = written_value(plan.training, "bf16")
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


def autocast_fact(plan: RunPlan, names: dict[str, Any], deepspeed: bool) -> DtypeFact:
    """Autocast on (in which dtype) or off, as the trainer decides it."""
    mode = mode_fact(plan, names)
    if deepspeed:
        # accelerate enables native AMP only outside DeepSpeed (accelerate 1.15 accelerator.py:566-600): the
        # engine casts the module to its fp16/bf16 dtype instead
        return DtypeFact("off", "DeepSpeed: no autocast, the engine casts the module", mode.origin)
    if mode.dtype == "fp32":
        return DtypeFact("off", mode.source, mode.origin)
    return mode


# peft's prepare_model_for_kbit_training, and its name before peft 0.4 (peft 0.3.0 utils/other.py:35
# prepare_model_for_int8_training): the same preparation, for an 8-bit base then
_KBIT_PREPARE = LazyPattern(r"\bprepare_model_for_(?:kbit|int8)_training\s*\(")
_NO_CHECKPOINTING = LazyPattern(r"[^()]{0,400}?\buse_gradient_checkpointing\s*=\s*(\w[\w.]*)")


def kbit_checkpointing(plan: RunPlan) -> DtypeFact | None:
    """Whether the script's prepare_model_for_kbit_training (or _int8_) turns gradient checkpointing on: it
    does by default on a quantized base (peft 0.21.2 utils/other.py:158-159, 221-258:
    use_gradient_checkpointing=True -> model.gradient_checkpointing_enable(); peft 0.3.0 utils/other.py:35,
    56-68 the same for 8-bit). "on", "off" (`use_gradient_checkpointing=False`), "unknown" (a variable);
    None when the script does not call it."""
    doc = plan.spec.script
    if doc is None or not isinstance(doc.text, str):
        return None
    text = doc.text[:2_000_000]
    m = _KBIT_PREPARE.search(text)
    if m is None:
        return None
    where = f"{doc.path.name}:{text.count(chr(10), 0, m.start()) + 1} {m.group(0)[:-1].strip()}"
    arg = _NO_CHECKPOINTING.match(text, m.end())
    if arg is None:
        return DtypeFact("on", f"{where} turns gradient checkpointing on by default")
    value = arg.group(1)
    if value in ("True", "False"):
        return DtypeFact("on" if value == "True" else "off", f"{where} use_gradient_checkpointing={value}")
    return DtypeFact("unknown", f"{where} use_gradient_checkpointing={value}")


def trl_release(plan: RunPlan) -> tuple[int, int] | None:
    """The (major, minor) TRL release the run is judged against: its pin, else the current release."""
    found = package_release(plan, "trl")
    return found[0] if found is not None else None


def package_release(plan: RunPlan, package: str) -> tuple[tuple[int, int], str] | None:
    """The (major, minor) release of ``package`` the run is judged against (its pin, else the current
    release) and why that one ("pinned ==0.29.3 in requirements.txt:2", "current release")."""
    from advisor.facts import versions

    doc = plan.spec.script or plan.spec.training or plan.spec.root
    if doc is None or getattr(doc, "path", None) is None:
        return None
    checked = plan.context
    target = versions.targets_for(doc.path, checked.settings_near(doc.path), checked).get(package)
    if target is None:
        return None
    # the version targets stop at the oldest release with key data; an exact older pin is still its release
    pin = versions.pinned(package, doc.path, checked)
    exact = re.fullmatch(r"==\s*(\d+)\.(\d+)(?:\.\d+)*", pin.spec.strip()) if pin and pin.spec else None
    if exact is not None and target.pinned:
        return (int(exact.group(1)), int(exact.group(2))), target.why
    parts = [int(x) for x in re.findall(r"\d+", target.release)[:2]]
    return ((parts[0], parts[1]), target.why) if len(parts) == 2 else None


def _trl_prepares(plan: RunPlan, sharded: bool) -> bool:
    """TRL <= 0.25's SFTTrainer prepares a non-sharded 4-bit or 8-bit model itself (trl 0.25
    models/utils.py:583 prepare_peft_model); from 0.26 it only wraps it (sft_trainer.py:703)."""
    release = trl_release(plan)
    return release is not None and release <= (0, 25) and not sharded


def kbit_preparation(plan: RunPlan, sharded: bool = False) -> DtypeFact:
    """Whether PEFT's prepare_model_for_kbit_training runs on a quantized base (it casts every
    non-quantized parameter to fp32 and turns on gradient checkpointing): "yes" / "no" / None unknown;
    "norms" for TRL <= 0.25's own version, which upcasts the norms only. `sharded`: FSDP or ZeRO-3, where
    the trainers skip it (the 4-bit weights are loaded on cpu/meta)."""
    dialect = plan.training.known_value("dialect")
    if dialect is not None and dialect.value == "llamafactory":
        # LLaMA-Factory's own prepare_model_for_training upcasts only layer norms, on request
        # (llamafactory 0.9.5 model/model_utils/checkpointing.py:143-155)
        return DtypeFact("no", "LLaMA-Factory does not call prepare_model_for_kbit_training")
    if dialect is not None and dialect.value == "axolotl":
        # axolotl's LoRA/QLoRA path calls it unless QLoRA under FSDP or ZeRO-3 (axolotl
        # src/axolotl/loaders/model.py:1003-1023@067b021c)
        if sharded:
            return DtypeFact("no", "axolotl skips prepare_model_for_kbit_training under FSDP/ZeRO-3")
        return DtypeFact("yes", "axolotl calls prepare_model_for_kbit_training (loaders/model.py:1021)")
    doc = plan.spec.script
    if doc is not None and isinstance(doc.text, str):
        if _KBIT_PREPARE.search(doc.text[:2_000_000]):
            return DtypeFact("yes", f"{doc.path.name} calls prepare_model_for_kbit_training")
        if _TRL_IMPORT.search(doc.text[:2_000_000]) is None:
            return DtypeFact("no", f"{doc.path.name} does not call prepare_model_for_kbit_training")
    if trl_trains(plan):
        if _trl_prepares(plan, sharded):
            # TRL's own prepare_model_for_kbit_training casts only norm weights to fp32 (trl 0.25
            # models/utils.py:488-497), then under bf16 casts embeddings/lm_head back to bf16
            # (models/utils.py:549-556, 606-607): the residual stream stays 16-bit
            return DtypeFact(
                "norms",
                "TRL <= 0.25 prepares the quantized model itself: norms upcast to fp32 only "
                "(trl 0.25 models/utils.py:497, 583)",
            )
        # TRL's SFTTrainer wraps a quantized model with get_peft_model only (trl 0.26 sft_trainer.py:703,
        # 1.16 sft_trainer.py:870); TRL <= 0.25 skips its preparation for sharded QLoRA (models/utils.py:583)
        return DtypeFact("no", "TRL's SFTTrainer does not call prepare_model_for_kbit_training")
    return DtypeFact(None, "unknown")


def fsdp_version(plan: RunPlan) -> int:
    """accelerate's fsdp_version (1 unless a file says 2; LLaMA-Factory v1's dist_config name fsdp2)."""
    for ns, key in (
        (plan.accelerate, "fsdp_config.fsdp_version"),
        (plan.training, "fsdp_config.fsdp_version"),
        (plan.training, "fsdp_config.version"),
        (plan.training, "fsdp_version"),
    ):
        version = integer(value_at(ns, key))
        if version is not None:
            return version
    dist = value_at(plan.training, "dist_config.name")
    return 2 if dist is not None and str(dist.value).lower() == "fsdp2" else 1


def run_dtypes(
    plan: RunPlan,
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
    pure = written_value(t, "pure_bf16", "use_badam")
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
        off = written_value(t, "autocast_adapter_dtype")
        if off is not None and _truth(off) is False and storage.dtype is not None:
            trainable = DtypeFact(storage.dtype, _where(off, "autocast_adapter_dtype"), off.origin)
        elif quant.dtype is not None and trl_trains(plan):
            release = trl_release(plan)
            sharded = strategy in {"fsdp", "fsdp_grad_op", "zero3"}
            if release is not None and release <= (0, 25):
                if sharded and storage.dtype is not None:
                    # sharded QLoRA: get_peft_model(autocast_adapter_dtype=False) (trl 0.25
                    # models/utils.py:601) keeps the adapters in the load dtype
                    why = "TRL <= 0.25 sharded QLoRA: adapters in the load dtype"
                    trainable = DtypeFact(storage.dtype, why)
                # else PEFT's fp32 adapters: TRL <= 0.25 has no bf16 cast of its own
            else:
                # TRL casts the adapters of a quantized model to bf16 (trl 0.26 sft_trainer.py:713-718,
                # 1.16 trainer/sft_trainer.py:908-911)
                trainable = DtypeFact("bf16", "TRL casts QLoRA adapters to bf16 (sft_trainer.py:908)")
            if (
                release is not None
                and release <= (0, 25)
                and not sharded
                and quant.dtype == "nf4"
                and compute.dtype == "bf16"
                and storage.dtype == "fp32"
            ):
                # peft_module_casting_to_bf16 casts fp32 embeddings/lm_head to bf16 under bf16 (trl 0.25
                # models/utils.py:549-556, 606-607): the non-quantized weights and the residual are bf16
                why = "TRL <= 0.25 casts fp32 embeddings/lm_head to bf16 (models/utils.py:606)"
                storage = DtypeFact("bf16", why)
    fsdp = strategy in {"fsdp", "fsdp_grad_op"}
    from advisor.facts.axolotl_setup import fsdp2_keeps_dtype

    kept = fsdp2_keeps_dtype(plan, fsdp_version(plan)) if fsdp else None
    if kept is not None and method == "full" and storage.dtype is not None:
        storage = DtypeFact(storage.dtype, kept, storage.origin)
        trainable = DtypeFact(storage.dtype, kept, storage.origin)
    elif fsdp and method == "full" and quant.dtype is None and compute.dtype in {"bf16", "fp16"}:
        # accelerate holds FSDP's trainable parameters in fp32 when mixed precision is on, whatever the load
        # dtype (accelerate 1.15 utils/fsdp_utils.py:814-820 for FSDP2, accelerator.py:1997-2038 for FSDP1);
        # MixedPrecision's param_dtype gathers them in the compute dtype. The upcast came with accelerate
        # 0.30.0 (accelerator.py:1486-1525 `param.data = param.data.to(torch.float32)`); 0.29.3 prepares the
        # FSDP model in its load dtype.
        acc = package_release(plan, "accelerate")
        if acc is not None and acc[0] < (0, 30):
            acc_version = f"{acc[0][0]}.{acc[0][1]}"
            why = f"accelerate {acc_version} ({acc[1]}): FSDP keeps the load dtype (the fp32 upcast is 0.30+)"
            storage = DtypeFact(storage.dtype, why, storage.origin)
            trainable = DtypeFact(storage.dtype, why, storage.origin)
        else:
            why = f"accelerate upcasts FSDP's trainable parameters to fp32 under {compute.dtype} mixed "
            why += "precision"
            if acc is not None and acc[1].startswith("current") and storage.dtype in {"bf16", "fp16"}:
                why += (
                    f" (accelerate >= 0.30; not pinned, so the {acc[1]} is assumed: before 0.30 they stay "
                    f"{storage.dtype}, half the weights, gradients and Adam states)"
                )
            storage = DtypeFact("fp32", why)
            trainable = DtypeFact("fp32", why)
    # Only DeepSpeed adds an fp32 master copy here: transformers 5 dropped Apex AMP (training_args.py has no
    # fp16_opt_level / half_precision_backend), and torch AMP keeps the parameters as they are
    master = DtypeFact(None, "none: the optimizer runs on the parameters")
    if deepspeed:
        ds = deepspeed_mode(plan)
        ds_dtype = ds.value if ds is not None and ds.value in {"bf16", "fp16"} else None
        if ds_dtype is None and (ds is None or ds.value == "auto"):
            # "auto", or no DeepSpeed JSON (accelerate's deepspeed_config): the HF integration / accelerate's
            # DeepSpeedPlugin fill bf16/fp16.enabled from the precision in force
            mode = mode_fact(plan, names).dtype
            ds_dtype = mode if mode in {"bf16", "fp16"} else None
            unread = ds is None and plan.spec.deepspeed is None and mode is None
        else:
            unread = False
        if ds_dtype is None and unread:
            # No DeepSpeed JSON was read (built by the script, as DeepSpeed-Chat's get_train_ds_config, or
            # missing) and nothing else names the precision: the estimator's 16-bit assumption means
            # DeepSpeed's 16-bit engine, which casts the module and keeps fp32 master weights (deepspeed
            # 0.19.8 runtime/fp16/fused_optimizer.py:99-103, runtime/bf16_optimizer.py:182)
            storage = DtypeFact(
                "bf16",
                "DeepSpeed's precision not read (no config file): assumed its 16-bit engine, which casts "
                "the module",
                assumed=True,
            )
            trainable = DtypeFact("bf16", storage.source, assumed=True)
            master = DtypeFact(
                "fp32",
                "assumed DeepSpeed fp16/bf16: fp32 master weights (runtime/fp16/fused_optimizer.py:99)",
            )
            compute = DtypeFact("off", "DeepSpeed 16-bit: no autocast, the module runs in 16-bit")
        if ds_dtype is not None:
            # the engine casts every parameter (deepspeed 0.19.8 runtime/engine.py:2080-2088) and keeps an
            # fp32 master partition of the trainable ones (runtime/bf16_optimizer.py:182; fp16:
            # runtime/fp16/fused_optimizer.py:99-103)
            where = f" ({ds.origin.file.name}:{ds.origin.line})" if ds is not None and ds.origin else ""
            storage = DtypeFact(ds_dtype, f"DeepSpeed {ds_dtype}{where}: the engine casts the module")
            trainable = DtypeFact(ds_dtype, storage.source)
            master = DtypeFact("fp32", "DeepSpeed fp32 master copy of the trainable parameters")
            compute = DtypeFact("off", f"DeepSpeed {ds_dtype}: no autocast, the module runs in {ds_dtype}")
    return RunDtypes(
        storage=storage, trainable=trainable, autocast=compute, quantization=quant, master=master, load=load
    )

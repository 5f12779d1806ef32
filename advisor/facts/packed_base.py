"""A LoRA run whose base is a pre-quantized GPTQ / AWQ checkpoint (issue 21 section 2): its Linear weights
are packed integer codes, not the 16-bit weights the recipe's torch_dtype names; so are those of a copy
saved by bitsandbytes (unsloth/...-bnb-4bit), which loads in 4-bit without load_in_4bit.

Where the checkpoint says so: its config.json `quantization_config` (transformers writes quant_method,
bits, group_size for GPTQ: utils/quantization_config.py GPTQConfig; AutoAWQ writes quant_method "awq",
bits / w_bit and group_size / q_group_size), else the repo name's tag (advisor/estimate/model_names.py:
`-GPTQ-Int4`, `-AWQ`, `-Int4` / `-Int8`). The estimate then counts the packed bytes and the fp16 weights the
trainable kernels keep (advisor/estimate/memory/packed.py). TRL and HF Trainer do not call
prepare_model_for_kbit_training for them: TRL 0.12.0 trainer/sft_trainer.py:245-260 calls it only when
`is_loaded_in_4bit` / `is_loaded_in_8bit` (bitsandbytes loads) is set.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from advisor.estimate.memory.packed import PACKED, packed_kind

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan

__all__ = ["apply_packed_base", "packed_base"]

# a superset of the tags advisor/estimate/model_names.py _QUANTIZATIONS reads as GPTQ, AWQ, integer or
# bitsandbytes: a name without any of these has none of them
_QUANT_HINT = re.compile(r"gptq|awq|bnb|nf4|int[348]|[48]-?bit")


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def _bnb(qc: dict[str, Any]) -> str | None:
    if qc.get("load_in_4bit") is True or qc.get("_load_in_4bit") is True:
        return "nf4"
    if qc.get("load_in_8bit") is True or qc.get("_load_in_8bit") is True:
        return "int8"
    return None


def packed_base(config: dict[str, Any] | None, name: str) -> tuple[str, int | None, str] | None:
    """(estimator kind gptq4 / gptq8 / awq4, or nf4 / int8 for a checkpoint saved by bitsandbytes; group
    size or None; where it was read), or None."""
    qc = (config or {}).get("quantization_config")
    if isinstance(qc, dict) and qc.get("quant_method") == "bitsandbytes":
        kind = _bnb(qc)
        return (kind, None, "config.json quantization_config (bitsandbytes)") if kind else None
    if isinstance(qc, dict):
        method = qc.get("quant_method")
        bits = _int(qc.get("bits")) or _int(qc.get("w_bit"))
        kind = packed_kind(method if isinstance(method, str) else None, bits)
        if kind is None:
            return None
        group = _int(qc.get("group_size")) or _int(qc.get("q_group_size"))
        return (
            kind,
            group,
            f"config.json quantization_config ({method}, {bits}-bit, group {group or 'default'})",
        )
    if not _QUANT_HINT.search(name.lower()):
        return None  # no quantization tag in the name: model_names is not imported (start-up of every check)
    from advisor.estimate.model_names import parse_name

    parts = parse_name(name)
    if parts.quantization == "bitsandbytes":
        # a copy saved in bitsandbytes 4-bit (unsloth/...-bnb-4bit): it loads quantized whatever the recipe
        # says (transformers reads the checkpoint's quantization_config)
        kind = "int8" if "8bit" in (parts.quant_tag or "") else "nf4"
        return kind, None, f"the name's tag '{parts.quant_tag}'"
    if parts.quantization not in ("GPTQ", "AWQ", "integer"):
        return None
    digits = re.search(r"int([348])", parts.quant_tag or "")
    bits = int(digits.group(1)) if digits else 4
    method = "gptq" if parts.quantization in ("GPTQ", "integer") else "awq"
    kind = packed_kind(method, bits)
    if kind is None:
        return None
    how = f"the name's tag '{parts.quant_tag}'"
    if parts.quantization == "integer":
        how += (
            " (an integer-quantized upload: GPTQ packing assumed, as Qwen's -Int4/-Int8 AutoGPTQ checkpoints)"
        )
    elif not digits:
        how += " (4-bit assumed)"
    return kind, None, how + ", group size 128 assumed"


def apply_packed_base(
    setup_kw: dict[str, Any],
    config: dict[str, Any] | None,
    name: str,
    a: list[str],
    plan: RunPlan | None = None,
) -> None:
    """Turn a LoRA setup on a GPTQ/AWQ checkpoint into LoRA on that quantized base (the estimator's qlora
    method with the packed quantization), saying so; other setups are left as they are."""
    if setup_kw.get("method") != "lora" or setup_kw.get("quantization") is not None:
        return
    found = packed_base(config, name)
    if found is None:
        return
    kind, group, source = found
    if kind not in PACKED:  # saved by bitsandbytes: the QLoRA setup on its nf4 / int8 Linears
        setup_kw.update(method="qlora", quantization=kind)
        if plan is not None:  # whether the trainer runs prepare_model_for_kbit_training, as for load_in_4bit
            from advisor.facts.dtypes import kbit_preparation

            sharded = setup_kw.get("strategy") in {"fsdp", "fsdp_grad_op", "zero3"}
            prepared = kbit_preparation(plan, sharded=sharded).dtype
            setup_kw["prepare_kbit_training"] = None if prepared is None else prepared == "yes"
        if kind == "nf4":
            a.append("4-bit double quantization as the checkpoint was saved: assumed on")
        a.append(
            f"the base is a checkpoint saved in bitsandbytes {'4-bit NF4' if kind == 'nf4' else '8-bit'} "
            f"({source}): it loads quantized without load_in_4bit/8bit in the recipe; estimated as QLoRA"
        )
        return
    method, bits = PACKED[kind]
    setup_kw.update(
        method="qlora",
        quantization=kind,
        quant_group_size=group,
        prepare_kbit_training=False,
        quantized_sharded=False,  # packed codes are int32 buffers: FSDP flattens parameters only
    )
    a.append(
        f"the base is a {method} {bits}-bit checkpoint ({source}): its decoder Linears counted as packed "
        "codes + fp16 group scales, the layer being backpropagated holding them in fp16 (auto-gptq's "
        "trainable kernels); no prepare_model_for_kbit_training (TRL calls it for bitsandbytes loads only)"
    )

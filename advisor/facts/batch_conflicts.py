"""Accumulation or the micro-batch written twice (accelerate's deepspeed_config, the DeepSpeed JSON,
TrainingArguments), compared with the semantics of HF's DeepSpeed integration ("ds X vs hf Y")."""

from __future__ import annotations

from typing import Any

from advisor.core.provenance import Namespace, Value
from advisor.facts.counts import count
from advisor.facts.deepspeed_batch import deepspeed_consumer, deepspeed_scalar, is_auto
from advisor.facts.namespace_entries import value_entry
from advisor.facts.world_size import has_training_arguments
from advisor.plan.run_plan import RunPlan, coerce_text


def _hf_show(value: Any) -> str:
    return str(value)


def batch_conflicts(plan: RunPlan) -> list[dict[str, Any]]:
    """GA103's evidence. HF's DeepSpeed integration (`trainer_config_process`) fills "auto" values
    from TrainingArguments and records every other value that differs, type included, so the string
    "8" differs from the number 8; `trainer.train()` then raises with "ds X vs hf Y" lines."""
    out: list[dict[str, Any]] = []
    has_ta = has_training_arguments(plan)
    t = plan.training
    hf_accum = value_entry(t, "gradient_accumulation_steps")
    hf_micro = value_entry(t, "per_device_train_batch_size")
    ds_cfg = plan.accelerate.entry("deepspeed_config")
    ds_cfg = ds_cfg if isinstance(ds_cfg, Namespace) else Namespace("accelerate.deepspeed_config")
    acc_gas = value_entry(ds_cfg, "gradient_accumulation_steps")
    acc_file = value_entry(ds_cfg, "deepspeed_config_file")

    def hf_int(v: Value | None) -> Any:
        if v is None or not v.known:
            return None
        return coerce_text(v.value) if isinstance(v.value, str) else v.value

    def pair(ds: Value, ds_key: str, hf: Value | None, hf_key: str, kind: str, source: str) -> None:
        hv = hf_int(hf)
        if hv is None or hf is None:
            return
        dv = ds.value
        if dv == hv and type(dv) is type(hv):
            return
        default = hf.source == "default"
        out.append(
            {
                "location": ds.origin,
                "related": [hf.origin] if hf.origin is not None else [],
                "kind": kind,
                "source": source,
                "key": ds_key,
                "ds_value": dv,
                "hf_key": hf_key,
                "hf_value": hv,
                "hf_default": default,
                "string": isinstance(dv, str),
                "detail": f"ds {ds_key}={_hf_show(dv)} vs hf {hf_key}={_hf_show(hv)}",
            }
        )

    if plan.spec.deepspeed is not None and deepspeed_consumer(plan) == "hf":
        gas = deepspeed_scalar(plan, "gradient_accumulation_steps")
        if gas is not None and not is_auto(gas):
            pair(
                gas,
                "gradient_accumulation_steps",
                hf_accum,
                "gradient_accumulation_steps",
                "ds_json",
                "deepspeed",
            )
        micro = deepspeed_scalar(plan, "train_micro_batch_size_per_gpu")
        if micro is not None and not is_auto(micro) and t.auto_find_batch_size is not True:
            pair(
                micro,
                "train_micro_batch_size_per_gpu",
                hf_micro,
                "per_device_train_batch_size",
                "ds_json",
                "deepspeed",
            )

    dist = str(plan.accelerate.distributed_type or "").upper()
    if acc_gas is not None and acc_gas.known and dist == "DEEPSPEED":
        if acc_file is not None and acc_gas.source == "accelerate" and acc_file.source == "accelerate":
            out.append(
                {
                    "location": acc_gas.origin,
                    "related": [acc_file.origin] if acc_file.origin is not None else [],
                    "kind": "accelerate_with_file",
                    "source": "accelerate",
                    "key": "gradient_accumulation_steps",
                    "ds_value": acc_gas.value,
                    "hf_key": None,
                    "hf_value": None,
                    "hf_default": False,
                    "string": False,
                    "detail": "deepspeed_config.gradient_accumulation_steps beside deepspeed_config_file",
                }
            )
        elif acc_file is None and plan.spec.deepspeed is None and has_ta:
            # accelerate's DeepSpeed plugin builds the config with this value (an int, from the
            # ACCELERATE_GRADIENT_ACCUMULATION_STEPS environment variable)
            as_int = count(acc_gas)
            if as_int is not None:
                shown = Value(as_int, acc_gas.origin, acc_gas.source)
                pair(
                    shown,
                    "gradient_accumulation_steps",
                    hf_accum,
                    "gradient_accumulation_steps",
                    "accelerate",
                    "accelerate",
                )
    return out

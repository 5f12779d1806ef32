"""The estimator inputs axolotl's own behaviour decides (advisor.facts.axolotl_setup's facts), set from a run
plan: apart from those facts, since they read the dtype facts that in turn ask axolotl_setup."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.facts.axolotl_setup import cce_loss, fsdp2_syncs_each_batch, is_axolotl, kbit_recast
from advisor.facts.namespace_entries import written

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan


def apply_library_behaviour(setup_kw: dict[str, Any], plan: RunPlan, strategy: str, a: list[str]) -> None:
    """Set the estimator inputs these facts decide (the loss, the k-bit recast, FSDP2's gradient sync) in
    ``setup_kw``, each with its reason in the assumptions ``a``."""
    cce = cce_loss(plan)
    standard = setup_kw.get("loss", "standard") == "standard"
    if cce is not None and not setup_kw.get("liger_kernel") and standard:
        setup_kw["loss"] = "cce"
        a.append(cce)
    if setup_kw.get("method") == "qlora" and setup_kw.get("prepare_kbit_training"):
        why = kbit_recast(plan)
        if why is not None:
            setup_kw["kbit_recast"] = True
            a.append(why)
    if strategy in {"fsdp", "fsdp_grad_op"} and setup_kw.get("grad_accum", 1) > 1:
        from advisor.facts.dtypes import fsdp_version

        why = fsdp2_syncs_each_batch(plan, fsdp_version(plan))
        if why is not None and not setup_kw.get("sync_each_batch"):
            setup_kw["sync_each_batch"] = True
            a.append(why)


def quant_storage_of(
    plan: RunPlan, config: dict[str, Any] | None, name: str
) -> tuple[str | None, str] | None:
    """The bnb_4bit_quant_storage an axolotl QLoRA run loads with, and where it is from (None: not an axolotl
    run). axolotl builds its own BitsAndBytesConfig with bnb_4bit_quant_storage=torch.bfloat16 for a
    4-bit load (loaders/model.py:712-739@067b021c, utils/models.py:873-879@682a9cf7; bnb_config_kwargs
    updates it), but a checkpoint saved by bitsandbytes loads with its own quantization_config
    (loaders/model.py:692-711): its storage, unknown (uint8 assumed) when that config is not at hand."""
    if not is_axolotl(plan):
        return None
    from advisor.facts.dtypes import dtype_name
    from advisor.facts.packed_base import packed_base

    floats = {"bf16", "fp16", "fp32"}
    qc = (config or {}).get("quantization_config")
    if isinstance(qc, dict) and qc.get("quant_method") == "bitsandbytes":
        stored = dtype_name(qc.get("bnb_4bit_quant_storage"))
        return (stored if stored in floats else None), "the checkpoint's quantization_config"
    if packed_base(config, name) is not None:
        return None, "a pre-quantized checkpoint whose quantization_config is not at hand: uint8 assumed"
    own = written(plan.training, "bnb_config_kwargs.bnb_4bit_quant_storage")
    if own is not None:
        stored = dtype_name(own.value) if own.known else None
        return (stored if stored in floats else None), "bnb_config_kwargs"
    return "bf16", "axolotl's BitsAndBytesConfig stores 4-bit weights in bf16 (loaders/model.py:720)"

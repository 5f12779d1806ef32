"""Freeze-tuning (issue 21 section 2: methods the estimator refused): LLaMA-Factory's finetuning_type: freeze
trains the last `freeze_trainable_layers` decoder layers (default 2) and the `freeze_extra_modules`, every
other parameter frozen (llamafactory model/adapter.py _setup_freeze_tuning:89-90, 112-136 at ff6d4d12;
defaults hparams/finetuning_args.py:23-46). The trainable parameters are upcast to fp32 unless pure_bf16,
BAdam or ZeRO-3 (adapter.py:338-349); gradient checkpointing wraps only the layers with trainable parameters
and marks their input as requiring grad (model_utils/checkpointing.py get_custom_gradient_checkpointing_func),
so the frozen layers below save nothing for backward.

What is not modelled says so: the first-N form (freeze_trainable_layers < 0: the frozen layers above the
trainable ones run unchecked with grad tracking), LLaMA-Pro's interleaved layers, and a module list other
than "all" (its share of a layer is not counted).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.facts.namespace_entries import integer, truth, written

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan

__all__ = ["freeze_setup", "is_freeze_tuning"]

DEFAULT_TRAINABLE_LAYERS = 2  # llamafactory hparams/finetuning_args.py:23-24
# freeze_extra_modules names a non-layer module by the last part of its parameter name (adapter.py:102-103)
_EXTRA = {"embed_tokens": "embedding", "wte": "embedding", "lm_head": "lm_head", "norm": "final_norm"}


def _names(v: Any) -> list[str]:
    if v is None or not v.known or v.value in (None, ""):
        return []
    items = v.value if isinstance(v.value, list) else str(v.value).split(",")
    return [str(x).strip() for x in items if str(x).strip()]


def is_freeze_tuning(plan: RunPlan) -> bool:
    t = plan.training
    dialect = t.known_value("dialect") if t is not None else None
    ftype = written(t, "finetuning_type")
    return (
        dialect is not None
        and dialect.value == "llamafactory"
        and ftype is not None
        and ftype.known
        and str(ftype.value).lower() == "freeze"
    )


def freeze_setup(plan: RunPlan, pc: Any, strategy: str, a: list[str]) -> tuple[dict[str, Any], str | None]:
    """(TrainingSetup fields, reason the run cannot be estimated) for a freeze-tuning run; ({}, None) else."""
    if not is_freeze_tuning(plan):
        return {}, None
    t = plan.training
    if truth(written(t, "use_llama_pro")):
        return {}, "LLaMA-Pro (use_llama_pro: expanded, interleaved trainable layers) is not modelled"
    n_v = written(t, "freeze_trainable_layers")
    n = DEFAULT_TRAINABLE_LAYERS if n_v is None else integer(n_v)
    if n is None:
        return {}, "freeze_trainable_layers is unknown" + (f" ({n_v.unknown})" if n_v is not None else "")
    if n <= 0:
        return {}, (
            f"freeze-tuning of the first {-n} layers (freeze_trainable_layers {n}) is not modelled: the "
            "frozen layers above them run without checkpointing and save their activations"
        )
    modules = _names(written(t, "freeze_trainable_modules")) or ["all"]
    if modules != ["all"]:
        return {}, (
            f"unknown, because freeze_trainable_modules names modules ({', '.join(modules)}) whose share "
            "of a decoder layer is not counted"
        )
    extra = 0
    for name in _names(written(t, "freeze_extra_modules")):
        part = _EXTRA.get(name)
        if part is None:
            return {}, f"unknown, because freeze_extra_modules names '{name}', whose size is not counted"
        extra += int(getattr(pc, part, 0) or 0)
    kw: dict[str, Any] = {"trainable_layers": min(n, pc.layers), "trainable_extra_params": extra}
    # the frozen weights stay in the dtype LLaMA-Factory loads in, the compute dtype (bf16 / fp16 when the run
    # sets it: model/loader.py torch_dtype=model_args.compute_dtype); only the trainable ones are upcast
    for flag, dtype in (("bf16", "bf16"), ("pure_bf16", "bf16"), ("fp16", "fp16")):
        if truth(written(t, flag)):
            kw["storage_dtype"] = dtype
            break
    pure = truth(written(t, "pure_bf16")) or truth(written(t, "use_badam"))
    if not pure and strategy != "zero3":
        kw["trainable_dtype"] = "fp32"  # adapter.py:338-349 cast_trainable_params_to_fp32
    a.append(
        f"freeze-tuning: the last {min(n, pc.layers)} of {pc.layers} decoder layers train"
        + (f" with {extra / 1e6:.1f}M parameters of extra modules" if extra else "")
        + (", upcast to fp32" if "trainable_dtype" in kw else "")
        + " (LLaMA-Factory adapter.py _setup_freeze_tuning); the frozen layers below save no activations"
    )
    return kw, None

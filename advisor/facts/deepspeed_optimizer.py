"""The optimizer a DeepSpeed config's `optimizer` block builds. With such a block the HF Trainer hands
DeepSpeed a DummyOptim and never builds its own `optim` (transformers 5.25 integrations/deepspeed.py:
578-579, deepspeed_optim_sched), and accelerate does the same for a script's DummyOptim. DeepSpeed turns
`Adam` / `AdamW` into its FusedAdam (one multi-tensor kernel, no foreach copies), torch's AdamW with
`"torch_adam": true`, and DeepSpeedCPUAdam when ZeRO offloads the optimizer (deepspeed 0.19.8
runtime/engine.py:2377-2409 get_optimizer_configuration, 2486-2493); `Lamb` into FusedLamb (exp_avg and
exp_avg_sq, ops/lamb/fused_lamb.py:153-155) and `Lion` on the GPU into FusedLion (exp_avg only,
ops/lion/fused_lion.py:99). The type is matched lower-cased, as runtime/config.py:52-60 names them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.facts.namespace_entries import truth, value_at

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan

__all__ = ["deepspeed_optimizer"]


def deepspeed_optimizer(plan: RunPlan) -> str | None:
    """The optimizer profile name the DeepSpeed config's optimizer block stands for, None without one;
    a type the memory model has no profile for comes back as written."""
    kind = value_at(plan.deepspeed, "optimizer.type")
    if kind is None or not kind.known or not isinstance(kind.value, str) or not kind.value.strip():
        return None
    name = kind.value.strip().lower()
    if name in _FUSED:
        return _FUSED[name] if not _offloaded(plan) else kind.value  # CPU Lion: no profile
    if name not in ("adam", "adamw"):
        return kind.value
    if truth(value_at(plan.deepspeed, "optimizer.params.torch_adam")):
        return "adamw_torch"
    return "deepspeed_cpu_adam" if _offloaded(plan) else "deepspeed_fused_adam"


_FUSED = {"lamb": "deepspeed_fused_lamb", "lion": "deepspeed_fused_lion"}


def _offloaded(plan: RunPlan) -> bool:
    device = value_at(plan.deepspeed, "zero_optimization.offload_optimizer.device")
    return device is not None and device.known and str(device.value).strip().lower() in ("cpu", "nvme")

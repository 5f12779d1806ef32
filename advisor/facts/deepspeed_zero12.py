"""The two DeepSpeed options that decide what ZeRO stage 1/2's optimizer (DeepSpeedZeroOptimizer) buffers
beside the gradient partition: `zero_optimization.contiguous_gradients` (default true, deepspeed 0.19.8
runtime/zero/config.py:102) and `zero_optimization.overlap_comm` (unset: true at stage 3 only, the
overlap_comm_valid validator, config.py:384-387). advisor.estimate.memory.zero12 says what they cost."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.facts.namespace_entries import truth, value_at

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan

__all__ = ["zero12_inputs"]


def zero12_inputs(plan: RunPlan, assumptions: list[str]) -> dict[str, Any]:
    """TrainingSetup fields ds_contiguous_gradients and ds_overlap_comm, DeepSpeed's defaults when unset."""
    out: dict[str, Any] = {"ds_contiguous_gradients": True, "ds_overlap_comm": False}
    for key, field in (
        ("contiguous_gradients", "ds_contiguous_gradients"),
        ("overlap_comm", "ds_overlap_comm"),
    ):
        v = value_at(plan.deepspeed, f"zero_optimization.{key}")
        if v is None:
            continue
        flag = truth(v)
        if flag is None:
            assumptions.append(f"DeepSpeed {key} unknown: DeepSpeed's default ({out[field]}) assumed")
            continue
        out[field] = flag
    return out

"""Which torch.utils.checkpoint a run's activation checkpointing uses: reentrant or not. It decides what a
custom autograd Function keeps across a checkpointed layer when it stores tensors as context attributes
instead of save_for_backward (bitsandbytes < 0.43.2's MatMul4Bit: advisor.estimate.memory.terms
bnb_recomputed_only)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from advisor.facts import versions
from advisor.facts.namespace_entries import written

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan

__all__ = ["checkpoint_reentrant"]


def checkpoint_reentrant(plan: RunPlan, strategy: str = "none", world: int = 1) -> bool | None:
    """use_reentrant of the run's activation checkpointing: the written gradient_checkpointing_kwargs, else
    the default of the pinned transformers (`{"use_reentrant": True}` up to 4.57: 4.57.0
    modeling_utils.py:3696; False from 5.0.0: modeling_utils.py:3099, 5.24 :3158; the Trainer passes
    TrainingArguments.gradient_checkpointing_kwargs, None by default, and TRL's SFTConfig keeps that None);
    None when neither says (the current release's default assumed: non-reentrant). ms-swift decides it
    itself (below)."""
    t = plan.training
    flag: Any = None
    keys = ("gradient_checkpointing_kwargs", "activation_checkpointing_kwargs")
    v = written(t, *(f"{k}.use_reentrant" for k in keys))
    if v is not None:  # a mapping in a file: its keys are read one by one
        flag = v.value if v.known else None
    else:
        v = written(t, *keys)
        kw = v.value if v is not None and v.known else None
        if isinstance(kw, str):  # the flag's JSON: --gradient_checkpointing_kwargs '{"use_reentrant": false}'
            try:
                kw = json.loads(kw)
            except ValueError:
                kw = None
        if isinstance(kw, dict):
            flag = kw.get("use_reentrant")
    if v is not None:
        if isinstance(flag, str) and flag.strip().lower() in ("true", "false"):
            return flag.strip().lower() == "true"
        return flag if isinstance(flag, bool) else None
    from advisor.plan.run_plan import has_own_defaults

    if has_own_defaults(plan.spec.command):
        # ms-swift patches torch.utils.checkpoint.checkpoint itself: the written use_reentrant, else False
        # under plain DDP (several processes, no DeepSpeed, no FSDP) and True otherwise (ms-swift 4.6
        # swift/trainers/mixin.py:900-919 _fix_gradient_checkpointing, @3602360a; ms-swift 1.x patched it
        # to False always: swift/llm/utils/model.py:1380-1398 @4312aeb2)
        return not (world > 1 and strategy == "ddp")
    return versions.run_installs_below(plan, "transformers", "5.0.0")

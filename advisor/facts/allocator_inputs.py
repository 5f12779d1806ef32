"""What the run tells the CUDA caching allocator (issue 21 section 2, allocator growth on unpadded batches):
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True in the launch environment maps segments that grow in place,
so a new longest batch extends a segment instead of leaving the old ones cached (PyTorch docs notes/cuda.rst,
"expandable_segments"); HF TrainingArguments.torch_empty_cache_steps empties the cache every N steps
(transformers 5.24 training_args.py torch_empty_cache_steps; trainer.py training_step calls
torch.<device>.empty_cache() when global_step % N == 0)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from advisor.core.lazy_pattern import LazyPattern
from advisor.facts.namespace_entries import integer, value_entry, written

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan

__all__ = ["allocator_inputs"]

_EXPANDABLE = LazyPattern(r"(?:^|,)\s*expandable_segments\s*:\s*(true|1)\s*(?:,|$)", re.IGNORECASE)


def allocator_inputs(plan: RunPlan) -> dict[str, Any]:
    """TrainingSetup fields: expandable_segments (bool), empty_cache_steps (int or None)."""
    out: dict[str, Any] = {}
    env = getattr(plan, "env", None)
    conf = value_entry(env, "PYTORCH_CUDA_ALLOC_CONF") if env is not None else None
    if conf is not None and conf.known and isinstance(conf.value, str) and _EXPANDABLE.search(conf.value):
        out["expandable_segments"] = True
    steps = integer(written(plan.training, "torch_empty_cache_steps"))
    if steps is not None and steps > 0:
        out["empty_cache_steps"] = steps
    return out

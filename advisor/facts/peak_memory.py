"""Peak memory per GPU of one estimator setup: the estimator's nvidia-smi peak plus, for preference
training, the frozen reference model.

A leaf module: the estimates facts and the fitting options both price setups with it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["longest_fitting_length", "peak_of", "reference_gib"]


def reference_gib(setup: Any) -> float:
    """The frozen reference model of preference training: loaded like the policy (TRL builds it from the
    same model_init_kwargs: trl 1.16 trainer/dpo_trainer.py:916-927), in 16-bit under DeepSpeed's module
    cast."""
    pc = setup.model
    shards = setup.world_size if setup.strategy in {"zero3", "fsdp"} and setup.world_size > 1 else 1
    deepspeed = setup.strategy in {"zero1", "zero2", "zero3"}
    per_param = 4.0 if setup.storage_dtype == "fp32" and not deepspeed else 2.0
    return per_param * pc.total / shards / 2**30


def peak_of(setup: Any, reference_copy: bool = False) -> float:
    """nvidia-smi peak per GPU in GiB (plus a frozen reference model for preference training)."""
    from advisor.estimate import estimate_memory

    m = estimate_memory(setup)
    return m.peak_smi_gib + (reference_gib(setup) if reference_copy else 0.0)


def longest_fitting_length(
    setup: Any, usable: float, reference_copy: bool = False, step: int = 64
) -> int | None:
    """The longest tokens per sequence (a multiple of `step`, under the setup's own) at which the peak per
    GPU is within `usable`, for a run whose batches are padded to their longest sample, not to one fixed
    length (TrainingSetup.fixed_length): its peak at max_length is reached only by a batch holding a sample
    that long, which the config does not say. None when every batch is one fixed length (packed, or padded to
    max_length), or when not even `step` tokens fit (what is over does not depend on the data)."""
    from advisor.core.records import replace

    if setup.fixed_length is True or not setup.seq_len or setup.seq_len <= step:
        return None

    def fits(tokens: int) -> bool:
        return peak_of(replace(setup, seq_len=tokens), reference_copy) <= usable

    try:
        if not fits(step):
            return None
        lo, hi = 1, (setup.seq_len - 1) // step  # lo * step fits; above hi * step is the setup's own length
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if fits(mid * step) else (lo, mid - 1)
    except Exception:  # a length the estimator cannot price: no claim
        return None
    return lo * step

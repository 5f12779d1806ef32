"""Peak memory per GPU of one estimator setup: the estimator's nvidia-smi peak plus, for preference
training, the frozen reference model.

A leaf module: the estimates facts and the fitting options both price setups with it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["peak_of", "reference_gib"]


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

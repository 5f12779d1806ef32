"""VRAM and run-time estimator: parameter counts, model config lookup, memory model, time model.

Cheap to import: nothing here imports torch, transformers or huggingface_hub at module level, and the
submodules load on first use of a name (PEP 562), so `check` importing ``advisor.estimate.params`` for its
switch does not pay for the memory and time models (~20 ms) on a run that names no model.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from advisor.estimate.memory import (
        MemoryEstimate,
        MemoryItem,
        TrainingSetup,
        estimate_memory,
        lora_params,
        resolve_setup,
        what_if,
    )
    from advisor.estimate.models import ModelInfo, catalog_ids, read_safetensors_params, resolve_model
    from advisor.estimate.params import LinearShape, ParamCount, UnknownModelTypeError, count_params
    from advisor.estimate.timing import TimeEstimate, default_mfu, estimate_time, flops_per_token

_WHERE = {
    **dict.fromkeys(
        (
            "MemoryEstimate",
            "MemoryItem",
            "TrainingSetup",
            "estimate_memory",
            "lora_params",
            "resolve_setup",
            "what_if",
        ),
        "advisor.estimate.memory",
    ),
    **dict.fromkeys(
        ("ModelInfo", "catalog_ids", "read_safetensors_params", "resolve_model"), "advisor.estimate.models"
    ),
    **dict.fromkeys(
        ("LinearShape", "ParamCount", "UnknownModelTypeError", "count_params"), "advisor.estimate.params"
    ),
    **dict.fromkeys(
        ("TimeEstimate", "default_mfu", "estimate_time", "flops_per_token"), "advisor.estimate.timing"
    ),
}

__all__ = [
    "LinearShape",
    "MemoryEstimate",
    "MemoryItem",
    "ModelInfo",
    "ParamCount",
    "TimeEstimate",
    "TrainingSetup",
    "UnknownModelTypeError",
    "catalog_ids",
    "count_params",
    "default_mfu",
    "estimate_memory",
    "estimate_time",
    "flops_per_token",
    "lora_params",
    "read_safetensors_params",
    "resolve_model",
    "resolve_setup",
    "what_if",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'advisor.estimate' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})

"""VRAM and run-time estimator: parameter counts, model config lookup, memory model, time model.

Cheap to import: nothing here imports torch, transformers or huggingface_hub at module level.
"""

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

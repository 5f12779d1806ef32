"""Tell what a config file is from its keys, never from its name."""

from __future__ import annotations

import re
from typing import Any

from advisor.sources.document import DocumentKind

_DEEPSPEED_KEYS = {
    "zero_optimization",
    "train_batch_size",
    "train_micro_batch_size_per_gpu",
    "zero_allow_untested_optimizer",
    "zero_force_ds_cpu_optimizer",
    "steps_per_print",
    "wall_clock_breakdown",
}
_AXOLOTL_KEYS = {"micro_batch_size", "sequence_len", "base_model", "num_epochs", "adapter", "lora_model_dir"}
_LLAMAFACTORY_KEYS = {"stage", "finetuning_type", "cutoff_len", "template", "quantization_bit", "dist_config"}
_TRL_KEYS = {
    "use_peft",
    "torch_dtype",
    "dtype",
    "dataset_name",
    "dataset_mixture",
    "dataset_mixer",
    "max_seq_length",
    "max_length",
    "num_generations",
    "use_vllm",
    "beta",
    "packing",
    "attn_implementation",
    "chat_template",
}
_TRAINING_KEYS = {
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "learning_rate",
    "num_train_epochs",
    "output_dir",
    "max_steps",
    "model_name_or_path",
    "bf16",
    "fp16",
    "deepspeed",
    "fsdp",
    "gradient_checkpointing",
    "lr_scheduler_type",
    "warmup_ratio",
    "warmup_steps",
    "optim",
}


def classify_mapping(data: dict[str, Any], syntax: str) -> DocumentKind:
    keys = set(data)
    if "distributed_type" in keys or "compute_environment" in keys:
        return "accelerate"
    if isinstance(data.get("gpus"), dict) and ("nvlink" in keys or "name" in keys or "cpu_cores" in keys):
        return "hardware"
    if keys & _DEEPSPEED_KEYS or any(isinstance(data.get(k), dict) for k in ("fp16", "bf16")):
        return "deepspeed"
    if "micro_batch_size" in keys and ("base_model" in keys or "sequence_len" in keys or "datasets" in keys):
        return "axolotl"
    if keys & _AXOLOTL_KEYS and "base_model" in keys:
        return "axolotl"
    if keys & _TRAINING_KEYS or keys & _LLAMAFACTORY_KEYS or keys & _TRL_KEYS:
        return "training_args"
    if keys and _share_of_training_keys(keys) >= 0.5:
        return "training_args"
    return "unknown"


def _share_of_training_keys(keys: set[str]) -> float:
    from advisor.sources.known_keys import known_keys

    known = known_keys("training_args")
    return sum(1 for k in keys if k in known) / len(keys)


def training_dialect(data: dict[str, Any]) -> str:
    keys = set(data)
    if keys & _LLAMAFACTORY_KEYS:
        return "llamafactory"
    if keys & _TRL_KEYS:
        return "trl"
    return "hf"


_LAUNCH_WORDS = re.compile(
    r"\b(torchrun|accelerate\s+launch|deepspeed|torch\.distributed\.run|llamafactory-cli)\b"
)


def looks_like_launch_script(text: str) -> bool:
    head = text[:4096]
    return (head.startswith("#!") and ("sh" in head.split("\n", 1)[0])) or bool(_LAUNCH_WORDS.search(head))

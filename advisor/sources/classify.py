"""Tell what a config file is from its keys, never from its name."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from advisor.core.document import DocumentKind

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
    if is_trainer_state(data):
        return "unknown"
    if _instantiates_objects(data) or keys & _TOKENIZER_KEYS:
        return "unknown"
    if "distributed_type" in keys or "compute_environment" in keys:
        return "accelerate"
    if isinstance(data.get("gpus"), dict) and ("nvlink" in keys or "name" in keys or "cpu_cores" in keys):
        return "hardware"
    if keys & _DEEPSPEED_KEYS or any(isinstance(data.get(k), dict) for k in ("fp16", "bf16")):
        if len(keys) >= _FEW_KEYS and _share_of_keys(keys, "deepspeed") < _MIN_DEEPSPEED_SHARE:
            return "unknown"  # another tool's config with DeepSpeed sections in it (gpt-neox's)
        return "deepspeed"
    if "micro_batch_size" in keys and ("base_model" in keys or "sequence_len" in keys or "datasets" in keys):
        return "axolotl"
    if keys & _AXOLOTL_KEYS and "base_model" in keys:
        return "axolotl"
    if keys & _TRAINING_KEYS or keys & _LLAMAFACTORY_KEYS or keys & _TRL_KEYS:
        few = len(keys) < _FEW_KEYS  # the tables are loaded only for a file with many keys
        if few or _share_of_keys(keys, "training_args", "trl", "llamafactory") >= _MIN_CONFIG_SHARE:
            return "training_args"
        return "unknown"
    if keys and _share_of_keys(keys, "training_args") >= 0.5:
        return "training_args"
    return "unknown"


# torchtune recipes (`model: {_component_: torchtune.models.llama3_1.lora_llama3_1_8b}`, read by
# torchtune/config/_instantiate.py) and Hydra configs (`_target_`) build objects from their sections: no
# HfArgumentParser reads them, though they share names such as output_dir and gradient_accumulation_steps.
_INSTANTIATE_KEYS = ("_component_", "_target_")


# A saved tokenizer's tokenizer_config.json (transformers tokenization_utils_base.py save_pretrained) shares
# chat_template, eos_token and pad_token with TRL's configs; these two keys are a tokenizer's alone.
_TOKENIZER_KEYS = frozenset({"added_tokens_decoder", "tokenizer_class"})


def _instantiates_objects(data: dict[str, Any]) -> bool:
    return any(isinstance(v, dict) and any(k in v for k in _INSTANTIATE_KEYS) for v in data.values())


# A mapping that merely holds a training key among many others is data, not a training config: a tokenizer's
# vocab.json (63,668 tokens, "stage" and "dataset" among them) or tokenizer_config.json (chat_template among
# 15 tokenizer settings), both in torchtune's tests/assets. From _FEW_KEYS keys on, at least _MIN_CONFIG_SHARE
# of them must be keys of a training table (TrainingArguments, TRL's configs, LLaMA-Factory's arguments).
_FEW_KEYS = 8
_MIN_CONFIG_SHARE = 0.2


def _share_of_keys(keys: set[str], *dialects: str) -> float:
    """The share of ``keys`` that the consumers of ``dialects`` read at the top level."""
    from advisor.sources.known_keys import known_keys

    known = frozenset().union(*(known_keys(d) for d in dialects))
    return sum(1 for k in keys if k in known) / len(keys)


# gpt-neox's configs (configs/*.yml, read by its NeoXArgs: megatron/neox_arguments/arguments.py) hold
# DeepSpeed's sections (zero_optimization, optimizer, fp16, train_micro_batch_size_per_gpu) among ~40 keys
# of its own (num_layers, pipe_parallel_size, data_impl); NeoXArgs hands DeepSpeed only the keys of its
# NeoXArgsDeepspeedConfig (deepspeed_args.py), so the rest are not DeepSpeed's to refuse or ignore. A
# DeepSpeed config's keys are DeepSpeed's: in the 101 of the corpora and fixtures at least 0.82 of them,
# in gpt-neox's 43 configs at most 0.23.
_MIN_DEEPSPEED_SHARE = 0.5


def training_dialect(data: dict[str, Any]) -> str:
    keys = set(data)
    if keys & _LLAMAFACTORY_KEYS:
        return "llamafactory"
    if keys & _TRL_KEYS:
        return "trl"
    return "hf"


# compiled (through re's own cache) only for a file whose suffix does not say what it is
_LAUNCH_WORDS = r"\b(torchrun|accelerate\s+launch|deepspeed|torch\.distributed\.run|llamafactory-cli)\b"


_SBATCH_LINE = r"^#SBATCH\s"


def looks_like_launch_script(text: str) -> bool:
    """A shell shebang, a launcher's name, or a SLURM `#SBATCH` line in the first 4 KB."""
    head = text[:4096]
    return (
        (head.startswith("#!") and ("sh" in head.split("\n", 1)[0]))
        or bool(re.search(_LAUNCH_WORDS, head))
        or bool(re.search(_SBATCH_LINE, head, re.M))
    )


# HF Trainer's own output (trainer_callback.py TrainerState.save_to_json): `checkpoint-N/trainer_state.json`
# and the output folder's copy carry `train_batch_size` beside the run's log; never a config
_TRAINER_STATE_KEYS = {"log_history", "global_step"}


def is_trainer_state(data: dict[str, Any]) -> bool:
    return set(data) >= _TRAINER_STATE_KEYS


SETTINGS_NAMES = {"pyproject.toml", ".gpu-advise.toml"}
_YAML_JSON = {".yaml", ".yml", ".json", ".conf", ".jsonc", ".hjson"}
_SHELL = {".sh", ".bash", ".slurm", ".sbatch", ".zsh"}
_HOST_LINE = r"[^\s#]+(\s+slots\s*=\s*\d+)?\s*(#.*)?"


def _looks_like_hostfile(head: str) -> bool:
    """DeepSpeed's hostfile: `host slots=N` lines (launcher/runner.py _parse_hostfile), comments, blanks."""
    lines = [ln.strip() for ln in head.splitlines()[:200] if ln.strip() and not ln.lstrip().startswith("#")]
    return bool(lines) and "slots" in head and all(re.fullmatch(_HOST_LINE, ln) for ln in lines)


def read_as(name: str, head: Callable[[], bytes | None]) -> str | None:
    """What gpu-advise reads a file as, by its name and first bytes: "settings", "config", "launch"
    (also a `#SBATCH` batch script without a suffix), "script", "hostfile"; None for a file it does
    not read (README.md, a model's weights, a Makefile). `head()` gives the first 4 KB of the file,
    asked only for a name without a suffix (None: not readable, then the reader says why)."""
    dot = name.rfind(".")
    suffix = name[dot:].lower() if dot > 0 else ""
    if name in SETTINGS_NAMES:
        return "settings"
    if suffix in _YAML_JSON:
        return "config"
    if suffix in _SHELL:
        return "launch"
    if suffix == ".py":
        return "script"
    if suffix and "hostfile" not in name.lower():
        return None
    raw = head()
    if raw is None:
        return "config"
    if b"\0" in raw:
        return None
    text = raw.decode("utf-8", "replace").removeprefix("\ufeff")
    if looks_like_launch_script(text):
        return "launch"
    if _looks_like_hostfile(text):
        return "hostfile"
    return None

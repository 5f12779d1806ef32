#!/usr/bin/env python
"""Generate advisor/data/keys/*.json: the keys, simple types, choices and removals of every config dialect.

A dev script, run by hand when a consumer library moves; nothing at lint time imports it (the linter
only reads the JSON it writes, so transformers is never imported while linting).

It introspects the real classes:

* transformers.TrainingArguments, accelerate's config/launch code and TRL's config dataclasses from the
  installed packages;
* LLaMA-Factory, axolotl and DeepSpeed from an unpacked wheel or sdist given on the command line, e.g.::

    pip download --no-deps llamafactory axolotl deepspeed -d /tmp/pkgs
    unzip -q /tmp/pkgs/llamafactory-*.whl -d /tmp/pkgs/lf
    unzip -q /tmp/pkgs/axolotl-*.whl -d /tmp/pkgs/ax
    tar xzf /tmp/pkgs/deepspeed-*.tar.gz -C /tmp/pkgs/ds
    pip install trl omegaconf pillow addict evaluate hjson einops msgpack py-cpuinfo  # imports they need
    DISABLE_VERSION_CHECK=1 python tools/gen_known_keys.py \
        --llamafactory /tmp/pkgs/lf --axolotl /tmp/pkgs/ax --deepspeed /tmp/pkgs/ds/deepspeed-0.19.8

``--versions [PACKAGE ...]`` writes ``versions.json`` instead: for transformers (4.40 on), TRL (0.9 on),
accelerate (0.30 on), peft (0.10 on) and DeepSpeed (0.14 on) it downloads the newest patch of every minor
(``pip download --no-deps NAME==VER`` into ``--cache``, /tmp/gk_cache by default), reads the dataclasses'
fields from the sources' syntax trees (nothing is imported) and the deprecations their ``__post_init__``
warns about, and stores each key with the release-index ranges it exists (and is deprecated) in::

    python tools/gen_known_keys.py --versions                 # all five, ~2 minutes with a warm cache
    python tools/gen_known_keys.py --versions transformers    # one package

A dialect whose source is not given keeps its current JSON file.  Removal versions that cannot be read
from one installed version (when did transformers drop ``warmup_ratio``?) were found by reading the
``training_args.py`` of each transformers / TRL / DeepSpeed release in between, and are kept in the
tables below with that provenance.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import enum
import importlib
import importlib.metadata
import importlib.util
import inspect
import json
import os
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "advisor" / "data" / "keys"

# --------------------------------------------------------------------------------------------------
# Hand-kept tables (each found by reading the released sources named in the comment).
# --------------------------------------------------------------------------------------------------

# transformers TrainingArguments fields that are gone in the current release.  Versions are the first
# release without the field, found by diffing the dataclass fields of training_args.py in the wheels of
# 4.50.0, 4.51.0, 4.51.3, 4.52.1, 4.53.0, 4.55.0, 4.56.0, 4.57.0, 4.57.6, 5.0.0, 5.1.0, 5.2.0, 5.4.0,
# 5.6.0, 5.8.0, 5.12.0-5.16.0, 5.20.0 and 5.24.0.  Types are the 4.57.6 annotations.
TRANSFORMERS_REMOVED: dict[str, dict[str, Any]] = {
    # gone in 4.51.0 (deprecated aliases since 4.4x)
    "evaluation_strategy": {
        "version": "4.51.0",
        "replacement": "eval_strategy",
        "type": "str",
        "choices": ["no", "steps", "epoch"],
    },
    "split_batches": {
        "version": "4.51.0",
        "replacement": "accelerator_config.split_batches",
        "type": "bool",
        "optional": True,
    },
    "dispatch_batches": {
        "version": "4.51.0",
        "replacement": "accelerator_config.dispatch_batches",
        "type": "bool",
        "optional": True,
    },
    "tp_size": {
        "version": "4.52.1",
        "replacement": "parallelism_config",
        "note": "tensor parallelism moved to accelerate's ParallelismConfig (tp_size)",
        "type": "int",
        "optional": True,
    },
    "use_ipex": {
        "version": "4.57.0",
        "replacement": None,
        "type": "bool",
        "note": "Intel Extension for PyTorch support was removed",
    },
    # gone in 5.0.0
    "overwrite_output_dir": {
        "version": "5.0.0",
        "replacement": None,
        "type": "bool",
        "note": "the Trainer no longer checks output_dir; delete the key",
    },
    "save_safetensors": {
        "version": "5.0.0",
        "replacement": None,
        "type": "bool",
        "note": "safetensors is always used",
    },
    "no_cuda": {"version": "5.0.0", "replacement": "use_cpu", "type": "bool"},
    "use_mps_device": {
        "version": "5.0.0",
        "replacement": None,
        "type": "bool",
        "note": "MPS is picked automatically",
    },
    "per_gpu_train_batch_size": {
        "version": "5.0.0",
        "replacement": "per_device_train_batch_size",
        "type": "int",
        "optional": True,
    },
    "per_gpu_eval_batch_size": {
        "version": "5.0.0",
        "replacement": "per_device_eval_batch_size",
        "type": "int",
        "optional": True,
    },
    "fsdp_transformer_layer_cls_to_wrap": {
        "version": "5.0.0",
        "replacement": "fsdp_config.transformer_layer_cls_to_wrap",
        "type": "str",
        "optional": True,
    },
    "fsdp_min_num_params": {"version": "5.0.0", "replacement": "fsdp_config.min_num_params", "type": "int"},
    "adafactor": {
        "version": "5.0.0",
        "replacement": "optim",
        "type": "bool",
        "note": "write optim: adafactor",
    },
    "fp16_backend": {"version": "5.0.0", "replacement": None, "type": "str"},
    "half_precision_backend": {
        "version": "5.0.0",
        "replacement": None,
        "type": "str",
        "note": "only native torch AMP is left",
    },
    "fp16_opt_level": {
        "version": "5.0.0",
        "replacement": None,
        "type": "str",
        "note": "apex AMP opt levels are gone",
    },
    "include_inputs_for_metrics": {
        "version": "5.0.0",
        "replacement": "include_for_metrics",
        "type": "bool",
        "note": "write include_for_metrics: [inputs]",
    },
    "include_tokens_per_second": {
        "version": "5.0.0",
        "replacement": "include_num_input_tokens_seen",
        "type": "bool",
    },
    "jit_mode_eval": {"version": "5.0.0", "replacement": None, "type": "bool"},
    "mp_parameters": {"version": "5.0.0", "replacement": None, "type": "str"},
    "past_index": {"version": "5.0.0", "replacement": None, "type": "int"},
    "push_to_hub_model_id": {
        "version": "5.0.0",
        "replacement": "hub_model_id",
        "type": "str",
        "optional": True,
    },
    "push_to_hub_organization": {
        "version": "5.0.0",
        "replacement": "hub_model_id",
        "type": "str",
        "optional": True,
    },
    "push_to_hub_token": {"version": "5.0.0", "replacement": "hub_token", "type": "str", "optional": True},
    "ray_scope": {"version": "5.0.0", "replacement": None, "type": "str", "optional": True},
    "torchdynamo": {
        "version": "5.0.0",
        "replacement": "torch_compile_backend",
        "type": "str",
        "optional": True,
    },
    "tpu_metrics_debug": {
        "version": "5.0.0",
        "replacement": "debug",
        "type": "bool",
        "note": "write debug: tpu_metrics_debug",
    },
    "tpu_num_cores": {"version": "5.0.0", "replacement": None, "type": "int", "optional": True},
    "use_legacy_prediction_loop": {"version": "5.0.0", "replacement": None, "type": "bool"},
    # gone later in 5.x
    "group_by_length": {
        "version": "5.2.0",
        "replacement": "train_sampling_strategy",
        "type": "bool",
        "note": "write train_sampling_strategy: group_by_length",
    },
    "warmup_ratio": {
        "version": "5.15.0",
        "replacement": "warmup_steps",
        "type": "float",
        "note": "warmup_steps takes a float in [0, 1) as a ratio of the total steps",
    },
    "logging_dir": {
        "version": "5.15.0",
        "replacement": None,
        "type": "str",
        "optional": True,
        "note": "each reporting integration picks its own log folder",
    },
}

# Still accepted by transformers 5.24 but deprecated (FutureWarning; removal announced).
TRANSFORMERS_DEPRECATED: dict[str, dict[str, Any]] = {
    "gradient_checkpointing": {
        "version": "5.23.0",
        "replacement": "activation_checkpointing",
        "note": "deprecated alias, removal announced for v6",
    },
    "gradient_checkpointing_kwargs": {
        "version": "5.23.0",
        "replacement": "activation_checkpointing_kwargs",
        "note": "deprecated alias, removal announced for v6",
    },
}

# Values of `optim` that old configs still carry but no 5.x release accepts (tf4 had adamw_apex_fused;
# adamw_hf is last in 4.49.0 and absent from 4.50.0: transformers 4.49.0 training_args.py:148 ADAMW_HF).
TRANSFORMERS_REMOVED_CHOICES = {"optim": {"adamw_hf": "4.50.0", "adamw_apex_fused": "5.0.0"}}

# TRL fields gone from the installed release, found by diffing the dataclass fields of the TRL wheels
# 0.12.0, 0.14.0, 0.16.0-0.20.0, 0.22.0, 0.24.0, 0.26.0-0.29.0, 1.0.0, 1.4.0-1.8.0, 1.12.0 and 1.16.0.
TRL_REMOVED: dict[str, dict[str, Any]] = {
    "max_seq_length": {
        "version": "0.20.0",
        "replacement": "max_length",
        "type": "int",
        "optional": True,
        "note": "SFTConfig.max_seq_length was renamed max_length",
    },
    "torch_dtype": {
        "version": "0.27.0",
        "replacement": "dtype",
        "type": "str",
        "optional": True,
        "note": "ModelConfig.torch_dtype was renamed dtype",
    },
    "vllm_device": {
        "version": "0.18.0",
        "replacement": "vllm_mode",
        "type": "str",
        "note": "GRPO's vLLM runs as a server (trl vllm-serve) or colocated (vllm_mode)",
    },
    "max_prompt_length": {
        "version": "0.29.0",
        "replacement": None,
        "type": "int",
        "optional": True,
        "note": "dropped from KTOConfig in 0.27.0, GRPO/ORPO/CPO in 0.28.0, DPOConfig in 0.29.0",
    },
}

# Real extra keys that projects built on TrlParser define in their own dataclasses.  Keys that TRL itself
# dropped (max_seq_length, torch_dtype, max_prompt_length) are left out on purpose: with a current TRL
# the recipes that still write them fail, which is what GA005 reports.
TRL_EXTRAS: dict[str, dict[str, Any]] = {
    "alignment-handbook": {
        "source": "huggingface/alignment-handbook src/alignment/configs.py (2025 TrlParser version: "
        "ScriptArguments(trl.ScriptArguments) + SFT/DPO/ORPOConfig with chat_template)",
        "keys": {
            "dataset_mixture": {"type": "dict", "optional": True},
            "chat_template": {"type": "str", "optional": True},
        },
    },
    "alignment-handbook-h4": {
        "source": "huggingface/alignment-handbook@227deaa6682c src/alignment/configs.py "
        "(H4ArgumentParser: ModelArguments, DataArguments, SFTConfig, DPOConfig)",
        "keys": {
            "base_model_revision": {"type": "str", "optional": True},
            "model_code_revision": {"type": "str", "optional": True},
            "tokenizer_name_or_path": {"type": "str", "optional": True},
            "use_flash_attention_2": {"type": "bool"},
            "dataset_mixer": {"type": "dict", "optional": True},
            "text_column": {"type": "str", "optional": True},
            "dataset_splits": {"type": "list", "optional": True},
            "dataset_configs": {"type": "list", "optional": True},
            "preprocessing_num_workers": {"type": "int", "optional": True},
            "truncation_side": {"type": "str", "optional": True},
            "auto_insert_empty_system_msg": {"type": "bool"},
            "hub_model_revision": {"type": "str", "optional": True},
        },
    },
    "open-r1": {
        "source": "huggingface/open-r1 src/open_r1/configs.py (@8d139cbe6af4 and the later version with "
        "dataset_mixture / code_eval_scoring_mode): GRPOConfig, SFTConfig, ScriptArguments, "
        "GRPOScriptArguments",
        "keys": {
            "dataset_mixture": {"type": "dict", "optional": True},
            "benchmarks": {"type": "list"},
            "callbacks": {"type": "list"},
            "chat_template": {"type": "str", "optional": True},
            "system_prompt": {"type": "str", "optional": True},
            "hub_model_revision": {"type": "str", "optional": True},
            "num_completions_to_print": {"type": "int"},
            "overwrite_hub_revision": {"type": "bool"},
            "push_to_hub_revision": {"type": "bool"},
            "wandb_entity": {"type": "str", "optional": True},
            "wandb_project": {"type": "str", "optional": True},
            "wandb_run_group": {"type": "str", "optional": True},
            "wandb_log_unique_prompts": {"type": "bool"},
            "reward_funcs": {"type": "list"},
            "cosine_min_value_wrong": {"type": "float"},
            "cosine_max_value_wrong": {"type": "float"},
            "cosine_min_value_correct": {"type": "float"},
            "cosine_max_value_correct": {"type": "float"},
            "cosine_max_len": {"type": "int"},
            "repetition_n_grams": {"type": "int"},
            "repetition_max_penalty": {"type": "float"},
            "code_language": {"type": "str", "choices": ["python", "javascript", "r", "java", "bash", "cpp"]},
            "code_eval_test_batch_size": {"type": "int"},
            "code_eval_scoring_mode": {"type": "str", "choices": ["pass_fail", "partial", "weighted_sum"]},
            "parallel_code_exec_per_proc": {"type": "int"},
            "dataset_prompt_column": {"type": "str"},
            "e2b_router_url": {"type": "str", "optional": True},
            "morph_router_url": {"type": "str", "optional": True},
            "code_provider": {"type": "str", "optional": True, "choices": ["e2b", "local", "morph"]},
            "ioi_provider": {"type": "str", "optional": True, "choices": ["piston", "morph"]},
            "max_completion_len": {"type": "int"},
            "soft_punish_cache": {"type": "int"},
        },
    },
}

# accelerate: legacy top-level keys that process_config still converts (config_args.py).
ACCELERATE_LEGACY = {
    "fp16": {
        "replacement": "mixed_precision",
        "type": "bool",
        "note": "converted to mixed_precision: fp16 by accelerate's config loader",
    },
    "dynamo_backend": {
        "replacement": "dynamo_config.dynamo_backend",
        "type": "str",
        "note": "converted to dynamo_config by accelerate's config loader",
    },
}

# DeepSpeed keys that HF's integration (transformers integrations/deepspeed.py trainer_config_process /
# trainer_config_finalize) and accelerate's DeepSpeedPlugin fill when written as "auto".
DEEPSPEED_AUTO = [
    "train_batch_size",
    "train_micro_batch_size_per_gpu",
    "gradient_accumulation_steps",
    "gradient_clipping",
    "fp16/enabled",
    "bf16/enabled",
    "optimizer/params/lr",
    "optimizer/params/betas",
    "optimizer/params/eps",
    "optimizer/params/weight_decay",
    "scheduler/params/warmup_min_lr",
    "scheduler/params/warmup_max_lr",
    "scheduler/params/warmup_num_steps",
    "scheduler/params/total_num_steps",
    "scheduler/params/warmup_type",
    "zero_optimization/reduce_bucket_size",
    "zero_optimization/stage3_prefetch_bucket_size",
    "zero_optimization/stage3_param_persistence_threshold",
    "zero_optimization/prefetch_bucket_size",
    "zero_optimization/param_persistence_threshold",
    # accelerate DeepSpeedPlugin.deepspeed_config_process (plugin_to_config_mapping)
    "zero_optimization/stage",
    "zero_optimization/offload_optimizer/device",
    "zero_optimization/offload_param/device",
    "zero_optimization/offload_optimizer/nvme_path",
    "zero_optimization/offload_param/nvme_path",
    "zero_optimization/stage3_gather_16bit_weights_on_model_save",
    "zero_optimization/gather_16bit_weights_on_model_save",
]

# DeepSpeed keys whose removal landed in 0.19.7; the rest of _REMOVED_*_CONFIG_KEYS is new in the
# version read (found by reading runtime/config.py of the 0.19.4, 0.19.6, 0.19.7 and 0.19.8 sdists).
DEEPSPEED_REMOVED_0197 = {
    "nebula",
    "compression_training",
    "quantize_training",
    "sparse_attention",
    "mics_shard_size",
    "mics_hierarchical_params_gather",
}

# Top-level DeepSpeed keys read outside DeepSpeedConfig._initialize_params (runtime/config.py __init__).
DEEPSPEED_EXTRA_TOP = {"sequence_parallel_size": {"type": "int"}}


# --------------------------------------------------------------------------------------------------
# Type tags
# --------------------------------------------------------------------------------------------------

_SIMPLE = {
    bool: "bool",
    int: "int",
    float: "float",
    str: "str",
    list: "list",
    tuple: "list",
    dict: "dict",
    set: "list",
}


def _enum_values(cls: type[enum.Enum]) -> list[Any]:
    out = []
    for member in cls:
        v = member.value
        out.append(v if isinstance(v, str | int | float | bool) else member.name)
    return out


def type_tag(tp: Any, *, free_str: bool = False) -> dict[str, Any]:
    """Reduce a Python annotation to {"type": "int|str", "optional": bool, "choices": [...]}."""
    kinds: list[str] = []
    choices: list[Any] = []
    optional = False

    def walk(t: Any) -> None:
        nonlocal optional
        if t is type(None) or t is None:
            optional = True
            return
        if t is typing.Any or t is object:
            kinds.append("any")
            return
        if isinstance(t, str):
            kinds.extend(_tag_from_str(t))
            if "None" in t or "Optional" in t:
                optional = True
            return
        origin = typing.get_origin(t)
        if origin is typing.Annotated:
            walk(typing.get_args(t)[0])
            return
        if origin in (typing.Union, types.UnionType):
            for a in typing.get_args(t):
                walk(a)
            return
        if origin is typing.Literal:
            for a in typing.get_args(t):
                if a is None:
                    optional = True
                elif isinstance(a, bool):
                    kinds.append("bool")
                else:
                    choices.append(a.value if isinstance(a, enum.Enum) else a)
                    kinds.append(_SIMPLE.get(type(a), "str"))
            return
        if origin is not None:
            walk(origin)
            return
        if inspect.isclass(t):
            if issubclass(t, enum.Enum):
                vals = _enum_values(t)
                choices.extend(vals)
                kinds.extend({_SIMPLE.get(type(v), "str") for v in vals})
                return
            for base, name in _SIMPLE.items():
                if issubclass(t, base):
                    kinds.append(name)
                    return
            if issubclass(t, os.PathLike):
                kinds.append("str")
                return
            if hasattr(t, "model_fields") or dataclasses.is_dataclass(t):
                kinds.append("dict")
                return
        kinds.append("any")

    walk(tp)
    out_kinds = sorted(set(kinds)) or ["any"]
    if "any" in out_kinds:
        out_kinds = ["any"]
    tag: dict[str, Any] = {"type": "|".join(out_kinds)}
    if optional:
        tag["optional"] = True
    # `SomeEnum | str` in an HF dataclass: __post_init__ converts the str to the enum, so the enum values
    # are the choices.  In a pydantic model (axolotl) the plain str branch accepts any string.
    if choices and not (free_str and _has_plain_str(tp)):
        tag["choices"] = list(dict.fromkeys(choices))
    return tag


def _has_plain_str(tp: Any) -> bool:
    return any(a is str for a in typing.get_args(tp)) if typing.get_origin(tp) else tp is str


def _tag_from_str(s: str) -> list[str]:
    s = s.replace("typing.", "")
    found = []
    for word, name in (
        ("bool", "bool"),
        ("int", "int"),
        ("float", "float"),
        ("str", "str"),
        ("list", "list"),
        ("List", "list"),
        ("dict", "dict"),
        ("Dict", "dict"),
    ):
        if re.search(rf"\b{word}\b", s):
            found.append(name)
    if "Any" in s and not found:
        found.append("any")
    return found or ["any"]


def jsonable(v: Any) -> Any:
    if isinstance(v, enum.Enum):
        v = v.value
    if v is None or isinstance(v, bool | int | str):
        return v
    if isinstance(v, float):
        return v if v == v and v not in (float("inf"), float("-inf")) else str(v)
    if isinstance(v, list | tuple):
        items = [jsonable(x) for x in v]
        return items if all(x is None or isinstance(x, bool | int | float | str) for x in items) else str(v)
    if isinstance(v, dict):
        try:
            json.dumps(v)
            return v
        except TypeError:
            return str(v)
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    return str(v)


def dataclass_keys(cls: type, *, skip_private: bool = True) -> dict[str, dict[str, Any]]:
    """{field: tag} for the init fields of a dataclass (what HfArgumentParser accepts)."""
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception:
        hints = {}
    out: dict[str, dict[str, Any]] = {}
    for f in dataclasses.fields(cls):
        if not f.init or (skip_private and f.name.startswith("_")):
            continue
        tag = type_tag(hints.get(f.name, f.type))
        meta_choices = f.metadata.get("choices") if f.metadata else None
        if meta_choices:
            tag["choices"] = [jsonable(c) for c in meta_choices]
        if f.default is not dataclasses.MISSING:
            tag["default"] = jsonable(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            with contextlib.suppress(Exception):
                tag["default"] = jsonable(f.default_factory())
        if tag.get("default", 0) is None:
            tag["optional"] = True
        out[f.name] = tag
    return out


def merge_tags(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """One tag for a key that several classes define (SFTConfig.loss_type vs GRPOConfig.loss_type)."""
    if a == b:
        return a
    kinds = set(a.get("type", "any").split("|")) | set(b.get("type", "any").split("|"))
    out: dict[str, Any] = {"type": "any" if "any" in kinds else "|".join(sorted(kinds))}
    if a.get("optional") or b.get("optional"):
        out["optional"] = True
    if a.get("choices") and b.get("choices"):
        out["choices"] = list(dict.fromkeys([*a["choices"], *b["choices"]]))
    if "default" in a and a.get("default") == b.get("default"):
        out["default"] = a["default"]
    return out


def pydantic_keys(
    model: type, *, by_alias: bool = True, with_names: bool = True
) -> dict[str, dict[str, Any]]:
    """{key: tag} for a pydantic model: field names and every alias it validates by."""
    out: dict[str, dict[str, Any]] = {}
    for name, f in model.model_fields.items():
        tag = type_tag(f.annotation, free_str=True)
        default = f.default
        if repr(default) != "PydanticUndefined":
            tag["default"] = jsonable(default)
            if default is None:
                tag["optional"] = True
        extra = f.json_schema_extra if isinstance(f.json_schema_extra, dict) else {}
        if extra.get("deprecated"):
            tag["deprecated"] = True
            if extra.get("new_param"):
                tag["replacement"] = extra["new_param"]
        names = []
        if with_names:
            names.append(name)
        if by_alias:
            if f.alias:
                names.append(f.alias)
            va = f.validation_alias
            if isinstance(va, str):
                names.append(va)
            elif va is not None and hasattr(va, "choices"):
                names.extend(c for c in va.choices if isinstance(c, str))
        for n in dict.fromkeys(names):
            out[n] = dict(tag)
    return out


def section(
    keys: dict[str, dict[str, Any]],
    *,
    strict: bool,
    coerces: bool,
    note: str | None = None,
    open_keys: bool = False,
) -> dict[str, Any]:
    out: dict[str, Any] = {"strict": strict, "coerces": coerces}
    if note:
        out["note"] = note
    if open_keys:
        out["open"] = True
    out["keys"] = dict(sorted(keys.items()))
    return out


def version_of(dist: str) -> str:
    return importlib.metadata.version(dist)


def write(name: str, data: dict[str, Any]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.json"
    path.write_text(json.dumps(data, indent=1, sort_keys=False, ensure_ascii=False) + "\n", encoding="utf-8")
    n = sum(len(s["keys"]) for s in data.get("sections", {}).values())
    print(f"wrote {path.relative_to(REPO)}: {n} keys in {len(data.get('sections', {}))} sections")


# --------------------------------------------------------------------------------------------------
# Dialects
# --------------------------------------------------------------------------------------------------


def ta_overrides(keys: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Corrections to annotations of TrainingArguments (and subclasses) that the code accepts more widely."""
    if "fsdp" in keys:
        # `fsdp: str | None` in 5.x, but _process_fsdp_args still translates True and the 4.x list form
        # (deprecated, removal announced for v5.20) and HfArgumentParser.parse_dict passes them through.
        keys["fsdp"]["type"] = "bool|list|str"
    return keys


# TRL fields whose __post_init__ accepts more than the annotation says (trl 1.16 grpo_config.py,
# sft_config.py).
TRL_OVERRIDES: dict[str, dict[str, Any]] = {
    "scale_rewards": {"type": "bool|str"},  # {True: "group", False: "none"}
    "packing_strategy": {"extra_choices": ["bfd-requeue"]},  # deprecated alias of bfd_split
}


def training_args_keys() -> dict[str, dict[str, Any]]:
    from transformers import TrainingArguments

    keys = ta_overrides(dataclass_keys(TrainingArguments))
    for name, meta in TRANSFORMERS_DEPRECATED.items():
        if name in keys:
            keys[name]["deprecated"] = True
            keys[name]["replacement"] = meta["replacement"]
    # fsdp_config: dict or path; its keys are written with or without the legacy fsdp_ prefix.
    return keys


FSDP_CONFIG_KEYS = {
    # transformers 5.24 training_args.py _process_fsdp_args / accelerate FSDP plugin kwargs
    "version": {"type": "int", "choices": [1, 2]},
    "min_num_params": {"type": "int"},
    "transformer_layer_cls_to_wrap": {"type": "list|str", "optional": True},
    "auto_wrap_policy": {"type": "str", "choices": ["TRANSFORMER_BASED_WRAP", "SIZE_BASED_WRAP", "NO_WRAP"]},
    "backward_prefetch": {
        "type": "str",
        "choices": [
            "backward_pre",
            "backward_post",
            "no_prefetch",
            "BACKWARD_PRE",
            "BACKWARD_POST",
            "NO_PREFETCH",
        ],
    },
    "forward_prefetch": {"type": "bool"},
    "limit_all_gathers": {"type": "bool"},
    "use_orig_params": {"type": "bool"},
    "sync_module_states": {"type": "bool"},
    "cpu_ram_efficient_loading": {"type": "bool"},
    "activation_checkpointing": {"type": "bool"},
    "state_dict_type": {
        "type": "str",
        "choices": ["FULL_STATE_DICT", "LOCAL_STATE_DICT", "SHARDED_STATE_DICT"],
    },
    "reshard_after_forward": {"type": "bool|str"},
    "cpu_offload": {"type": "bool"},
    "offload_params": {"type": "bool"},
    "sharding_strategy": {"type": "str"},
    "xla": {"type": "bool"},
    "xla_fsdp_settings": {"type": "dict"},
    "xla_fsdp_v2": {"type": "bool"},
    "xla_fsdp_grad_ckpt": {"type": "bool"},
}


def gen_training_args() -> None:
    import transformers

    keys = training_args_keys()
    fsdp = dict(FSDP_CONFIG_KEYS)
    fsdp.update({"fsdp_" + k: v for k, v in FSDP_CONFIG_KEYS.items()})
    data = {
        "dialect": "training_args",
        "source": {
            "package": "transformers",
            "version": transformers.__version__,
            "classes": ["transformers.TrainingArguments"],
        },
        "reader": "HfArgumentParser.parse_yaml_file / parse_json_file: yaml.safe_load, dtype(**inputs), "
        "no type coercion, unknown keys raise ValueError",
        "sections": {
            "": section(keys, strict=True, coerces=False),
            "fsdp_config": section(
                fsdp,
                strict=False,
                coerces=False,
                note="keys may carry the legacy fsdp_ prefix, which transformers strips",
            ),
        },
        "removed_choices": TRANSFORMERS_REMOVED_CHOICES,
    }
    write("training_args", data)

    removed = {}
    for name, meta in TRANSFORMERS_REMOVED.items():
        if name in keys:
            raise SystemExit(
                f"{name} is listed as removed but transformers {transformers.__version__} has it"
            )
        removed[name] = {"status": "removed", **meta}
    for name, meta in TRANSFORMERS_DEPRECATED.items():
        removed[name] = {"status": "deprecated", **meta}
    write_removed = {
        "dialect": "training_args",
        "source": {
            "package": "transformers",
            "version": transformers.__version__,
            "compared_with": ["4.50.0", "4.51.0", "4.57.6", "5.0.0", "5.2.0", "5.8.0", "5.15.0"],
        },
        "removed": {"": removed},
    }
    (OUT / "removed.json").write_text(json.dumps(write_removed, indent=1) + "\n", encoding="utf-8")
    print(f"wrote advisor/data/keys/removed.json: {len(removed)} keys")


def _trl_classes() -> dict[str, type]:
    import trl

    names = [
        "SFTConfig",
        "DPOConfig",
        "GRPOConfig",
        "KTOConfig",
        "RewardConfig",
        "RLOOConfig",
        "PPOConfig",
        "ORPOConfig",
        "ModelConfig",
        "ScriptArguments",
    ]
    found: dict[str, type] = {}
    for name in names:
        cls = None
        with contextlib.suppress(AttributeError, ImportError):
            cls = getattr(trl, name)
        if cls is None:
            for mod in (f"trl.experimental.{name[:-6].lower()}", "trl.experimental"):
                try:
                    cls = getattr(importlib.import_module(mod), name)
                    break
                except (ImportError, AttributeError):
                    continue
        if cls is not None:
            found[name] = cls
    return found


def gen_trl() -> None:
    classes = _trl_classes()
    keys: dict[str, dict[str, Any]] = {}
    origin: dict[str, list[str]] = {}
    for name, cls in classes.items():
        for k, tag in dataclass_keys(cls).items():
            keys[k] = merge_tags(keys[k], tag) if k in keys else tag
            origin.setdefault(k, []).append(name)
    ta_overrides(keys)
    for k, over in TRL_OVERRIDES.items():
        if k in keys:
            if "type" in over:
                keys[k]["type"] = over["type"]
            if "extra_choices" in over and keys[k].get("choices"):
                keys[k]["choices"] = [*keys[k]["choices"], *over["extra_choices"]]
    ta = set(training_args_keys())
    extras_meta = {}
    for project, meta in TRL_EXTRAS.items():
        extras_meta[project] = {"source": meta["source"], "keys": sorted(meta["keys"])}
        for k, tag in meta["keys"].items():
            if k not in keys:
                keys[k] = dict(tag)
                origin.setdefault(k, []).append(project)
    for k in keys:
        if k not in ta:
            keys[k]["from"] = origin.get(k, [])
    for name in TRL_REMOVED:
        if name in keys:
            raise SystemExit(f"{name} is listed as removed from TRL but is still a key")
    data = {
        "dialect": "trl",
        "source": {
            "package": "trl",
            "version": version_of("trl"),
            "classes": {n: f"{c.__module__}.{c.__qualname__}" for n, c in classes.items()},
            "missing": [n for n in ("PPOConfig", "ORPOConfig") if n not in classes],
            "extras": extras_meta,
        },
        "reader": "TrlParser.parse_args_and_config: yaml.safe_load, values become argparse defaults (string "
        "defaults are converted by the field's type), an env: mapping is exported first, unknown "
        "keys raise ValueError",
        "includes": ["training_args"],
        "sections": {"": section(keys, strict=True, coerces=True)},
        "removed": {"": {k: {"status": "removed", **v} for k, v in TRL_REMOVED.items()}},
    }
    write("trl", data)


def _import_from(path: str | None, module: str):
    if path:
        sys.path.insert(0, path)
    os.environ.setdefault("DISABLE_VERSION_CHECK", "1")
    return importlib.import_module(module)


def _dist_version(root: str, name: str) -> str:
    for p in Path(root).glob(f"{name}-*.dist-info/METADATA"):
        for line in p.read_text().splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
    for p in Path(root).glob("version.txt"):
        return p.read_text().strip()
    return "unknown"


def _requires(root: str, name: str, dep: str) -> str | None:
    for p in Path(root).glob(f"{name}-*.dist-info/METADATA"):
        for line in p.read_text().splitlines():
            if line.startswith("Requires-Dist:") and re.match(rf"Requires-Dist:\s*{dep}\b", line):
                return line.split(":", 1)[1].strip()
    return None


def gen_llamafactory(root: str) -> None:
    hp = _import_from(root, "llamafactory.hparams")
    classes = [
        "ModelArguments",
        "DataArguments",
        "TrainingArguments",
        "FinetuningArguments",
        "GeneratingArguments",
    ]
    keys: dict[str, dict[str, Any]] = {}
    origin: dict[str, str] = {}
    for name in classes:
        for k, tag in dataclass_keys(getattr(hp, name)).items():
            keys.setdefault(k, tag)
            origin.setdefault(k, name)
    ta_overrides(keys)
    ta = set(training_args_keys())
    for k, tag in keys.items():
        if k not in ta:
            tag["from"] = [origin[k]]
    version = _dist_version(root, "llamafactory")
    pin = _requires(root, "llamafactory", "transformers")
    tmax = None
    if pin:
        m = re.search(r"<=\s*([\d.]+)", pin)
        tmax = m.group(1) if m else None
    # TrainingArguments keys that the newest transformers LLaMA-Factory allows still has.
    if tmax:
        for k, meta in TRANSFORMERS_REMOVED.items():
            if _vtuple(meta["version"]) > _vtuple(tmax) and k not in keys:
                tag = {x: meta[x] for x in ("type", "optional", "choices") if x in meta}
                tag["from"] = [f"transformers<={tmax}"]
                keys[k] = tag
    v1mod = _import_from(None, "llamafactory.v1.config")
    v1: dict[str, dict[str, Any]] = {}
    v1classes = [
        n
        for n in ("ModelArguments", "DataArguments", "TrainingArguments", "SampleArguments")
        if hasattr(v1mod, n)
    ]
    for name in v1classes:
        for k, tag in dataclass_keys(getattr(v1mod, name)).items():
            v1.setdefault(k, tag)
    data = {
        "dialect": "llamafactory",
        "source": {
            "package": "llamafactory",
            "version": version,
            "classes": [f"llamafactory.hparams.{c}" for c in classes],
            "transformers_requirement": pin,
            "transformers_max": tmax,
        },
        "reader": "llamafactory-cli train: OmegaConf.load (YAML 1.2-style floats: 1e-5 is a float) then "
        "HfArgumentParser.parse_dict, no type coercion, unknown keys raise ValueError unless "
        "ALLOW_EXTRA_ARGS=1",
        "includes": ["training_args"],
        "sections": {"": section(keys, strict=True, coerces=False)},
    }
    write("llamafactory", data)
    write(
        "llamafactory_v1",
        {
            "dialect": "llamafactory_v1",
            "source": {
                "package": "llamafactory",
                "version": version,
                "classes": [f"llamafactory.v1.config.{c}" for c in v1classes],
            },
            "reader": "llamafactory v1 get_args: OmegaConf.load then HfArgumentParser.parse_dict",
            "sections": {"": section(v1, strict=True, coerces=False)},
        },
    )


def _vtuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def gen_axolotl(root: str) -> None:
    cfgmod = _import_from(root, "axolotl.utils.schemas.config")
    model = cfgmod.AxolotlInputConfig
    keys = pydantic_keys(model)
    removed: dict[str, dict[str, Any]] = {}
    # DeprecatedParameters: a validator per field that warns (deprecated) or raises (removed).
    dep = importlib.import_module("axolotl.utils.schemas.deprecated")
    src = inspect.getsource(dep.DeprecatedParameters)
    for name in dep.DeprecatedParameters.model_fields:
        m = re.search(rf'@field_validator\("{name}"\)(.*?)(?=@field_validator|\Z)', src, re.S)
        block = m.group(1) if m else ""
        status = "removed" if "raise DeprecationWarning" in block else "deprecated"
        rep = re.search(r"use `?([a-z_][a-z0-9_]*)`?", block)
        removed[name] = {
            "status": status,
            "replacement": rep.group(1) if rep else None,
            "version": _dist_version(root, "axolotl"),
            "note": " ".join(re.findall(r'"([^"]+)"', block))[:300] or None,
        }
    for name, f in model.model_fields.items():
        extra = f.json_schema_extra if isinstance(f.json_schema_extra, dict) else {}
        desc = str(extra.get("description") or f.description or "")
        # Field(deprecated="Use `attn_implementation: flash_attention_2` instead.") (axolotl 0.19
        # utils/schemas/config.py line 811): pydantic warns when the field is set
        if isinstance(getattr(f, "deprecated", None), str) and name not in removed:
            message = str(f.deprecated)
            named = [m for m in re.findall(r"`([a-z_][a-z0-9_.]*)", message) if m != name]
            rep = re.search(r"use `?([a-z_][a-z0-9_.]*)`?", message, re.I)
            replacement = named[0] if named else rep.group(1) if rep and rep.group(1) != name else None
            removed[name] = {
                "status": "deprecated",
                "replacement": replacement,
                "version": _dist_version(root, "axolotl"),
                "note": message.strip()[:300],
            }
            continue
        if desc.lower().lstrip("[").startswith("deprecated") and name not in removed:
            rep = re.search(r"use `?([a-z_][a-z0-9_]*)`?", desc)
            removed[name] = {
                "status": "deprecated",
                "replacement": rep.group(1) if rep else None,
                "version": _dist_version(root, "axolotl"),
                "note": desc[:300],
            }
    # plugins (axolotl/integrations/*): each registers its own pydantic args model
    plugins: dict[str, list[str]] = {}
    for plugin_file in sorted(Path(root, "axolotl", "integrations").rglob("*.py")):
        text = plugin_file.read_text(encoding="utf-8")
        for target in re.findall(r'def get_input_args\(self\)[^:]*:\s*return\s+"([\w.]+)"', text):
            mod, _, cls = target.rpartition(".")
            args_model = None
            for candidate in (mod, mod + ".args"):  # the package __init__ may need optional deps
                try:
                    args_model = getattr(importlib.import_module(candidate), cls)
                    break
                except Exception as exc:
                    err = exc
            args_file = plugin_file.parent / "args.py"
            if args_model is None and args_file.exists():  # load args.py alone, without its package
                spec = importlib.util.spec_from_file_location(
                    f"_axolotl_args_{plugin_file.parent.name}", args_file
                )
                try:
                    module = importlib.util.module_from_spec(spec)
                    spec.loader.exec_module(module)
                    args_model = getattr(module, cls)
                except Exception as exc:
                    err = exc
            if args_model is None:
                print(f"  skip plugin args {target}: {err.__class__.__name__}: {err}")
                continue
            pkeys = pydantic_keys(args_model)
            plugins[target] = sorted(pkeys)
            for k, tag in pkeys.items():
                if k not in keys:
                    tag["from"] = [target]
                    keys[k] = tag
    fsdp_mod = importlib.import_module("axolotl.utils.schemas.fsdp")
    plain = pydantic_keys(fsdp_mod.FSDPConfig)
    # check_fsdp_config_kwargs_prefix strips a legacy fsdp_ prefix (with a deprecation warning)
    prefixed = {
        "fsdp_" + k: dict(v, deprecated=True, replacement=k)
        for k, v in plain.items()
        if not k.startswith("fsdp_") and "fsdp_" + k not in plain
    }
    fsdp = {**plain, **prefixed}
    ds_mod = importlib.import_module("axolotl.utils.schemas.datasets")
    dsets: dict[str, dict[str, Any]] = {}
    for cname in (
        "SFTDataset",
        "DPODataset",
        "KTODataset",
        "StepwiseSupervisedDataset",
        "SyntheticDataset",
        "PretrainingDataset",
    ):
        if hasattr(ds_mod, cname):
            for k, tag in pydantic_keys(getattr(ds_mod, cname)).items():
                dsets.setdefault(k, tag)
    version = _dist_version(root, "axolotl")
    # legacy dataset keys remapped with a warning (handle_legacy_message_fields_logic, axolotl 0.19
    # utils/schemas/utils.py lines 37-52: message_field_role / message_field_content)
    ds_removed: dict[str, dict[str, Any]] = {}
    for path in sorted(Path(root, "axolotl", "utils", "schemas").glob("*.py")):
        found = _validator_deprecations(
            path.read_text(encoding="utf-8"), set(dsets) | {"message_property_mappings"}
        )
        for key, (status, repl, note) in found.items():
            if key in dsets:
                ds_removed.setdefault(
                    key, {"status": status, "replacement": repl, "version": version, "note": note}
                )
    data = {
        "dialect": "axolotl",
        "source": {
            "package": "axolotl",
            "version": version,
            "classes": [
                "axolotl.utils.schemas.config.AxolotlInputConfig",
                "axolotl.utils.schemas.fsdp.FSDPConfig",
                "axolotl.utils.schemas.datasets.*",
            ],
            "plugins": plugins,
        },
        "reader": "axolotl: yaml.safe_load into DictDefault, validated by pydantic (lax: '1e-5' becomes a "
        "float); unknown keys are silently dropped",
        "sections": {
            "": section(keys, strict=False, coerces=True),
            "fsdp_config": section(
                fsdp,
                strict=False,
                coerces=True,
                note="the fsdp_ prefix is accepted with a deprecation warning",
            ),
            "datasets": section(dsets, strict=False, coerces=True, note="keys of one entry of datasets:"),
        },
        "removed": {
            "": removed,
            "fsdp_config": {
                k: {
                    "status": "deprecated",
                    "replacement": v["replacement"],
                    "version": version,
                    "note": "omit the fsdp_ prefix inside fsdp_config",
                }
                for k, v in prefixed.items()
            },
            "datasets": dict(sorted(ds_removed.items())),
        },
    }
    write("axolotl", data)


def _validator_deprecations(text: str, known: set[str]) -> dict[str, tuple[str, str | None, str]]:
    """{key: (status, replacement, message)} for validator code of the form ``if "X" in data:`` (or
    ``data.get("X")``) whose body warns that X is deprecated (status deprecated) or raises because it is
    no longer supported (status removed); the replacement is the next known key the message names."""
    out: dict[str, tuple[str, str | None, str]] = {}
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return out
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        tested = {
            c.value
            for c in ast.walk(node.test)
            if isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value in known
        }
        if len(tested) != 1:
            continue
        (key,) = tested
        for stmt in node.body:
            for call in ast.walk(stmt):
                is_raise = isinstance(call, ast.Raise)
                if not is_raise and not (
                    isinstance(call, ast.Call) and _ast_callee(call) in ("warn", "warning", "warning_once")
                ):
                    continue
                message = " ".join(
                    str(c.value)
                    for c in ast.walk(call)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)
                )
                named = [m for m in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", message) if m in known]
                if not named or named[0] != key or not _DEPRECATION_WORDS.search(message):
                    continue
                repl = next((m for m in named[1:] if m != key), None)
                first = next(
                    c.value
                    for c in ast.walk(call)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)
                )
                out.setdefault(key, ("removed" if is_raise else "deprecated", repl, first.strip()[:300]))
    return out


def gen_accelerate() -> None:
    import accelerate
    from accelerate.commands.config.config_args import ClusterConfig, SageMakerConfig
    from accelerate.commands.launch import launch_command_parser
    from accelerate.utils import constants as C
    from accelerate.utils.dataclasses import ComputeEnvironment, DistributedType, DynamoBackend, PrecisionType

    top = dataclass_keys(ClusterConfig)
    sage = {k: v for k, v in dataclass_keys(SageMakerConfig).items() if k not in top}
    for v in sage.values():
        v["from"] = ["SageMakerConfig"]
    top.update(sage)
    top["distributed_type"] = {"type": "str", "choices": _enum_values(DistributedType)}
    top["compute_environment"] = {"type": "str", "choices": _enum_values(ComputeEnvironment)}
    top["mixed_precision"] = {"type": "str", "choices": _enum_values(PrecisionType), "optional": True}
    top["rdzv_backend"] = {"type": "str", "optional": True, "default": "static"}
    top["main_process_port"] = {"type": "int", "optional": True}
    # ClusterConfig.gpu_ids: Optional[str], never converted: _validate_launch_command calls
    # args.gpu_ids.split(","), so `gpu_ids: 0` (an int in YAML) fails with AttributeError.
    top["gpu_ids"] = {
        "type": "str",
        "optional": True,
        "note": "'all' or a comma list of ids; accelerate launch calls gpu_ids.split(','), so an unquoted "
        "single id (an int in YAML) fails: quote it",
    }
    # `accelerate config` itself writes downcast_bf16: 'no' (read only on TPU, as a truthy flag)
    top["downcast_bf16"] = {"type": "bool|str", "default": False}
    for k, meta in ACCELERATE_LEGACY.items():
        top[k] = {"type": meta["type"], "deprecated": True, "replacement": meta["replacement"]}

    parser = launch_command_parser()
    groups = {g.title: g._group_actions for g in parser._action_groups}

    def actions_of(title: str) -> dict[str, Any]:
        out = {}
        for a in groups.get(title, []):
            if a.dest in ("help",):
                continue
            tag: dict[str, Any] = {"type": "any"}
            t = a.type
            if t is int:
                tag["type"] = "int"
            elif t is float:
                tag["type"] = "float"
            elif a.nargs == 0 or (a.const is True) or getattr(t, "__name__", "") in ("str_to_bool", "bool"):
                tag["type"] = "bool"
            if a.choices:
                tag["choices"] = list(a.choices)
            out[a.dest] = tag
        return out

    bool_like = "bool|str"
    ds = actions_of("DeepSpeed Arguments")
    ds["zero_stage"] = {"type": "int", "choices": [0, 1, 2, 3]}
    ds["offload_optimizer_device"] = {"type": "str", "choices": ["none", "cpu", "nvme"]}
    ds["offload_param_device"] = {"type": "str", "choices": ["none", "cpu", "nvme"]}
    ds["zero3_init_flag"] = {"type": bool_like}
    ds["zero3_save_16bit_model"] = {"type": bool_like}
    ds["gradient_accumulation_steps"] = {"type": "int|str", "note": "an int or 'auto'"}
    ds["gradient_clipping"] = {"type": "float|str", "note": "a number or 'auto'"}
    ds["deepspeed_multinode_launcher"] = {"type": "str", "choices": list(C.DEEPSPEED_MULTINODE_LAUNCHERS)}
    ds["deepspeed_config_file"] = {"type": "str"}

    sharding_note = (
        "FSDP1's sharding strategy: accelerate launch exports it as FSDP_SHARDING_STRATEGY "
        "(utils/launch.py:313) and the plugin reads it without a warning "
        "(utils/dataclasses.py:1845-1846, 1.15.0); the deprecation warning is only for a plugin built "
        "in code with sharding_strategy (dataclasses.py:1837-1843). "
        "FSDP2 reads fsdp_reshard_after_forward instead"
    )
    fsdp_raw = actions_of("FSDP Arguments")
    fsdp_raw["fsdp_version"] = {"type": "int|str", "choices": [1, 2]}
    # Not deprecated in a config file: accelerate launch exports it as FSDP_SHARDING_STRATEGY
    # (utils/launch.py:313) and FSDP1's plugin reads that without a warning (utils/dataclasses.py:1845-1846,
    # 1.15.0); the deprecation warning is for a plugin built in code with sharding_strategy (1837-1843).
    fsdp_raw["fsdp_sharding_strategy"] = {
        "type": "int|str",
        "choices": [*list(C.FSDP_SHARDING_STRATEGY), 1, 2, 3, 4, 5],
        "note": sharding_note,
    }
    fsdp_raw["fsdp_auto_wrap_policy"] = {"type": "str", "choices": list(C.FSDP_AUTO_WRAP_POLICY)}
    fsdp_raw["fsdp_backward_prefetch"] = {
        "type": "str",
        "choices": list(C.FSDP_BACKWARD_PREFETCH),
        "optional": True,
    }
    fsdp_raw["fsdp_state_dict_type"] = {"type": "str", "choices": list(C.FSDP_STATE_DICT_TYPE)}
    fsdp_raw["fsdp_reshard_after_forward"] = {
        "type": bool_like,
        "note": "FSDP2: a bool; FSDP1: a sharding strategy name",
    }
    fsdp_raw["fsdp_transformer_layer_cls_to_wrap"] = {"type": "list|str", "optional": True}
    fsdp_raw["fsdp_min_num_params"] = {"type": "int"}
    for k in (
        "fsdp_offload_params",
        "fsdp_forward_prefetch",
        "fsdp_use_orig_params",
        "fsdp_cpu_ram_efficient_loading",
        "fsdp_sync_module_states",
        "fsdp_activation_checkpointing",
        "fsdp_activation_checkpointing_offload",
    ):
        if k in fsdp_raw:
            fsdp_raw[k] = {"type": bool_like}
    fsdp = dict(fsdp_raw)
    fsdp.update({k[len("fsdp_") :]: v for k, v in fsdp_raw.items() if k != "fsdp_version"})

    dyn_raw = {k: v for k, v in actions_of("Resource Selection Arguments").items() if k.startswith("dynamo_")}
    dyn_raw["dynamo_backend"] = {"type": "str", "choices": _enum_values(DynamoBackend), "choices_ci": True}
    dyn = dict(dyn_raw)
    dyn.update({k[len("dynamo_") :]: v for k, v in dyn_raw.items()})

    fp8_raw = actions_of("FP8 Arguments")
    fp8 = dict(fp8_raw)
    fp8.update({k[len("fp8_") :]: v for k, v in fp8_raw.items()})
    if "backend" in fp8:
        fp8["backend"] = fp8["fp8_backend"] = {
            "type": "str",
            "choices": ["ao", "te", "msamp", "AO", "TE", "MSAMP"],
        }

    par = actions_of("ParallelismConfig Arguments")
    meg = actions_of("Megatron-LM Arguments")
    mpi = actions_of("MPI Arguments")
    removed = {
        k: {
            "status": "deprecated",
            "version": accelerate.__version__,
            **{x: v for x, v in meta.items() if x != "type"},
        }
        for k, meta in ACCELERATE_LEGACY.items()
    }
    sub_note = (
        "accelerate launch copies every key of this mapping onto its argparse namespace; a key no "
        "option reads is silently ignored"
    )
    data = {
        "dialect": "accelerate",
        "source": {
            "package": "accelerate",
            "version": accelerate.__version__,
            "classes": [
                "accelerate.commands.config.config_args.ClusterConfig",
                "accelerate.commands.config.config_args.SageMakerConfig",
                "accelerate.commands.launch.launch_command_parser",
            ],
        },
        "reader": "load_config_from_file: yaml.safe_load / json.load; unknown top-level keys raise "
        "ValueError",
        "sections": {
            "": section(
                top,
                strict=True,
                coerces=False,
                note="SageMaker-only keys are included (tagged from: SageMakerConfig)",
            ),
            "deepspeed_config": section(ds, strict=False, coerces=False, note=sub_note),
            "fsdp_config": section(
                fsdp,
                strict=False,
                coerces=False,
                note=sub_note + "; keys without the fsdp_ prefix get it added",
            ),
            "dynamo_config": section(
                dyn,
                strict=False,
                coerces=False,
                note=sub_note + "; keys without the dynamo_ prefix get it added",
            ),
            "fp8_config": section(
                fp8,
                strict=False,
                coerces=False,
                note=sub_note + "; keys without the fp8_ prefix get it added",
            ),
            "parallelism_config": section(par, strict=False, coerces=False, note=sub_note),
            "megatron_lm_config": section(meg, strict=False, coerces=False, note=sub_note),
            "mpirun_config": section(mpi, strict=False, coerces=False, note=sub_note),
        },
        "removed": {"": removed},
    }
    write("accelerate", data)


class _RecKeys:
    def __init__(self, d: _Rec) -> None:
        self.d = d

    def __contains__(self, k: object) -> bool:
        self.d.seen.add(k)
        return dict.__contains__(self.d, k)

    def __iter__(self):
        return iter(dict.keys(self.d))

    def __len__(self) -> int:
        return dict.__len__(self.d)


class _Rec(dict):
    """A dict that records every key the code under study asks for."""

    seen: set

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.seen = set()

    def get(self, k: Any, *a: Any) -> Any:
        self.seen.add(k)
        return super().get(k, *a)

    def __getitem__(self, k: Any) -> Any:
        self.seen.add(k)
        return super().__getitem__(k)

    def __contains__(self, k: object) -> bool:
        self.seen.add(k)
        return super().__contains__(k)

    def keys(self):  # type: ignore[override]
        return _RecKeys(self)

    def __copy__(self) -> _Rec:
        return self


def gen_deepspeed(root: str) -> None:
    sys.path.insert(0, root)
    import deepspeed
    import deepspeed.runtime.config as dsc
    from deepspeed.runtime.precision_config import DeepSpeedBF16Config, DeepSpeedFP16Config
    from deepspeed.runtime.zero.config import DeepSpeedZeroConfig
    from deepspeed.runtime.zero.offload_config import (
        DeepSpeedZeroOffloadOptimizerConfig,
        DeepSpeedZeroOffloadParamConfig,
    )

    version = (
        (Path(root) / "version.txt").read_text().strip()
        if (Path(root) / "version.txt").exists()
        else deepspeed.__version__.strip()
    )

    # Top level and dict-read sections: run DeepSpeedConfig on recording dicts.
    dict_sections = [
        "optimizer",
        "scheduler",
        "activation_checkpointing",
        "checkpoint",
        "data_types",
        "aio",
        "flops_profiler",
        "autotuning",
        "torch_autocast",
        "pipeline",
        "data_efficiency",
    ]
    subs = {name: _Rec() for name in dict_sections}
    subs["optimizer"] = _Rec({"type": "AdamW", "params": {}})
    subs["scheduler"] = _Rec({"type": "WarmupLR", "params": {}})
    cfg = _Rec({"train_micro_batch_size_per_gpu": 1, **subs})
    try:
        dsc.DeepSpeedConfig(cfg)
    except Exception as exc:  # a section that needs more than an empty dict
        print(f"  DeepSpeedConfig on the recording dict raised {exc.__class__.__name__}: {exc}")
    removed_top = dict(getattr(dsc, "_REMOVED_TOP_LEVEL_CONFIG_KEYS", {}))
    removed_zero = dict(getattr(dsc, "_REMOVED_ZERO_CONFIG_KEYS", {}))
    top_names = {k for k in cfg.seen if isinstance(k, str)} - set(removed_top)
    top_names |= set(DEEPSPEED_EXTRA_TOP)
    types_top = {
        "train_batch_size": "int",
        "train_micro_batch_size_per_gpu": "int",
        "gradient_accumulation_steps": "int",
        "steps_per_print": "float",  # only used in `step % steps_per_print`; JSON 1e5 is a float
        "gradient_clipping": "float",
        "prescale_gradients": "bool",
        "gradient_predivide_factor": "float",
        "wall_clock_breakdown": "bool",
        "memory_breakdown": "bool",
        "zero_allow_untested_optimizer": "bool",
        "zero_force_ds_cpu_optimizer": "bool",
        "communication_data_type": "str",
        "seq_parallel_communication_data_type": "str",
        "dump_state": "bool",
        "disable_allgather": "bool",
        "dataloader_drop_last": "bool",
        "sequence_parallel_size": "int",
        "vocabulary_size": "int",
        "disable_python_gc": "int",
        "managed_gradient_accumulation": "bool",
        "use_data_before_expert_parallelism": "bool",
        "log_level": "str",
        "gradient_allreduce_op": "str",
    }
    top: dict[str, dict[str, Any]] = {}
    for k in sorted(top_names):
        t = types_top.get(k)
        if t is None:
            t = "dict"
        tag: dict[str, Any] = {"type": t}
        if k in ("communication_data_type", "seq_parallel_communication_data_type", "gradient_clipping"):
            tag["optional"] = True
        top[k] = tag
    top["bfloat16"] = dict(top.get("bfloat16", {"type": "dict"}), deprecated=True, replacement="bf16")

    sections: dict[str, Any] = {
        "": section(
            top,
            strict=False,
            coerces=False,
            note="DeepSpeed ignores unknown top-level keys; values are read with dict.get, no coercion",
        ),
    }
    for name, rec in subs.items():
        seen = {k for k in rec.seen if isinstance(k, str)}
        if name in ("optimizer", "scheduler"):
            seen |= {"type", "params"}
        if seen:
            sections[name] = section(
                {k: {"type": "any"} for k in seen},
                strict=False,
                coerces=False,
                open_keys=name in ("data_efficiency", "pipeline"),
                note="read with dict.get: unknown keys are ignored",
            )
    # autotuning.arg_mappings maps DeepSpeed config keys to the training script's flags
    sections["autotuning/arg_mappings"] = section(
        {k: {"type": "str"} for k in top},
        strict=False,
        coerces=False,
        note="keys name top-level DeepSpeed config keys; values are the script flags they map to",
    )
    sections["optimizer/params"] = section(
        {}, strict=False, coerces=False, open_keys=True, note="optimizer-specific keyword arguments"
    )
    sections["scheduler/params"] = section(
        {}, strict=False, coerces=False, open_keys=True, note="scheduler-specific keyword arguments"
    )

    zero = pydantic_keys(DeepSpeedZeroConfig)
    zero.pop("leaf_module", None)
    zero["leaf_module"] = {"type": "dict"}
    sections["zero_optimization"] = section(
        zero,
        strict=True,
        coerces=True,
        note="pydantic extra=forbid: an unknown key is a hard error; "
        "stage3_ names are aliases of the plain names",
    )
    sections["zero_optimization/offload_optimizer"] = section(
        pydantic_keys(DeepSpeedZeroOffloadOptimizerConfig), strict=True, coerces=True
    )
    sections["zero_optimization/offload_param"] = section(
        pydantic_keys(DeepSpeedZeroOffloadParamConfig), strict=True, coerces=True
    )
    sections["fp16"] = section(pydantic_keys(DeepSpeedFP16Config), strict=True, coerces=True)
    sections["bf16"] = section(pydantic_keys(DeepSpeedBF16Config), strict=True, coerces=True)
    sections["bfloat16"] = sections["bf16"]
    for mod, cls, key in (
        ("deepspeed.runtime.tensor_parallel.config", "TPTrainingConfig", "tensor_parallel"),
        ("deepspeed.comm.config", "CommsLoggerConfig", "comms_logger"),
        ("deepspeed.monitor.config", "TensorBoardConfig", "tensorboard"),
        ("deepspeed.monitor.config", "WandbConfig", "wandb"),
        ("deepspeed.monitor.config", "CSVConfig", "csv_monitor"),
        ("deepspeed.monitor.config", "CometConfig", "comet"),
        ("deepspeed.compile.config", "CompileConfig", "compile"),
        ("deepspeed.runtime.zenflow.zenflow_config", "ZenFlowConfig", "zero_optimization/zenflow"),
        ("deepspeed.runtime.config", "HybridEngineConfig", "hybrid_engine"),
    ):
        try:
            m = getattr(importlib.import_module(mod), cls)
        except (ImportError, AttributeError):
            continue
        sections[key] = section(pydantic_keys(m), strict=True, coerces=True)

    # "auto" placeholders
    for path in DEEPSPEED_AUTO:
        sec, _, key = path.rpartition("/")
        s = sections.get(sec)
        if s is None:
            continue
        if key in s["keys"]:
            s["keys"][key]["auto"] = True
        elif s.get("open") or sec.endswith("params"):
            s["keys"][key] = {"type": "any", "auto": True}

    def rem(k: str, msg: str) -> dict[str, Any]:
        return {
            "status": "removed",
            "version": "0.19.7" if k in DEEPSPEED_REMOVED_0197 else version,
            "replacement": None,
            "note": re.sub(r"\s*See https://\S+", "", msg).strip(),
        }

    removed = {
        "": {k: rem(k, m) for k, m in removed_top.items()},
        "zero_optimization": {k: rem(k, m) for k, m in removed_zero.items()},
    }
    removed[""]["bfloat16"] = {
        "status": "deprecated",
        "version": version,
        "replacement": "bf16",
        "note": "old name of the bf16 block, still read when bf16 is absent",
    }
    for k, tag in zero.items():
        if tag.get("deprecated"):
            removed["zero_optimization"][k] = {
                "status": "deprecated",
                "version": version,
                "replacement": tag.get("replacement"),
                "note": "deprecated ZeRO field, still accepted",
            }
    data = {
        "dialect": "deepspeed",
        "source": {
            "package": "deepspeed",
            "version": version,
            "classes": [
                "deepspeed.runtime.config.DeepSpeedConfig (keys it reads)",
                "deepspeed.runtime.zero.config.DeepSpeedZeroConfig",
                "deepspeed.runtime.zero.offload_config.*",
                "deepspeed.runtime.precision_config.*",
            ],
        },
        "reader": "DeepSpeed: hjson.load with duplicate keys rejected (accelerate reads the file with json)",
        "sections": dict(sorted(sections.items())),
        "removed": removed,
    }
    write("deepspeed", data)


# --------------------------------------------------------------------------------------------------
# versions.json: which releases each key exists in (read from the released sources' AST, not imported)
# --------------------------------------------------------------------------------------------------

# (package, oldest minor) for which every minor's newest patch release is read; the wheels (deepspeed:
# the sdist) are fetched with `pip download --no-deps NAME==VER` into the cache folder.
VERSIONED = {
    "transformers": (4, 40),
    "trl": (0, 9),
    "accelerate": (0, 30),
    "peft": (0, 10),
    "deepspeed": (0, 14),
}
# The dataclasses whose fields are the keys: {package: {class name: source files to search (globs)}}.
# For TRL every @dataclass named *Config / *Arguments in the package is read (the set grows per release).
VERSIONED_CLASSES: dict[str, dict[str, tuple[str, ...]]] = {
    "transformers": {
        "TrainingArguments": ("transformers/training_args.py",),
        "Seq2SeqTrainingArguments": (
            "transformers/training_args_seq2seq.py",
            "transformers/training_args.py",
        ),
    },
    "accelerate": {"ClusterConfig": ("accelerate/commands/config/config_args.py",)},
    "peft": {"LoraConfig": ("peft/tuners/lora/config.py", "peft/config.py")},
    "deepspeed": {
        "DeepSpeedZeroConfig": ("deepspeed/runtime/zero/config.py",),
    },
}
_DEPRECATION_WORDS = re.compile(r"deprecat|will be removed|no longer", re.IGNORECASE)
_BACKTICKED = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)`")


def _minor_releases(package: str, floor: tuple[int, int]) -> list[str]:
    """The newest patch release of every minor from ``floor`` on, oldest first (pip index versions)."""
    import subprocess

    out = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", package],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith("Available versions:"))
    newest: dict[tuple[int, int], tuple[int, ...]] = {}
    for v in line.split(":", 1)[1].split(","):
        v = v.strip()
        if not re.fullmatch(r"\d+\.\d+\.\d+", v):
            continue
        t = tuple(int(x) for x in v.split("."))
        if t[:2] >= floor and t > newest.get(t[:2], (-1,)):
            newest[t[:2]] = t
    return [".".join(map(str, newest[k])) for k in sorted(newest)]


def _release_sources(package: str, version: str, cache: Path) -> dict[str, str]:
    """{path inside the distribution: text} of the package's .py files in one release."""
    import subprocess
    import tarfile
    import zipfile

    found = [p for p in cache.glob(f"{package}-{version}*") if p.suffix in (".whl", ".gz")]
    if not found:
        args = (
            ["--only-binary", ":all:"]
            if package != "deepspeed"
            else ["--no-binary", ":all:", "--no-build-isolation"]
        )
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                *args,
                f"{package}=={version}",
                "-d",
                str(cache),
                "-q",
            ],
            check=False,
        )
        found = [p for p in cache.glob(f"{package}-{version}*") if p.suffix in (".whl", ".gz")]
    if not found:
        raise SystemExit(f"{package}=={version}: not downloaded into {cache}")
    out: dict[str, str] = {}
    if found[0].suffix == ".whl":
        with zipfile.ZipFile(found[0]) as z:
            for name in z.namelist():
                if name.startswith(f"{package}/") and name.endswith(".py") and _wanted_file(package, name):
                    out[name] = z.read(name).decode("utf-8", errors="replace")
    else:
        with tarfile.open(found[0]) as t:
            for m in t.getmembers():
                parts = m.name.split("/", 1)
                if (
                    len(parts) == 2
                    and parts[1].endswith(".py")
                    and _wanted_file(package, parts[1])
                    and m.isfile()
                ):
                    f = t.extractfile(m)
                    if f is not None:
                        out[parts[1]] = f.read().decode("utf-8", errors="replace")
    return out


def _wanted_file(package: str, name: str) -> bool:
    if not name.startswith(f"{package}/"):
        return False
    if package == "trl":
        return True
    return any(name == p for paths in VERSIONED_CLASSES[package].values() for p in paths)


def _ast_classes(sources: dict[str, str], paths: tuple[str, ...] | None) -> dict[str, ast.ClassDef]:
    """Classes by simple name in the given files (all files when ``paths`` is None; first wins)."""
    out: dict[str, ast.ClassDef] = {}
    names = sorted(sources) if paths is None else [p for p in paths if p in sources]
    for name in names:
        try:
            tree = ast.parse(sources[name])
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                out.setdefault(node.name, node)
    return out


def _ast_fields(
    cls: ast.ClassDef, classes: dict[str, ast.ClassDef], seen: frozenset[str] = frozenset()
) -> dict[str, str | None]:
    """{field: alias or None} of a dataclass or pydantic model, with the fields of bases in ``classes``."""
    out: dict[str, str | None] = {}
    for base in cls.bases:
        name = (
            base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
        )
        if name in classes and name not in seen and name != cls.name:
            out.update(_ast_fields(classes[name], classes, seen | {cls.name}))
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            ann = ast.unparse(stmt.annotation)
            if "ClassVar" in ann or stmt.target.id.startswith("_") or stmt.target.id == "model_config":
                continue
            alias = None
            if isinstance(stmt.value, ast.Call):
                for kw in stmt.value.keywords:
                    if (
                        kw.arg == "alias"
                        and isinstance(kw.value, ast.Constant)
                        and isinstance(kw.value.value, str)
                    ):
                        alias = kw.value.value
            out[stmt.target.id] = alias
    return out


def _ast_deprecations(cls: ast.ClassDef, fields: set[str]) -> dict[str, str | None]:
    """{field: replacement or None} for the fields whose use ``__post_init__`` answers with a deprecation
    warning: ``if self.warmup_ratio is not None: logger.warning("warmup_ratio is deprecated ... Use
    `warmup_steps` instead.")`` (transformers 5.6 training_args.py)."""
    out: dict[str, str | None] = {}
    post = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__post_init__"), None)
    if post is None:
        return out
    for node in ast.walk(post):
        if not isinstance(node, ast.If):
            continue
        if any(isinstance(n, ast.Call) and _ast_callee(n) == "isinstance" for n in ast.walk(node.test)):
            continue  # a deprecated *value type* of the field (EvaluationStrategy enums), not the field
        tested = {
            n.attr
            for n in ast.walk(node.test)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
        } & fields
        if len(tested) != 1:
            continue
        (key,) = tested
        for stmt in node.body:
            for call in ast.walk(stmt):
                if not (
                    isinstance(call, ast.Call) and _ast_callee(call) in ("warn", "warning", "warning_once")
                ):
                    continue
                text = " ".join(
                    str(c.value)
                    for c in ast.walk(call)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)
                )
                named = [m for m in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text) if m in fields]
                if named and named[0] == key and _DEPRECATION_WORDS.search(text):
                    repl = [m for m in _BACKTICKED.findall(text) if m != key and m in fields]
                    out.setdefault(key, repl[0] if repl else None)
    return out


def _ast_lineage(cls: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> list[ast.ClassDef]:
    """The class and its bases found in ``classes``, nearest first."""
    out, todo = [], [cls]
    while todo and len(out) < 32:
        node = todo.pop(0)
        if any(node is c for c in out):
            continue
        out.append(node)
        for base in node.bases:
            name = _last_name(base)
            if name in classes and classes[name] is not node:
                todo.append(classes[name])
    return out


def _last_name(node: ast.expr) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def _ast_callee(call: ast.Call) -> str | None:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


def _is_dataclass(cls: ast.ClassDef) -> bool:
    return any("dataclass" in ast.unparse(d) for d in cls.decorator_list)


def _release_classes(
    package: str, sources: dict[str, str]
) -> dict[str, tuple[dict[str, str | None], dict[str, str | None]]]:
    """{class: (fields, deprecations)} of one release."""
    if package == "trl":
        every = _ast_classes(sources, None)
        wanted = {
            name: cls
            for name, cls in every.items()
            if _is_dataclass(cls) and (name.endswith("Config") or name.endswith("Arguments"))
        }
    else:
        every = _ast_classes(
            sources, tuple(p for paths in VERSIONED_CLASSES[package].values() for p in paths)
        )
        wanted = {}
        for name, paths in VERSIONED_CLASSES[package].items():
            local = _ast_classes(sources, paths)
            if name in local:
                wanted[name] = local[name]
    out = {}
    for name, cls in wanted.items():
        fields = _ast_fields(cls, every)
        deps: dict[str, str | None] = {}
        for owner in _ast_lineage(cls, every):  # a subclass inherits its bases' __post_init__ warnings
            for key, repl in _ast_deprecations(owner, set(fields)).items():
                deps.setdefault(key, repl)
        out[name] = (fields, deps)
    return out


def _ranges(indexes: list[int]) -> list[int]:
    """Sorted release indexes as flat [first, last, first, last, ...] pairs."""
    out: list[int] = []
    for i in indexes:
        if out and out[-1] == i - 1:
            out[-1] = i
        else:
            out.extend([i, i])
    return out


def gen_versions(cache: Path, packages: list[str] | None = None) -> None:
    """advisor/data/keys/versions.json: per package, the releases read and, per class, each key with the
    release-index ranges it exists in (and is deprecated in, with its replacement)."""
    path = OUT / "versions.json"
    data = json.loads(path.read_text()) if path.exists() else {"packages": {}}
    for package in packages or list(VERSIONED):
        releases = _minor_releases(package, VERSIONED[package])
        present: dict[str, dict[str, list[int]]] = {}
        deprecated: dict[str, dict[str, list[int]]] = {}
        replacement: dict[str, dict[str, str]] = {}
        aliases: dict[str, dict[str, str]] = {}
        for i, version in enumerate(releases):
            print(f"{package} {version}", file=sys.stderr)
            for cls, (fields, deps) in _release_classes(
                package, _release_sources(package, version, cache)
            ).items():
                for key, alias in fields.items():
                    present.setdefault(cls, {}).setdefault(key, []).append(i)
                    if alias:  # DeepSpeed files write the alias (stage3_prefetch_bucket_size)
                        aliases.setdefault(cls, {})[key] = alias
                        if alias not in fields:
                            present[cls].setdefault(alias, []).append(i)
                for key, repl in deps.items():
                    deprecated.setdefault(cls, {}).setdefault(key, []).append(i)
                    if repl:
                        replacement.setdefault(cls, {})[key] = repl
        classes = {}
        for cls in sorted(present):
            entry: dict[str, Any] = {"keys": {k: _ranges(v) for k, v in sorted(present[cls].items())}}
            if cls in deprecated:
                entry["deprecated"] = {k: _ranges(v) for k, v in sorted(deprecated[cls].items())}
            if cls in replacement:
                entry["replacement"] = dict(sorted(replacement[cls].items()))
            if cls in aliases:
                entry["aliases"] = dict(sorted(aliases[cls].items()))
            classes[cls] = entry
        data["packages"][package] = {"versions": releases, "classes": classes}
    data["source"] = (
        "tools/gen_known_keys.py --versions: the AST of each release's sources (pip download --no-deps), "
        "never imported; the newest patch of every minor"
    )
    data["packages"] = dict(sorted(data["packages"].items()))
    path.write_text(json.dumps(data, separators=(",", ":"), sort_keys=False) + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(REPO)} ({path.stat().st_size:,} bytes)", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llamafactory", help="folder holding an unpacked llamafactory wheel")
    ap.add_argument("--axolotl", help="folder holding an unpacked axolotl wheel")
    ap.add_argument(
        "--deepspeed", help="an unpacked deepspeed sdist (the folder with deepspeed/ and version.txt)"
    )
    ap.add_argument("--only", nargs="*", help="dialects to write (default: all whose source is at hand)")
    ap.add_argument(
        "--versions",
        nargs="*",
        metavar="PACKAGE",
        help=f"write versions.json for these packages (none named: {', '.join(VERSIONED)}) and nothing else",
    )
    ap.add_argument("--cache", default="/tmp/gk_cache", help="folder for the downloaded releases")
    args = ap.parse_args(argv)
    if args.versions is not None:
        gen_versions(Path(args.cache), args.versions or None)
        return 0
    want = set(args.only or ["training_args", "trl", "accelerate", "llamafactory", "axolotl", "deepspeed"])
    if "training_args" in want:
        gen_training_args()
    if "trl" in want:
        gen_trl()
    if "accelerate" in want:
        gen_accelerate()
    if "llamafactory" in want and args.llamafactory:
        gen_llamafactory(args.llamafactory)
    if "axolotl" in want and args.axolotl:
        gen_axolotl(args.axolotl)
    if "deepspeed" in want and args.deepspeed:
        gen_deepspeed(args.deepspeed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

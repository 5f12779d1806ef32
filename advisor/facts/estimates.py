"""Estimates: a run's RunPlan mapped onto the estimator (advisor.estimate), peak memory and run time.

The `estimates` namespace (what GA401-GA405, the run summary and `gpu-advise estimate PATHS` read):

    known              True when a memory estimate was made; False with `reason` when it was not
    reason             why there is no estimate (model not found offline, world size unknown, ...)
    model, params      the model as resolved (hub id or path) and its exact parameter count
    method, strategy   full | lora | qlora; none | ddp | zero1-3 | fsdp | fsdp_grad_op (as estimated)
    peak_vram_gib      predicted peak per GPU, nvidia-smi metric (at the model name's location)
    low_gib, high_gib  the uncertainty band around it
    gpu_memory_gib     usable memory of one GPU of the machine
    fraction           peak / usable
    verdict            fits | tight | does not fit (tight: within thresholds.near_memory_fraction)
    items              the breakdown at the peak: [{name, gib, note}]
    contributors       the three largest items, "optimizer states 29.9 GiB"
    savings            what each knob would save at the peak, "enable gradient checkpointing saves 12.3 GiB"
    single_gpu_peak    the same per-device batch on one GPU of the machine, no sharding, no offload
    fits_single_gpu    single_gpu_peak fits (below the near-limit margin)
    ddp_peak, ddp_fits plain DDP at the run's data-parallel size (no sharding, no offload)
    hours_single_gpu   the run on one GPU (same per-device batch), when its length is known
    smoke_test         max_steps makes it a run of minutes (a test of the setup, not a training run)
    hours              the run on its data-parallel GPUs
    scaling_efficiency tokens/s on n GPUs / (n x tokens/s on one)
    assumptions        every input that was not written and what was assumed instead

Nothing here imports torch or transformers; the estimator is imported when the first run is built.
Unknown inputs never become silent defaults: either the estimator states the assumption or the whole
estimate is unknown with its reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from advisor.provenance import Namespace, Value
from advisor.sources.document import Location

NEAR_FRACTION_DEFAULT = 0.10
# A run with max_steps that takes less than this on one GPU is a smoke test (often of the multi-GPU
# setup itself): GA402/GA405 leave it alone.
SMOKE_TEST_HOURS = 0.25
# The sequence length assumed when a run writes none (stated in the run's notes): 2048 tokens, the
# context of the Llama-2 generation and a common SFT cutoff; TRL's SFTConfig default (1024) and
# LLaMA-Factory's cutoff_len default (2048) bracket it.
ASSUMED_SEQ_LEN = 2048
RUN_LENGTH_UNKNOWN = (
    "the run's length is unknown (max_steps, or dataset-samples / dataset-tokens in the settings)"
)

SEQ_KEYS = (
    "max_seq_length",
    "max_length",
    "cutoff_len",
    "sequence_len",
    "model_max_length",
    "max_seq_len",
    "seq_length",
    "block_size",
)
# Keys of trainers whose memory the estimator does not model: online RL generates with the policy and
# holds reference/reward/critic models.
RL_KEYS = (
    "num_generations",
    "use_vllm",
    "actor_model_name_or_path",
    "critic_model_name_or_path",
    "reward_pretrain",
    "reward_model_path",
    "ppo_epochs",
    "rollout_batch_size",
)
# Keys that change what is trained or how the optimizer stores its state in ways the estimator does not
# model: vision-language towers and projector-only stages, partial freezing, low-rank/block optimizers.
UNMODELLED_KEYS = {
    "vision_tower": "a vision-language model (vision tower + projector)",
    "mm_projector_type": "a vision-language model (vision tower + projector)",
    "tune_mm_mlp_adapter": "projector-only training of a vision-language model",
    "freeze_backbone": "a partly frozen model",
    "freeze_trainable_layers": "a partly frozen model",
    "use_galore": "the GaLore optimizer (low-rank optimizer states)",
    "use_apollo": "the APOLLO optimizer",
    "use_badam": "BAdam (one block trained at a time)",
    "use_adam_mini": "Adam-mini (blockwise second moments)",
    "use_muon": "the Muon optimizer",
    "unfrozen_parameters": "a partly frozen model (axolotl unfrozen_parameters)",
}
PREFERENCE_STAGES = {"dpo", "kto", "orpo", "simpo"}
REFERENCE_FREE = {"orpo", "simpo", "cpo"}
_ATTN = {
    "flash_attention_2": "flash_attention_2",
    "flash_attention_3": "flash_attention_2",
    "fa2": "flash_attention_2",
    "fa3": "flash_attention_2",
    "sdpa": "sdpa",
    "eager": "eager",
    "disabled": "eager",
    "flex_attention": "flex_attention",
}
STRATEGY_LABEL = {
    "none": "1 GPU, no sharding",
    "ddp": "DDP",
    "zero1": "ZeRO-1",
    "zero2": "ZeRO-2",
    "zero3": "ZeRO-3",
    "fsdp": "FSDP (FULL_SHARD)",
    "fsdp_grad_op": "FSDP (SHARD_GRAD_OP)",
}


# ---- small readers --------------------------------------------------------------------------------
def _entry(ns: Any, dotted: str) -> Value | None:
    if ns is None:
        return None
    e = ns.lookup(dotted) if isinstance(ns, Namespace) else None
    return e if isinstance(e, Value) else None


def _written(ns: Any, *keys: str) -> Value | None:
    """The first key that a file or flag sets (not a built-in default), known or not."""
    for key in keys:
        v = _entry(ns, key)
        if v is not None and v.source != "default":
            return v
    return None


def _truth(v: Value | None) -> bool | None:
    if v is None or not v.known:
        return None
    raw = v.value
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, int | float):
        return bool(raw)
    if isinstance(raw, str):
        low = raw.strip().lower()
        if low in {"true", "yes", "1", "on"}:
            return True
        # anything else is a mode name, e.g. axolotl gradient_checkpointing: unsloth / offload
        return low not in {"false", "no", "0", "off", "none", ""}
    return None


def _number(v: Value | None) -> float | None:
    if v is None or not v.known or isinstance(v.value, bool):
        return None
    raw = v.value
    if isinstance(raw, int | float):
        return float(raw)
    if isinstance(raw, str):
        try:
            return float(raw.strip())
        except ValueError:
            return None
    return None


def _int(v: Value | None) -> int | None:
    x = _number(v)
    return int(x) if x is not None and x == int(x) else None


def _origin(*values: Value | None) -> Location | None:
    for v in values:
        if v is not None and v.origin is not None:
            return v.origin
    return None


# ---- the plan as estimator inputs -----------------------------------------------------------------
@dataclass
class PlanInputs:
    """A run's TrainingSetup (or the reason there is none) and what the time model needs."""

    setup: Any = None  # advisor.estimate.TrainingSetup
    reason: str | None = None
    info: Any = None  # advisor.estimate.ModelInfo
    model_value: Value | None = None
    machine: Any = None
    dp: int = 1
    world: int = 1
    strategy_origin: Location | None = None
    near_fraction: float = NEAR_FRACTION_DEFAULT
    total_tokens: float | None = None
    max_steps: int | None = None
    busbw_gbs: float | None = None
    reference_copy: bool = False  # preference training keeps a frozen reference model
    quiet: bool = False  # no summary note for the missing estimate
    assumptions: list[str] = field(default_factory=list)
    related: list[Location] = field(default_factory=list)


def _method(plan: Any, a: list[str]) -> tuple[str | None, str | None]:
    """(method, reason when it cannot be estimated)."""
    t = plan.training
    derived = plan.model.method if plan.model.method in {"full", "lora", "qlora"} else "full"
    lora_flags = ("use_peft_lora", "use_lora", "lora_enable", "use_peft")
    lora = derived in {"lora", "qlora"} or any(_truth(_written(t, k)) for k in lora_flags)
    if _truth(_written(t, "q_lora")):
        return "qlora", None
    four = (
        _truth(_written(t, "load_in_4bit", "use_4bit_quantization"))
        or _int(_written(t, "quantization_bit")) == 4
        or _int(_written(t, "bits")) == 4
    )
    eight = _truth(_written(t, "load_in_8bit")) or _int(_written(t, "quantization_bit", "bits")) == 8
    if derived == "qlora" or (lora and four):
        return "qlora", None
    if eight:
        return None, "8-bit quantized base weights (load_in_8bit / quantization_bit 8) are not modelled"
    if four and not lora:
        return None, "a 4-bit base without LoRA adapters is not a training setup the estimator models"
    return ("lora" if lora else "full"), None


def _lora_targets(plan: Any) -> list[str] | None:
    t = plan.training
    if _truth(_written(t, "lora_target_linear")):
        return ["all-linear"]
    v = _written(t, "lora_target_modules", "lora_target", "target_modules")
    if v is None or not v.known or v.value is None:
        return None
    raw = v.value
    if isinstance(raw, str):
        parts = [p.strip() for p in raw.replace(" ", ",").split(",") if p.strip()]
    elif isinstance(raw, list):
        parts = [str(p).strip() for p in raw if str(p).strip()]
    else:
        return None
    if any(p.lower() in {"all", "all-linear", "all_linear"} for p in parts):
        return ["all-linear"]
    return parts or None


def _seq_len(plan: Any) -> Value | None:
    v = _entry(plan.model, "seq_len")
    if v is not None and v.source != "default" and _int(v):
        return v
    for key in SEQ_KEYS:
        v = _written(plan.training, key)
        if v is not None and (_int(v) or not v.known):
            return v
    return None


def _gradient_checkpointing(plan: Any) -> bool | None:
    t = plan.training
    if t.dialect == "llamafactory":  # LLaMA-Factory turns it on unless told not to
        off = _truth(_written(t, "disable_gradient_checkpointing"))
        return not off
    for v in (
        _written(t, "gradient_checkpointing", "activation_checkpointing"),
        _entry(plan.accelerate, "fsdp_config.fsdp_activation_checkpointing"),
        _entry(t, "fsdp_config.activation_checkpointing"),
        _entry(t, "fsdp_config.fsdp_activation_checkpointing"),
    ):
        truth = _truth(v)
        if truth:
            return True
    v = _written(t, "gradient_checkpointing", "activation_checkpointing")
    return _truth(v) if v is not None else None


def _attn(plan: Any) -> str | None:
    t = plan.training
    v = _written(t, "attn_implementation", "flash_attn")
    if v is not None and v.known and isinstance(v.value, str):
        return _ATTN.get(v.value.strip().lower())
    if _truth(_written(t, "flash_attention", "use_flash_attn", "use_flash_attention_2")):
        return "flash_attention_2"
    if _truth(_written(t, "sdp_attention")):
        return "sdpa"
    return None


def _liger(plan: Any) -> bool:
    t = plan.training
    if _truth(_written(t, "use_liger_kernel", "enable_liger_kernel", "liger_fused_linear_cross_entropy")):
        return True
    plugins = _written(t, "plugins")
    return bool(plugins and plugins.known and "liger" in str(plugins.value).lower())


def _precision(names: dict[str, Any], plan: Any, a: list[str]) -> str | None:
    prec = names.get("precision")
    mode = prec.mode if prec is not None else None
    if mode in {"bf16", "fp16", "fp32"}:
        return mode
    if mode == "fp8":
        a.append(
            "fp8 training: memory estimated as bf16 (weights, master copy and activations are kept in bf16)"
        )
        return "bf16"
    hw = names.get("hardware")
    bf16 = _written(plan.training, "bf16")
    if bf16 is not None and bf16.known and str(bf16.value).lower() == "auto":
        if hw is not None and hw.bf16 is False:
            a.append("bf16: auto on a GPU without bf16: estimated as fp16")
            return "fp16"
        a.append("bf16: auto: estimated as bf16")
        return "bf16"
    if plan.training.reads_training_arguments and plan.training.dialect in {"hf", "trl"}:
        # TrainingArguments with neither bf16 nor fp16 trains without autocast: in the dtype the
        # model was loaded in, which is fp32 unless torch_dtype/dtype says otherwise.
        dtype = _written(plan.training, "torch_dtype", "dtype")
        low = (
            str(dtype.value).strip().lower().replace("torch.", "")
            if dtype is not None and dtype.known
            else ""
        )
        if low in {"bfloat16", "bf16"}:
            a.append("no bf16/fp16 flag: trains in the model's load dtype, bfloat16")
            return "bf16"
        if low in {"float16", "fp16", "half"}:
            a.append("no bf16/fp16 flag: trains in the model's load dtype, float16")
            return "fp16"
        a.append("no bf16/fp16 flag: TrainingArguments trains in fp32 (its default)")
        return "fp32"
    return None


def _amp(plan: Any, precision: str | None) -> bool | None:
    if plan.training.dialect in {"axolotl", "llamafactory"}:
        return False  # both load the model in the compute dtype
    v = _written(plan.training, "torch_dtype", "dtype", "model_dtype")
    if v is None or not v.known or not isinstance(v.value, str):
        return None
    low = v.value.strip().lower().replace("torch.", "")
    if low in {"bfloat16", "bf16", "float16", "fp16", "half", "auto"}:
        return False
    if low in {"float32", "fp32", "float"}:
        return precision in {"bf16", "fp16"}
    return None


def _strategy(
    plan: Any, names: dict[str, Any], a: list[str]
) -> tuple[str | None, str | None, Location | None]:
    """(estimator strategy, reason when unknown, where the strategy is set)."""
    run = names.get("run")
    sv = run.entry("strategy") if run is not None else None
    if not isinstance(sv, Value):
        return None, "the distribution strategy is unknown", None
    strategy = sv.value if sv.known else None
    origin = sv.origin
    if strategy is None:
        why = sv.unknown or "unknown"
        if why.startswith(("DeepSpeed is on", "the deepspeed launcher")):
            return None, why, None
        return None, f"the distribution strategy is unknown ({why})", None
    if sv.note and "--zero_stage" in sv.note:
        a.append(f"ZeRO stage {strategy[4:]} from the script's --zero_stage flag")
    if strategy == "single":
        return "none", None, origin
    if strategy == "ddp":
        return "ddp", None, origin
    if strategy == "zero0":
        a.append("ZeRO stage 0 estimated as DDP with DeepSpeed's fp32 master weights")
        return "ddp", None, origin
    if strategy in {"zero1", "zero2", "zero3"}:
        return strategy, None, origin
    if strategy == "fsdp":
        sharding = run.fsdp_sharding  # run.py always sets it for an FSDP run (FULL_SHARD by default)
        if sharding == "NO_SHARD":
            return "ddp", None, origin
        if sharding in {"SHARD_GRAD_OP", "HYBRID_SHARD_ZERO2"}:
            return "fsdp_grad_op", None, origin
        if sharding and str(sharding).startswith("HYBRID"):
            a.append("HYBRID_SHARD: estimated as FULL_SHARD across the GPUs of one node")
        return "fsdp", None, origin
    return None, f"strategy {strategy} is not modelled", origin


def _offload(names: dict[str, Any], key: str) -> str:
    run = names.get("run")
    v = run.entry(key) if run is not None else None
    if not isinstance(v, Value) or not v.known or v.value in (False, None):
        return "none"
    text = str(v.value).lower()
    return text if text in {"cpu", "nvme"} else "cpu"


def _ds_bucket(plan: Any, key: str, hidden: int, auto_factor: float | None) -> float | None:
    v = _entry(plan.deepspeed, f"zero_optimization.{key}")
    if v is None or not v.known:
        return None
    if isinstance(v.value, str) and v.value.strip().lower() == "auto":
        return auto_factor * hidden * hidden if auto_factor is not None else None
    return _number(v)


def _dataset(plan: Any, seq: int | None, world_dp: int, a: list[str]) -> tuple[float | None, int | None]:
    """(total tokens, max_steps) of the run when its length is known."""
    t = plan.training
    steps_v = _entry(t, "max_steps")
    steps = _int(steps_v)
    if steps is not None and steps > 0:
        return None, steps
    run_settings = plan.settings
    project = plan.project
    tokens = samples = None
    for s in (run_settings, project):
        if s is None:
            continue
        tokens = tokens if tokens is not None else getattr(s, "dataset_tokens", None)
        samples = samples if samples is not None else getattr(s, "dataset_samples", None)
    if tokens is None and samples is None:
        # LLaMA-Factory: max_samples caps each dataset of the comma-separated list
        cap = _int(_written(t, "max_samples"))
        datasets = _written(t, "dataset")
        if cap is not None and cap > 0 and datasets is not None and datasets.known and datasets.value:
            n_sets = len([d for d in str(datasets.value).split(",") if d.strip()])
            samples = cap * n_sets
            a.append(f"dataset size at most max_samples {cap} x {n_sets} dataset{'s' if n_sets > 1 else ''}")
    if tokens is None and samples is None:
        return None, None
    epochs_v = _entry(t, "num_train_epochs")
    epochs = _number(epochs_v)
    if epochs is None or epochs <= 0:
        return None, None
    if epochs_v is not None and epochs_v.source == "default":
        a.append(f"num_train_epochs not written: the default {epochs:g}")
    if tokens is not None:
        return float(tokens) * epochs, None
    if seq is None:
        return None, None
    a.append(
        f"dataset size: {samples:,} samples x {seq} tokens (each sample counted at the full sequence length: "
        "an upper bound without packing)"
    )
    return float(samples) * seq * epochs, None


def plan_inputs(plan: Any, names: dict[str, Any]) -> PlanInputs:
    """Map a RunPlan onto a TrainingSetup. Never raises for bad input: `reason` says what is missing.

    The estimator is imported only once the run has what an estimate needs (start-up matters)."""
    out = PlanInputs(machine=plan.hardware)
    a = out.assumptions
    project = plan.project
    thresholds = getattr(project, "thresholds", None)
    if thresholds is not None:
        out.near_fraction = float(thresholds.near_memory_fraction)
    t = plan.training

    name = _entry(plan.model, "name")
    out.model_value = name
    if name is None:
        out.reason = "no model is named (model_name_or_path / base_model / model)"
        # a lone accelerate or DeepSpeed file is not expected to name one: no note for it
        out.quiet = plan.spec.training is None and plan.spec.command is None
        return out
    if not name.known:
        out.reason = f"the model name cannot be resolved statically ({name.unknown})"
        return out
    if not isinstance(name.value, str) or not name.value.strip():
        out.reason = "the model name is empty"
        return out
    for key in RL_KEYS:
        if _written(t, key) is not None:
            out.reason = f"online RL training ({key}): generation and extra models are not modelled"
            return out
    for key, what in UNMODELLED_KEYS.items():
        v = _written(t, key)
        if v is not None and v.known and v.value not in (None, False, "", [], "false", "False"):
            out.reason = f"{what} ({key}) is not modelled"
            return out
    ftype = _written(t, "finetuning_type")
    if ftype is not None and ftype.known and str(ftype.value).lower() not in {"full", "lora"}:
        out.reason = f"finetuning_type {ftype.value} is not modelled"
        return out
    stage = _written(t, "stage")
    if stage is not None and str(stage.value).lower() in {"ppo", "rm"}:
        out.reason = f"LLaMA-Factory stage {stage.value}: not modelled"
        return out
    batch = names["batch"]
    mp = batch.model_parallel_size
    if isinstance(mp, int) and mp > 1:
        out.reason = f"tensor/context/sequence parallelism (x{mp}) is not modelled"
        return out

    method, why = _method(plan, a)
    if method is None:
        out.reason = why
        return out
    strategy, why, strategy_origin = _strategy(plan, names, a)
    if strategy is None:
        out.reason = why
        return out
    out.strategy_origin = strategy_origin
    world = batch.world_size
    dp = batch.dp_size
    if strategy != "none" and (not isinstance(dp, int) or dp < 1):
        world_v = batch.entry("world_size")
        why = world_v.unknown if isinstance(world_v, Value) and world_v.unknown else "unknown"
        out.reason = f"the number of processes is unknown ({why})"
        return out
    out.dp = dp if isinstance(dp, int) and dp >= 1 else 1
    out.world = world if isinstance(world, int) and world >= 1 else out.dp
    if strategy == "ddp" and out.dp == 1:
        strategy = "none"

    seq_v = _seq_len(plan)
    if seq_v is None:
        seq_v = Value(ASSUMED_SEQ_LEN, None, "default")
        a.append(
            f"sequence length not set (max_seq_length / max_length / cutoff_len / sequence_len / "
            f"model_max_length): assumed {ASSUMED_SEQ_LEN} tokens"
        )
    if not seq_v.known:
        out.reason = f"the sequence length cannot be resolved statically ({seq_v.unknown})"
        return out
    seq = _int(seq_v)
    if seq is None or seq <= 0:
        out.reason = f"the sequence length {seq_v.value!r} is not a positive integer"
        return out

    from advisor.estimate import TrainingSetup, UnknownModelTypeError, resolve_model

    info = resolve_model(name.value, online=bool(getattr(plan, "online", False)))
    if info is None:
        hint = "" if getattr(plan, "online", False) else "; --online fetches its config.json from the Hub"
        out.reason = (
            f"model '{name.value}' not found offline (not a local folder with config.json, "
            f"not in the HF cache, not in the built-in catalog){hint}"
        )
        return out
    out.info = info
    try:
        pc = info.count()
    except UnknownModelTypeError as exc:
        out.reason = str(exc)
        return out
    except (KeyError, TypeError, ValueError) as exc:
        out.reason = f"model '{name.value}': its config.json cannot be counted ({type(exc).__name__}: {exc})"
        return out

    micro_v = batch.entry("per_device")
    micro = batch.per_device if isinstance(batch.per_device, int) and batch.per_device > 0 else None
    if micro is None:
        out.reason = "the per-device batch size is unknown" + (
            f" ({micro_v.unknown})" if isinstance(micro_v, Value) and micro_v.unknown else ""
        )
        return out
    if isinstance(micro_v, Value) and micro_v.source == "default":
        a.append(f"per-device batch not written: the default {micro}")
    accum = batch.accumulation if isinstance(batch.accumulation, int) and batch.accumulation > 0 else 1

    preference = _written(t, "beta", "pref_beta", "max_prompt_length") is not None or (
        stage is not None and str(stage.value).lower() in PREFERENCE_STAGES
    )
    seqs_per_micro = micro
    if preference:
        loss = str(getattr(_written(t, "loss_type", "pref_loss"), "value", "") or "").lower()
        seqs_per_micro = micro * 2
        a.append("preference training: chosen and rejected sequences in every micro-batch (2x the sequences)")
        ref_free = (
            any(x in loss for x in REFERENCE_FREE)
            or (stage is not None and str(stage.value).lower() in {"orpo", "simpo"})
            or _truth(_written(t, "precompute_ref_log_probs", "reference_free")) is True
        )
        if method == "full" and not ref_free:
            out.reference_copy = True
            a.append(
                "preference training: a frozen 16-bit reference model "
                "(sharded like the policy under ZeRO-3/FSDP)"
            )

    precision = _precision(names, plan, a)
    lora_r = _int(_written(t, "lora_r", "lora_rank", "lora_dim")) if method != "full" else None
    dropout = _number(_written(t, "lora_dropout")) if method != "full" else None
    optim = _written(t, "optim")
    optim_name = str(optim.value) if optim is not None and optim.known and optim.value else None
    if optim_name is None:
        ds_opt = _entry(plan.deepspeed, "optimizer.type")
        if ds_opt is not None and ds_opt.known and isinstance(ds_opt.value, str):
            optim_name = ds_opt.value
    if optim_name is not None:
        from advisor.estimate.memory import has_optimizer_profile

        if not has_optimizer_profile(optim_name):
            out.reason = f"optimizer '{optim_name}' has no memory profile"
            return out
    h = pc.hidden
    setup_kw: dict[str, Any] = {
        "model": pc,
        "method": method,
        "lora_r": lora_r,
        "lora_targets": _lora_targets(plan) if method != "full" else None,
        "lora_dropout": dropout,
        "micro_batch": seqs_per_micro,
        "seq_len": seq,
        "grad_accum": accum,
        "gradient_checkpointing": _gradient_checkpointing(plan),
        "precision": precision,
        "amp": _amp(plan, precision),
        "optimizer": optim_name,
        "strategy": strategy,
        "world_size": out.dp if strategy != "none" else 1,
        "offload_optimizer": _offload(names, "offload_optimizer"),
        "offload_params": _offload(names, "offload_params"),
        "attn_implementation": _attn(plan),
        "liger_kernel": _liger(plan),
        "torch_compile": bool(_truth(_written(t, "torch_compile"))),
    }
    if strategy in {"zero1", "zero2", "zero3"}:
        setup_kw["ds_reduce_bucket_size"] = _ds_bucket(plan, "reduce_bucket_size", h, 1.0)
        setup_kw["ds_allgather_bucket_size"] = _ds_bucket(plan, "allgather_bucket_size", h, None)
        setup_kw["ds_prefetch_bucket_size"] = _ds_bucket(plan, "stage3_prefetch_bucket_size", h, 0.9)
        setup_kw["ds_max_live_parameters"] = _ds_bucket(plan, "stage3_max_live_parameters", h, None)
    if plan.hardware is not None:
        setup_kw["gpu_memory_gib"] = float(plan.hardware.memory_gib)
    out.setup = TrainingSetup(**setup_kw)
    out.related = [loc for loc in (_origin(micro_v), seq_v.origin, strategy_origin) if loc is not None]
    out.total_tokens, out.max_steps = _dataset(plan, seq, out.dp, a)
    placement = names.get("placement")
    bw = placement.busbw_gbs if placement is not None else None
    out.busbw_gbs = float(bw) if isinstance(bw, int | float) and bw > 0 else None
    return out


# ---- the analysis (shared by the facts and `gpu-advise estimate`) ---------------------------------
@dataclass
class Analysis:
    memory: Any  # MemoryEstimate (with the reference model added for preference training)
    peak: float
    low: float
    high: float
    usable: float | None
    verdict: str | None
    items: list[dict[str, Any]]
    hard_peak: float = 0.0  # without paged optimizer state (CUDA unified memory spills to the host)
    single_peak: float | None = None
    ddp_peak: float | None = None
    no_offload_peak: float | None = None  # the same run with offload turned off (when it offloads)
    fit_notes: list[str] = field(default_factory=list)  # the pessimistic readings behind the fit claims
    time: Any = None  # TimeEstimate
    time_reason: str | None = None
    savings: list[tuple[str, float]] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)


def verdict_for(
    peak: float, usable: float | None, near_fraction: float = NEAR_FRACTION_DEFAULT
) -> str | None:
    if usable is None:
        return None
    if peak > usable:
        return "does not fit"
    if peak > usable * (1 - near_fraction):
        return "tight"
    return "fits"


def _reference_gib(setup: Any) -> float:
    pc = setup.model
    shards = setup.world_size if setup.strategy in {"zero3", "fsdp"} and setup.world_size > 1 else 1
    return 2.0 * pc.total / shards / 2**30


def peak_of(setup: Any, reference_copy: bool = False) -> float:
    """nvidia-smi peak per GPU in GiB (plus a frozen reference model for preference training)."""
    from advisor.estimate import estimate_memory

    m = estimate_memory(setup)
    return m.peak_smi_gib + (_reference_gib(setup) if reference_copy else 0.0)


def pessimistic(setup: Any) -> tuple[Any, list[str]]:
    """The setup under the reading of unwritten inputs that needs the most memory.

    A claim that a run *fits* on one GPU or under plain DDP (GA402, GA403) must hold whatever the files
    left open, and must keep the run's numerics: without a precision setting HF trains in fp32; without
    a weight dtype the model may be loaded in fp32 under autocast; and a full fine-tune under DeepSpeed
    keeps fp32 master weights and optimizer states, which under DDP means an fp32 model with autocast.
    """
    update: dict[str, Any] = {}
    notes = []
    if setup.precision is None:
        update["precision"] = "fp32"
        notes.append("no precision setting: judged in fp32 (the HF default)")
    elif setup.amp is None and setup.precision in {"bf16", "fp16"}:
        update["amp"] = True
        notes.append("weight dtype not written: judged with an fp32 model load under autocast")
    elif (
        setup.method == "full"
        and setup.strategy in {"zero1", "zero2", "zero3"}
        and setup.precision in {"bf16", "fp16"}
    ):
        update["amp"] = True
        notes.append(
            "judged at DeepSpeed's precision: fp32 master weights and optimizer states (autocast under DDP)"
        )
    return (replace(setup, **update) if update else setup), notes


def single_gpu_setup(setup: Any, dp: int) -> Any:
    """The same per-device batch on one GPU: no sharding, no offload, accumulation x dp keeps the batch."""
    return replace(
        setup,
        strategy="none",
        world_size=1,
        offload_optimizer="none",
        offload_params="none",
        grad_accum=setup.grad_accum * max(dp, 1),
    )


def ddp_setup(setup: Any, dp: int) -> Any:
    return replace(
        setup,
        strategy="ddp" if dp > 1 else "none",
        world_size=max(dp, 1),
        offload_optimizer="none",
        offload_params="none",
    )


def peak_tflops(gpu: Any, precision: str | None) -> tuple[float | None, str | None]:
    """Dense tensor peak for the run's precision, and an assumption to state when substituted."""
    p = precision or "bf16"
    if p == "fp32":
        v = gpu.dense_tflops("tf32")
        return v, "fp32 training timed at the TF32 tensor-core rate" if v else None
    v = gpu.dense_tflops(p)
    if v:
        return v, None
    other = gpu.dense_tflops("fp16" if p == "bf16" else "bf16")
    if other:
        return (
            other,
            f"{gpu.display_name} has no {p} tensor rate: timed at its "
            f"{'fp16' if p == 'bf16' else 'bf16'} rate",
        )
    return None, None


def analyse(
    setup: Any,
    *,
    machine: Any = None,
    dp: int = 1,
    near_fraction: float = NEAR_FRACTION_DEFAULT,
    reference_copy: bool = False,
    total_tokens: float | None = None,
    max_steps: int | None = None,
    busbw_gbs: float | None = None,
    compare: bool = True,
    savings: bool | None = None,
) -> Analysis:
    """Memory at the peak, the fit verdict, single-GPU and DDP peaks, time, and knob savings."""
    from advisor.estimate import MemoryItem, estimate_memory, estimate_time, what_if

    m = estimate_memory(replace(setup, metric="nvidia-smi"))
    items = [{"name": it.name, "gib": round(it.gib, 2), "note": it.note} for it in m.items]
    peak, low, high = m.peak_smi_gib, m.low_gib, m.high_gib
    if reference_copy:
        ref = _reference_gib(setup)
        items.insert(
            1,
            {
                "name": "reference model",
                "gib": round(ref, 2),
                "note": "frozen 16-bit copy (preference training)",
            },
        )
        m.items.insert(1, MemoryItem(name="reference model", gib=ref, note="frozen 16-bit copy"))
        scale = (peak + ref) / peak if peak else 1.0
        peak, low, high = peak + ref, low * scale, high * scale
    usable = float(machine.memory_gib) if machine is not None else setup.gpu_memory_gib
    hard = peak - m.soft_gib
    verdict = verdict_for(peak, usable, near_fraction)
    if verdict == "does not fit" and usable is not None and hard <= usable:
        verdict = "tight"  # only paged optimizer state is over: it spills to host memory, slowly
    an = Analysis(
        memory=m,
        peak=peak,
        low=low,
        high=high,
        usable=usable,
        verdict=verdict,
        items=items,
        assumptions=list(m.assumptions),
        hard_peak=hard,
    )
    if setup.offload_optimizer != "none" or setup.offload_params != "none":
        an.no_offload_peak = peak_of(
            replace(setup, offload_optimizer="none", offload_params="none", metric="nvidia-smi"),
            reference_copy,
        )
    if compare:
        judged, an.fit_notes = pessimistic(setup)
        an.single_peak = peak_of(single_gpu_setup(judged, dp), reference_copy)
        an.ddp_peak = peak_of(ddp_setup(judged, dp), reference_copy) if dp > 1 else an.single_peak
    want_savings = savings if savings is not None else verdict in {"tight", "does not fit"}
    if want_savings:
        an.savings = what_if(setup)
    if machine is not None:
        gpu = machine.gpu
        tflops, note = peak_tflops(gpu, setup.precision)
        if tflops is None:
            an.time_reason = f"{gpu.display_name} has no tensor-core peak in the catalog"
        else:
            if note:
                an.assumptions.append(note)
            bw = busbw_gbs if busbw_gbs else 1.0
            n = max(dp, 1)
            an.time = estimate_time(
                setup,
                float(tflops),
                float(bw),
                gpu.id,
                n,
                total_tokens=total_tokens,
                max_steps=max_steps,
            )
            for s in an.time.assumptions:
                if s not in an.assumptions:
                    an.assumptions.append(s)
            if total_tokens is None and max_steps is None:
                an.time_reason = RUN_LENGTH_UNKNOWN
    else:
        an.time_reason = "no hardware given"
    return an


def duration(hours: float) -> str:
    """'1.6 h', '25 min', 'under a minute'."""
    if hours >= 1:
        return f"{hours:.1f} h"
    minutes = hours * 60
    return f"{minutes:.0f} min" if minutes >= 1 else "under a minute"


def _contributors(items: list[dict[str, Any]], k: int = 3) -> list[str]:
    top = sorted((it for it in items if it["gib"] > 0.05), key=lambda it: -it["gib"])[:k]
    return [f"{it['name']} {it['gib']:.1f} GiB" for it in top]


def _input_assumptions(assumptions: list[str]) -> list[str]:
    """The assumptions about inputs the files did not give (for the run summary)."""
    skip = ("CUDA context", "MFU ", "DeepSpeed bucket sizes", "ZeRO-3 bucket sizes")
    return [s for s in assumptions if not s.startswith(skip)]


# ---- the fact builder -----------------------------------------------------------------------------
def estimates_facts(plan: Any, names: dict[str, Any]) -> Namespace:
    ns = Namespace("estimates")
    try:
        inputs = plan_inputs(plan, names)
        if inputs.setup is None:
            _unknown(ns, inputs, inputs.reason or "unknown")
            return ns
        an = analyse(
            inputs.setup,
            machine=inputs.machine,
            dp=inputs.dp,
            near_fraction=inputs.near_fraction,
            reference_copy=inputs.reference_copy,
            total_tokens=inputs.total_tokens,
            max_steps=inputs.max_steps,
            busbw_gbs=inputs.busbw_gbs,
        )
    except Exception as exc:  # an estimator bug must cost the estimate, never the check
        _unknown(ns, None, f"the estimator failed: {type(exc).__name__}: {exc}")
        return ns
    _fill(ns, inputs, an)
    return ns


def _unknown(ns: Namespace, inputs: PlanInputs | None, reason: str) -> None:
    origin = inputs.model_value.origin if inputs is not None and inputs.model_value is not None else None
    ns.set("known", Value(False, origin, "derived"))
    ns.set("reason", Value(reason, origin, "derived"))
    ns.set("quiet", Value(bool(inputs is not None and inputs.quiet), None, "derived"))
    for key in ("peak_vram_gib", "hours_single_gpu", "hours"):
        ns.set(key, Value(None, origin, "derived", unknown=reason))
    if inputs is not None and inputs.machine is not None:
        ns.set("gpu_memory_gib", Value(round(float(inputs.machine.memory_gib), 1), None, "hardware"))


def _fill(ns: Namespace, inputs: PlanInputs, an: Analysis) -> None:
    s = inputs.setup
    info = inputs.info
    mv = inputs.model_value
    at = mv.origin if mv is not None else None
    related = inputs.related

    def put(key: str, value: Any, origin: Location | None = None, note: str | None = None) -> None:
        ns.set(key, Value(value, origin, "derived", related=list(related) if origin is at else [], note=note))

    assumptions = list(dict.fromkeys([*inputs.assumptions, *an.assumptions]))
    put("known", True, at)
    put("reason", None)
    put("model", info.hub_id or info.name, at)
    put("model_source", info.source)
    put("params", s.model.total)
    put("trainable_params", an.memory.trainable_params)
    put("method", s.method)
    put("strategy", s.strategy, inputs.strategy_origin)
    put("strategy_label", STRATEGY_LABEL.get(s.strategy, s.strategy))
    put("world_size", inputs.world)
    put("dp_size", inputs.dp)
    put("micro_batch", s.micro_batch)
    put("seq_len", s.seq_len)
    put("peak_vram_gib", round(an.peak, 1), at, note="nvidia-smi peak per GPU")
    put("hard_peak_gib", round(an.hard_peak, 1), at, note="without paged optimizer state")
    put("paged_gib", round(an.memory.soft_gib, 1))
    put("low_gib", round(an.low, 1))
    put("high_gib", round(an.high, 1))
    put("phase", an.memory.phase)
    put("host_gib", round(an.memory.host_gib, 1))
    put("items", an.items)
    put("contributors", _contributors(an.items))
    put("savings", [f"{label} saves {gib:.1f} GiB" for label, gib in an.savings])
    put("near_fraction", inputs.near_fraction)
    if an.usable is not None:
        put("gpu_memory_gib", round(an.usable, 1))
        put("fraction", round(an.peak / an.usable, 3))
        put("verdict", an.verdict, at)
        put("gpu", inputs.machine.gpu.id if inputs.machine is not None else None)
        if an.single_peak is not None:
            put("single_gpu_peak", round(an.single_peak, 1))
            put("fits_single_gpu", verdict_for(an.single_peak, an.usable, inputs.near_fraction) == "fits")
            put("fit_notes", an.fit_notes)
        if an.no_offload_peak is not None:
            without = verdict_for(an.no_offload_peak, an.usable, inputs.near_fraction)
            put("peak_without_offload_gib", round(an.no_offload_peak, 1), at)
            put("verdict_without_offload", without)
            put("fits_without_offload", without == "fits")
        if an.ddp_peak is not None:
            put("ddp_peak", round(an.ddp_peak, 1))
            put("ddp_fits", verdict_for(an.ddp_peak, an.usable, inputs.near_fraction) == "fits")
    else:
        put("gpu_memory_gib", None)
        put("verdict", None)
    te = an.time
    if te is not None:
        put("step_time_s", round(te.step_time_s, 3))
        put("tokens_per_s", round(te.tokens_per_s))
        put("scaling_efficiency", round(te.scaling_efficiency, 3))
        put("comm_bound", te.comm_bound)
    if te is not None and te.hours_single_gpu is not None:
        put("hours_single_gpu", round(te.hours_single_gpu, 3), at)
        put("hours", round(te.hours_n_gpus, 3) if te.hours_n_gpus is not None else None)
        put("single_gpu_time", duration(te.hours_single_gpu))
        put("smoke_test", inputs.max_steps is not None and te.hours_single_gpu < SMOKE_TEST_HOURS)
        if te.hours_n_gpus is not None:
            put("run_time", duration(te.hours_n_gpus))
            put("time_saved", duration(max(te.hours_single_gpu - te.hours_n_gpus, 0.0)))
            put("faster_on_n", te.hours_n_gpus < te.hours_single_gpu * 0.99)
        put("total_tokens", te.total_tokens)
    else:
        reason = an.time_reason or "the run's length is unknown"
        ns.set("hours_single_gpu", Value(None, at, "derived", unknown=reason))
        ns.set("hours", Value(None, at, "derived", unknown=reason))
        put("time_reason", reason)
    put("assumptions", assumptions)
    put("input_assumptions", _input_assumptions(assumptions))


def summary_notes(estimates: Namespace | None) -> list[str]:
    """Notes for the run summary: why there is no estimate, or the inputs it assumed."""
    if not estimates:
        return []
    if estimates.known is False:
        return [] if estimates.quiet else [f"memory estimate unknown: {estimates.reason}"]
    notes = []
    assumed = [re.sub(r" \([^()]*\)", "", a) for a in estimates.input_assumptions or []]
    assumed = [a for a in assumed if not a.startswith("optimizer offload:")]
    if assumed:
        notes.append("estimate assumes: " + "; ".join(assumed))
    return notes

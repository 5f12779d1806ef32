"""A run's RunPlan mapped onto the estimator's TrainingSetup (or the precise reason there is none).

Every input the files leave open is either a stated assumption or the reason the estimate is unknown;
dtype facts (storage, compute, optimizer state) come from advisor.facts.dtypes.run_dtypes. Numbers
that are not finite or are absurdly large are treated as unknown, never converted (1e400, .nan, a
401-digit bucket size).

Nothing here imports torch or transformers; the estimator is imported once a run has what it needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.core.document import Location
from advisor.core.provenance import Value
from advisor.core.records import field, record
from advisor.facts.allocator_inputs import allocator_inputs
from advisor.facts.checkpoint_kind import checkpoint_reentrant
from advisor.facts.deepspeed_optimizer import deepspeed_optimizer
from advisor.facts.deepspeed_zero12 import zero12_inputs
from advisor.facts.load_calls import script_trainer
from advisor.facts.lora_inputs import (
    lone_file_lora_key,
    lora_targets,
    modules_to_save,
    not_read_script,
    peft_method,
    peft_wrap,
    script_lora,
)
from advisor.facts.namespace_entries import (
    MAX_COUNT,
    absurd,
    first_origin,
    integer,
    number,
    truth,
    value_at,
    written,
)
from advisor.facts.unmodelled import axolotl_rl, low_rank_optimizer, method_notes, unmodelled_reason
from advisor.sources.known_keys import SEQ_KEYS

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan

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

PREFERENCE_STAGES = {"dpo", "kto", "orpo", "simpo"}
REFERENCE_FREE = {"orpo", "simpo", "cpo"}  # loss types and trainers without a reference model
# axolotl's `rl:` (axolotl 0.19.0 utils/schemas/enums.py:31-41, core/builders/rl.py:54-86): dpo and ipo run
# TRL's DPOTrainer with the reference model, orpo and simpo (CPOTrainer) have none, kto runs KTOTrainer.
AXOLOTL_PREFERENCE_RL = {"dpo", "ipo", "kto", "orpo", "simpo"}
_ATTN = {
    "flash_attention_2": "flash_attention_2",
    "flash_attention_3": "flash_attention_2",
    "fa2": "flash_attention_2",
    "fa3": "flash_attention_2",
    "flash_attn": "flash_attention_2",  # ms-swift attn_impl (4.6.0 arguments/base_args/model_args.py:34)
    "flash_attention_4": "flash_attention_2",
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


# ---- the plan as estimator inputs -----------------------------------------------------------------
@record
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
    data_length: Any = None  # advisor.estimate.DataLength: tokens per sample and packing, for the time model
    reference_copy: bool = False  # preference training keeps a frozen reference model
    quiet: bool = False  # no summary note for the missing estimate
    dtypes: Any = None  # advisor.facts.dtypes.RunDtypes: the dtype facts and where each came from
    assumptions: list[str] = field(default_factory=list)
    related: list[Location] = field(default_factory=list)


def _method(plan: RunPlan, quant: str | None) -> tuple[str | None, str | None]:
    """(method, reason when it cannot be estimated). `quant` is the base weights' quantization (nf4/int8):
    LoRA on a quantized base is the estimator's "qlora" method, with the quantization as a dtype input."""
    t = plan.training
    derived = plan.model.method if plan.model.method in {"full", "lora", "qlora"} else "full"
    lora_flags = ("use_peft_lora", "use_lora", "lora_enable", "use_peft")
    wraps, undecided = peft_wrap(plan)
    lora = derived in {"lora", "qlora"} or any(truth(written(t, k)) for k in lora_flags) or wraps is True
    if truth(written(t, "q_lora")) or derived == "qlora":
        return "qlora", None
    if quant is not None and lora:
        return "qlora", None
    if not lora and (wraps is None or (own := lone_file_lora_key(plan)) is not None):
        return None, f"whether the run trains LoRA adapters is unknown: {undecided if wraps is None else own}"
    unread = not_read_script(plan) if quant is not None else None
    if unread is not None:
        return None, f"whether the run trains LoRA adapters on its quantized base is unknown: {unread}"
    if quant is not None:
        kind = "an 8-bit" if quant == "int8" else "a 4-bit"
        return (
            None,
            f"{kind} quantized base without LoRA adapters is not a training setup the estimator models",
        )
    return ("lora" if lora else "full"), None


def _seq_len(plan: RunPlan) -> Value | None:
    v = value_at(plan.model, "seq_len")
    if v is not None and v.source != "default" and integer(v):
        return v
    for key in SEQ_KEYS:
        v = written(plan.training, key)
        if v is not None and (integer(v) or not v.known or absurd(v)):
            return v
    return None


def _gradient_checkpointing(plan: RunPlan, a: list[str], quant: str | None = None) -> bool | None:
    t = plan.training
    if written(t, "gradient_checkpointing", "activation_checkpointing") is None:
        from advisor.facts.dtypes import trl_trains

        if t.dialect not in {"llamafactory", "axolotl"} and trl_trains(plan):
            a.append("gradient_checkpointing not written: TRL's default True (trl trainer/base_config.py:62)")
            return True
    if t.dialect == "llamafactory":  # LLaMA-Factory turns it on unless told not to
        off = truth(written(t, "disable_gradient_checkpointing"))
        return not off
    for v in (
        written(t, "gradient_checkpointing", "activation_checkpointing"),
        value_at(plan.accelerate, "fsdp_config.fsdp_activation_checkpointing"),
        value_at(t, "fsdp_config.activation_checkpointing"),
        value_at(t, "fsdp_config.fsdp_activation_checkpointing"),
    ):
        if truth(v):
            return True
    v = written(t, "gradient_checkpointing", "activation_checkpointing")
    if v is None:
        own = value_at(t, "gradient_checkpointing")  # a trainer's own default (ms-swift: True), said where
        if own is not None and own.known and own.note and own.note != "default":
            a.append(f"gradient_checkpointing not written: {own.note}: {own.value}")
            return truth(own)
        if quant in ("nf4", "int8") and t.dialect != "axolotl":
            from advisor.facts.dtypes import kbit_checkpointing

            prepared = kbit_checkpointing(plan)  # PEFT's kbit preparation enables it on a quantized base
            if prepared is not None and prepared.dtype in ("on", "off"):
                a.append(f"gradient_checkpointing not written: {prepared.source}")
                return prepared.dtype == "on"
    return truth(v) if v is not None else None


def _attn(plan: RunPlan) -> str | None:
    t = plan.training
    v = written(t, "attn_implementation", "flash_attn")  # HF, LLaMA-Factory
    if v is None:
        from advisor.facts.training_loop import own_trainer

        trainer = own_trainer(plan)
        if trainer is not None and trainer.attention_key:
            v = written(t, trainer.attention_key)
    if v is not None and v.known and isinstance(v.value, str):
        return _ATTN.get(v.value.strip().lower())
    if truth(written(t, "flash_attention", "use_flash_attn", "use_flash_attention_2")):
        return "flash_attention_2"
    if truth(written(t, "sdp_attention")):
        return "sdpa"
    return None


def _liger(plan: RunPlan) -> bool:
    t = plan.training
    if truth(written(t, "use_liger_kernel", "enable_liger_kernel", "liger_fused_linear_cross_entropy")):
        return True
    from advisor.facts.axolotl_setup import liger_plugin_fused_ce

    fused = liger_plugin_fused_ce(plan)  # axolotl's LigerPlugin fuses the loss only when told to
    if fused is not None:
        return fused
    plugins = written(t, "plugins")
    return bool(plugins and plugins.known and "liger" in str(plugins.value).lower())


def _dtype_inputs(
    plan: RunPlan, names: dict[str, Any], strategy: str, method: str, info: Any, a: list[str]
) -> tuple[dict[str, Any], Any]:
    """The estimator's dtype fields (storage, trainable, autocast, master, quantization, compute precision)
    from the consumers' rules (advisor.facts.dtypes.run_dtypes), and the facts with their sources."""
    from advisor.facts.dtypes import dtype_name, run_dtypes

    config = info.config if info is not None and isinstance(info.config, dict) else {}
    checkpoint = dtype_name(config.get("dtype") or config.get("torch_dtype"))
    rd = run_dtypes(plan, names, strategy=strategy, method=method, checkpoint=checkpoint)
    storage = rd.storage.dtype if rd.storage.dtype in {"fp32", "bf16", "fp16"} else None
    if rd.storage.assumed and not (strategy == "zero0" and rd.master.dtype == "fp32"):
        # not written anywhere: left to the estimator's stated 16-bit assumption, and judged with an fp32
        # load where a claim must hold whatever the files left open (pessimistic); under an assumed 16-bit
        # DeepSpeed engine (ZeRO-0, estimated as DDP) the engine's cast decides it, not the load
        storage = None
    autocast = rd.autocast.dtype if rd.autocast.dtype in {"bf16", "fp16", "off"} else None
    # the compute dtype (the time model's precision); None when nothing is known (the estimator says so)
    precision = autocast if autocast not in (None, "off") else storage
    kw = {
        "precision": precision,
        "storage_dtype": storage,
        "autocast": autocast,
        "trainable_dtype": rd.trainable.dtype if rd.trainable.dtype in {"fp32", "bf16", "fp16"} else None,
        "master_weights": True if rd.master.dtype == "fp32" else None,
        "quantization": rd.quantization.dtype if method == "qlora" else None,
    }
    if rd.master.dtype == "fp32" and strategy in {"zero1", "zero2", "zero3"}:
        # DeepSpeed's 16-bit engine: the estimator derives the cast, the fp32 master and "no autocast" from
        # the strategy; the load dtype stays an input (amp = an fp32 load) so that the single-GPU and DDP
        # alternatives, which have no engine to cast, are judged with the weights as loaded
        load = rd.load.dtype if rd.load is not None and not rd.load.assumed else None
        kw.update(
            precision=rd.storage.dtype,
            storage_dtype=None,
            autocast=None,
            trainable_dtype=None,
            master_weights=None,
            amp={"fp32": True, "bf16": False, "fp16": False}.get(load or ""),
        )
    from advisor.facts.dtypes import fsdp_version

    if method == "qlora" and strategy in {"fsdp", "fsdp_grad_op"} and fsdp_version(plan) == 2:
        from advisor.facts.axolotl_inputs import quant_storage_of
        from advisor.facts.dtypes import quant_storage

        own = quant_storage_of(plan, config, str(getattr(info, "name", "") or ""))
        if own is not None and own[0] is not None:
            a.append(f"4-bit weights stored in {own[0]} ({own[1]}): FSDP2 shards them")
        elif quant_storage(plan, names).dtype is None:
            kw["quantized_sharded"] = False
            a.append(
                "FSDP2 with 4-bit weights in uint8 storage: accelerate leaves them whole on every GPU "
                "(utils/fsdp_utils.py:789-811); bnb_4bit_quant_storage: bfloat16 lets FSDP shard them"
                + (f"; {own[1]}" if own is not None else "")
            )
    if method == "qlora":
        from advisor.facts.dtypes import kbit_preparation

        prepared = kbit_preparation(plan, sharded=strategy in {"fsdp", "fsdp_grad_op", "zero3"}).dtype
        kw["prepare_kbit_training"] = None if prepared is None else prepared == "yes"
        if rd.quantization.dtype == "nf4":
            from advisor.facts.dtypes import double_quant

            dq = double_quant(plan, names)
            kw["qlora_double_quant"] = dq.dtype == "yes"
            if dq.assumed:  # not written: the consumer's default, said
                a.append(f"4-bit double quantization {'on' if dq.dtype == 'yes' else 'off'}: {dq.source}")
    return kw, rd


def _fixed_length(plan: RunPlan) -> bool | None:
    """Whether every batch has one shape (allocator growth, memory-model.md 6.10): packed or padded to the
    cap; collators pad to the longest (trl 0.26 sft_trainer.py:195; HF DataCollatorForSeq2Seq padding)."""
    t = plan.training
    from advisor.facts.training_loop import loop_outputs, own_trainer

    if (trainer := own_trainer(plan)) is not None and trainer.varied_shapes:
        return False  # ms-swift: no collation of one shape, packed or not (launchers/swift.py varied_shapes)
    if any(truth(written(t, k)) for k in ("packing", "sample_packing", "neat_packing")):
        return True
    if truth(written(t, "pad_to_max_length")) or str(getattr(written(t, "padding"), "value", "")).lower() in (
        "max_length",
        "true",
    ):
        return True
    if truth(written(t, "padding_free")):
        return False
    from advisor.facts.dtypes import trl_trains

    if loop_outputs(plan).own:
        return None  # the script collates its own batches
    dialect = t.known_value("dialect") if t is not None else None
    if (dialect is not None and dialect.value in ("trl", "axolotl", "llamafactory")) or trl_trains(plan):
        return False
    return None


def _bnb_keeps_input(plan: RunPlan) -> bool | None:
    """Whether the bitsandbytes pin nearest the training script installs a release before 0.43.2 (its
    MatMul4Bit keeps every 4-bit Linear's input: PR #1270); None when nothing pins it or the pin's release
    cannot be placed without the release list."""
    from advisor.facts import versions

    return versions.run_installs_below(plan, "bitsandbytes", "0.43.2")


def _fsdp_units(plan: RunPlan, strategy: str, method: str, a: list[str]) -> dict[str, bool]:
    """FSDP1 units mixing frozen and LoRA weights, and accelerate's sync_each_batch (memory-model.md 6.6):
    a loop of its own under FSDP1 with use_orig_params=True wraps the base weights and the adapters of a
    block in one FlatParameter; HF Trainer wraps LoRA leaves apart (transformers distributed/fsdp.py:279)."""
    out: dict[str, bool] = {}
    t = plan.training
    sync = value_at(t, "accelerator_config.gradient_accumulation_kwargs.sync_each_batch")
    if truth(sync):
        out["sync_each_batch"] = True
    from advisor.facts.dtypes import fsdp_version

    fsdp1 = strategy in {"fsdp", "fsdp_grad_op"} and fsdp_version(plan) == 1
    if not fsdp1 or method not in {"lora", "qlora"}:
        return out
    orig = None
    for ns, key in (
        (plan.accelerate, "fsdp_config.fsdp_use_orig_params"),
        (t, "fsdp_config.use_orig_params"),
        (t, "fsdp_config.fsdp_use_orig_params"),
    ):
        v = value_at(ns, key)
        if v is not None and truth(v) is not None:
            orig = truth(v)
            break
    from advisor.facts.training_loop import loop_outputs

    if orig and loop_outputs(plan).own and method == "qlora":
        a.append(
            "FSDP1 with use_orig_params and the script's own loop: blocks holding 4-bit weights and LoRA "
            "adapters in one FlatParameter keep a full-size flat gradient, unknown here, because its size "
            "depends on the 4-bit storage packing; only the adapters' gradients are counted"
        )
    elif orig and loop_outputs(plan).own:
        out["fsdp_mixed_units"] = True
        a.append(
            "FSDP1 with use_orig_params and the script's own loop: each wrapped block holds its frozen "
            "weights and LoRA adapters in one FlatParameter, whose gradient is full-size (torch "
            "distributed/fsdp/fully_sharded_data_parallel.py:208-213)"
        )
    return out


def _kept_logits(plan: RunPlan, precision: str | None, a: list[str]) -> int | None:
    """Bytes per logit the training loop keeps through backward (advisor.facts.training_loop)."""
    from advisor.facts.training_loop import logits_kept_bytes, loop_outputs

    loop = loop_outputs(plan)
    if loop.kept is None:
        a.append(
            f"{loop.source}: assumed it drops the model outputs before backward, as HF Trainer/TRL do "
            "(a loop that keeps `outputs` holds its logits through backward)"
        )
        return None
    if not loop.kept:
        return 0
    kept = logits_kept_bytes(plan, 4 if precision == "fp32" else 2)
    a.append(loop.source + (" (fp32: transformers <= 4.44 upcasts them in forward)" if kept == 4 else ""))
    return kept


def _strategy(
    plan: RunPlan, names: dict[str, Any], a: list[str]
) -> tuple[str | None, str | None, Location | None]:
    """(estimator strategy, reason when unknown, where the strategy is set)."""
    run = names.get("run")
    sv = run.entry("strategy") if run is not None else None
    if run is None or not isinstance(sv, Value):
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
        return "ddp", None, origin  # the note, with or without the fp32 master, once the dtypes are known
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


def _ds_bucket(plan: RunPlan, key: str, hidden: int, auto_factor: float | None) -> float | None:
    v = value_at(plan.deepspeed, f"zero_optimization.{key}")
    if v is None or not v.known:
        return None
    if isinstance(v.value, str) and v.value.strip().lower() == "auto":
        return auto_factor * hidden * hidden if auto_factor is not None else None
    return number(v)


def _dataset(plan: RunPlan, seq: int | None, world_dp: int, a: list[str]) -> tuple[float | None, int | None]:
    """(total tokens, max_steps) of the run when its length is known."""
    t = plan.training
    steps_v = value_at(t, "max_steps")
    steps = integer(steps_v)
    if (why := absurd(steps_v)) is not None:
        a.append(f"max_steps: {why}, so the run's length is unknown")
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
        cap = integer(written(t, "max_samples"))
        datasets = written(t, "dataset")
        if cap is not None and cap > 0 and datasets is not None and datasets.known and datasets.value:
            n_sets = len([d for d in str(datasets.value).split(",") if d.strip()])
            samples = cap * n_sets
            a.append(f"dataset size at most max_samples {cap} x {n_sets} dataset{'s' if n_sets > 1 else ''}")
    if tokens is None and samples is None:
        return None, None
    epochs_v = value_at(t, "num_train_epochs")
    epochs = number(epochs_v)
    if epochs is None or epochs <= 0:
        return None, None
    if epochs_v is not None and epochs_v.source == "default":
        a.append(f"num_train_epochs not written: the default {epochs:g}")
    if tokens is not None:
        return float(tokens) * epochs, None
    if seq is None or samples is None:  # samples is set: tokens is None here and one of them is set
        return None, None
    a.append(
        f"dataset size: {samples:,} samples x {seq} tokens (each sample counted at the full sequence length: "
        "an upper bound without packing)"
    )
    return float(samples) * seq * epochs, None


def plan_inputs(plan: RunPlan, names: dict[str, Any]) -> PlanInputs:
    """Map a RunPlan onto a TrainingSetup. Never raises for bad input: `reason` says what is missing.

    The estimator is imported only once the run has what an estimate needs (start-up matters)."""
    out = PlanInputs(machine=plan.hardware)
    a = out.assumptions
    project = plan.project
    thresholds = getattr(project, "thresholds", None)
    if thresholds is not None:
        out.near_fraction = float(thresholds.near_memory_fraction)
    t = plan.training

    from advisor.facts.model_naming import run_model

    naming = run_model(plan, names)
    name = naming.value
    out.model_value = name
    if name is None:
        out.reason = naming.reason
        # a lone accelerate or DeepSpeed file is not expected to name one: no note for it
        out.quiet = plan.spec.training is None and plan.spec.command is None
        return out
    if naming.assumption:
        a.append(naming.assumption)
    if not name.known:
        out.reason = f"the model name cannot be resolved statically ({name.unknown})"
        return out
    if not isinstance(name.value, str) or not name.value.strip():
        out.reason = "the model name is empty"
        return out
    unmodelled = unmodelled_reason(plan, names)
    if unmodelled is not None:
        out.reason = unmodelled
        return out
    a.extend(method_notes(plan))  # estimated as another method (fp8 as bf16): which part is a bound
    rl = axolotl_rl(plan)
    batch = names["batch"]
    stage = written(t, "stage")
    from advisor.facts.dtypes import quantization

    quant = quantization(plan, names)
    if quant.dtype == "unknown":
        out.reason = f"the base weights' quantization is {quant.source}"
        return out
    method, why = _method(plan, quant.dtype)
    if method is None:
        out.reason = why
        return out
    strategy, why, strategy_origin = _strategy(plan, names, a)
    world = batch.world_size
    dp = batch.dp_size
    if (
        strategy is None
        and why is not None
        and why.endswith("(world size unknown)")
        and plan.spec.command is None
    ):
        # No launcher says how many processes start, and nothing shards: one process's memory is the
        # same on every GPU of a DDP run (which adds only its gradient buckets)
        strategy, dp, world = "none", 1, 1
        a.append(
            "world size unknown (no launch script): estimated per GPU for one process; under DDP each GPU "
            "also holds a second copy of the gradients (DDP buckets)"
        )
    if strategy is None:
        out.reason = why
        return out
    out.strategy_origin = strategy_origin
    if strategy != "none" and (not isinstance(dp, int) or dp < 1):
        world_v = batch.entry("world_size")
        why = world_v.unknown if isinstance(world_v, Value) and world_v.unknown else "unknown"
        label = STRATEGY_LABEL.get(strategy, strategy)
        out.reason = f"{label} divides memory by the number of processes, which is unknown ({why})"
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
    seq = integer(seq_v)
    if seq is None or seq <= 0:
        why = absurd(seq_v) or "not a positive integer"
        out.reason = f"the sequence length is unknown: {why}"
        return out

    from advisor.estimate import TrainingSetup, UnknownModelTypeError, resolve_model
    from advisor.estimate.models import model_files_outside
    from advisor.sources.boundary import local_path_outside

    boundary = plan.boundary()
    # a model folder is a reference too, and so is each file read from it (a config.json linked out)
    outside = local_path_outside(str(name.value), boundary) or model_files_outside(str(name.value), boundary)
    if outside is not None:
        out.reason = f"model {outside}"
        return out
    info = resolve_model(
        name.value, online=bool(getattr(plan, "online", False)), boundary=boundary, from_name=True
    )
    if info is None:
        hint = "" if getattr(plan, "online", False) else "; --online fetches its config.json from the Hub"
        out.reason = (
            f"model '{name.value}' not found offline (not a local folder with config.json, "
            f"not in the HF cache, not in the built-in catalog){hint}"
        )
        return out
    out.info = info
    if info.assumption:  # resolved by what the name says (advisor/estimate/model_names.py)
        out.assumptions.append(info.assumption)
    try:
        pc = info.count()
    except UnknownModelTypeError as exc:
        out.reason = str(exc)
        return out
    except (KeyError, TypeError, ValueError) as exc:
        out.reason = f"model '{name.value}': its config.json cannot be counted ({type(exc).__name__}: {exc})"
        return out
    out.assumptions.extend(pc.caveats)  # a term the count cannot size (a hybrid's mixer, a vision tower)

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
    for what, count in (
        ("per-device batch size", micro),
        ("gradient accumulation", accum),
        ("world size", out.dp),
    ):
        if count > MAX_COUNT:
            out.reason = f"the {what} {count:.3g} is not a sane count"
            return out

    kind = str(stage.value).lower() if stage is not None and stage.known else None
    if rl is not None and rl in AXOLOTL_PREFERENCE_RL:
        kind = rl
    trainer = script_trainer(plan)  # the script's own CPOTrainer / DPOTrainer / SimPOTrainer(...)
    if kind is None and trainer is not None:
        kind = trainer.kind
    preference = written(t, "beta", "pref_beta", "max_prompt_length") is not None or (
        kind is not None and (kind in PREFERENCE_STAGES or kind in AXOLOTL_PREFERENCE_RL or kind == "cpo")
    )
    seqs_per_micro = micro
    if preference:
        loss = str(getattr(written(t, "loss_type", "pref_loss"), "value", "") or "").lower()
        if kind == "kto":
            # KTO is unpaired: one completion per sample with gradients; the KL completions run under
            # torch.no_grad() (trl 1.16 trainer/kto_trainer.py:1363-1365), so no activations are kept
            a.append("KTO preference training: one (unpaired) completion per sample; the KL pass keeps none")
        else:
            # chosen and rejected go through the model as one batch (trl 1.16 trainer/dpo_trainer.py:169,
            # the collator stacks prompt+chosen and prompt+rejected; LLaMA-Factory's concatenated_forward)
            seqs_per_micro = micro * 2
            a.append(
                "preference training: chosen and rejected sequences in every micro-batch (2x the sequences)"
            )
        # DPOConfig's reference_free only changes the loss: the trainer still builds the reference model
        # (trl 0.19.1 trainer/dpo_trainer.py:321-327; 1.16 has no reference_free); precomputed log-probs
        # free it (dpo_trainer.py:323; trl 1.16 dpo_trainer.py:909, outside FSDP)
        ref_free = (
            any(x in loss for x in REFERENCE_FREE)
            or kind in REFERENCE_FREE
            or truth(written(t, "precompute_ref_log_probs")) is True
        )
        if ref_free and trainer is not None and trainer.kind in REFERENCE_FREE:
            a.append(f"{trainer.name} loads no reference model")
        if method == "full" and not ref_free:
            out.reference_copy = True
            a.append(
                "preference training: a frozen reference model in the policy's load dtype "
                "(sharded like the policy under ZeRO-3/FSDP)"
            )

    # ZeRO stage 0 is estimated as DDP, with the DeepSpeed engine's dtypes (module cast, fp32 master: its
    # FP16_Optimizer wrapper, deepspeed 0.19.8 runtime/engine.py:2321 and 2360-2362)
    run_strategy = names["run"].entry("strategy") if names.get("run") is not None else None
    zero0 = isinstance(run_strategy, Value) and run_strategy.value == "zero0"
    dtype_kw, out.dtypes = _dtype_inputs(plan, names, "zero0" if zero0 else strategy, method, info, a)
    if zero0:
        master = out.dtypes.master.dtype == "fp32"
        a.append(
            "ZeRO stage 0 estimated as DDP with DeepSpeed's fp32 master weights"
            if master
            else "ZeRO stage 0 estimated as DDP (DeepSpeed in fp32: no master copy)"
        )
        if out.dtypes.storage.assumed and master:
            a.append(f"DeepSpeed precision: {out.dtypes.storage.source}; fp32 master weights")
    lora_r = dropout = None
    peft_kw: dict[str, Any] = {}
    if method != "full":
        lora_r = integer(script_lora(plan, "r") or written(t, "lora_r", "lora_rank", "lora_dim"))
        dropout = number(script_lora(plan, "lora_dropout") or written(t, "lora_dropout"))
        # a PEFT method other than LoRA (IA3, AdaLoRA, prompt tuning, DoRA, ...) as the LoRA inputs it maps to
        peft_kw, why = peft_method(plan, pc.model_type, a)
        if why is not None:
            out.reason = why
            return out
    optim = written(t, "optim")
    optim_name = str(optim.value) if optim is not None and optim.known and optim.value else None
    optim_name = deepspeed_optimizer(plan) or optim_name  # a DeepSpeed optimizer block replaces `optim`
    low_rank_kw, why = low_rank_optimizer(plan, optim_name or "")  # may set the optimizer (use_galore)
    if why is not None:
        out.reason = why
        return out
    if optim_name is not None:
        from advisor.estimate.memory import has_optimizer_profile

        if not low_rank_kw and not has_optimizer_profile(optim_name):
            out.reason = f"optimizer '{optim_name}' has no memory profile"
            return out
    h = pc.hidden
    setup_kw: dict[str, Any] = {
        "model": pc,
        "method": method,
        "lora_r": lora_r,
        "lora_targets": lora_targets(plan) if method != "full" else None,
        "lora_dropout": dropout,
        "modules_to_save": modules_to_save(plan, a) if method != "full" else None,
        "micro_batch": seqs_per_micro,
        "seq_len": seq,
        "grad_accum": accum,
        "gradient_checkpointing": _gradient_checkpointing(plan, a, quant.dtype),
        **dtype_kw,
        "optimizer": optim_name,
        **low_rank_kw,  # GaLore's rank and targets (advisor.facts.unmodelled.low_rank_optimizer)
        "strategy": strategy,
        "world_size": out.dp if strategy != "none" else 1,
        "offload_optimizer": _offload(names, "offload_optimizer"),
        "offload_params": _offload(names, "offload_params"),
        "attn_implementation": _attn(plan),
        "liger_kernel": _liger(plan),
        "torch_compile": bool(truth(written(t, "torch_compile"))),
        # TRL's SFTConfig.activation_offloading moves saved activations to the CPU (trl 1.16
        # trainer/sft_config.py:291, sft_trainer.py:1190)
        "activation_offloading": bool(truth(written(t, "activation_offloading"))),
        "kept_logits_bytes": _kept_logits(plan, dtype_kw.get("precision"), a),
        "fixed_length": _fixed_length(plan),
        "bnb_keeps_input": _bnb_keeps_input(plan) if method == "qlora" else None,
        "checkpoint_reentrant": checkpoint_reentrant(plan, strategy, out.dp),
        **allocator_inputs(plan),  # expandable_segments, torch_empty_cache_steps
        **_fsdp_units(plan, strategy, method, a),
        **peft_kw,
    }
    if strategy in {"zero1", "zero2", "zero3"}:
        for key in ("reduce_bucket_size", "allgather_bucket_size", "stage3_prefetch_bucket_size"):
            v = value_at(plan.deepspeed, f"zero_optimization.{key}")
            why = absurd(v) if not (v is not None and v.known and isinstance(v.value, str)) else None
            if why is not None:
                a.append(f"DeepSpeed {key} unknown ({why}): DeepSpeed's default assumed")
        setup_kw["ds_reduce_bucket_size"] = _ds_bucket(plan, "reduce_bucket_size", h, 1.0)
        setup_kw["ds_allgather_bucket_size"] = _ds_bucket(plan, "allgather_bucket_size", h, None)
        setup_kw["ds_prefetch_bucket_size"] = _ds_bucket(plan, "stage3_prefetch_bucket_size", h, 0.9)
        setup_kw["ds_max_live_parameters"] = _ds_bucket(plan, "stage3_max_live_parameters", h, None)
        setup_kw.update(zero12_inputs(plan, a) if strategy != "zero3" else {})
    if plan.hardware is not None:
        setup_kw["gpu_memory_gib"] = float(plan.hardware.memory_gib)
    from advisor.facts.frozen_methods import freeze_setup
    from advisor.facts.packed_base import apply_packed_base

    freeze_kw, why = freeze_setup(plan, pc, strategy, a)  # LLaMA-Factory finetuning_type: freeze
    if why is not None:
        out.reason = why
        return out
    setup_kw.update(freeze_kw)
    from advisor.facts.loop_loss import own_loss_bytes

    own_loss = (
        None
        if setup_kw.get("liger_kernel")
        else own_loss_bytes(plan, 4 if dtype_kw.get("storage_dtype") == "fp32" else 2)
    )
    if own_loss is not None:
        setup_kw.update(loss="own", own_loss_logit_bytes=own_loss[0])
        a.append(own_loss[1])

    from advisor.facts.axolotl_inputs import apply_library_behaviour

    apply_library_behaviour(setup_kw, plan, strategy, a)  # axolotl's CCE and k-bit recast, FSDP2's no_sync
    from advisor.facts.torch_release import apply_torch_release

    apply_torch_release(setup_kw, plan, names, strategy, a)  # the script's head; torch's zero_grad, context
    apply_packed_base(setup_kw, info.config, str(name.value), a, plan)  # LoRA on a pre-quantized base
    out.setup = TrainingSetup(**setup_kw)
    out.related = [loc for loc in (first_origin(micro_v), seq_v.origin, strategy_origin) if loc is not None]
    out.total_tokens, out.max_steps = _dataset(plan, seq, out.dp, a)
    from advisor.facts.data_length import data_length  # read only when a run is estimated

    out.data_length = data_length(plan)
    placement = names.get("placement")
    bw = placement.busbw_gbs if placement is not None else None
    out.busbw_gbs = float(bw) if isinstance(bw, int | float) and bw > 0 else None
    return out

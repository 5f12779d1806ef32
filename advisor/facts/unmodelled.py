"""What a run does that the estimator does not model, and why: online RL, vision towers, partial
freezing, low-rank optimizers, Megatron, expert and tensor parallelism, LLaMA-Factory's ppo/rm stages,
axolotl's online-RL and EBFT trainers, Unsloth. An estimate for such a run would be wrong by a factor,
and an error must never come from an unmodelled stack: the estimate says "not modelled" instead."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from advisor.facts.namespace_entries import integer, truth, value_at, written

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan

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
# (LLaMA-Factory freeze-tuning, BAdam and axolotl's unfrozen_parameters are estimated: facts/freeze_tuning.py;
# LLaVA's vision_tower with a catalogued CLIP tower: facts/llava.py)
UNMODELLED_KEYS = {
    "vision_tower": "a vision-language model (vision tower + projector)",
    "mm_projector_type": "a vision-language model (vision tower + projector)",
    "tune_mm_mlp_adapter": "projector-only training of a vision-language model",
    "freeze_backbone": "a partly frozen model",
    "freeze_trainable_layers": "a partly frozen model",
    "use_apollo": "the APOLLO optimizer",
    "use_adam_mini": "Adam-mini (blockwise second moments)",
    "use_muon": "the Muon optimizer",
}
# Megatron-Core parallelism (LLaMA-Factory's mcore_adapter recipes, NeMo): pipeline stages and expert shards
# split the model in ways the estimator does not model.
MEGATRON_PARALLEL_KEYS = (
    "pipeline_model_parallel_size",
    "expert_model_parallel_size",
    "virtual_pipeline_model_parallel_size",
)
# Expert parallelism shards a MoE model's experts over the processes (axolotl's ExpertParallelPlugin is on
# when expert_parallel_size > 1: axolotl 0.19.0 integrations/expert_parallel/plugin.py:446-449): the
# estimator holds every expert on every GPU, so an estimate would cry "out of memory" for a run that fits.
EXPERT_PARALLEL_KEYS = ("expert_parallel_size",)
# Sequence parallelism splits each sequence over the processes (ms-swift's --sequence_parallel_size,
# Ulysses/ring attention): the estimator holds the whole sequence's activations on every GPU.
SEQUENCE_PARALLEL_KEYS = ("sequence_parallel_size",)
# GRPO / GDPO generate completions with the policy (TRL's GRPOTrainer, as num_generations elsewhere);
# EBFT trains against a frozen feature network, a second copy of the model (core/trainers/ebft)
AXOLOTL_UNMODELLED_RL = {
    "grpo": "online RL training (rl: grpo): generation and extra models are not modelled",
    "gdpo": "online RL training (rl: gdpo): generation and extra models are not modelled",
    "ebft": "EBFT (rl: ebft): its frozen feature network, a second copy of the model, is not modelled",
}


UNSLOTH_KEYS = (
    "use_unsloth",
    "use_unsloth_gc",
    "unsloth_lora_mlp",
    "unsloth_lora_qkv",
    "unsloth_lora_o",
    "unsloth_cross_entropy_loss",
    "unsloth_rms_norm",
    "unsloth_rope",
)
_UNSLOTH_IMPORT = re.compile(r"^\s*(?:from|import)\s+unsloth\b", re.MULTILINE)


def unsloth_use(plan: RunPlan, names: dict[str, Any]) -> str | None:
    """Where the run uses Unsloth (its own kernels, checkpointing and loader), or None."""
    t = plan.training
    for key in UNSLOTH_KEYS:
        v = written(t, key)
        if v is not None and truth(v):
            return f"{key} at {v.origin.file.name}:{v.origin.line}" if v.origin else key
    gc = written(t, "gradient_checkpointing")
    if gc is not None and gc.known and str(gc.value).strip().lower() == "unsloth":
        return "gradient_checkpointing: unsloth"
    script = names.get("script")
    for call in script.load_calls if script is not None and isinstance(script.load_calls, list) else []:
        if str(call.get("callee", "")).split(".")[0].startswith("Fast"):
            loc = call["location"]
            return f"{call['callee']} at {loc.file.name}:{loc.line}"
    doc = plan.spec.script
    text = doc.text if doc is not None else None
    if doc is not None and isinstance(text, str) and len(text) <= 2_000_000:
        m = _UNSLOTH_IMPORT.search(text)
        if m is not None:
            return f"import unsloth at {doc.path.name}:{text.count(chr(10), 0, m.start()) + 1}"
    return None


def axolotl_rl(plan: RunPlan) -> str | None:
    """axolotl's `rl:` trainer type (dpo, ipo, kto, orpo, simpo, grpo, gdpo, ebft), lower case, or None."""
    t = plan.training
    if t.dialect != "axolotl":
        return None
    v = written(t, "rl")
    if v is None or not v.known or not isinstance(v.value, str) or not v.value.strip():
        return None
    return v.value.strip().lower()


def unmodelled_reason(plan: RunPlan, names: dict[str, Any]) -> str | None:
    """Why the run's memory is not estimated (a stack the estimator does not model), or None."""
    t = plan.training
    for key in RL_KEYS:
        if written(t, key) is not None:
            return f"online RL training ({key}): generation and extra models are not modelled"
    from advisor.facts.frozen_methods import is_freeze_tuning

    freeze = is_freeze_tuning(plan)  # LLaMA-Factory freeze-tuning: advisor/facts/freeze_tuning.py
    llava = False
    vision_keys: tuple[str, ...] = ()
    if written(t, "vision_tower") is not None:  # imported only then (cold start)
        from advisor.facts.llava import VISION_KEYS, llava_run, llava_unmodelled

        llava, vision_keys = llava_run(plan), VISION_KEYS  # LLaVA's tower and projector: facts/llava.py
        if llava and (why := llava_unmodelled(plan)) is not None:
            return why
    for key, what in UNMODELLED_KEYS.items():
        v = written(t, key)
        if (freeze and key == "freeze_trainable_layers") or (llava and key in vision_keys):
            continue
        if v is not None and v.known and v.value not in (None, False, "", [], "false", "False"):
            return f"{what} ({key}) is not modelled"
    ftype = written(t, "finetuning_type")
    if ftype is not None and ftype.known and str(ftype.value).lower() not in {"full", "lora"} and not freeze:
        return f"finetuning_type {ftype.value} is not modelled"
    stage = written(t, "stage")
    if stage is not None and str(stage.value).lower() in {"ppo", "rm"}:
        return f"LLaMA-Factory stage {stage.value}: not modelled"
    batch = names["batch"]
    mp = batch.model_parallel_size
    if isinstance(mp, int) and mp > 1:
        return f"tensor/context/sequence parallelism (x{mp}) is not modelled"
    for key in MEGATRON_PARALLEL_KEYS:
        degree = integer(written(t, key))
        if degree is not None and degree > 1:
            return f"Megatron-style {key.replace('_size', '')} (x{degree}) is not modelled"
    for key in EXPERT_PARALLEL_KEYS:
        ep_v = written(t, key)
        degree = integer(ep_v)
        if (degree is not None and degree > 1) or (ep_v is not None and not ep_v.known):
            shown = f"x{degree}" if degree is not None else (ep_v.unknown if ep_v is not None else "")
            return f"expert parallelism ({key} {shown}) is not modelled"
    for key in SEQUENCE_PARALLEL_KEYS:
        degree = integer(written(t, key))
        if degree is not None and degree > 1:
            return f"sequence parallelism ({key} x{degree}) is not modelled"
    rl = axolotl_rl(plan)
    if rl is not None and rl in AXOLOTL_UNMODELLED_RL:
        return AXOLOTL_UNMODELLED_RL[rl]

    unsloth = unsloth_use(plan, names)
    if unsloth is not None:
        # Unsloth replaces the HF layers, loss and checkpointing with its own: an HF estimate would be
        # wrong by a factor, and an error must never come from an unmodelled stack
        return f"Unsloth ({unsloth}): its kernels and offloaded checkpointing are not modelled"
    return None


def low_rank_optimizer(plan: RunPlan, optim_name: str) -> tuple[dict[str, Any], str | None]:
    """The estimator's inputs for a GaLore `optim` (advisor.estimate.memory.optimizers.low_rank_profile):
    ({optim_rank, optim_target_modules, optimizer_in_backward}, why it has no estimate). The rank is
    `optim_args`' rank= (transformers 5.24 trainer_optimizer.py:370, parsed as k=v pairs split on commas);
    without optim_target_modules the Trainer raises ValueError (trainer_optimizer.py:121-122); a regex
    string is not matched against the model's module names here."""
    from advisor.estimate.memory.optimizers import LOW_RANK_FAILS, LOW_RANK_OPTIMIZERS

    t = plan.training
    if truth(written(t, "use_galore")):
        return _llamafactory_galore(plan, optim_name)
    key = optim_name.strip().lower().replace("-", "_")
    if key in LOW_RANK_FAILS:
        return {}, f"optimizer '{optim_name}' has no memory profile: {LOW_RANK_FAILS[key]}"
    if key not in LOW_RANK_OPTIMIZERS:
        return {}, None
    tv = written(t, "optim_target_modules")
    if tv is None or not tv.known or tv.value in (None, "", []):
        return {}, (
            f"optimizer '{optim_name}' has no memory profile without optim_target_modules (the Trainer "
            "raises ValueError: transformers trainer_optimizer.py:121-122)"
        )
    raw = tv.value
    if isinstance(raw, str):
        if raw.replace("_", "-").strip().lower() != "all-linear":
            return {}, f"optimizer '{optim_name}': optim_target_modules {raw!r} is a regex, not matched here"
        targets = ["all-linear"]
    elif isinstance(raw, list) and all(isinstance(x, str) for x in raw):
        targets = [str(x) for x in raw]
    else:
        return {}, f"optimizer '{optim_name}': optim_target_modules {raw!r} is not a list of names"
    rank: int | None = None
    args = written(t, "optim_args")
    if args is not None and args.known and isinstance(args.value, str):
        pairs = dict(p.split("=", 1) for p in args.value.replace(" ", "").split(",") if "=" in p)
        if "rank" in pairs:
            try:
                rank = int(pairs["rank"])
            except ValueError:
                return {}, f"optimizer '{optim_name}': optim_args rank={pairs['rank']!r} is not an integer"
    kw: dict[str, Any] = {"optim_rank": rank, "optim_target_modules": targets}
    if key.endswith("layerwise"):
        kw["optimizer_in_backward"] = True
    return kw, None


def _llamafactory_galore(plan: RunPlan, optim_name: str) -> tuple[dict[str, Any], str | None]:
    """LLaMA-Factory's `use_galore` (0.9.3 train/trainer_utils.py _create_galore_optimizer): galore_target
    (default "all": every Linear but lm_head, model_utils/misc.py:31-45 find_all_linear_modules; else
    comma-separated names matched as substrings, trainer_utils.py:200-207), galore_rank (default 16,
    hparams/finetuning_args.py:233-236), galore_layerwise (default False, :249-252: one optimizer per
    parameter stepped in its hook); GaLoreAdamW for optim adamw_torch (trainer_utils.py:234-235), the 8-bit
    and Adafactor variants not modelled."""
    t = plan.training
    optim = optim_name.strip().lower() or "adamw_torch"
    if optim != "adamw_torch":
        return (
            {},
            f"LLaMA-Factory GaLore with optim {optim_name}: its 8-bit / Adafactor variant is not modelled",
        )
    tv = written(t, "galore_target")
    raw = tv.value if tv is not None and tv.known else "all" if tv is None else None
    if not isinstance(raw, str):
        return {}, "LLaMA-Factory GaLore: galore_target is not known statically"
    names = [p.strip() for p in raw.split(",") if p.strip()]
    targets = ["all-decoder-linear"] if names == ["all"] else names
    rank = integer(written(t, "galore_rank"))
    layerwise = bool(truth(written(t, "galore_layerwise")))
    kw: dict[str, Any] = {
        "optimizer": "galore_adamw_layerwise" if layerwise else "galore_adamw",
        "optim_rank": rank if rank is not None else 16,
        "optim_target_modules": targets,
    }
    if layerwise:
        kw["optimizer_in_backward"] = True
    return kw, None


def fp8_training(plan: RunPlan) -> str | None:
    """Where the run trains its Linears in fp8 (accelerate `mixed_precision: fp8`, LLaMA-Factory / axolotl
    `fp8: true`), or None."""
    mp = value_at(plan.accelerate, "mixed_precision") if plan.accelerate is not None else None
    if mp is not None and mp.known and str(mp.value).strip().lower() == "fp8":
        return f"mixed_precision: fp8 at {mp.origin.file.name}:{mp.origin.line}" if mp.origin else "fp8"
    v = written(plan.training, "fp8")
    if v is not None and truth(v):
        return f"fp8 at {v.origin.file.name}:{v.origin.line}" if v.origin else "fp8"
    return None


def method_notes(plan: RunPlan) -> list[str]:
    """What an estimate of the run counts as another method, and which part of it is a bound."""
    out: list[str] = []
    fp8 = fp8_training(plan)
    if fp8 is not None:
        # accelerate converts every nn.Linear but the first and last to torchao's Float8Linear (accelerate
        # 1.16 utils/ao.py:104-133); its matmul keeps the high-precision input and weight for backward
        # (torchao float8/float8_linear.py matmul_with_hp_or_float8_args.forward save_for_backward)
        out.append(
            f"fp8 training ({fp8}): estimated as bf16 mixed precision: torchao's Float8Linear keeps the "
            "weights, gradients and optimizer states in their dtype and saves the high-precision matmul "
            "inputs for backward; its fp8 casts (one layer's at a time) are not counted"
        )
    return out

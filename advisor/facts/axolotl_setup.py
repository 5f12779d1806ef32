"""What axolotl itself changes in a run's memory, read from its source (axolotl-ai-cloud/axolotl).

- CutCrossEntropyPlugin: the loss is cut-cross-entropy, which never materialises the logits;
- LigerPlugin: a fused linear cross-entropy only with liger_fused_linear_cross_entropy;
- QLoRA/LoRA on a 4/8-bit base: axolotl casts the norms and the embeddings back to the training dtype after
  PEFT's prepare_model_for_kbit_training upcast them to fp32;
- FSDP2: axolotl replaces accelerate's fsdp2_prepare_model with its own, which does not upcast the
  parameters to fp32;
- FSDP2 with gradient accumulation: accelerate's no_sync keeps unsharded gradients only from 1.11.0.

A release the project pins (requirements, lock files: advisor.facts.versions.pinned) older than the one
that brought a behaviour gets the older behaviour; nothing pinned is the current release.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.facts.namespace_entries import truth, written

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan

# axolotl v0.9.0 (53dbf97d "make cce default to true when using the plugin"): CutCrossEntropyArgs'
# cut_cross_entropy defaults to True (src/axolotl/integrations/cut_cross_entropy/args.py:32@ca796fb5);
# before, the plugin patched nothing unless `cut_cross_entropy: true` (args.py:31@682a9cf7 `= None`,
# __init__.py pre_model_load `if cfg.cut_cross_entropy`)
CCE_DEFAULT_ON = "0.9.0"
# axolotl v0.12.0 (d6e4a611 "FSDP1 -> FSDP2"): patch_accelerate_fsdp2 (monkeypatch/accelerate/fsdp2.py:348-351
# @ca796fb5, applied for fsdp_version 2: loaders/patch_manager.py:107-110) swaps in its own
# fsdp2_prepare_model (fsdp2.py:186-345), which has no `model.to(torch.float32)`; accelerate's own upcasts
# when mixed_precision != "no" (accelerate 9359a019 utils/fsdp_utils.py:700-704). Still so at 067b021c
# (fsdp2.py:539, 973).
FSDP2_NO_UPCAST = "0.12.0"
# axolotl v0.3.0 (f319b0bc, 1991946c "fix: bad dtype for full finetune"): every LoRA/QLoRA run casts the norms
# and embeddings back (needs_fa2_dtype); before, only runs with flash_attention (utils/models.py:410-416
# @dc71d887, to fp16)
KBIT_RECAST_ALWAYS = "0.3.0"
# accelerate 1.11.0 (ec92b1af, PR #3762): Accelerator.no_sync calls model.set_requires_gradient_sync(False)
# under FSDP2 (accelerator.py:1164-1169); before, it looked up `model.no_sync` (accelerator.py:1128-1131 at
# 9359a019, 1167-1170 in 1.10.0), which an FSDP2 module does not have (torch FSDPModule has
# set_requires_gradient_sync only: distributed/fsdp/_fully_shard/_fully_shard.py), so every micro-batch
# reduce-scattered its gradients.
# HF Trainer enters accelerator.no_sync on all but the last micro-batch (transformers 4.55 trainer.py:2575).
FSDP2_NO_SYNC = "1.11.0"


def is_axolotl(plan: RunPlan) -> bool:
    t = plan.training
    dialect = t.known_value("dialect") if t is not None else None
    return dialect is not None and dialect.value == "axolotl"


def _plugins(plan: RunPlan) -> list[str]:
    v = written(plan.training, "plugins")
    if v is None or not v.known:
        return []
    raw = v.value if isinstance(v.value, list | tuple) else [v.value]
    return [str(x).strip() for x in raw if x is not None]


def _below(plan: RunPlan, package: str, release: str) -> bool | None:
    """Whether the project's pin of ``package`` installs a release older than ``release`` (None: no pin, or
    one that cannot be placed)."""
    from advisor.facts import versions

    return versions.run_installs_below(plan, package, release)


def cce_loss(plan: RunPlan) -> str | None:
    """Why the run's loss is axolotl's cut-cross-entropy (None when it is not): the plugin is listed and
    `cut_cross_entropy` is true, or unset on axolotl >= 0.9.0. The plugin patches every causal-LM forward
    (its own patches, or the generic llama-like one: integrations/cut_cross_entropy/__init__.py:84-141
    @ca796fb5) to call cut-cross-entropy's linear_cross_entropy on the hidden states and the lm_head
    weight."""
    if not is_axolotl(plan):
        return None
    listed = _plugins(plan)
    if not any(p.split(".")[-1] == "CutCrossEntropyPlugin" or "cut_cross_entropy" in p for p in listed):
        return None
    on = truth(written(plan.training, "cut_cross_entropy"))
    if on is False:
        return None
    if on is None and _below(plan, "axolotl", CCE_DEFAULT_ON) is True:
        return None  # the plugin's switch was off by default before 0.9.0
    return (
        "axolotl's CutCrossEntropyPlugin: cut-cross-entropy computes the loss blockwise, never the logits "
        "(integrations/cut_cross_entropy/args.py:32, cut_cross_entropy/cce.py:57-130)"
    )


def liger_plugin_fused_ce(plan: RunPlan) -> bool | None:
    """For an axolotl run listing the LigerPlugin: whether it fuses the linear cross-entropy, which it does
    only with liger_fused_linear_cross_entropy (LigerArgs fields default None: integrations/liger/args.py:
    30-36@682a9cf7); None for other runs."""
    if not is_axolotl(plan) or not any("liger" in p.lower() for p in _plugins(plan)):
        return None
    return truth(written(plan.training, "liger_fused_linear_cross_entropy")) is True


def kbit_recast(plan: RunPlan) -> str | None:
    """Why the norms and embeddings of an axolotl LoRA/QLoRA run on a 4/8-bit base are in the training
    dtype after PEFT's prepare_model_for_kbit_training upcast them (None when they are not): axolotl's
    _configure_embedding_dtypes converts every module named *norm* and the embedding layers
    (embed_tokens, lm_head) to cfg.torch_dtype unless QLoRA under FSDP, and whenever CCE is on
    (loaders/model.py:447-477 and 1025-1047@067b021c; 320-352@09959fac)."""
    if not is_axolotl(plan):
        return None
    flash = truth(written(plan.training, "flash_attention"))
    if _below(plan, "axolotl", KBIT_RECAST_ALWAYS) is True and not flash:
        return None  # before 0.3.0 only flash-attention runs were cast back (KBIT_RECAST_ALWAYS)
    return (
        "axolotl casts the norms and embeddings back to the training dtype after "
        "prepare_model_for_kbit_training (loaders/model.py:458-477)"
    )


def fsdp2_keeps_dtype(plan: RunPlan, fsdp_version: int) -> str | None:
    """Why an axolotl FSDP2 run keeps its parameters in the load dtype (None when accelerate's fp32 upcast
    applies): axolotl >= 0.12.0 prepares the model with its own fsdp2_prepare_model, which does not upcast."""
    if not is_axolotl(plan) or fsdp_version != 2:
        return None
    if _below(plan, "axolotl", FSDP2_NO_UPCAST) is True:
        return None
    return (
        "axolotl's own fsdp2_prepare_model keeps the parameters in the load dtype: no fp32 upcast "
        "(monkeypatch/accelerate/fsdp2.py:186-351)"
    )


def fsdp2_syncs_each_batch(plan: RunPlan, fsdp_version: int) -> str | None:
    """Why an FSDP2 run reduce-scatters its gradients on every micro-batch (None when accelerate's no_sync
    keeps them unsharded between micro-batches): the accelerate pin installs a release before 1.11.0."""
    if fsdp_version != 2 or _below(plan, "accelerate", FSDP2_NO_SYNC) is not True:
        return None
    return (
        "FSDP2 under accelerate < 1.11: its no_sync looks up model.no_sync, which an FSDP2 module lacks "
        "(accelerate 1.10 accelerator.py:1167-1170), so gradients are reduce-scattered every micro-batch"
    )

"""LLaVA-style vision-language runs (haotian-liu/LLaVA's llava/train/train.py flags) as TrainingSetup fields.

What LLaVA @c121f04 does with its flags (llava/train/train.py, llava/model/llava_arch.py):
- the language model loads in bf16 under --bf16 (train.py:827-832); the CLIP tower (--vision_tower) is frozen
  (multimodal_encoder/clip_encoder.py:31), cast to bf16/fp16 (train.py:917) and run under no_grad
  (clip_encoder.py:45); select_feature 'patch' (the default, train.py:66) drops the class token, so each
  image gives patches tokens, 'cls_patch' one more (clip_encoder.py:35-43);
- the projector is --mm_projector_type (default 'linear', train.py:62; builder.py:33-51), trained unless
  --freeze_mm_mlp_adapter (train.py:932-935);
- --tune_mm_mlp_adapter (pretraining) freezes the whole model but the projector (train.py:927-930): the
  language model is frozen, yet backward runs through all its layers, since the projector's output is part of
  layer 0's input (llava_arch.py:256-263) and checkpointing makes the embedding's output require grad
  (train.py:852-854);
- --lora_enable wraps every Linear of the language model but lm_head (find_all_linear_names,
  train.py:169-182), r 64, dropout 0.05 by default (train.py:106-108); the projector is built after it and
  trains (llava_arch.py:79-90);
- image features replace the image token, then each sequence is cut to model_max_length (default 512,
  train.py:86-92; llava_arch.py:273-277) and padded to the batch's longest (llava_arch.py:280-307);
- train_mem.py starts train(attn_implementation="flash_attention_2") (train_mem.py:1-4).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.facts.namespace_entries import integer, truth, written
from advisor.sources.known_keys import SEQ_KEYS

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan

__all__ = ["VISION_KEYS", "llava_run", "llava_setup", "llava_unmodelled"]

# the keys that make a run a LLaVA-style one (train.py ModelArguments, :53-66)
VISION_KEYS = ("vision_tower", "mm_projector_type", "tune_mm_mlp_adapter")
DEFAULT_MAX_LENGTH = 512  # train.py:86-92
DEFAULT_LORA_R = 64  # train.py:106
DEFAULT_LORA_DROPOUT = 0.05  # train.py:108


def _text(plan: RunPlan, key: str, default: str | None) -> str | None:
    v = written(plan.training, key)
    if v is None:
        return default
    return str(v.value).strip() if v.known and v.value is not None else None


def llava_run(plan: RunPlan) -> bool:
    """Whether the run writes LLaVA's --vision_tower (its other vision keys then follow LLaVA's meaning)."""
    v = written(plan.training, "vision_tower")
    return v is not None and v.known and v.value not in (None, "", "None")


def llava_unmodelled(plan: RunPlan) -> str | None:
    """Why a LLaVA-style run's vision setup is not modelled, or None (read before anything else, as the
    other stacks the estimator does not model: advisor/facts/unmodelled.py)."""
    from advisor.estimate.params.vision import projector, vision_tower

    t = plan.training
    bits = integer(written(t, "bits"))
    if bits in (4, 8):
        return (
            f"LLaVA on a quantized base (--bits {bits}: BitsAndBytesConfig, train.py:798-812) is not modelled"
        )
    for key, what in (
        ("unfreeze_mm_vision_tower", "a trained vision tower"),
        ("mm_tunable_parts", "LLaVA-NeXT's mm_tunable_parts (a trainable vision tower among them)"),
        ("s2", "multi-scale (S2) vision features"),
        ("num_frames", "video frames per sample"),
    ):
        v = written(t, key)
        if v is not None and (not v.known or v.value not in (None, False, "", "false", "False")):
            return f"{what} (--{key}) is not modelled"
    aspect = _text(plan, "image_aspect_ratio", "square")
    if aspect is None or aspect.lower() == "anyres":
        return (
            f"image_aspect_ratio {aspect or 'unknown'}: several crops per image (LLaVA-NeXT) are not modelled"
        )
    merge = _text(plan, "mm_patch_merge_type", "flat")
    if merge != "flat":
        return f"mm_patch_merge_type {merge or 'unknown'} (llava_arch.py:160-200) is not modelled"
    if truth(written(t, "tune_mm_mlp_adapter")) and truth(written(t, "lora_enable")):
        return (
            "tune_mm_mlp_adapter with lora_enable (adapters frozen again, train.py:927-930) is not modelled"
        )
    name = _text(plan, "vision_tower", None) or ""
    if vision_tower(name) is None:
        return f"a vision-language model with the tower '{name}' (not in the vision catalog) is not modelled"
    kind = _text(plan, "mm_projector_type", "linear")
    if projector(kind or "", 1, 1) is None:
        return f"mm_projector_type {kind or 'unknown'} (LLaVA's builder.py:51 raises on it) is not modelled"
    feature = _text(plan, "mm_vision_select_feature", "patch")
    if feature not in ("patch", "cls_patch"):
        return f"mm_vision_select_feature {feature or 'unknown'} (clip_encoder.py:42 raises) is not modelled"
    return None


def llava_setup(plan: RunPlan, pc: Any, strategy: str, a: list[str]) -> tuple[dict[str, Any], str | None]:
    """(TrainingSetup fields, why the run is not estimated) for a LLaVA-style run."""
    from advisor.estimate.memory.setup import VisionSetup
    from advisor.estimate.params.vision import projector, vision_tower

    why = llava_unmodelled(plan)
    if why is not None:
        return {}, why
    tower = vision_tower(_text(plan, "vision_tower", None) or "")
    kind = _text(plan, "mm_projector_type", "linear") or ""
    proj = projector(kind, tower.hidden, int(pc.hidden)) if tower is not None else None
    feature = _text(plan, "mm_vision_select_feature", "patch")
    assert tower is not None and proj is not None  # llava_unmodelled checked both
    image_tokens = tower.patches + (1 if feature == "cls_patch" else 0)
    t = plan.training
    pretrain = bool(truth(written(t, "tune_mm_mlp_adapter")))
    trained = not truth(written(t, "freeze_mm_mlp_adapter"))
    deepspeed = strategy in ("zero1", "zero2", "zero3")
    kw: dict[str, Any] = {
        "vision": VisionSetup(
            tower_params=tower.params,
            tower_hidden=tower.hidden,
            tower_intermediate=tower.intermediate,
            tower_layers=tower.layers,
            tower_heads=tower.heads,
            tower_tokens=tower.tokens,
            image_tokens=image_tokens,
            projector_params=proj.params,
            projector_saved_widths=proj.saved_widths,
            projector_trained=trained,
            projector_fp32=not deepspeed,
        ),
        "fixed_length": False,  # padded to the batch's longest (llava_arch.py:280-307)
    }
    if pretrain:
        L = int(pc.layers)
        kw.update(layer_trainable=[0] * L, trainable_extra_params=0, input_requires_grad=True)
    if truth(written(t, "lora_enable")):
        kw["lora_targets"] = ["all-linear"]  # find_all_linear_names: every Linear but lm_head
        if written(t, "lora_r") is None:
            kw["lora_r"] = DEFAULT_LORA_R
        if written(t, "lora_dropout") is None:
            kw["lora_dropout"] = DEFAULT_LORA_DROPOUT
    if written(t, "model_max_length") is None and not any(written(t, k) is not None for k in SEQ_KEYS):
        kw["seq_len"] = DEFAULT_MAX_LENGTH  # LLaVA's own default, not the estimator's assumed length
        a[:] = [x for x in a if not x.startswith("sequence length not set")]
    command = plan.spec.command
    script = getattr(getattr(command, "script", None), "text", None) or ""
    if script.replace("\\", "/").endswith("train_mem.py"):
        kw["attn_implementation"] = "flash_attention_2"
    written_cap = written(t, "model_max_length") is not None
    seq = "model_max_length" + ("" if written_cap else f" {DEFAULT_MAX_LENGTH}")
    what = (
        "the projector only (the language model frozen, backward through all its layers)"
        if pretrain
        else "LoRA adapters + the projector"
        if "lora_targets" in kw
        else "the language model + the projector"
    )
    if not trained:
        what = what.replace(" + the projector", "") + " (the projector frozen)"
    a.append(
        f"LLaVA: {tower.name} ({tower.params / 1e6:.1f}M parameters) frozen in 16-bit and run without grad "
        f"(clip_encoder.py:31, 45); {kind} projector ({proj.params / 1e6:.1f}M); trains {what}"
    )
    a.append(
        "one image per sample (an assumption: LLaVA-1.5's mix is mostly single-image, a text-only sample "
        f"has none): {image_tokens} image tokens of the {seq} cap, which holds text and image tokens "
        "(llava_arch.py:273-277); batches padded to their longest"
    )
    if not deepspeed:
        a.append(
            "projector in fp32 as built (torch's default dtype; a LLaVA checkpoint whose config names "
            "mm_vision_tower builds it in the load dtype, llava_arch.py:34-36)"
        )
    return kw, None

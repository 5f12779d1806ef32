"""A LLaVA-style run's CLIP tower and projector: counts (against transformers on the meta device and the
open_clip configs the catalog cites) and their memory and time terms (advisor/estimate/memory/vision.py)."""

from __future__ import annotations

import json

import pytest

from advisor import PACKAGE_DIR
from advisor.core.records import replace
from advisor.estimate import TrainingSetup, resolve_model
from advisor.estimate.memory import estimate_memory, phase_terms
from advisor.estimate.memory.setup import VisionSetup
from advisor.estimate.params.vision import projector, vision_tower
from advisor.estimate.timing import flops_per_token, vision_flops_per_sample

GIB = 2**30
TOWERS = json.loads((PACKAGE_DIR / "data" / "models" / "vision_towers.json").read_text())["towers"]


def test_catalog_values_are_open_clips_vit_l_14() -> None:
    # mlfoundations/open_clip ViT-L-14-336-quickgelu.json @2a61d34 and ViT-L-14.json @7bbd90e: width 1024,
    # 24 layers, patch 14, image 336 / 224; model.py CLIPVisionCfg: head_width 64, mlp_ratio 4.0
    for name, image in (("openai/clip-vit-large-patch14-336", 336), ("openai/clip-vit-large-patch14", 224)):
        t = vision_tower(name)
        assert t is not None
        assert (t.hidden, t.layers, t.patch_size, t.image_size) == (1024, 24, 14, image)
        assert (t.heads, t.intermediate) == (1024 // 64, 1024 * 4)
    assert vision_tower("OpenAI/CLIP-ViT-Large-Patch14-336").patches == 576  # 336 / 14 = 24 per side
    assert vision_tower("google/siglip-so400m-patch14-384") is None


@pytest.mark.parametrize("name", sorted(TOWERS))
def test_count_matches_clip_vision_model_on_meta(name: str) -> None:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    cfg = {k: v for k, v in TOWERS[name].items() if k != "model_type"}
    with torch.device("meta"):
        model = transformers.CLIPVisionModel(transformers.CLIPVisionConfig(**cfg))
    t = vision_tower(name)
    assert t is not None and t.params == sum(p.numel() for p in model.parameters())
    assert t.tokens == model.embeddings.num_positions  # patches + the class token


def test_projector_counts_match_llavas_builder() -> None:
    nn = pytest.importorskip("torch.nn")
    # builder.py:36-46: Linear(mm_hidden, h) and, for mlp2x_gelu, GELU + Linear(h, h)
    mlp2 = nn.Sequential(nn.Linear(1024, 5120), nn.GELU(), nn.Linear(5120, 5120))
    p = projector("mlp2x_gelu", 1024, 5120)
    assert p is not None and p.params == sum(x.numel() for x in mlp2.parameters()) == 31_467_520
    assert p.saved_widths == [1024, 5120, 5120]
    lin = projector("linear", 1024, 4096)
    assert lin is not None and lin.params == 1024 * 4096 + 4096 and lin.saved_widths == [1024]
    assert projector("identity", 1024, 4096).params == 0  # type: ignore[union-attr]
    assert projector("qformer", 1024, 4096) is None  # builder.py:51 raises


def _vision(trained: bool = True) -> VisionSetup:
    t = vision_tower("openai/clip-vit-large-patch14-336")
    p = projector("mlp2x_gelu", 1024, 5120)
    assert t is not None and p is not None
    return VisionSetup(
        tower_params=t.params,
        tower_hidden=t.hidden,
        tower_intermediate=t.intermediate,
        tower_layers=t.layers,
        tower_heads=t.heads,
        tower_tokens=t.tokens,
        image_tokens=t.patches,
        projector_params=p.params,
        projector_saved_widths=p.saved_widths,
        projector_trained=trained,
    )


def _setup(**kw) -> TrainingSetup:
    pc = resolve_model("lmsys/vicuna-13b-v1.5").count()
    base = dict(
        model=pc,
        micro_batch=16,
        seq_len=2048,
        gradient_checkpointing=True,
        precision="bf16",
        optimizer="adamw_torch",
        strategy="zero3",
        world_size=8,
        attn_implementation="flash_attention_2",
        vision=_vision(),
    )
    base.update(kw)
    return TrainingSetup(**base)


def _term(setup: TrainingSetup, name: str, phase: str | None = None):
    pt = phase_terms(setup)
    terms = list(pt.static) + ([t for t in pt.phases[phase]] if phase else [])
    return next(t for t in terms if t.name == name)


def test_tower_and_projector_weights_shard_under_zero3_only() -> None:
    w = _term(_setup(), "vision tower + projector weights")
    assert w.bytes == pytest.approx((303_507_456 + 31_467_520) * 2 / 8)
    w2 = _term(_setup(strategy="zero2"), "vision tower + projector weights")
    assert w2.bytes == pytest.approx((303_507_456 + 31_467_520) * 2)
    # FSDP: LLaVA keeps the tower outside the wrapped module (llava_arch.py:61-62), the projector is sharded
    w3 = _term(_setup(strategy="fsdp"), "vision tower + projector weights")
    assert w3.bytes == pytest.approx(303_507_456 * 2 + 31_467_520 * 2 / 8)


def test_projector_states_gradients_and_activations() -> None:
    s = _setup()
    # DeepSpeed bf16: an fp32 master copy + AdamW's two fp32 moments, partitioned over 8
    assert _term(s, "projector optimizer states").bytes == pytest.approx(31_467_520 * 12 / 8)
    assert _term(s, "projector gradients", "end of backward").bytes == pytest.approx(31_467_520 * 2 / 8)
    act = _term(s, "projector activations", "backward start")
    assert act.bytes == pytest.approx(16 * 576 * (1024 + 5120 + 5120) * 2)
    frozen = _setup(vision=_vision(trained=False))
    assert _term(frozen, "projector activations", "backward start").bytes == 0
    assert _term(frozen, "projector optimizer states").bytes == 0
    assert phase_terms(frozen).trainable == phase_terms(s).trainable - 31_467_520


def test_the_tower_keeps_no_activations_but_a_forward_working_set() -> None:
    s = _setup()
    fwd = _term(s, "vision tower forward (no grad)", "vision forward")
    # 25 hidden states of 16 x 577 x 1024 in bf16 + one layer's eager attention (q, k, v, scores, softmax)
    states = 25 * 16 * 577 * 1024 * 2
    attn = 16 * (3 * 577 * 1024 + 2 * 16 * 577 * 577) * 2
    assert fwd.bytes == pytest.approx(states + attn)
    assert not any("vision" in t.name for t in phase_terms(s).phases["backward start"])
    # the same run without the vision inputs differs by the static and projector terms only
    est, plain = estimate_memory(s), estimate_memory(replace(s, vision=None))
    added = (303_507_456 + 31_467_520) * 2 / 8 + 31_467_520 * 12 / 8 + 16 * 576 * 11264 * 2
    assert est.peak_allocated_gib - plain.peak_allocated_gib == pytest.approx(added / GIB, rel=0.05)


def test_pretraining_trains_the_projector_only_through_a_frozen_language_model() -> None:
    pc = resolve_model("lmsys/vicuna-13b-v1.5").count()
    s = _setup(strategy="zero2", layer_trainable=[0] * pc.layers, input_requires_grad=True)
    pt = phase_terms(s)
    assert pt.trainable == 31_467_520
    est = estimate_memory(s)
    # backward runs through every frozen layer: the 40 checkpointed layer inputs are kept as in the full
    # fine-tune, and no language-model gradient or optimizer state exists
    act = next(i for i in est.items if i.name == "activations")
    full = estimate_memory(_setup(strategy="zero2"))
    assert act.gib == next(i for i in full.items if i.name == "activations").gib
    assert act.note.startswith("checkpointed: 40 layer inputs")
    assert _term(s, "optimizer states").bytes == 0
    # the ZeRO buckets carry the projector's gradients
    assert next(i for i in est.items if i.name == "distributed buffers").gib > 0


def test_vision_flops_are_the_towers_forward_and_the_projectors_training() -> None:
    s = _setup()
    T = 577
    tower = 2 * 303_507_456 * T + 4 * 24 * 1024 * T * T
    assert vision_flops_per_sample(s) == pytest.approx(tower + 4 * 31_467_520 * 576)
    assert flops_per_token(s) - flops_per_token(replace(s, vision=None)) == pytest.approx(
        vision_flops_per_sample(s) / 2048
    )

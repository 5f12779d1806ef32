"""CUDA autocast runs layer_norm in fp32: with 16-bit LayerNorm weights every call casts its weight and
bias to fp32 anew (autocast caches only lower-precision casts of fp32 leaves) and native_layer_norm saves
both for backward. The simulated step (benchmarks/simulate_grid.py) measures 0.77 MiB of them for
pythia-1.4b (49 LayerNorms of 2048 weights + 2048 biases, fp32) without checkpointing."""

from __future__ import annotations

from advisor.estimate import TrainingSetup, resolve_model
from advisor.estimate.memory import terms
from advisor.estimate.memory.peak import phase_terms

H, L = 2048, 24  # pythia-1.4b
PER_NORM = 4 * 2 * H  # fp32 weight + bias


def _copies(**kw: object) -> float:
    fields: dict[str, object] = dict(
        model=resolve_model("EleutherAI/pythia-1.4b").count(),
        method="full",
        micro_batch=1,
        seq_len=1024,
        storage_dtype="bf16",
        autocast="bf16",
        optimizer="adamw_torch_fused",
        gradient_checkpointing=False,
        attn_implementation="sdpa",
        metric="allocated",
    )
    fields.update(kw)
    s = TrainingSetup(**fields)  # type: ignore[arg-type]
    pt = phase_terms(s)
    return sum(t.bytes for t in pt.phases["backward start"] if t.name == "autocast weight copies")


def test_every_layernorm_saves_fp32_weight_and_bias_copies() -> None:
    assert _copies() == (2 * L + 1) * PER_NORM


def test_checkpointing_keeps_only_the_final_norms() -> None:
    assert _copies(gradient_checkpointing=True) == PER_NORM


def test_no_autocast_or_fp32_norm_weights_make_none() -> None:
    assert _copies(autocast="off") == 0
    fp32 = _copies(storage_dtype="fp32")  # the matmul weights' 16-bit casts only
    pc = resolve_model("EleutherAI/pythia-1.4b").count()
    assert fp32 == 2.0 * (pc.layer_linear_weights + pc.lm_head)


def test_adapters_the_first_layers_norms_read_a_frozen_embedding() -> None:
    s = TrainingSetup(
        model=resolve_model("EleutherAI/pythia-1.4b").count(),
        method="lora",
        micro_batch=1,
        seq_len=1024,
        storage_dtype="bf16",
        autocast="bf16",
        gradient_checkpointing=False,
        metric="allocated",
    )
    r = phase_terms(s).resolved
    # parallel block: both of the first layer's LayerNorms read the embedding output, which needs no grad
    assert terms._layer_norm_fp32_copies(r) == (2 * L - 2 + 1) * PER_NORM

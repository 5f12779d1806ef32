"""Families added for models fine-tuned in 2025 (issue 21): GLM-4-0414, InternLM3, Granite 3.x, Llama 4.

Each family's formula is compared with transformers on the meta device for small configs built by the
config class itself (defaults and the switches the family reads), and by hand where transformers refuses a
config the remote code accepts.
"""

from __future__ import annotations

from typing import Any

import pytest

from advisor.core.records import replace
from advisor.estimate import count_params, flops_per_token, resolve_model
from advisor.estimate.memory import resolve_setup
from advisor.estimate.memory.activations import layer_bytes
from tests.estimate.setups import checkpointed_full_ft

SMALL = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 96}
SMALL_VOCAB = {"vocab_size": 100, "pad_token_id": 0}


@pytest.mark.parametrize(
    ("model_type", "switches"),
    [
        ("glm4", {}),  # attention_bias defaults to True, head_dim 128, untied
        ("glm4", {"attention_bias": False, "tie_word_embeddings": True}),
        ("glm4", {"num_key_value_heads": 2, "head_dim": 16}),
        ("internlm3", {}),
        ("internlm3", {"qkv_bias": True, "bias": True, "num_key_value_heads": 2}),
        ("granite", {"attention_bias": True, "mlp_bias": True, "tie_word_embeddings": True}),
    ],
)
def test_family_matches_transformers(model_type: str, switches: dict[str, Any], on_meta: Any) -> None:
    config, total = on_meta(model_type, **SMALL, **SMALL_VOCAB, **switches)
    pc = count_params(config)
    assert pc.source == "formula" and pc.model_type == model_type
    assert pc.total == total, f"{model_type} {switches}: {pc.total:,} != transformers {total:,}"


def test_glm4_layout_by_hand() -> None:
    # modeling_glm4.py: q/k/v with bias, o_proj without; gate_up_proj h -> 2i, down_proj; 4 RMSNorms a layer
    h, i, L, V, hd, nh, nkv = 64, 96, 2, 100, 16, 4, 2
    cfg = {**SMALL, "model_type": "glm4", "vocab_size": V, "head_dim": hd, "num_key_value_heads": nkv}
    q, kv = nh * hd, nkv * hd
    attn = h * q + q + 2 * (h * kv + kv) + q * h
    layer = attn + h * 2 * i + i * h + 4 * h
    pc = count_params(cfg)
    assert pc.total == 2 * V * h + L * layer + h
    assert pc.norms_per_layer == 4 and not pc.tied
    names = {lin.name for lin in pc.linears}
    assert names == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_up_proj", "down_proj"}


def test_internlm3_remote_code_biases_by_hand() -> None:
    # the remote code (and transformers' port before 5.x) puts qkv_bias on q/k/v only and bias on o_proj and
    # the MLP; transformers 5.25 refuses the two set apart, so this case is checked by hand
    h, i, L, V, hd, nh, nkv = 64, 96, 2, 100, 16, 4, 2
    base = {**SMALL, "model_type": "internlm3", "vocab_size": V, "head_dim": hd, "num_key_value_heads": nkv}
    plain = count_params({**base, "qkv_bias": False, "bias": False}).total
    q, kv = nh * hd, nkv * hd
    assert count_params({**base, "qkv_bias": True, "bias": False}).total - plain == L * (q + 2 * kv)
    assert count_params({**base, "qkv_bias": False, "bias": True}).total - plain == L * (h + 2 * i + h)
    # the transformers 5.25 spellings of the same switches
    assert (
        count_params({**base, "attention_bias": True, "mlp_bias": True}).total
        == count_params({**base, "qkv_bias": True, "bias": True}).total
    )


LLAMA4_SMALL = {
    **SMALL,
    "num_hidden_layers": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "intermediate_size": 32,
    "intermediate_size_mlp": 96,
    "num_local_experts": 4,
}


@pytest.mark.parametrize(
    "switches",
    [
        {},  # every layer MoE (Scout)
        {"interleave_moe_layer_step": 2},  # dense and MoE layers in turn (Maverick)
        {"moe_layers": [0, 3]},
        {"attention_bias": True, "tie_word_embeddings": True, "num_experts_per_tok": 2},
    ],
)
def test_llama4_text_matches_transformers(switches: dict[str, Any], on_meta: Any) -> None:
    config, total = on_meta("llama4_text", **LLAMA4_SMALL, **SMALL_VOCAB, **switches)
    pc = count_params(config)
    assert pc.source == "formula" and pc.total == total


def test_llama4_multimodal_config_counts_its_text_decoder(on_meta: Any) -> None:
    text = {**LLAMA4_SMALL, **SMALL_VOCAB, "interleave_moe_layer_step": 2}
    config, total = on_meta("llama4", text_config=text)
    pc = count_params(config)  # AutoModelForCausalLM builds Llama4ForCausalLM: the text decoder only
    assert pc.model_type == "llama4_text" and pc.total == total
    assert any("text decoder" in note for note in pc.notes)


def test_llama4_runs_every_expert_on_every_token() -> None:
    # modeling_llama4.py Llama4TextMoe.forward: routed_in = hidden_states.repeat(E, 1), scaled by the router's
    # sigmoid scores (zero for an unrouted expert), then one bmm over all E experts
    pc = resolve_model("meta-llama/Llama-4-Scout-17B-16E").count()
    assert (pc.moe_experts, pc.moe_active, pc.experts_computed) == (16, 1, 16)
    assert pc.computed_params == pc.total > pc.active_params
    qwen = resolve_model("Qwen/Qwen3-30B-A3B").count()
    assert qwen.experts_computed == qwen.moe_active and qwen.computed_params == qwen.active_params

    def run(computed: int) -> tuple[float, float]:
        setup = checkpointed_full_ft("meta-llama/Llama-4-Scout-17B-16E", 1, 1024)
        setup = replace(setup, model=replace(pc, moe_computed=computed))
        return layer_bytes(resolve_setup(setup))[0], flops_per_token(setup)

    (one, f_one), (two, _), (every, f_every) = run(1), run(2), run(16)
    assert every - one == pytest.approx(15 * (two - one)) and two > one
    # 6 FLOPs (forward + backward) + 2 (recompute) per multiplied weight of the 15 more experts
    assert f_every - f_one == pytest.approx(8 * pc.expert_params * 15 // 16)

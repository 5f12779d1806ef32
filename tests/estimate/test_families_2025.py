"""Families added for models fine-tuned in 2025 (issue 21): GLM-4-0414, InternLM3, Granite 3.x.

Each family's formula is compared with transformers on the meta device for small configs built by the
config class itself (defaults and the switches the family reads), and by hand where transformers refuses a
config the remote code accepts.
"""

from __future__ import annotations

from typing import Any

import pytest

from advisor.estimate import _meta, count_params

SMALL = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 96}
SMALL_VOCAB = {"vocab_size": 100, "pad_token_id": 0}


@pytest.fixture(scope="module")
def on_meta() -> Any:
    if not _meta.available():
        pytest.skip("transformers/torch not installed")
    import torch
    import transformers

    transformers.logging.set_verbosity_error()

    def build(model_type: str, **kwargs: Any) -> tuple[dict[str, Any], int]:
        conf = transformers.AutoConfig.for_model(model_type, **kwargs)
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(conf)
        return conf.to_dict(), sum(p.numel() for p in model.parameters())

    return build


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

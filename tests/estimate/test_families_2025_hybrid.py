"""Families released in 2025 that resolve offline (issue 21): Arcee/AFM, Apertus, HunYuan dense, Seed-OSS,
Ministral 3, and the hybrids LFM2 (short convolutions), Granite 4.0 (Mamba2 + MoE) and AFMoE (Trinity).

Each formula is compared with transformers on the meta device for small configs its config class builds, the
hybrids' mixer layers are checked by hand against the modeling files' shapes, the catalog entries against the
totals their cards state, and an estimate of a hybrid says which term it cannot size.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.estimate import count_params, resolve_model

runner = CliRunner()

SMALL = {
    "hidden_size": 64,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "intermediate_size": 96,
    "vocab_size": 100,
    "pad_token_id": 0,
}


@pytest.mark.parametrize(
    ("model_type", "switches"),
    [
        ("arcee", {}),
        ("arcee", {"mlp_bias": True, "attention_bias": True, "tie_word_embeddings": True}),
        ("apertus", {"num_key_value_heads": 2}),
        ("hunyuan_v1_dense", {"head_dim": 32, "num_key_value_heads": 2}),
        ("hunyuan_v1_dense", {"head_dim": 16, "tie_word_embeddings": True, "attention_bias": True}),
        ("seed_oss", {"head_dim": 16, "num_key_value_heads": 2}),
        ("seed_oss", {"attention_out_bias": True, "mlp_bias": True}),
        ("ministral3", {"head_dim": 16, "num_key_value_heads": 2}),
        ("lfm2", {"num_key_value_heads": 2, "full_attn_idxs": [1, 3]}),
        (
            "lfm2",
            {
                "num_key_value_heads": 2,
                "layer_types": ["conv", "full_attention", "conv", "conv"],
                "conv_bias": True,
                "block_ff_dim": 300,
                "block_multiple_of": 32,
            },
        ),
        ("lfm2", {"full_attn_idxs": [0], "block_auto_adjust_ff_dim": False, "tie_word_embeddings": False}),
        (
            "afmoe",
            {
                "num_key_value_heads": 2,
                "head_dim": 16,
                "num_experts": 8,
                "num_experts_per_tok": 2,
                "moe_intermediate_size": 24,
                "num_shared_experts": 1,
                "num_dense_layers": 2,
            },
        ),
        ("afmoe", {"head_dim": 16, "num_experts": 4, "moe_intermediate_size": 24, "attention_bias": True}),
        (
            "granitemoehybrid",
            {
                "num_key_value_heads": 2,
                "layer_types": ["mamba", "attention", "mamba", "mamba"],
                "mamba_n_heads": 4,
                "mamba_d_state": 8,
                "num_local_experts": 0,
                "shared_intermediate_size": 48,
            },
        ),
        (
            "granitemoehybrid",
            {
                "num_key_value_heads": 2,
                "layer_types": ["mamba", "attention", "mamba", "attention"],
                "mamba_n_heads": 8,
                "mamba_d_state": 16,
                "mamba_n_groups": 2,
                "num_local_experts": 4,
                "num_experts_per_tok": 2,
                "shared_intermediate_size": 40,
                "mamba_proj_bias": True,
                "mamba_conv_bias": False,
                "tie_word_embeddings": True,
            },
        ),
    ],
)
def test_family_matches_transformers(model_type: str, switches: dict[str, Any], on_meta: Any) -> None:
    config, total = on_meta(model_type, **SMALL, **switches)
    pc = count_params(config)
    assert pc.source == "formula" and pc.model_type == model_type
    assert pc.total == total, f"{model_type} {switches}: {pc.total:,} != transformers {total:,}"


def test_lfm2_conv_layers_by_hand() -> None:
    # modeling_lfm2.py: a conv layer holds in_proj h -> 3h, out_proj h -> h and a depthwise kernel of
    # conv_L_cache taps instead of q/k/v/out_proj and the two q/k layernorms; both kinds keep w1/w3/w2 and
    # two norms
    h, V, nh, nkv, k = 64, 100, 4, 2, 3
    hd = h // nh
    cfg = {**SMALL, "model_type": "lfm2", "num_key_value_heads": nkv, "full_attn_idxs": [1]}
    i = 256 * ((int(2 * 96 / 3) + 255) // 256)  # Lfm2MLP: 2/3 of block_ff_dim, rounded up to 256
    mlp = 3 * h * i
    attn = h * nh * hd + 2 * h * nkv * hd + nh * hd * h + 2 * hd
    conv = 3 * h * h + h * h + h * k
    pc = count_params(cfg)
    assert pc.mixer_layers == 3 and pc.intermediate == i
    assert pc.total == V * h + (attn + mlp + 2 * h) + 3 * (conv + mlp + 2 * h) + h  # tied lm_head
    assert pc.caveats and "3 of 4 layers are short convolution layers" in pc.caveats[0]


def test_granite_mamba_layer_by_hand() -> None:
    # GraniteMoeHybridMambaLayer: in_proj h -> inner + conv_dim + heads, conv1d over conv_dim (+ bias),
    # dt_bias, A_log, D of heads, a gated norm over inner, out_proj inner -> h; every layer has the shared_mlp
    h, nh_m, ds, conv_k, si = 64, 4, 8, 4, 48
    inner = 2 * h
    conv_dim = inner + 2 * ds
    mamba = h * (inner + conv_dim + nh_m) + conv_dim * conv_k + conv_dim + 3 * nh_m + inner + inner * h
    cfg = {
        **SMALL,
        "model_type": "granitemoehybrid",
        "layer_types": ["mamba", "mamba", "mamba", "mamba"],
        "mamba_n_heads": nh_m,
        "mamba_d_state": ds,
        "num_local_experts": 0,
        "shared_intermediate_size": si,
        "tie_word_embeddings": True,
    }
    pc = count_params(cfg)
    assert pc.mixer_layers == 4
    assert pc.total == 100 * h + 4 * (mamba + 3 * h * si + 2 * h) + h


def test_catalog_entries_match_their_cards() -> None:
    # LiquidAI/LFM2-350M's card: 'Parameters 354,483,968', 'Layers 16 (10 conv + 6 attn)'
    lfm2 = resolve_model("LiquidAI/LFM2-350M")
    assert lfm2 is not None
    pc = lfm2.count()
    assert pc.total == 354_483_968 and pc.mixer_layers == 10
    # Trinity Nano's card: about 6B parameters, 1B active per token
    trinity = resolve_model("arcee-ai/Trinity-Nano-Preview")
    assert trinity is not None
    pc = trinity.count()
    assert round(pc.total / 1e9) == 6 and round(pc.active_params / 1e9) == 1
    assert pc.moe_layers == 54  # num_dense_layers 2 of 56
    # the model summary of Seed-OSS-36B: 36B parameters; Apertus-8B: 8B
    seed = resolve_model("ByteDance-Seed/Seed-OSS-36B-Base")
    apertus = resolve_model("swiss-ai/Apertus-8B-Instruct-2509")
    assert seed is not None and apertus is not None
    assert round(seed.count().total / 1e9) == 36 and round(apertus.count().total / 1e9) == 8
    # granite-4.0-h-350m: 28 Mamba2 layers and 4 attention layers
    granite = resolve_model("ibm-granite/granite-4.0-h-350m")
    assert granite is not None and granite.count().mixer_layers == 28


def test_a_hybrid_estimate_states_the_term_it_cannot_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # through the user's path: a run's files, and a model id with flags
    (tmp_path / "args.yaml").write_text(
        "model_name_or_path: ibm-granite/granite-4.0-h-350m\nbf16: true\n"
        "per_device_train_batch_size: 1\nmax_length: 512\n"
    )
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["estimate", ".", "--format", "json"])
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.stdout)["runs"]
    said = [a for a in run["assumptions"] if "28 of 32 layers are Mamba2 layers" in a]
    assert said and "unknown" in said[0] and "not modelled" in said[0]
    by_id = runner.invoke(app, ["estimate", "LiquidAI/LFM2-350M", "--format", "json"])
    assert by_id.exit_code == 0, by_id.output
    assert any("short convolution" in a for a in json.loads(by_id.stdout)["assumptions"])
    # a family without a mixer states nothing of the kind
    plain = runner.invoke(app, ["estimate", "swiss-ai/Apertus-8B-2509", "--format", "json"])
    assert not any("layers are" in a for a in json.loads(plain.stdout)["assumptions"])


def test_attention_flops_count_only_the_attention_layers() -> None:
    # LFM2-350M: 6 of 16 layers attend (its card); the 10 short-convolution layers add their projections to
    # the 6N matmul term but no sequence-squared attention FLOPs
    from advisor.estimate import TrainingSetup
    from advisor.estimate.timing import flops_per_token

    info = resolve_model("LiquidAI/LFM2-350M")
    assert info is not None
    pc = info.count()
    assert pc.attention_layers == 6

    def per_token(seq: int) -> float:
        setup = TrainingSetup(
            model=pc, method="full", seq_len=seq, micro_batch=1, gradient_checkpointing=False
        )
        return flops_per_token(setup)

    # attention FLOPs grow with the span: 3 passes x 4 x q_dim x span x 1/2 (causal) per attention layer
    assert per_token(4096) - per_token(2048) == pytest.approx(3 * 4 * 6 * pc.q_dim * 2048 * 0.5)

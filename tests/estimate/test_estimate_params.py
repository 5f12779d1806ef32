"""Parameter counts from config.json, checked against published/measured counts.

Source for every expected count: the shared research notes, memory-model.md section 8.2 ("verified: formula
output equals the published/measured counts; config values cross-checked against
pytorch/torchtune:torchtune/models/*/_model_builders.py"), and the per-layer figures listed under it.
"""

import json
import pickle

import pytest

from advisor.core import records
from advisor.estimate import (
    LinearShape,
    ParamCount,
    UnknownModelTypeError,
    _meta,
    count_params,
    resolve_model,
)
from advisor.estimate.params import formula_model_types

SRC = "memory-model.md 8.2"

SECTION_8 = [
    ("openai-community/gpt2", 124_439_808),
    ("openai-community/gpt2-medium", 354_823_168),
    ("openai-community/gpt2-large", 774_030_080),
    ("openai-community/gpt2-xl", 1_557_611_200),
    ("google-bert/bert-large-uncased", 335_141_888),  # BertModel + pooler
    ("meta-llama/Llama-2-7b-hf", 6_738_415_616),
    ("meta-llama/Llama-2-13b-hf", 13_015_864_320),
    ("meta-llama/Llama-2-70b-hf", 68_976_648_192),
    ("meta-llama/Meta-Llama-3-8B", 8_030_261_248),
    ("meta-llama/Llama-3.1-8B", 8_030_261_248),
    ("meta-llama/Meta-Llama-3-70B", 70_553_706_496),
    ("meta-llama/Llama-3.1-70B", 70_553_706_496),
    ("meta-llama/Llama-3.1-405B", 405_853_388_800),
    ("meta-llama/Llama-3.2-1B", 1_235_814_400),
    ("meta-llama/Llama-3.2-3B", 3_212_749_824),  # = PEFT benchmark num_total_params
    ("TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T", 1_100_048_384),
    ("mistralai/Mistral-7B-v0.1", 7_241_732_096),
    ("mistralai/Mistral-7B-v0.3", 7_248_023_552),
    ("mistralai/Mixtral-8x7B-v0.1", 46_702_792_704),
    ("Qwen/Qwen2.5-0.5B", 494_032_768),
    ("Qwen/Qwen2.5-1.5B", 1_543_714_304),
    ("Qwen/Qwen2.5-3B", 3_085_938_688),
    ("Qwen/Qwen2.5-7B", 7_615_616_512),
    ("Qwen/Qwen2.5-14B", 14_770_033_664),
    ("Qwen/Qwen2.5-32B", 32_763_876_352),
    ("Qwen/Qwen2.5-72B", 72_706_203_648),
    ("Qwen/Qwen3-8B", 8_190_735_360),
    ("google/gemma-2b", 2_506_172_416),
    ("google/gemma-7b", 8_537_680_896),
    ("google/gemma-2-2b", 2_614_341_888),
    ("google/gemma-2-9b", 9_241_705_984),
    ("google/gemma-2-27b", 27_227_128_320),
    ("microsoft/Phi-3-mini-4k-instruct", 3_821_079_552),
    ("microsoft/Phi-3-mini-128k-instruct", 3_821_079_552),
    ("microsoft/phi-2", 2_779_683_840),
]


@pytest.mark.parametrize(("hub_id", "expected"), SECTION_8, ids=[h for h, _ in SECTION_8])
def test_section8_total(hub_id, expected):
    info = resolve_model(hub_id)
    assert info is not None and info.source == "catalog", SRC
    pc = info.count()
    assert pc.total == expected, f"{hub_id}: {pc.total:,} != {expected:,} ({SRC})"
    assert pc.source == "formula"


# memory-model.md 8.2, "Per-layer numbers useful for tests (derived)"
PER_LAYER = [
    ("meta-llama/Meta-Llama-3-8B", 218_112_000),
    ("meta-llama/Llama-2-7b-hf", 202_383_360),
    ("Qwen/Qwen2.5-7B", 233_057_792),
    ("google/gemma-2-9b", 198_195_200),
    ("microsoft/Phi-3-mini-4k-instruct", 113_252_352),
]


@pytest.mark.parametrize(("hub_id", "expected"), PER_LAYER)
def test_section8_per_layer(hub_id, expected):
    assert resolve_model(hub_id).count().per_layer == expected


def test_llama3_8b_breakdown():
    pc = resolve_model("meta-llama/Meta-Llama-3-8B").count()
    assert pc.attn_per_layer == 41_943_040 and pc.mlp_per_layer == 176_160_768 and pc.norm_per_layer == 8_192
    assert pc.embedding == 525_336_576 and pc.lm_head == 525_336_576 and not pc.tied
    assert (pc.hidden, pc.layers, pc.heads, pc.kv_heads, pc.head_dim) == (4096, 32, 32, 8, 128)
    assert (pc.intermediate, pc.vocab, pc.q_dim, pc.kv_dim) == (14336, 128256, 4096, 1024)
    # largest single tensor (ZeRO-3 "largest layer"): the embedding, 525 M (memory-model.md 8.2)
    assert pc.largest_tensor == 525_336_576
    # accelerate estimate-memory counts AutoModel (no lm_head): 7,504,924,672 (memory-model.md section 1)
    assert pc.total - pc.lm_head == 7_504_924_672


def test_tied_and_gemma_shapes():
    gemma = resolve_model("google/gemma-2-9b").count()
    assert gemma.tied and gemma.lm_head == 0 and gemma.norms_per_layer == 4
    assert gemma.largest_tensor == 917_504_000  # 917.5 M embedding (memory-model.md 8.2)
    assert gemma.head_dim == 256 and gemma.q_dim == 4096 and gemma.hidden == 3584
    g7 = resolve_model("google/gemma-7b").count()
    assert g7.q_dim == 4096 != g7.hidden == 3072


def test_mixtral_moe_fields():
    pc = resolve_model("mistralai/Mixtral-8x7B-v0.1").count()
    assert (pc.moe_experts, pc.moe_active, pc.moe_layers) == (8, 2, 32)
    assert pc.expert_params == 32 * 8 * 3 * 4096 * 14336
    assert pc.active_params == pc.total - pc.expert_params * 6 // 8  # ~12.9B active
    assert 12.8e9 < pc.active_params < 13.0e9


def test_other_families_match_transformers_counts():
    # OPT-125m 125,239,296; Pythia-160m 162,322,944; Falcon-7B 6,921,720,704; BLOOM-560m 559,214,592
    # (cross-checked with transformers on the meta device when this suite was written)
    opt = {
        "model_type": "opt",
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "ffn_dim": 3072,
        "vocab_size": 50272,
        "max_position_embeddings": 2048,
    }
    neox = {
        "model_type": "gpt_neox",
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
        "vocab_size": 50304,
    }
    falcon = {
        "model_type": "falcon",
        "hidden_size": 4544,
        "num_hidden_layers": 32,
        "num_attention_heads": 71,
        "vocab_size": 65024,
        "multi_query": True,
        "parallel_attn": True,
        "bias": False,
    }
    bloom = {"model_type": "bloom", "hidden_size": 1024, "n_layer": 24, "n_head": 16, "vocab_size": 250880}
    assert count_params(opt).total == 125_239_296
    assert count_params(neox).total == 162_322_944
    assert count_params(falcon).total == 6_921_720_704
    assert count_params(bloom).total == 559_214_592


def test_attention_and_mlp_bias_flags():
    cfg = {
        "model_type": "llama",
        "hidden_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 512,
        "vocab_size": 1000,
        "attention_bias": True,
        "mlp_bias": True,
    }
    pc = count_params(cfg)
    plain = count_params({**cfg, "attention_bias": False, "mlp_bias": False})
    assert pc.total - plain.total == 2 * (4 * 256 + 2 * 512 + 256)


OLMO2 = {
    "model_type": "olmo2",
    "hidden_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 512,
    "vocab_size": 1000,
}


def test_olmo2_full_width_qk_norms():
    # by hand: embed 256,000 + lm_head 256,000 + 2 x (attn 262,144 + mlp 393,216 + 2 norms 512 + q/k norms
    # over q_dim and kv_dim 512) + final norm 256; transformers' Olmo2ForCausalLM on the meta device agrees
    pc = count_params(OLMO2)
    assert pc.source == "formula" and pc.qk_norm
    assert pc.total == 1_825_024
    assert pc.per_layer == 656_384 and pc.layers == 2 and not pc.tied


# Granite: Llama's layers with logit/residual multipliers, now in the shape table
GRANITE = {**OLMO2, "model_type": "granite", "num_key_value_heads": 4}
# a model type without a shape in the table (EXAONE 4: post-norms and per-head q/k RMSNorms,
# transformers 5.25 models/exaone4/modeling_exaone4.py:209-210, :284-285)
EXAONE4 = {**GRANITE, "model_type": "exaone4"}


def test_granite_counts_by_formula():
    pc = count_params(GRANITE)
    # by hand: 2 x 256,000 (untied) + 2 x (attn 262,144 + mlp 393,216 + 2 RMSNorms 512) + final RMSNorm 256
    assert pc.source == "formula"
    assert pc.total == 1_824_000
    assert pc.per_layer == 655_872 and pc.layers == 2 and not pc.tied


@pytest.mark.skipif(not _meta.available(), reason="transformers/torch not installed")
def test_unknown_type_counts_on_meta_device():
    pc = count_params(EXAONE4)
    # by hand: Granite's 1,824,000 + 2 layers x (q_norm + k_norm of head_dim 64)
    assert pc.source == "meta-device"
    assert pc.total == 1_824_000 + 2 * 2 * 64
    assert pc.per_layer == 655_872 + 2 * 64 and pc.layers == 2 and not pc.tied


def test_unknown_type_without_transformers(monkeypatch):
    monkeypatch.setattr(_meta, "available", lambda: False)
    with pytest.raises(UnknownModelTypeError, match="exaone4"):
        count_params(EXAONE4)


def test_paramcount_is_serialisable():
    pc = resolve_model("gpt2").count()
    data = json.loads(json.dumps(records.asdict(pc)))
    again = ParamCount(**data | {"linears": [LinearShape(**lin) for lin in data["linears"]]})
    assert again == pc
    assert pickle.loads(pickle.dumps(pc)) == pc


TINY_DIMS = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "vocab_size": 100,
    # read only by the families that need them (MoE, MLA)
    "num_experts": 4,
    "num_local_experts": 4,
    "n_routed_experts": 4,
    "moe_intermediate_size": 32,
    "kv_lora_rank": 16,
    "qk_nope_head_dim": 8,
    "qk_rope_head_dim": 8,
    "v_head_dim": 8,
}


@pytest.mark.parametrize("model_type", formula_model_types())
def test_every_family_in_the_table_counts_a_tiny_config(model_type):
    pc = count_params({**TINY_DIMS, "model_type": model_type})
    assert pc.source == "formula" and pc.model_type == model_type
    # the table's Linears are the layer's matmul weights: never more than the layers hold
    per_layer_weights = sum(lin.weight_params for lin in pc.linears)
    assert 0 < per_layer_weights <= pc.per_layer * (2 if model_type in ("t5", "mt5") else 1)
    assert pc.layer_linear_weights <= pc.total


def test_missing_dimension_is_a_clear_error():
    with pytest.raises(ValueError, match="hidden_size"):
        count_params(
            {"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 9},
        )

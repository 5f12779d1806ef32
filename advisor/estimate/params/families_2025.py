"""Families released in 2025 (issue 21: the models fine-tuned this year resolve offline).

Each shape is read from transformers 5.25's modeling file of the family (cited line by line); the catalog
entries that use them cite where their config.json values come from (advisor/data/models/sources.json).
The counter reads ``ARCHS`` from this module, so the table it sees holds these too.
"""

from collections.abc import Mapping
from typing import Any

from advisor.core.records import replace
from advisor.estimate.params.families import (
    ARCHS,
    LLAMA,
    Lin,
    Mixer,
    Moe,
    gated_mlp,
    key,
    split_attn,
)

__all__ = ["ARCHS"]

Config = Mapping[str, Any]
Dims = Mapping[str, int]


def _up_down(bias: Any = False) -> tuple[Lin, ...]:
    """A non-gated MLP on up_proj -> act -> down_proj (Arcee's ReLU^2, Apertus' xIELU)."""
    return (
        Lin("up_proj", "h", "i", bias, "mlp_in", ("up", "fc1", "w3")),
        Lin("down_proj", "i", "h", bias, "mlp_act", ("down", "fc2", "w2")),
    )


# Arcee / AFM (transformers 5.25 models/arcee/modeling_arcee.py): Llama's attention, q/k/v/o_proj with
# attention_bias (:215-226); ArceeMLP is up_proj and down_proj with mlp_bias around ReLU^2, no gate (:56-61);
# input_layernorm and post_attention_layernorm (:278-279), final norm (:343); lm_head untied by default
# (configuration_arcee.py:75)
ARCHS["arcee"] = replace(LLAMA, mlp=_up_down(key("mlp_bias")), block="gelu")


def _xielu_params(cfg: Config, d: Dims) -> int:
    # ApertusMLP swaps in the XIELU module when hidden_act is "xielu" (modeling_apertus.py:52-53): alpha_p and
    # alpha_n are one-element nn.Parameters each, beta and eps are buffers (activations.py:249-254)
    return 2 * d["L"] if str(cfg.get("hidden_act") or "xielu") == "xielu" else 0


# Apertus (transformers 5.25 models/apertus/modeling_apertus.py): q/k/v/o_proj with attention_bias (:210-221),
# per-head q_norm / k_norm RMSNorms of head_dim (:222-223); ApertusMLP up_proj and down_proj without bias
# (:49-50); attention_layernorm and feedforward_layernorm (:277-278), final norm (:341); lm_head untied by
# default (configuration_apertus.py:77)
ARCHS["apertus"] = replace(LLAMA, mlp=_up_down(), block="gelu", qk_norm="head", extra=_xielu_params)
# HunYuan dense v1 (transformers 5.25 models/hunyuan_v1_dense/modeling_hunyuan_v1_dense.py): q/k/v/o_proj with
# attention_bias (:167-178), query_layernorm / key_layernorm of head_dim in every layer whatever use_qk_norm
# says (:179-180); gated gate/up/down_proj without bias (:72-74); two RMSNorms a layer (:234-235), final norm
# (:373); lm_head untied by default (configuration_hunyuan_v1_dense.py:52), the released configs tie it
ARCHS["hunyuan_v1_dense"] = replace(LLAMA, mlp=gated_mlp(), qk_norm="head")
# Seed-OSS (transformers 5.25 models/seed_oss/modeling_seed_oss.py): q/k/v_proj with attention_bias, o_proj
# with attention_out_bias (:170-181; SeedOssConfig defaults True and False, configuration_seed_oss.py:78-79);
# gate/up/down_proj with mlp_bias (:75-77); two RMSNorms a layer (:237-238), final norm (:348); untied (:76)
ARCHS["seed_oss"] = replace(
    LLAMA,
    attn=split_attn(qkv_bias=key("attention_bias", True), o_bias=key("attention_out_bias")),
    mlp=gated_mlp(key("mlp_bias")),
)
# Ministral 3 text decoder (transformers 5.25 models/ministral3/modeling_ministral3.py): q/k/v/o_proj without
# bias (:123-126), gate/up/down_proj without bias (:184-186), two RMSNorms a layer (:221-222), final norm
# (:332); head_dim defaults to 128 (configuration_ministral3.py:79), lm_head untied by default (:88)
ARCHS["ministral3"] = replace(LLAMA, attn=split_attn(), mlp=gated_mlp())


def _lfm2_is_conv(cfg: Config, li: int) -> bool:
    # Lfm2Config: layer_types when given, else full attention at full_attn_idxs (every layer when that is
    # absent too), short convolution elsewhere (configuration_lfm2.py:82-88); a layer is attention unless its
    # type is "conv" (modeling_lfm2.py:421)
    types = cfg.get("layer_types")
    if types is not None:
        return li < len(types) and types[li] == "conv"
    idxs = cfg.get("full_attn_idxs")
    return idxs is not None and li not in set(idxs)


def _lfm2_dims(cfg: Config, d: dict[str, int]) -> None:
    # Lfm2Config reads block_ff_dim as intermediate_size (configuration_lfm2.py:91); Lfm2MLP then takes 2/3 of
    # it, times block_ffn_dim_multiplier, rounded up to block_multiple_of when block_auto_adjust_ff_dim
    # (modeling_lfm2.py:114-122; defaults True, 1.0, 256: configuration_lfm2.py:75-77)
    i = int(cfg.get("block_ff_dim") or cfg.get("intermediate_size") or 12288)
    if cfg.get("block_auto_adjust_ff_dim", True):
        i = int(2 * i / 3)
        mult = cfg.get("block_ffn_dim_multiplier", 1.0)
        if mult is not None:
            i = int(float(mult) * i)
            step = int(cfg.get("block_multiple_of") or 256)
            i = step * ((i + step - 1) // step)
    d["i"] = i


def _lfm2_conv_kernel(cfg: Config, d: Dims) -> int:
    # Lfm2ShortConv.conv: a depthwise Conv1d over hidden_size channels, kernel conv_L_cache, bias conv_bias
    # (modeling_lfm2.py:383-390; defaults 3 and False, configuration_lfm2.py:73-74)
    h = d["h"]
    return h * int(cfg.get("conv_L_cache") or 3) + (h if cfg.get("conv_bias") else 0)


_LFM2_CONV_BIAS = key("conv_bias")
# LFM2 (transformers 5.25 models/lfm2/modeling_lfm2.py): attention layers hold q/k/v_proj and out_proj
# without bias and q_layernorm / k_layernorm of head_dim (:213-218); short-convolution layers hold in_proj
# h -> 3h and out_proj h -> h with conv_bias and the depthwise conv (:383-392); every layer has the gated
# feed_forward w1 / w3 / w2 (:123-125) and operator_norm / ffn_norm (:428-429); embedding_norm after the
# layers (:495); lm_head tied by default (:565, configuration_lfm2.py:71)
ARCHS["lfm2"] = replace(
    LLAMA,
    attn=split_attn(o_name="out_proj"),
    mlp=gated_mlp(names=("w1", "w3", "w2")),
    qk_norm="head",
    tie_default=True,
    derive=_lfm2_dims,
    mixer=Mixer(
        kind="short convolution",
        linears=(
            Lin("in_proj", "h", "h3", _LFM2_CONV_BIAS, aliases=("in_proj",)),
            Lin("out_proj", "h", "h", _LFM2_CONV_BIAS, "attn_out", ("out_proj",)),
        ),
        is_mixer_layer=_lfm2_is_conv,
        extra=_lfm2_conv_kernel,
        dims=lambda cfg, d: {"h3": 3 * d["h"]},
    ),
)


def _afmoe_dense_layers(cfg: Config) -> int:
    # AfmoeConfig.num_dense_layers defaults to 1 (configuration_afmoe.py:86)
    value = cfg.get("num_dense_layers")
    return 1 if value is None else int(value)


def _afmoe_expert_bias(cfg: Config, d: Dims) -> int:
    # AfmoeSparseMoeBlock.expert_bias: an nn.Parameter of num_experts (requires_grad=False) in every MoE layer
    # (modeling_afmoe.py:210); named_parameters() counts it
    experts = int(cfg.get("num_experts") or 0)
    return experts * max(0, d["L"] - _afmoe_dense_layers(cfg)) if experts else 0


_LLAMA_BIAS = key("attention_bias")
# AFMoE / Trinity (transformers 5.25 models/afmoe/modeling_afmoe.py): q/k/v/o_proj with attention_bias
# (:317-328), q_norm / k_norm of head_dim (:334-335) and an output gate gate_proj h -> heads*head_dim without
# bias (:336); four RMSNorms a layer, input / post_attention / pre_mlp / post_mlp (:404-409); the first
# num_dense_layers layers a gated AfmoeMLP on intermediate_size (:412-416, :116-118), the others an
# AfmoeSparseMoeBlock (:204-210): router.gate h -> E without bias (:139), experts gate_up_proj and down_proj
# on moe_intermediate_size (:164-166), shared_experts an AfmoeMLP on moe_intermediate_size *
# num_shared_experts (:208) and the expert_bias; final norm (:517), lm_head untied by default
# (configuration_afmoe.py:95)
ARCHS["afmoe"] = replace(
    LLAMA,
    attn=(
        *split_attn(_LLAMA_BIAS, _LLAMA_BIAS),
        Lin("gate_proj", "h", "q", aliases=("attn_gate",)),
    ),
    mlp=gated_mlp(),
    qk_norm="head",
    norms_per_layer=4,
    extra=_afmoe_expert_bias,
    moe=Moe(
        experts=("num_experts",),
        top_k_default=6,
        shared_intermediate=lambda cfg: (
            int(cfg.get("moe_intermediate_size") or 1408) * int(cfg.get("num_shared_experts") or 0)
        ),
        shared_prefix="shared_experts.",
        router_name="router.gate",
        is_moe_layer=lambda cfg, li: li >= _afmoe_dense_layers(cfg),
    ),
)


def _granite_is_mamba(cfg: Config, li: int) -> bool:
    # GraniteMoeHybridDecoderLayer builds a Mamba layer where layers_block_type is "linear_attention"
    # (modeling_granitemoehybrid.py:1068-1071), and attention otherwise; configs write "mamba", which the
    # config reads as "linear_attention" (configuration_utils.py:95), and no layer_types means every layer is
    # Mamba (configuration_granitemoehybrid.py:117-118)
    types = cfg.get("layer_types") or cfg.get("layers_block_type")
    if types is None:
        return True
    return li < len(types) and types[li] in ("mamba", "linear_attention")


def _granite_mamba_dims(cfg: Config, d: Dims) -> dict[str, int]:
    # GraniteMoeHybridMambaLayer (modeling_granitemoehybrid.py:705-736): intermediate = mamba_expand * hidden,
    # conv_dim = intermediate + 2 * n_groups * d_state, in_proj h -> intermediate + conv_dim + n_heads; the
    # defaults are GraniteMoeHybridConfig's (configuration_granitemoehybrid.py:96-104)
    inner = int(cfg.get("mamba_expand") or 2) * d["h"]
    conv = inner + 2 * int(cfg.get("mamba_n_groups") or 1) * int(cfg.get("mamba_d_state") or 256)
    return {"m_inner": inner, "m_conv": conv, "m_proj": inner + conv + int(cfg.get("mamba_n_heads") or 128)}


def _granite_mamba_extra(cfg: Config, d: Dims) -> int:
    # conv1d depthwise over conv_dim with mamba_d_conv taps and mamba_conv_bias (:725-732); dt_bias, A_log
    # and D of mamba_n_heads (:742-750); the gated RMSNorm over the intermediate width (:747)
    conv = d["m_conv"]
    taps = conv * int(cfg.get("mamba_d_conv") or 4) + (conv if cfg.get("mamba_conv_bias", True) else 0)
    return taps + 3 * int(cfg.get("mamba_n_heads") or 128) + d["m_inner"]


_GRANITE_PROJ_BIAS = key("mamba_proj_bias")
# Granite 4.0 (transformers 5.25 models/granitemoehybrid/modeling_granitemoehybrid.py): attention layers hold
# q/k/v/o_proj with attention_bias (:138-149), Mamba2 layers the mixer above; every layer has
# input_layernorm / post_attention_layernorm (:1060-1061), a shared_mlp (input_linear h -> 2 *
# shared_intermediate_size, output_linear back, no bias: :871-874) and, with num_local_experts > 0, a
# block_sparse_moe (:1064): router weight E x h (:943) and experts gate_up_proj / down_proj on
# intermediate_size (:958-962); final norm (:1166); lm_head untied by default
# (configuration_granitemoehybrid.py:79). Its four multipliers and NoPE attention add no parameters
_GRANITE_MLP = (
    Lin("input_linear", "h", "i2", feeds="mlp_in", aliases=("gate_up", "gate_up_proj")),
    Lin("output_linear", "i", "h", feeds="mlp_act", aliases=("down", "down_proj")),
)
ARCHS["granitemoehybrid"] = replace(
    LLAMA,
    mlp=_GRANITE_MLP,
    derive=lambda cfg, d: d.update(i=int(cfg.get("shared_intermediate_size") or 1024)),
    moe=Moe(
        experts=("num_local_experts",),
        expert_intermediate=("intermediate_size",),
        shared_intermediate=lambda cfg: int(cfg.get("shared_intermediate_size") or 1024),
        shared_prefix="shared_mlp.",
    ),
    mixer=Mixer(
        kind="Mamba2",
        linears=(
            Lin("in_proj", "h", "m_proj", _GRANITE_PROJ_BIAS, aliases=("in_proj",)),
            Lin("out_proj", "m_inner", "h", _GRANITE_PROJ_BIAS, "attn_out", ("out_proj",)),
        ),
        is_mixer_layer=_granite_is_mamba,
        extra=_granite_mamba_extra,
        dims=_granite_mamba_dims,
    ),
)

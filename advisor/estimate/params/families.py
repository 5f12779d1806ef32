"""Architectures as data: for each model family, the Linears of one layer, norms, biases and embeddings.

Every dimension is a name in the ``Dims`` mapping the counter resolves from config.json (``h`` hidden,
``q`` = heads*head_dim, ``kv`` = kv_heads*head_dim, ``i`` intermediate, ``ei`` expert intermediate, ...);
every bias or option is a ``Flag``: a constant, or ``key(name, default)`` read from the config. Module
names follow each family's transformers modeling file (``transformers/models/<family>/modeling_<family>.py``,
transformers 5.24) so LoRA ``target_modules`` match; ``aliases`` carry the other spellings users write.
"""

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Literal

from advisor.core.records import field, record, replace

Config = Mapping[str, Any]
Dims = Mapping[str, int]
Flag = bool | Callable[[Config], bool]


def key(name: str, default: bool = False) -> Callable[[Config], bool]:
    """A flag read from config.json; ``default`` is the config class's default when the key is absent."""

    def read(cfg: Config) -> bool:
        value = cfg.get(name)
        return default if value is None else bool(value)

    read.__qualname__ = f"key({name!r}, {default})"
    return read


def flag(value: Flag, cfg: Config) -> bool:
    return value(cfg) if callable(value) else bool(value)


# Records (advisor.core.records: no __init__ compiled until a class is used often), not stdlib dataclasses,
# and no
# postponed annotations in this module: the table is built at import, and both a dataclass's generated
# __init__ and string annotations (compiled into ForwardRefs) cost milliseconds on every cold start
@record(frozen=True, slots=True)
class Lin:
    """One Linear of a layer: weight d_out x d_in (dims by name), optional bias, what activation feeds it."""

    name: str
    d_in: str
    d_out: str
    bias: Flag = False
    feeds: str = "attn_in"
    aliases: tuple[str, ...] = ()
    when: Flag = True  # present only when the config says so (DeepSeek's q_lora_rank)


@record(frozen=True, slots=True)
class Moe:
    """Routed experts replace the dense MLP in MoE layers (expert Linears are the dense MLP's, on ``ei``)."""

    experts: tuple[str, ...]  # config keys for the number of routed experts
    top_k: tuple[str, ...] = ("num_experts_per_tok",)
    top_k_default: int = 2
    expert_intermediate: tuple[str, ...] = ("moe_intermediate_size",)  # empty: the dense intermediate
    # shared (always-on) expert: its intermediate size from the config (0: none), its prefix, its h->1 gate
    shared_intermediate: Callable[[Config], int] = lambda cfg: 0
    shared_prefix: str = "shared_expert."
    shared_gate: bool = False
    router_name: str = "router"
    router_aliases: tuple[str, ...] = ("gate",)
    is_moe_layer: Callable[[Config, int], bool] = lambda cfg, li: True
    # every routed expert runs on every token, weighted by its (zero when unrouted) score: the compute and
    # the saved activations are E experts' worth, not top-k's (Llama 4's HF experts)
    computes_all_experts: bool = False


@record(frozen=True, slots=True)
class Mixer:
    """A token mixer that replaces attention in some layers (LFM2's short convolution): its Linears, its other
    parameters per layer, and which layers have it; those layers keep the family's norms and MLP."""

    kind: str  # what the estimate calls it ("short convolution")
    linears: tuple[Lin, ...]
    is_mixer_layer: Callable[[Config, int], bool]
    extra: Callable[[Config, Dims], int] = lambda cfg, d: 0  # conv kernels, biases: params outside Linears
    dims: Callable[[Config, Dims], dict[str, int]] = lambda cfg, d: {}  # the mixer's own dims


@record(frozen=True, slots=True)
class Arch:
    """The shape of one family's layers and embeddings."""

    attn: tuple[Lin, ...]
    mlp: tuple[Lin, ...]  # the dense MLP (gated MLPs: two Linears on mlp_in, one on mlp_act)
    block: Literal["gated", "gelu", "bert"]
    norm: Literal["rms", "layer", "layer_nobias", "none"]  # per-layer and final norms
    tie_default: bool
    norms_per_layer: int | Callable[[Config], int] = 2
    parallel: Flag = False  # attention and MLP read the same normed input
    # per-head q/k norms: "head" = one norm of head_dim each, "full" = over q_dim and kv_dim (OLMo 2)
    qk_norm: Literal["", "head", "full"] = ""
    qk_norm_when: Flag = True
    qk_norm_kind: Literal["rms", "layer"] = "rms"
    attn_norm_dims: tuple[str, ...] = ()  # RMSNorms inside attention over these dims (MLA latents)
    alt_mlp: tuple[Lin, ...] = ()  # used instead of ``mlp`` when ``alt_mlp_when`` holds (T5 gated-gelu)
    alt_mlp_when: Flag = False
    final_norm: Flag = True
    norm_affine: Flag = True  # False: the norms carry no weights (OPT's layer_norm_elementwise_affine)
    embedding_norm: bool = False  # LayerNorm right after the token embedding (BLOOM, BERT)
    lm_head_bias: Flag = False
    # the lm_head normalises its weight rows in every training forward and multiplies by the result, a
    # new V x h tensor the matmul saves for backward (Baichuan 2's NormHead)
    normalized_head: bool = False
    positions: Callable[[Config, Dims], int] = lambda cfg, d: 0  # learned absolute position rows
    extra: Callable[[Config, Dims], int] = lambda cfg, d: 0  # pooler, projections outside the layers
    embedding_dim: str = "h"  # OPT's word_embed_proj_dim
    moe: Moe | None = None
    encoder_decoder: bool = False  # T5: an encoder stack and a decoder stack with cross-attention
    tie_forced: bool = False  # the config class ties lm_head whatever tie_word_embeddings says
    # config keys for the dims, tried in order, before the generic names
    dim_keys: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    derive: Callable[[Config, dict[str, int]], None] = lambda cfg, d: None  # family-specific dims
    # config keys of the attention, hidden and embedding dropout, and their config-class defaults
    dropout_keys: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]] = (("attention_dropout",), (), ())
    dropout_default: tuple[float, float, float] = (0.0, 0.0, 0.0)
    mixer: Mixer | None = None  # layers whose attention is another token mixer (hybrid families)


# ---- reusable pieces ----------------------------------------------------------------------------
_O_ALIASES = ("o", "wo", "output_proj", "out_proj")


def split_attn(
    qkv_bias: Flag = False,
    o_bias: Flag = False,
    o_name: str = "o_proj",
    names: tuple[str, str, str] | tuple[()] = (),
) -> tuple[Lin, ...]:
    q, k, v = names or ("q_proj", "k_proj", "v_proj")
    return (
        Lin(q, "h", "q", qkv_bias, aliases=("q", "wq", "query", "q_proj")),
        Lin(k, "h", "kv", qkv_bias, aliases=("k", "wk", "key", "k_proj")),
        Lin(v, "h", "kv", qkv_bias, aliases=("v", "wv", "value", "v_proj")),
        Lin(o_name, "q", "h", o_bias, "attn_out", _O_ALIASES),
    )


def fused_attn(qkv: str, o: str, bias: Flag = False, o_bias: Flag | None = None) -> tuple[Lin, ...]:
    return (
        Lin(qkv, "h", "qkv", bias, aliases=("qkv",)),
        Lin(o, "q", "h", bias if o_bias is None else o_bias, "attn_out", _O_ALIASES),
    )


def gated_mlp(bias: Flag = False, names: tuple[str, str, str] | tuple[()] = ()) -> tuple[Lin, ...]:
    """gate, up (both on the normed input) and down; custom names drop the w1/w3/w2 aliases they may reuse."""
    gate, up, down = names or ("gate_proj", "up_proj", "down_proj")
    extra = ((), (), ()) if names else (("w1",), ("w3",), ("w2",))
    return (
        Lin(gate, "h", "i", bias, "mlp_in", ("gate", "gate_proj", *extra[0])),
        Lin(up, "h", "i", bias, "mlp_in", ("up", "up_proj", *extra[1])),
        Lin(down, "i", "h", bias, "mlp_act", ("down", "down_proj", *extra[2])),
    )


def plain_mlp(fc1: str, fc2: str, bias: Flag = True) -> tuple[Lin, ...]:
    return (
        Lin(fc1, "h", "i", bias, "mlp_in", ("fc1", "fc_in")),
        Lin(fc2, "i", "h", bias, "mlp_act", ("fc2", "fc_out")),
    )


def _gpt2_positions(cfg: Config, d: Dims) -> int:
    return int(cfg.get("n_positions") or cfg.get("max_position_embeddings") or 1024) * d["h"]


def _bert_positions(cfg: Config, d: Dims) -> int:
    rows = int(cfg.get("max_position_embeddings") or 512) + int(cfg.get("type_vocab_size") or 2)
    return rows * d["h"]


def _opt_positions(cfg: Config, d: Dims) -> int:
    # OPTLearnedPositionalEmbedding keeps 2 extra rows (offset = 2; transformers/models/opt/modeling_opt.py)
    return (int(cfg.get("max_position_embeddings") or 2048) + 2) * d["h"]


def _opt_projections(cfg: Config, d: Dims) -> int:
    return 0 if d["wp"] == d["h"] else 2 * d["h"] * d["wp"]  # project_in / project_out, no bias


def _falcon_dims(cfg: Config, d: dict[str, int]) -> None:
    if cfg.get("new_decoder_architecture"):
        d["nkv"] = int(cfg.get("num_kv_heads") or d["nh"])
    elif cfg.get("multi_query", True):
        d["nkv"] = 1
    else:
        d["nkv"] = d["nh"]


def _falcon_norms(cfg: Config) -> int:
    if cfg.get("new_decoder_architecture"):
        return int(cfg.get("num_ln_in_parallel_attn") or 2)
    return 1 if cfg.get("parallel_attn", True) else 2


def _qwen1_dims(cfg: Config, d: dict[str, int]) -> None:
    # modeling_qwen.py (Qwen/Qwen-7B remote code): QWenMLP.ff_dim_in = config.intermediate_size // 2
    d["i"] = int(cfg["intermediate_size"]) // 2


def _q_lora_rank(cfg: Config) -> int:
    # DeepseekV2Config defaults q_lora_rank to 1536 (transformers 5.24 configuration_deepseek_v2.py:106);
    # V2-Lite's config.json sets it to null: q_proj instead of the q_a_proj/q_b_proj pair
    return int(cfg.get("q_lora_rank", 1536) or 0)


def _mla_dims(cfg: Config, d: dict[str, int]) -> None:
    # DeepSeek-V2 multi-head latent attention (transformers/models/deepseek_v2/modeling_deepseek_v2.py); the
    # defaults are DeepseekV2Config's (configuration_deepseek_v2.py:105-117)
    nope = int(cfg.get("qk_nope_head_dim") or 128)
    rope = int(cfg.get("qk_rope_head_dim") or 64)
    v_dim = int(cfg.get("v_head_dim") or 128)
    d["q_lora"] = _q_lora_rank(cfg)
    d["kv_lora"] = int(cfg.get("kv_lora_rank") or 512)
    d["kv_a"] = d["kv_lora"] + rope
    d["q"] = d["nh"] * (nope + rope)
    d["kv_b"] = d["nh"] * (nope + v_dim)
    d["o_in"] = d["nh"] * v_dim
    d["hd"] = nope + rope


def _deepseek_moe_layer(cfg: Config, li: int) -> bool:
    first_dense = int(cfg.get("first_k_dense_replace") or 0)
    return li >= first_dense and li % int(cfg.get("moe_layer_freq") or 1) == 0


def _qwen_moe_layer(cfg: Config, li: int) -> bool:
    step = int(cfg.get("decoder_sparse_step") or 1)
    return li not in set(cfg.get("mlp_only_layers") or []) and (li + 1) % step == 0


# fused gate and up projection h -> 2i, then down_proj (Phi-3, GLM-4-0414)
_FUSED_GATE_UP = (
    Lin("gate_up_proj", "h", "i2", feeds="mlp_in", aliases=("gate_up",)),
    Lin("down_proj", "i", "h", feeds="mlp_act", aliases=("down", "w2")),
)
_LLAMA_BIAS = key("attention_bias")
_ROUTED = Moe(experts=("num_experts",), shared_intermediate=lambda cfg: 0, is_moe_layer=_qwen_moe_layer)

ARCHS: dict[str, Arch] = {}


def _register(model_types: tuple[str, ...], arch: Arch) -> None:
    for mt in model_types:
        ARCHS[mt] = arch


# ---- gated decoders with split q/k/v -----------------------------------------------------------
LLAMA = Arch(
    attn=split_attn(_LLAMA_BIAS, _LLAMA_BIAS),
    mlp=gated_mlp(key("mlp_bias")),
    block="gated",
    norm="rms",
    tie_default=False,
)
_register(("llama", "mistral", "yi"), LLAMA)
_register(("smollm3",), replace(LLAMA, tie_default=True))
# Qwen2 / Qwen2-MoE: bias on q/k/v, never on o_proj (modeling_qwen2.py Qwen2Attention)
_register(("qwen2",), replace(LLAMA, attn=split_attn(qkv_bias=True), mlp=gated_mlp()))
_register(
    ("qwen2_moe",),
    replace(
        LLAMA,
        attn=split_attn(qkv_bias=True),
        mlp=gated_mlp(),
        moe=replace(
            _ROUTED,
            shared_intermediate=lambda cfg: int(cfg.get("shared_expert_intermediate_size") or 0),
            shared_gate=True,
        ),
    ),
)
QWEN3 = replace(LLAMA, mlp=gated_mlp(), qk_norm="head")
_register(("qwen3",), QWEN3)
_register(("qwen3_moe",), replace(QWEN3, moe=_ROUTED))
_register(
    ("mixtral",),
    replace(
        LLAMA,
        attn=split_attn(),
        mlp=gated_mlp(),
        moe=Moe(experts=("num_local_experts",), expert_intermediate=()),
    ),
)
_register(("gemma",), replace(LLAMA, mlp=gated_mlp(), tie_default=True))
_register(("gemma2",), replace(LLAMA, mlp=gated_mlp(), tie_default=True, norms_per_layer=4))
_register(
    ("gemma3_text",), replace(LLAMA, mlp=gated_mlp(), tie_default=True, norms_per_layer=4, qk_norm="head")
)
# OLMo: non-parametric LayerNorms (modeling_olmo.py OlmoLayerNorm has no weight)
_register(("olmo",), replace(LLAMA, mlp=gated_mlp(), norm="none"))
# OLMo 2: post-attention/post-feedforward RMSNorms, q/k norms over the whole q_dim and kv_dim
_register(("olmo2",), replace(LLAMA, mlp=gated_mlp(), qk_norm="full"))
# Olmo 3: OLMo 2's parameters (transformers 5.25 modeling_olmo3.py:158-159 q_norm/k_norm over q_dim and
# kv_dim, :234 post_feedforward_layernorm); its sliding-window layers change attention, not the shapes
_register(("olmo3",), ARCHS["olmo2"])
# StableLM 3B-4E1T / 2 / Stable Code 3B: LayerNorm with bias, q/k/v bias from use_qkv_bias, optional
# per-head q/k LayerNorms without bias (StableLmLayerNormPerHead) and parallel residual with one norm
# (transformers/models/stablelm/modeling_stablelm.py)
_STABLELM_PARALLEL = key("use_parallel_residual")
_register(
    ("stablelm",),
    replace(
        LLAMA,
        attn=split_attn(key("use_qkv_bias")),
        mlp=gated_mlp(),
        norm="layer",
        norms_per_layer=lambda cfg: 1 if _STABLELM_PARALLEL(cfg) else 2,
        parallel=_STABLELM_PARALLEL,
        qk_norm="full",
        qk_norm_when=key("qk_layernorm"),
    ),
)
# Cohere (Command R, Aya 23): weight-only LayerNorm, attention and MLP in parallel from one norm, tied
# embeddings, optional per-head q/k norms (transformers/models/cohere/modeling_cohere.py)
_register(
    ("cohere",),
    replace(
        LLAMA,
        norm="layer_nobias",
        norms_per_layer=1,
        parallel=True,
        tie_default=True,
        qk_norm="full",
        qk_norm_when=key("use_qk_norm"),
    ),
)
# Phi-3 / Phi-3.5-mini / Phi-4: fused qkv_proj and gate_up_proj
_register(
    ("phi3",),
    replace(
        LLAMA,
        attn=(
            Lin("qkv_proj", "h", "qkv", aliases=("qkv", "wqkv")),
            Lin("o_proj", "q", "h", feeds="attn_out", aliases=("o", "wo", "output_proj", "out_proj")),
        ),
        mlp=_FUSED_GATE_UP,
        dropout_keys=(("attention_dropout",), ("resid_pdrop",), ("embd_pdrop",)),
    ),
)
# Granite 3.x (transformers 5.25 models/granite/modeling_granite.py): Llama's layout. q/k/v/o_proj with
# attention_bias (:128-139), gate/up/down_proj with mlp_bias (:210-212), input_layernorm and
# post_attention_layernorm (:227-228), final norm (:360), lm_head tied when the config says so (:430, :439;
# GraniteConfig tie_word_embeddings defaults to False, configuration_granite.py:77). Its four multipliers
# (embedding, attention, residual, logits) scale activations and add no parameters.
_register(("granite",), LLAMA)
# GLM-4-0414 (transformers 5.25 models/glm4/modeling_glm4.py): q/k/v_proj with attention_bias (Glm4Config
# default True, configuration_glm4.py:73), o_proj without bias (:211-220); the MLP's fused gate_up_proj
# h -> 2i and down_proj, no bias (:54-55); four RMSNorms per layer, input_layernorm, post_self_attn_layernorm,
# post_attention_layernorm, post_mlp_layernorm (:74-77); final norm (:362); lm_head untied by default
# (:437, configuration_glm4.py:68)
_register(
    ("glm4",),
    replace(
        LLAMA,
        attn=split_attn(qkv_bias=key("attention_bias", True)),
        mlp=_FUSED_GATE_UP,
        norms_per_layer=4,
    ),
)


def _first_key(names: tuple[str, ...], default: bool = False) -> Callable[[Config], bool]:
    """A flag read from the first of several config.json keys that is set (a key and its alias)."""

    def read(cfg: Config) -> bool:
        for name in names:
            if cfg.get(name) is not None:
                return bool(cfg[name])
        return default

    read.__qualname__ = f"first_key({names!r}, {default})"
    return read


# InternLM3 (remote code; transformers' port at huggingface/transformers@b5334aa9
# src/transformers/models/internlm3/modular_internlm3.py, InternLM3Attention and InternLM3MLP): q/k/v_proj
# with bias=config.qkv_bias, o_proj and gate/up/down_proj with bias=config.bias, Llama's norms and untied
# lm_head. transformers 5.25 builds it as LlamaForCausalLM with attribute_map qkv_bias -> attention_bias and
# bias -> mlp_bias and refuses a config where the two differ (configuration_internlm3.py:82, :99-104)
_INTERNLM3_QKV_BIAS = _first_key(("qkv_bias", "attention_bias"))
_INTERNLM3_BIAS = _first_key(("bias", "mlp_bias"))
_register(
    ("internlm3",),
    replace(LLAMA, attn=split_attn(_INTERNLM3_QKV_BIAS, _INTERNLM3_BIAS), mlp=gated_mlp(_INTERNLM3_BIAS)),
)


def _llama4_moe_layer(cfg: Config, li: int) -> bool:
    # Llama4TextConfig: moe_layers when set, else every interleave_moe_layer_step-th layer from step - 1
    # (transformers 5.25 configuration_llama4.py:175-185)
    layers = cfg.get("moe_layers")
    if layers is not None:
        return li in set(layers)
    return (li + 1) % int(cfg.get("interleave_moe_layer_step") or 1) == 0


# Llama 4 text decoder (transformers 5.25 models/llama4/modeling_llama4.py): q/k/v/o_proj with attention_bias
# (:322-333; its q/k L2 norm has no weight, :106-122, :335); input_layernorm and post_attention_layernorm
# (:409-410); MoE layers (:403-405) hold Llama4TextExperts, gate_up_proj E x h x 2i and down_proj E x i x h
# on intermediate_size, no bias (:59-63), a router Linear h -> E without bias (:145-147) and a shared_expert
# Llama4TextMLP on intermediate_size (:167, :88-98); dense layers a Llama4TextMLP on intermediate_size_mlp
# (:407); final norm (:498); lm_head untied by default (:587, configuration_llama4.py:145). Llama4TextMoe
# repeats every token for every expert and scales it by the sigmoid of its score, zero for an unrouted one
# (:172-174): all E experts compute on all tokens
_register(
    ("llama4_text",),
    replace(
        LLAMA,
        mlp=gated_mlp(),
        dim_keys={"i": ("intermediate_size_mlp",)},
        moe=Moe(
            experts=("num_local_experts",),
            top_k_default=1,
            expert_intermediate=("intermediate_size",),
            shared_intermediate=lambda cfg: int(cfg.get("intermediate_size") or 0),
            is_moe_layer=_llama4_moe_layer,
            computes_all_experts=True,
        ),
    ),
)


def _gpt_oss_extra(cfg: Config, d: Dims) -> int:
    """Per layer: one attention sink per head (self_attn.sinks) and the router's bias (mlp.router.bias)."""
    return d["L"] * (d["nh"] + int(cfg.get("num_local_experts") or 0))


# gpt-oss (transformers 5.24 models/gpt_oss/modeling_gpt_oss.py): q/k/v/o with bias (attention_bias), routed
# experts only, their fused gate_up_proj (h -> 2i) and down_proj with biases (GptOssExperts), a router
# Linear with bias; untied lm_head. openai/gpt-oss-20b counts 20,914,757,184 (transformers on meta)
_register(
    ("gpt_oss",),
    replace(
        LLAMA,
        attn=split_attn(qkv_bias=key("attention_bias", True), o_bias=key("attention_bias", True)),
        mlp=gated_mlp(bias=True),
        moe=Moe(
            experts=("num_local_experts",),
            top_k=("num_experts_per_tok", "experts_per_token"),
            top_k_default=4,
            expert_intermediate=(),
        ),
        extra=_gpt_oss_extra,
    ),
)
# Phi-3.5-MoE: LayerNorm with bias, attention bias from the config, lm_head bias (modeling_phimoe.py)
_register(
    ("phimoe",),
    replace(
        LLAMA,
        mlp=gated_mlp(),
        norm="layer",
        lm_head_bias=key("lm_head_bias"),
        moe=Moe(experts=("num_local_experts",), expert_intermediate=()),
    ),
)
# InternLM2 (remote code, modeling_internlm2.py): wqkv fused, feed_forward.w1/w3/w2, bias from config.bias
_INTERNLM_BIAS = key("bias", True)
_register(
    ("internlm2",),
    replace(
        LLAMA,
        attn=fused_attn("wqkv", "wo", _INTERNLM_BIAS),
        mlp=gated_mlp(names=("w1", "w3", "w2")),
    ),
)
# Baichuan 2 (remote code, modeling_baichuan.py): W_pack = Linear(h, 3h, bias=False), lm_head NormHead(h, V):
# in training `norm_weight = nn.functional.normalize(self.weight)` then `nn.functional.linear(hidden_states,
# norm_weight)` (Baichuan2-13B-Chat's file, copy at jrd77/Baichuan2-13B-Chat@35e3d5af modeling_baichuan.py,
# NormHead.forward; ms-swift patches the same form with `.to(self.weight.dtype)`,
# swift/llm/utils/model.py:446-456 @4312aeb2)
_register(
    ("baichuan",),
    replace(LLAMA, attn=fused_attn("W_pack", "o_proj"), mlp=gated_mlp(), normalized_head=True),
)
# ChatGLM2/3 (remote code, modeling_chatglm.py of THUDM/chatglm3-6b; copy at DracoUnion/chatglm3-6b-int4-lora
# @61985f2 modeling_chatglm.py): SelfAttention.query_key_value = Linear(h, kv_channels*heads + 2*kv_channels*
# multi_query_group_num, bias=add_bias_linear or add_qkv_bias), dense without bias; MLP dense_h_to_4h =
# Linear(h, 2*ffn_hidden_size) (swiglu over the two halves), dense_4h_to_h back; RMSNorm input_layernorm /
# post_attention_layernorm, final_layernorm; embedding and output_layer on padded_vocab_size, untied
_GLM_BIAS = key("add_bias_linear")


def _chatglm_qkv_bias(cfg: Config) -> bool:
    return bool(cfg.get("add_bias_linear") or cfg.get("add_qkv_bias"))


def _chatglm_dims(cfg: Config, d: dict[str, int]) -> None:
    # multi_query_group_num counts the kv heads only with multi_query_attention (SelfAttention.__init__)
    if cfg.get("multi_query_attention"):
        d["nkv"] = int(cfg.get("multi_query_group_num") or d["nh"])


_register(
    ("chatglm",),
    replace(
        LLAMA,
        attn=fused_attn("query_key_value", "dense", _chatglm_qkv_bias, _GLM_BIAS),
        mlp=(
            Lin("dense_h_to_4h", "h", "i2", _GLM_BIAS, "mlp_in", ("gate_up", "gate_up_proj")),
            Lin("dense_4h_to_h", "i", "h", _GLM_BIAS, "mlp_act", ("down", "down_proj")),
        ),
        dim_keys={"V": ("padded_vocab_size",), "i": ("ffn_hidden_size",)},
        derive=_chatglm_dims,
        final_norm=key("post_layer_norm", True),
    ),
)
# Qwen (1) (remote code, modeling_qwen.py): c_attn with bias, c_proj without; MLP w1, w2 -> c_proj
_register(
    ("qwen",),
    replace(
        LLAMA,
        attn=fused_attn("c_attn", "c_proj", True, False),
        mlp=gated_mlp(names=("w2", "w1", "mlp.c_proj")),
        derive=_qwen1_dims,
    ),
)
# DeepSeek-V2 / V2-Lite: multi-head latent attention and routed + shared experts
_register(
    ("deepseek_v2",),
    replace(
        LLAMA,
        attn=(
            Lin("q_proj", "h", "q", aliases=("q",), when=lambda cfg: not _q_lora_rank(cfg)),
            Lin("q_a_proj", "h", "q_lora", when=lambda cfg: bool(_q_lora_rank(cfg))),
            Lin("q_b_proj", "q_lora", "q", feeds="attn_latent", when=lambda cfg: bool(_q_lora_rank(cfg))),
            Lin("kv_a_proj_with_mqa", "h", "kv_a", aliases=("kv_a",)),
            Lin("kv_b_proj", "kv_lora", "kv_b", feeds="attn_latent", aliases=("kv_b",)),
            Lin("o_proj", "o_in", "h", feeds="attn_out", aliases=("o", "wo")),
        ),
        mlp=gated_mlp(),
        attn_norm_dims=("q_lora", "kv_lora"),
        derive=_mla_dims,
        moe=Moe(
            experts=("n_routed_experts",),
            top_k_default=6,
            shared_intermediate=lambda cfg: (
                int(cfg.get("moe_intermediate_size") or 0) * int(cfg.get("n_shared_experts") or 0)
            ),
            shared_prefix="shared_experts.",
            is_moe_layer=_deepseek_moe_layer,
        ),
    ),
)

# ---- GELU-MLP decoders and encoders --------------------------------------------------------------
_register(
    ("gpt2",),
    Arch(
        attn=fused_attn("c_attn", "c_proj", True),
        mlp=plain_mlp("c_fc", "mlp.c_proj"),
        block="gelu",
        norm="layer",
        tie_default=True,
        positions=_gpt2_positions,
        dim_keys={"i": ("n_inner",)},
        dropout_keys=(("attn_pdrop",), ("resid_pdrop",), ("embd_pdrop",)),
        dropout_default=(0.1, 0.1, 0.1),
    ),
)
# GPT-BigCode (SantaCoder, StarCoder 1): GPT-2 with multi-query attention, c_attn h -> h + 2*head_dim
_register(
    ("gpt_bigcode",),
    replace(
        ARCHS["gpt2"],
        derive=lambda cfg, d: d.update(nkv=1 if cfg.get("multi_query", True) else d["nh"]),
    ),
)
_register(
    ("bert", "roberta"),
    Arch(
        attn=split_attn(True, True, "attention.output.dense", ("query", "key", "value")),
        mlp=plain_mlp("intermediate.dense", "output.dense"),
        block="bert",
        norm="layer",
        tie_default=True,
        final_norm=False,
        embedding_norm=True,
        positions=_bert_positions,
        extra=lambda cfg, d: d["h"] * d["h"] + d["h"],  # BertPooler dense
        dropout_keys=(("attention_probs_dropout_prob",), ("hidden_dropout_prob",), ("hidden_dropout_prob",)),
        dropout_default=(0.1, 0.1, 0.1),
    ),
)
_register(
    ("phi",),
    Arch(
        attn=split_attn(True, True, "dense"),
        mlp=plain_mlp("fc1", "fc2"),
        block="gelu",
        norm="layer",
        tie_default=False,
        norms_per_layer=1,
        parallel=True,
        qk_norm="head",
        qk_norm_when=key("qk_layernorm"),
        qk_norm_kind="layer",
        lm_head_bias=True,
        derive=lambda cfg, d: d.update(hd=d["h"] // d["nh"]),  # PhiAttention: head_dim = hidden // heads
        dropout_keys=(("attention_dropout",), ("resid_pdrop",), ("embd_pdrop",)),
    ),
)
_register(
    ("opt",),
    Arch(
        attn=split_attn(key("enable_bias", True), key("enable_bias", True), "out_proj"),
        mlp=plain_mlp("fc1", "fc2", key("enable_bias", True)),
        block="gelu",
        norm="layer",
        tie_default=True,
        positions=_opt_positions,
        extra=_opt_projections,
        embedding_dim="wp",
        dim_keys={"i": ("ffn_dim",)},
        derive=lambda cfg, d: d.update(wp=int(cfg.get("word_embed_proj_dim") or d["h"])),
        final_norm=lambda cfg: (
            bool(cfg.get("do_layer_norm_before", True)) and not cfg.get("_remove_final_layer_norm", False)
        ),
        norm_affine=key("layer_norm_elementwise_affine", True),
        dropout_keys=(("attention_dropout",), ("dropout",), ("dropout",)),
        dropout_default=(0.0, 0.1, 0.1),
    ),
)
_NEOX_BIAS = key("attention_bias", True)
_register(
    ("gpt_neox",),
    Arch(
        attn=fused_attn("query_key_value", "dense", _NEOX_BIAS),
        mlp=plain_mlp("dense_h_to_4h", "dense_4h_to_h"),
        block="gelu",
        norm="layer",
        tie_default=False,
        parallel=key("use_parallel_residual", True),
        dropout_keys=(("attention_dropout",), ("hidden_dropout",), ()),
    ),
)
_FALCON_BIAS = key("bias")
_register(
    ("falcon",),
    Arch(
        attn=fused_attn("query_key_value", "dense", _FALCON_BIAS),
        mlp=plain_mlp("dense_h_to_4h", "dense_4h_to_h", _FALCON_BIAS),
        block="gelu",
        norm="layer",
        tie_default=True,
        norms_per_layer=_falcon_norms,
        parallel=key("parallel_attn", True),
        dim_keys={"i": ("ffn_hidden_size",)},
        derive=_falcon_dims,
        dropout_keys=(("attention_dropout",), ("hidden_dropout",), ()),
    ),
)
_register(
    ("bloom",),
    Arch(
        attn=fused_attn("query_key_value", "dense", True),
        mlp=plain_mlp("dense_h_to_4h", "dense_4h_to_h"),
        block="gelu",
        norm="layer",
        tie_default=True,
        embedding_norm=True,
        derive=lambda cfg, d: d.update(i=4 * d["h"]),  # BloomMLP: 4 * hidden_size, no config key
        dropout_keys=(("attention_dropout",), ("hidden_dropout",), ()),
    ),
)
# GPT-J: q/k/v/out_proj without bias, fc_in/fc_out with bias, one LayerNorm per (parallel) block,
# lm_head with bias (modeling_gptj.py)
_register(
    ("gptj",),
    Arch(
        attn=split_attn(o_name="out_proj"),
        mlp=plain_mlp("fc_in", "fc_out"),
        block="gelu",
        norm="layer",
        tie_default=False,
        norms_per_layer=1,
        parallel=True,
        lm_head_bias=True,
        dim_keys={"i": ("n_inner",)},
        dropout_keys=(("attn_pdrop",), ("resid_pdrop",), ("embd_pdrop",)),
    ),
)
# StarCoder2: biases from use_bias, LayerNorm with bias, c_fc/c_proj MLP (modeling_starcoder2.py)
_STARCODER_BIAS = key("use_bias", True)
_register(
    ("starcoder2",),
    Arch(
        attn=split_attn(_STARCODER_BIAS, _STARCODER_BIAS),
        mlp=plain_mlp("c_fc", "c_proj", _STARCODER_BIAS),
        block="gelu",
        norm="layer",
        tie_default=True,
        dropout_keys=(("attention_dropout",), ("residual_dropout",), ("embedding_dropout",)),
    ),
)
_T5_GATED_MLP = (
    Lin("wi_0", "h", "i", feeds="mlp_in", aliases=("gate", "wi")),
    Lin("wi_1", "h", "i", feeds="mlp_in", aliases=("up", "wi")),
    Lin("wo", "i", "h", feeds="mlp_act", aliases=("down",)),
)


# T5 / Flan-T5: encoder (self-attention + MLP) and decoder (+ cross-attention) stacks, weight-only RMS-style
# norms, no biases, relative position buckets in the first layer of each stack (modeling_t5.py)
_register(
    ("t5", "mt5"),
    Arch(
        attn=split_attn(names=("q", "k", "v"), o_name="o"),
        mlp=plain_mlp("wi", "wo", False),
        block="gelu",
        norm="rms",
        tie_default=True,
        encoder_decoder=True,
        # transformers 5.24 configuration_t5.py:81-82 reads tie_word_embeddings only as the output-scaling
        # switch and sets tie_word_embeddings = True: lm_head is always the shared embedding (v4 kept an
        # untied lm_head for T5 v1.1 / Flan-T5, which their published counts include)
        tie_forced=True,
        alt_mlp=_T5_GATED_MLP,
        alt_mlp_when=lambda cfg: str(cfg.get("feed_forward_proj") or "relu").startswith("gated"),
        dim_keys={"i": ("d_ff",), "hd": ("d_kv",), "L": ("num_layers",)},
        dropout_keys=(("dropout_rate",), ("dropout_rate",), ("dropout_rate",)),
        dropout_default=(0.1, 0.1, 0.1),
    ),
)

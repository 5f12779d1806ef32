"""Exact parameter counts from a model's config.json (memory-model.md section 8).

Formulas, per decoder layer (h hidden, q = heads*head_dim, kv = kv_heads*head_dim, i intermediate):

    attn  = h*q + 2*h*kv + q*h   (+ q + 2kv if q/k/v bias) (+ h if o bias) (+ 2*head_dim if q/k norm)
    mlp   = 3*h*i (gated: Llama, Mistral, Qwen2/3, Gemma 1/2/3, Phi-3)  |  2*h*i + i + h (GPT-2, BERT, Phi-2)
    norms = k*h (RMSNorm; LayerNorm weight+bias counts 2h); k = 2, or 4 for Gemma-2/3
    MoE   = E*mlp_expert + h*E router (+ shared expert + its h->1 gate)
    total = V*h + L*per_layer + final norm + (0 if tied else V*h [+ V if lm_head bias]) + learned positions

Gated-ness is decided by ``model_type``, never by ``hidden_act`` (Gemma's gelu is GeGLU). Tied weights are
counted once, like ``named_parameters()``, DeepSpeed's data_ptr dedup and safetensors do.

Nothing here imports torch or transformers; an unknown ``model_type`` falls back to ``_meta.count_on_meta``
(instantiation on the meta device) only when both are installed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "LinearShape",
    "ParamCount",
    "UnknownModelTypeError",
    "count_params",
    "formula_model_types",
]


class UnknownModelTypeError(ValueError):
    """No built-in formula for this model_type and transformers/torch are not importable."""


# The estimator's results are frozen dataclasses, not pydantic models: they are built by this package
# from already-checked numbers (nothing to validate), and a pre-commit hook must not pay pydantic's import
# and schema building for them. Change them with dataclasses.replace().
@dataclass(frozen=True, slots=True, kw_only=True)
class LinearShape:
    """One Linear (weight d_out x d_in) inside a decoder layer; ``count`` copies per layer (MoE experts)."""

    name: str
    d_in: int
    d_out: int
    count: int = 1
    bias: bool = False
    # which activation feeds it: attn_in (norm output before attention), attn_out (attention output),
    # mlp_in (norm output before the MLP), mlp_act (MLP hidden after the activation), router
    feeds_from: str = "attn_in"
    aliases: list[str] = field(default_factory=list)

    @property
    def weight_params(self) -> int:
        return self.d_in * self.d_out * self.count


@dataclass(frozen=True, slots=True, kw_only=True)
class ParamCount:
    """Parameter count and the shape facts the memory and time models need."""

    model_type: str
    source: Literal["formula", "meta-device", "safetensors"] = "formula"
    total: int
    embedding: int  # input token embedding V*h
    lm_head: int  # 0 when tied to the embedding; includes its bias
    position_embedding: int = 0  # learned absolute positions (+ token types for BERT)
    final_norm: int = 0
    other: int = 0  # e.g. BERT pooler, OPT projections
    layers: int
    per_layer: int  # params of one (the largest) decoder layer
    attn_per_layer: int
    mlp_per_layer: int  # includes all experts and the router for MoE layers
    norm_per_layer: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    q_dim: int
    kv_dim: int
    intermediate: int
    vocab: int
    tied: bool
    block: Literal["gated", "gelu", "bert"] = "gated"
    norm: Literal["rms", "layer"] = "rms"
    norms_per_layer: int = 2
    parallel_block: bool = False
    qk_norm: bool = False
    moe_experts: int = 0
    moe_active: int = 0
    moe_layers: int = 0
    expert_intermediate: int = 0
    shared_expert_intermediate: int = 0
    attn_dropout: float = 0.0
    hidden_dropout: float = 0.0
    embd_dropout: float = 0.0
    final_logit_softcapping: float | None = None
    linears: list[LinearShape] = field(default_factory=list)  # per (dense or MoE) decoder layer
    # weights of all Linear layers inside the decoder layers, summed over layers (what bitsandbytes 4-bit
    # quantizes; lm_head and embeddings stay 16-bit)
    layer_linear_weights: int = 0
    notes: list[str] = field(default_factory=list)

    # ---- derived figures -------------------------------------------------------------------------
    @property
    def layers_total(self) -> int:
        return (
            self.total
            - self.embedding
            - self.lm_head
            - self.position_embedding
            - self.final_norm
            - self.other
        )

    @property
    def expert_params(self) -> int:
        """Routed-expert weights over all layers (0 for dense models)."""
        if not self.moe_experts:
            return 0
        per = sum(lin.weight_params for lin in self.linears if lin.name.startswith("experts."))
        return per * self.moe_layers

    @property
    def active_params(self) -> int:
        """Parameters touched per token (routed experts scaled by top-k / E)."""
        if not self.moe_experts:
            return self.total
        inactive = self.expert_params * (self.moe_experts - self.moe_active) // self.moe_experts
        return self.total - inactive

    @property
    def matmul_params(self) -> int:
        """Parameters used in matmuls per token (6N FLOPs rule): all but the input-embedding lookup."""
        lookup = self.embedding if not self.tied else 0
        return self.active_params - lookup - self.position_embedding

    @property
    def largest_tensor(self) -> int:
        biggest_linear = max((lin.d_in * lin.d_out for lin in self.linears), default=0)
        return max(self.embedding, self.lm_head, biggest_linear)

    def summary(self) -> str:
        return (
            f"{self.model_type}: {self.total:,} params ({self.layers} layers x {self.per_layer:,}, "
            f"embedding {self.embedding:,}, lm_head {'tied' if self.tied else f'{self.lm_head:,}'})"
        )


# ------------------------------------------------------------------------------------------------------
def _get(cfg: dict[str, Any], *names: str, default: Any = None) -> Any:
    for n in names:
        v = cfg.get(n)
        if v is not None:
            return v
    return default


def _float_or_none(v: Any) -> float | None:
    return None if v is None else float(v)


# tie_word_embeddings defaults of the config classes (only used when config.json omits the key)
_TIE_DEFAULT = {
    "llama": False,
    "mistral": False,
    "mixtral": False,
    "qwen2": False,
    "qwen2_moe": False,
    "qwen3": False,
    "qwen3_moe": False,
    "gemma": True,
    "gemma2": True,
    "gemma3_text": True,
    "phi3": False,
    "phi": False,
    "gpt2": True,
    "opt": True,
    "bloom": True,
    "falcon": True,
    "gpt_neox": False,
}

_GATED = {
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_moe",
    "gemma",
    "gemma2",
    "gemma3_text",
    "phi3",
}

_ALIASES = {
    "q_proj": ["q", "wq", "query"],
    "k_proj": ["k", "wk", "key"],
    "v_proj": ["v", "wv", "value"],
    "o_proj": ["o", "wo", "output_proj", "out_proj"],
    "gate_proj": ["gate", "w1"],
    "up_proj": ["up", "w3"],
    "down_proj": ["down", "w2"],
}


def formula_model_types() -> list[str]:
    return sorted(_GATED | {"gpt2", "bert", "phi", "opt", "gpt_neox", "falcon", "bloom"})


def count_params(config: dict[str, Any]) -> ParamCount:
    """Exact parameter count of a causal LM (or BERT encoder + pooler) from its config.json dict.

    Raises UnknownModelTypeError when the model type has no formula and transformers+torch are unavailable.
    """
    mt = str(config.get("model_type", "")).lower()
    if "text_config" in config and mt not in _GATED and isinstance(config["text_config"], dict):
        inner = dict(config["text_config"])
        inner.setdefault("model_type", f"{mt}_text" if mt else "")
        if str(inner["model_type"]).lower() in _GATED:
            pc = count_params(inner)
            pc.notes.append(f"counted the text decoder of the multimodal '{mt}' config only")
            return pc
    if mt in _GATED:
        return _gated(config, mt)
    fn = {
        "gpt2": _gpt2,
        "bert": _bert,
        "phi": _phi,
        "opt": _opt,
        "gpt_neox": _gpt_neox,
        "falcon": _falcon,
        "bloom": _bloom,
    }.get(mt)
    if fn is not None:
        return fn(config)
    from advisor.estimate import _meta  # lazy: imports torch/transformers

    if _meta.available():
        return _meta.count_on_meta(config)
    raise UnknownModelTypeError(
        f"no parameter formula for model_type '{mt or '?'}' and transformers/torch are not installed "
        f"(known types: {', '.join(formula_model_types())})"
    )


# ---- gated decoders: Llama, Mistral, Mixtral, Qwen2/2-MoE/3/3-MoE, Gemma 1/2/3, Phi-3 -----------
def _gated(cfg: dict[str, Any], mt: str) -> ParamCount:
    h = int(cfg["hidden_size"])
    L = int(cfg["num_hidden_layers"])
    nh = int(cfg["num_attention_heads"])
    nkv = int(_get(cfg, "num_key_value_heads", default=nh))
    hd = int(_get(cfg, "head_dim", default=h // nh))
    q, kv = nh * hd, nkv * hd
    i = int(cfg["intermediate_size"])
    V = int(cfg["vocab_size"])
    tied = bool(_get(cfg, "tie_word_embeddings", default=_TIE_DEFAULT[mt]))
    notes: list[str] = []

    qkv_bias = mt in ("qwen2", "qwen2_moe") or (
        mt in ("llama", "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3_text")
        and bool(cfg.get("attention_bias"))
    )
    o_bias = mt != "qwen2" and mt != "qwen2_moe" and bool(cfg.get("attention_bias"))
    mlp_bias = mt == "llama" and bool(cfg.get("mlp_bias"))
    qk_norm = mt in ("qwen3", "qwen3_moe", "gemma3_text")
    n_norms = 4 if mt in ("gemma2", "gemma3_text") else 2

    attn = h * q + 2 * h * kv + q * h
    if qkv_bias:
        attn += q + 2 * kv
    if o_bias:
        attn += h
    if qk_norm:
        attn += 2 * hd

    if mt == "phi3":
        attn_lin = [
            LinearShape(
                name="qkv_proj", d_in=h, d_out=q + 2 * kv, feeds_from="attn_in", aliases=["qkv", "wqkv"]
            ),
            LinearShape(name="o_proj", d_in=q, d_out=h, feeds_from="attn_out", aliases=_ALIASES["o_proj"]),
        ]
    else:
        attn_lin = [
            LinearShape(name="q_proj", d_in=h, d_out=q, bias=qkv_bias, aliases=_ALIASES["q_proj"]),
            LinearShape(name="k_proj", d_in=h, d_out=kv, bias=qkv_bias, aliases=_ALIASES["k_proj"]),
            LinearShape(name="v_proj", d_in=h, d_out=kv, bias=qkv_bias, aliases=_ALIASES["v_proj"]),
            LinearShape(
                name="o_proj", d_in=q, d_out=h, bias=o_bias, feeds_from="attn_out", aliases=_ALIASES["o_proj"]
            ),
        ]

    def dense_mlp(inter: int, prefix: str = "", count: int = 1) -> list[LinearShape]:
        if mt == "phi3":
            return [
                LinearShape(
                    name="gate_up_proj", d_in=h, d_out=2 * inter, feeds_from="mlp_in", aliases=["gate_up"]
                ),
                LinearShape(
                    name="down_proj", d_in=inter, d_out=h, feeds_from="mlp_act", aliases=_ALIASES["down_proj"]
                ),
            ]
        return [
            LinearShape(
                name=f"{prefix}gate_proj",
                d_in=h,
                d_out=inter,
                count=count,
                bias=mlp_bias,
                feeds_from="mlp_in",
                aliases=_ALIASES["gate_proj"],
            ),
            LinearShape(
                name=f"{prefix}up_proj",
                d_in=h,
                d_out=inter,
                count=count,
                bias=mlp_bias,
                feeds_from="mlp_in",
                aliases=_ALIASES["up_proj"],
            ),
            LinearShape(
                name=f"{prefix}down_proj",
                d_in=inter,
                d_out=h,
                count=count,
                bias=mlp_bias,
                feeds_from="mlp_act",
                aliases=_ALIASES["down_proj"],
            ),
        ]

    dense = 3 * h * i + ((2 * i + h) if mlp_bias else 0)
    E = k = moe_layers = 0
    ei = si = 0
    mlp = dense
    mlp_lin = dense_mlp(i)
    if mt in ("mixtral", "qwen2_moe", "qwen3_moe"):
        E = int(_get(cfg, "num_local_experts", "num_experts"))
        k = int(_get(cfg, "num_experts_per_tok", default=2))
        ei = int(_get(cfg, "moe_intermediate_size", default=i)) if mt != "mixtral" else i
        si = int(_get(cfg, "shared_expert_intermediate_size", default=0)) if mt == "qwen2_moe" else 0
        moe = E * 3 * h * ei + h * E
        mlp_lin = [
            *dense_mlp(ei, "experts.", E),
            LinearShape(name="router", d_in=h, d_out=E, feeds_from="mlp_in", aliases=["gate"]),
        ]
        if si:
            moe += 3 * h * si + h  # shared expert + its sigmoid gate (h -> 1)
            mlp_lin += [
                *dense_mlp(si, "shared_expert."),
                LinearShape(name="shared_expert_gate", d_in=h, d_out=1, feeds_from="mlp_in"),
            ]
        step = int(_get(cfg, "decoder_sparse_step", default=1))
        only_dense = set(_get(cfg, "mlp_only_layers", default=[]) or [])
        moe_layer_ids = [li for li in range(L) if li not in only_dense and (E > 0 and (li + 1) % step == 0)]
        moe_layers = len(moe_layer_ids)
        mlp = moe
        if moe_layers != L:
            notes.append(
                f"{L - moe_layers} of {L} layers use a dense MLP (mlp_only_layers/decoder_sparse_step)"
            )

    attn_w = h * q + 2 * h * kv + q * h
    if E:
        moe_w = E * 3 * h * ei + h * E + ((3 * h * si + h) if si else 0)
        lin_total = moe_layers * (attn_w + moe_w) + (L - moe_layers) * (attn_w + 3 * h * i)
    else:
        lin_total = L * (attn_w + 3 * h * i)
    norms = n_norms * h
    per_layer_moe = attn + mlp + norms
    per_dense = attn + dense + norms
    layers_total = moe_layers * per_layer_moe + (L - moe_layers) * per_dense if E else L * per_dense
    embedding = V * h
    lm_head = 0 if tied else V * h
    total = embedding + layers_total + h + lm_head
    return ParamCount(
        model_type=mt,
        total=total,
        embedding=embedding,
        lm_head=lm_head,
        final_norm=h,
        layers=L,
        per_layer=max(per_layer_moe, per_dense) if E else per_dense,
        attn_per_layer=attn,
        mlp_per_layer=mlp if E else dense,
        norm_per_layer=norms,
        hidden=h,
        heads=nh,
        kv_heads=nkv,
        head_dim=hd,
        q_dim=q,
        kv_dim=kv,
        intermediate=i,
        vocab=V,
        tied=tied,
        block="gated",
        norm="rms",
        norms_per_layer=n_norms,
        qk_norm=qk_norm,
        moe_experts=E,
        moe_active=k,
        moe_layers=moe_layers,
        expert_intermediate=ei,
        shared_expert_intermediate=si,
        attn_dropout=float(_get(cfg, "attention_dropout", default=0.0)),
        hidden_dropout=float(_get(cfg, "resid_pdrop", default=0.0)) if mt == "phi3" else 0.0,
        embd_dropout=float(_get(cfg, "embd_pdrop", default=0.0)) if mt == "phi3" else 0.0,
        final_logit_softcapping=_float_or_none(_get(cfg, "final_logit_softcapping")),
        linears=attn_lin + mlp_lin,
        notes=notes,
        layer_linear_weights=lin_total,
    )


# ---- GELU-MLP families --------------------------------------------------------------------------
def _gelu_layer_linears(
    h: int,
    i: int,
    qkv_out: int,
    fused_qkv: bool,
    bias: bool,
    names: dict[str, str],
    q: int | None = None,
    kv: int | None = None,
) -> list[LinearShape]:
    if fused_qkv:
        lin = [LinearShape(name=names["qkv"], d_in=h, d_out=qkv_out, bias=bias, aliases=["qkv"])]
    else:
        q = q if q is not None else h
        kv = kv if kv is not None else h
        lin = [
            LinearShape(name=names["q"], d_in=h, d_out=q, bias=bias, aliases=_ALIASES["q_proj"]),
            LinearShape(name=names["k"], d_in=h, d_out=kv, bias=bias, aliases=_ALIASES["k_proj"]),
            LinearShape(name=names["v"], d_in=h, d_out=kv, bias=bias, aliases=_ALIASES["v_proj"]),
        ]
    return [
        *lin,
        LinearShape(
            name=names["o"],
            d_in=q or h,
            d_out=h,
            bias=bias,
            feeds_from="attn_out",
            aliases=_ALIASES["o_proj"],
        ),
        LinearShape(
            name=names["fc1"], d_in=h, d_out=i, bias=bias, feeds_from="mlp_in", aliases=["fc1", "fc_in"]
        ),
        LinearShape(
            name=names["fc2"], d_in=i, d_out=h, bias=bias, feeds_from="mlp_act", aliases=["fc2", "fc_out"]
        ),
    ]


def _gelu_pc(
    mt: str,
    *,
    total: int,
    embedding: int,
    lm_head: int,
    pos: int,
    final_norm: int,
    other: int,
    L: int,
    attn: int,
    mlp: int,
    norms: int,
    h: int,
    nh: int,
    nkv: int,
    hd: int,
    i: int,
    V: int,
    tied: bool,
    block: str,
    n_norms: int,
    parallel: bool,
    linears: list[LinearShape],
    attn_dropout: float,
    hidden_dropout: float,
    embd_dropout: float,
    notes: list[str] | None = None,
    qk_norm: bool = False,
) -> ParamCount:
    return ParamCount(
        model_type=mt,
        total=total,
        embedding=embedding,
        lm_head=lm_head,
        position_embedding=pos,
        final_norm=final_norm,
        other=other,
        layers=L,
        per_layer=attn + mlp + norms,
        attn_per_layer=attn,
        mlp_per_layer=mlp,
        norm_per_layer=norms,
        hidden=h,
        heads=nh,
        kv_heads=nkv,
        head_dim=hd,
        q_dim=nh * hd,
        kv_dim=nkv * hd,
        intermediate=i,
        vocab=V,
        tied=tied,
        block=block,
        norm="layer",
        norms_per_layer=n_norms,
        parallel_block=parallel,
        linears=linears,
        attn_dropout=attn_dropout,
        hidden_dropout=hidden_dropout,
        embd_dropout=embd_dropout,
        notes=notes or [],
        qk_norm=qk_norm,
        layer_linear_weights=L * sum(lin.weight_params for lin in linears),
    )


def _gpt2(cfg: dict[str, Any]) -> ParamCount:
    h = int(_get(cfg, "n_embd", "hidden_size"))
    L = int(_get(cfg, "n_layer", "num_hidden_layers"))
    nh = int(_get(cfg, "n_head", "num_attention_heads"))
    i = int(_get(cfg, "n_inner", default=4 * h))
    V = int(cfg["vocab_size"])
    P = int(_get(cfg, "n_positions", "max_position_embeddings", default=1024))
    tied = bool(_get(cfg, "tie_word_embeddings", default=True))
    attn = h * 3 * h + 3 * h + h * h + h
    mlp = h * i + i + i * h + h
    norms = 2 * 2 * h
    emb, pos = V * h, P * h
    lm_head = 0 if tied else V * h
    total = emb + pos + L * (attn + mlp + norms) + 2 * h + lm_head
    names = {"qkv": "c_attn", "o": "c_proj", "fc1": "c_fc", "fc2": "mlp.c_proj"}
    return _gelu_pc(
        "gpt2",
        total=total,
        embedding=emb,
        lm_head=lm_head,
        pos=pos,
        final_norm=2 * h,
        other=0,
        L=L,
        attn=attn,
        mlp=mlp,
        norms=norms,
        h=h,
        nh=nh,
        nkv=nh,
        hd=h // nh,
        i=i,
        V=V,
        tied=tied,
        block="gelu",
        n_norms=2,
        parallel=False,
        linears=_gelu_layer_linears(h, i, 3 * h, True, True, names),
        attn_dropout=float(_get(cfg, "attn_pdrop", default=0.1)),
        hidden_dropout=float(_get(cfg, "resid_pdrop", default=0.1)),
        embd_dropout=float(_get(cfg, "embd_pdrop", default=0.1)),
    )


def _bert(cfg: dict[str, Any]) -> ParamCount:
    h = int(cfg["hidden_size"])
    L = int(cfg["num_hidden_layers"])
    nh = int(cfg["num_attention_heads"])
    i = int(cfg["intermediate_size"])
    V = int(cfg["vocab_size"])
    P = int(_get(cfg, "max_position_embeddings", default=512))
    T = int(_get(cfg, "type_vocab_size", default=2))
    attn = 4 * (h * h + h)
    mlp = h * i + i + i * h + h
    norms = 2 * 2 * h
    emb = V * h
    pos = P * h + T * h
    emb_ln = 2 * h
    pooler = h * h + h
    total = emb + pos + emb_ln + L * (attn + mlp + norms) + pooler
    names = {
        "q": "query",
        "k": "key",
        "v": "value",
        "o": "attention.output.dense",
        "fc1": "intermediate.dense",
        "fc2": "output.dense",
    }
    return _gelu_pc(
        "bert",
        total=total,
        embedding=emb,
        lm_head=0,
        pos=pos,
        final_norm=emb_ln,
        other=pooler,
        L=L,
        attn=attn,
        mlp=mlp,
        norms=norms,
        h=h,
        nh=nh,
        nkv=nh,
        hd=h // nh,
        i=i,
        V=V,
        tied=True,
        block="bert",
        n_norms=2,
        parallel=False,
        linears=_gelu_layer_linears(h, i, 3 * h, False, True, names),
        attn_dropout=float(_get(cfg, "attention_probs_dropout_prob", default=0.1)),
        hidden_dropout=float(_get(cfg, "hidden_dropout_prob", default=0.1)),
        embd_dropout=float(_get(cfg, "hidden_dropout_prob", default=0.1)),
        notes=["BertModel + pooler (task heads not counted; a classification head adds h*labels + labels)"],
    )


def _phi(cfg: dict[str, Any]) -> ParamCount:
    h = int(cfg["hidden_size"])
    L = int(cfg["num_hidden_layers"])
    nh = int(cfg["num_attention_heads"])
    nkv = int(_get(cfg, "num_key_value_heads", default=nh))
    hd = h // nh
    q, kv = nh * hd, nkv * hd
    i = int(cfg["intermediate_size"])
    V = int(cfg["vocab_size"])
    tied = bool(_get(cfg, "tie_word_embeddings", default=False))
    qk_ln = bool(cfg.get("qk_layernorm"))
    attn = h * q + q + 2 * (h * kv + kv) + q * h + h + (4 * hd if qk_ln else 0)
    mlp = h * i + i + i * h + h
    norms = 2 * h  # one LayerNorm per (parallel) block
    emb = V * h
    lm_head = 0 if tied else V * h + V  # Phi's lm_head has a bias
    total = emb + L * (attn + mlp + norms) + 2 * h + lm_head
    names = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "dense", "fc1": "fc1", "fc2": "fc2"}
    return _gelu_pc(
        "phi",
        total=total,
        embedding=emb,
        lm_head=lm_head,
        pos=0,
        final_norm=2 * h,
        other=0,
        L=L,
        attn=attn,
        mlp=mlp,
        norms=norms,
        h=h,
        nh=nh,
        nkv=nkv,
        hd=hd,
        i=i,
        V=V,
        tied=tied,
        block="gelu",
        n_norms=1,
        parallel=True,
        linears=_gelu_layer_linears(h, i, 0, False, True, names, q=q, kv=kv),
        attn_dropout=float(_get(cfg, "attention_dropout", default=0.0)),
        hidden_dropout=float(_get(cfg, "resid_pdrop", default=0.0)),
        embd_dropout=float(_get(cfg, "embd_pdrop", default=0.0)),
        qk_norm=qk_ln,
    )


def _opt(cfg: dict[str, Any]) -> ParamCount:
    h = int(cfg["hidden_size"])
    L = int(cfg["num_hidden_layers"])
    nh = int(cfg["num_attention_heads"])
    i = int(_get(cfg, "ffn_dim", default=4 * h))
    V = int(cfg["vocab_size"])
    P = int(_get(cfg, "max_position_embeddings", default=2048))
    wp = int(_get(cfg, "word_embed_proj_dim", default=h))
    bias = bool(_get(cfg, "enable_bias", default=True))
    affine = bool(_get(cfg, "layer_norm_elementwise_affine", default=True))
    ln = (2 * h) if affine else 0
    b = 1 if bias else 0
    attn = 4 * (h * h + b * h)
    mlp = h * i + b * i + i * h + b * h
    norms = 2 * ln
    emb = V * wp
    pos = (P + 2) * h  # OPT's learned positions carry an offset of 2
    proj = 0 if wp == h else 2 * h * wp
    final = (
        ln
        if (cfg.get("do_layer_norm_before", True) and not cfg.get("_remove_final_layer_norm", False))
        else 0
    )
    tied = bool(_get(cfg, "tie_word_embeddings", default=True))
    lm_head = 0 if tied else V * wp
    total = emb + pos + proj + L * (attn + mlp + norms) + final + lm_head
    names = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "out_proj", "fc1": "fc1", "fc2": "fc2"}
    return _gelu_pc(
        "opt",
        total=total,
        embedding=emb,
        lm_head=lm_head,
        pos=pos,
        final_norm=final,
        other=proj,
        L=L,
        attn=attn,
        mlp=mlp,
        norms=norms,
        h=h,
        nh=nh,
        nkv=nh,
        hd=h // nh,
        i=i,
        V=V,
        tied=tied,
        block="gelu",
        n_norms=2,
        parallel=False,
        linears=_gelu_layer_linears(h, i, 0, False, bias, names),
        attn_dropout=float(_get(cfg, "attention_dropout", default=0.0)),
        hidden_dropout=float(_get(cfg, "dropout", default=0.1)),
        embd_dropout=float(_get(cfg, "dropout", default=0.1)),
    )


def _gpt_neox(cfg: dict[str, Any]) -> ParamCount:
    h = int(cfg["hidden_size"])
    L = int(cfg["num_hidden_layers"])
    nh = int(cfg["num_attention_heads"])
    i = int(_get(cfg, "intermediate_size", default=4 * h))
    V = int(cfg["vocab_size"])
    bias = bool(_get(cfg, "attention_bias", default=True))
    tied = bool(_get(cfg, "tie_word_embeddings", default=False))
    attn = h * 3 * h + (3 * h if bias else 0) + h * h + (h if bias else 0)
    mlp = h * i + i + i * h + h
    norms = 2 * 2 * h
    emb = V * h
    lm_head = 0 if tied else V * h
    total = emb + L * (attn + mlp + norms) + 2 * h + lm_head
    names = {"qkv": "query_key_value", "o": "dense", "fc1": "dense_h_to_4h", "fc2": "dense_4h_to_h"}
    return _gelu_pc(
        "gpt_neox",
        total=total,
        embedding=emb,
        lm_head=lm_head,
        pos=0,
        final_norm=2 * h,
        other=0,
        L=L,
        attn=attn,
        mlp=mlp,
        norms=norms,
        h=h,
        nh=nh,
        nkv=nh,
        hd=h // nh,
        i=i,
        V=V,
        tied=tied,
        block="gelu",
        n_norms=2,
        parallel=bool(_get(cfg, "use_parallel_residual", default=True)),
        linears=_gelu_layer_linears(h, i, 3 * h, True, bias, names),
        attn_dropout=float(_get(cfg, "attention_dropout", default=0.0)),
        hidden_dropout=float(_get(cfg, "hidden_dropout", default=0.0)),
        embd_dropout=0.0,
    )


def _falcon(cfg: dict[str, Any]) -> ParamCount:
    h = int(cfg["hidden_size"])
    L = int(_get(cfg, "num_hidden_layers", "n_layer"))
    nh = int(_get(cfg, "num_attention_heads", "n_head"))
    hd = h // nh
    new_arch = bool(cfg.get("new_decoder_architecture"))
    if new_arch:
        nkv = int(_get(cfg, "num_kv_heads", default=nh))
    elif cfg.get("multi_query", True):
        nkv = 1
    else:
        nkv = nh
    qkv_out = (nh + 2 * nkv) * hd
    i = int(_get(cfg, "ffn_hidden_size", default=4 * h))
    V = int(cfg["vocab_size"])
    bias = bool(cfg.get("bias", False))
    b = 1 if bias else 0
    parallel = bool(_get(cfg, "parallel_attn", default=True))
    n_ln = int(_get(cfg, "num_ln_in_parallel_attn", default=2)) if new_arch else 1 if parallel else 2
    attn = h * qkv_out + b * qkv_out + h * h + b * h
    mlp = h * i + b * i + i * h + b * h
    norms = n_ln * 2 * h
    emb = V * h
    tied = bool(_get(cfg, "tie_word_embeddings", default=True))
    lm_head = 0 if tied else V * h
    total = emb + L * (attn + mlp + norms) + 2 * h + lm_head
    names = {"qkv": "query_key_value", "o": "dense", "fc1": "dense_h_to_4h", "fc2": "dense_4h_to_h"}
    return _gelu_pc(
        "falcon",
        total=total,
        embedding=emb,
        lm_head=lm_head,
        pos=0,
        final_norm=2 * h,
        other=0,
        L=L,
        attn=attn,
        mlp=mlp,
        norms=norms,
        h=h,
        nh=nh,
        nkv=nkv,
        hd=hd,
        i=i,
        V=V,
        tied=tied,
        block="gelu",
        n_norms=n_ln,
        parallel=parallel,
        linears=_gelu_layer_linears(h, i, qkv_out, True, bias, names),
        attn_dropout=float(_get(cfg, "attention_dropout", default=0.0)),
        hidden_dropout=float(_get(cfg, "hidden_dropout", default=0.0)),
        embd_dropout=0.0,
    )


def _bloom(cfg: dict[str, Any]) -> ParamCount:
    h = int(_get(cfg, "hidden_size", "n_embed"))
    L = int(_get(cfg, "n_layer", "num_hidden_layers"))
    nh = int(_get(cfg, "n_head", "num_attention_heads"))
    i = 4 * h
    V = int(cfg["vocab_size"])
    attn = h * 3 * h + 3 * h + h * h + h
    mlp = h * i + i + i * h + h
    norms = 2 * 2 * h
    emb = V * h
    emb_ln = 2 * h
    tied = bool(_get(cfg, "tie_word_embeddings", default=True))
    lm_head = 0 if tied else V * h
    total = emb + emb_ln + L * (attn + mlp + norms) + 2 * h + lm_head
    names = {"qkv": "query_key_value", "o": "dense", "fc1": "dense_h_to_4h", "fc2": "dense_4h_to_h"}
    return _gelu_pc(
        "bloom",
        total=total,
        embedding=emb,
        lm_head=lm_head,
        pos=0,
        final_norm=2 * h,
        other=emb_ln,
        L=L,
        attn=attn,
        mlp=mlp,
        norms=norms,
        h=h,
        nh=nh,
        nkv=nh,
        hd=h // nh,
        i=i,
        V=V,
        tied=tied,
        block="gelu",
        n_norms=2,
        parallel=False,
        linears=_gelu_layer_linears(h, i, 3 * h, True, True, names),
        attn_dropout=float(_get(cfg, "attention_dropout", default=0.0)),
        hidden_dropout=float(_get(cfg, "hidden_dropout", default=0.0)),
        embd_dropout=0.0,
    )

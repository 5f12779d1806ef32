"""One counter for every family in the shape table (families.ARCHS).

Per layer: the family's Linears (weights d_in x d_out, biases d_out) + q/k and latent norms (attention),
the dense MLP or, in MoE layers, E routed experts + router (+ shared expert and its gate), and
``norms_per_layer`` norms. Around the layers: token embedding V x h, learned positions, embedding norm,
final norm, lm_head (0 when tied; tied weights are counted once, like ``named_parameters()``), and extras
such as BERT's pooler. T5-style models add a decoder stack with cross-attention.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.core.records import replace
from advisor.estimate.params.families import Arch, Lin, flag
from advisor.estimate.params.families_2025 import ARCHS  # the table with the 2025 families registered
from advisor.estimate.params.shapes import LinearShape, ParamCount

__all__ = ["count_from_table"]

# generic config.json keys for each dimension, tried after the family's own (Arch.dim_keys)
_GENERIC_KEYS: dict[str, tuple[str, ...]] = {
    "h": ("hidden_size", "n_embd", "d_model", "n_embed"),
    "L": ("num_hidden_layers", "n_layer", "num_layers"),
    "nh": ("num_attention_heads", "n_head", "num_heads"),
    "nkv": ("num_key_value_heads", "num_kv_heads", "n_head_kv"),
    "hd": ("head_dim", "kv_channels"),
    "i": ("intermediate_size", "ffn_dim", "n_inner", "d_ff", "ffn_hidden_size"),
    "V": ("vocab_size", "padded_vocab_size"),
}
_REQUIRED = ("h", "L", "nh", "V")


def _first(cfg: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for k in keys:
        v = cfg.get(k)
        if v is not None:
            return v
    return None


def _dims(cfg: Mapping[str, Any], arch: Arch) -> dict[str, int]:
    d: dict[str, int] = {}
    for name, generic in _GENERIC_KEYS.items():
        v = _first(cfg, tuple(arch.dim_keys.get(name, ())) + generic)
        if v is not None:
            d[name] = int(v)
    missing = [n for n in _REQUIRED if n not in d]
    if missing:
        wanted = " / ".join(_GENERIC_KEYS[missing[0]])
        raise ValueError(f"config.json has no {wanted}")
    d.setdefault("nkv", d["nh"])
    d.setdefault("hd", d["h"] // d["nh"])
    d.setdefault("i", 4 * d["h"])
    arch.derive(cfg, d)
    d.setdefault("q", d["nh"] * d["hd"])
    d.setdefault("kv", d["nkv"] * d["hd"])
    d.setdefault("qkv", d["q"] + 2 * d["kv"])
    d["i2"] = 2 * d["i"]
    d["one"] = 1
    return d


def _shape(
    lin: Lin, d: Mapping[str, int], cfg: Mapping[str, Any], prefix: str = "", count: int = 1
) -> LinearShape:
    return LinearShape(
        name=prefix + lin.name,
        d_in=d[lin.d_in],
        d_out=d[lin.d_out],
        count=count,
        bias=flag(lin.bias, cfg),
        feeds_from=lin.feeds,
        aliases=list(lin.aliases),
    )


def _params(lins: list[LinearShape]) -> int:
    return sum(lin.weight_params + (lin.d_out * lin.count if lin.bias else 0) for lin in lins)


def _weights(lins: list[LinearShape]) -> int:
    return sum(lin.weight_params for lin in lins)


def _norm_size(arch: Arch, cfg: Mapping[str, Any], dim: int) -> int:
    if arch.norm == "none" or not flag(arch.norm_affine, cfg):
        return 0
    return 2 * dim if arch.norm == "layer" else dim


def _qk_norm(arch: Arch, cfg: Mapping[str, Any], d: Mapping[str, int]) -> int:
    if not arch.qk_norm or not flag(arch.qk_norm_when, cfg):
        return 0
    per = 2 if arch.qk_norm_kind == "layer" else 1  # LayerNorm: weight + bias
    if arch.qk_norm == "full":
        return per * (d["q"] + d["kv"])
    return per * 2 * d["hd"]


def _dropouts(arch: Arch, cfg: Mapping[str, Any]) -> tuple[float, float, float]:
    out = []
    for keys, default in zip(arch.dropout_keys, arch.dropout_default, strict=True):
        v = _first(cfg, keys) if keys else None
        out.append(float(default if v is None else v))
    return out[0], out[1], out[2]


def count_from_table(config: Mapping[str, Any], model_type: str) -> ParamCount:
    """Exact count for a model_type in the shape table; ValueError when a needed config key is missing."""
    arch = ARCHS[model_type]
    cfg = config
    d = _dims(cfg, arch)
    h, L, V = d["h"], d["L"], d["V"]
    notes: list[str] = []

    attn_lin = [_shape(lin, d, cfg) for lin in arch.attn if flag(lin.when, cfg)]
    use_alt = bool(arch.alt_mlp) and flag(arch.alt_mlp_when, cfg)
    mlp_spec = arch.alt_mlp if use_alt else arch.mlp
    dense_lin = [_shape(lin, d, cfg) for lin in mlp_spec if flag(lin.when, cfg)]
    attn = (
        _params(attn_lin)
        + _qk_norm(arch, cfg, d)
        + sum(_norm_size(arch, cfg, d[n]) for n in arch.attn_norm_dims)
    )
    dense = _params(dense_lin)
    n_norms = arch.norms_per_layer(cfg) if callable(arch.norms_per_layer) else arch.norms_per_layer
    norms = n_norms * _norm_size(arch, cfg, h)

    experts = top_k = computed = moe_layers = ei = si = 0
    mlp_lin = dense_lin
    mlp = dense
    if arch.moe is not None:
        moe = arch.moe
        experts = int(_first(cfg, moe.experts) or 0)
    if arch.moe is not None and experts:
        top_k = int(_first(cfg, moe.top_k) or moe.top_k_default)
        ei = int(_first(cfg, moe.expert_intermediate) or d["i"]) if moe.expert_intermediate else d["i"]
        si = moe.shared_intermediate(cfg)
        de = {**d, "i": ei, "i2": 2 * ei, "E": experts}
        mlp_lin = [_shape(lin, de, cfg, "experts.", experts) for lin in mlp_spec]
        mlp_lin.append(
            _shape(Lin(moe.router_name, "h", "E", aliases=moe.router_aliases, feeds="mlp_in"), de, cfg)
        )
        if si:
            ds = {**d, "i": si, "i2": 2 * si}
            mlp_lin += [_shape(lin, ds, cfg, moe.shared_prefix) for lin in mlp_spec]
            if moe.shared_gate:
                mlp_lin.append(_shape(Lin("shared_expert_gate", "h", "one", feeds="mlp_in"), d, cfg))
        mlp = _params(mlp_lin)
        computed = experts if moe.computes_all_experts else top_k
        moe_layers = sum(1 for li in range(L) if moe.is_moe_layer(cfg, li))
        if moe_layers != L:
            notes.append(f"{L - moe_layers} of {L} layers use a dense MLP")

    per_dense = attn + dense + norms
    per_moe = attn + mlp + norms
    attn_w = _weights(attn_lin)
    layers_total = moe_layers * per_moe + (L - moe_layers) * per_dense
    linear_weights = moe_layers * (attn_w + _weights(mlp_lin)) + (L - moe_layers) * (
        attn_w + _weights(dense_lin)
    )
    caveats: list[str] = []
    mixer_layers = 0
    mixer_per_layer = 0
    if arch.mixer is not None:
        # a hybrid's mixer layers hold the mixer instead of attention, with the same norms and MLP
        mix = arch.mixer
        dm = {**d, **mix.dims(cfg, d)}
        mixer_lin = [_shape(lin, dm, cfg) for lin in mix.linears if flag(lin.when, cfg)]
        mixer_per_layer = _params(mixer_lin) + mix.extra(cfg, dm)
        mixer_layers = sum(1 for li in range(L) if mix.is_mixer_layer(cfg, li))
        layers_total += mixer_layers * (mixer_per_layer - attn)
        linear_weights += mixer_layers * (_weights(mixer_lin) - attn_w)
        if mixer_layers:
            caveats.append(
                f"{mixer_layers} of {L} layers are {mix.kind} layers: their parameters are counted, but "
                "their "
                "saved activations are taken as an attention layer's, which the memory model has no term for "
                "(that part of the activations is unknown, in either direction); the time counts their "
                "projections and no attention FLOPs for them, and not the mixer's own scan or convolution "
                "(linear in the sequence, not modelled)"
            )

    emb_dim = d[arch.embedding_dim]
    embedding = V * emb_dim
    # LFM2's configs may write tie_embedding, which Lfm2Config reads as tie_word_embeddings (transformers 5.25
    # configuration_lfm2.py:90)
    tie_key = cfg.get("tie_word_embeddings", cfg.get("tie_embedding"))
    tied = arch.tie_default if tie_key is None else bool(tie_key)
    if arch.tie_forced and not tied:
        notes.append(
            f"lm_head tied to the embedding as transformers 5 does; transformers 4 keeps it separate "
            f"(+{V * emb_dim:,} params)"
        )
        tied = True
    lm_head = 0 if tied else V * emb_dim + (V if flag(arch.lm_head_bias, cfg) else 0)
    final_norm = (_norm_size(arch, cfg, h) if flag(arch.final_norm, cfg) else 0) + (
        2 * h if arch.embedding_norm else 0
    )
    other = arch.extra(cfg, d)
    layers = L
    if arch.encoder_decoder:
        # decoder stack: self-attention + cross-attention (EncDecAttention) + MLP, 3 norms per layer
        dec_layers = int(cfg.get("num_decoder_layers") or L)
        cross = [replace(lin, name=f"EncDecAttention.{lin.name}") for lin in attn_lin]
        per_dec = 2 * attn + dense + 3 * _norm_size(arch, cfg, h)
        layers_total += dec_layers * per_dec
        linear_weights += dec_layers * (2 * attn_w + _weights(dense_lin))
        final_norm += _norm_size(arch, cfg, h)  # each stack ends in a final norm
        # relative_attention_bias in the first self-attention of each stack: buckets x heads
        other += 2 * int(cfg.get("relative_attention_num_buckets") or 32) * d["nh"]
        layers = L + dec_layers
        per_dense = per_moe = per_dec
        attn *= 2
        attn_lin = attn_lin + cross
        n_norms = 3
        norms = 3 * _norm_size(arch, cfg, h)
        notes.append(
            f"encoder-decoder: {L} encoder + {dec_layers} decoder layers; shape facts describe a decoder "
            "layer (self- and cross-attention)"
        )
    if arch.block == "bert":
        notes.append(
            "BertModel + pooler (task heads not counted; a classification head adds h*labels + labels)"
        )

    total = embedding + arch.positions(cfg, d) + layers_total + final_norm + other + lm_head
    attn_dropout, hidden_dropout, embd_dropout = _dropouts(arch, cfg)
    softcap = cfg.get("final_logit_softcapping")
    # absent from a config: Gemma2Config's own default (transformers 5.24 gemma2/configuration_gemma2.py:90)
    attn_softcap = cfg.get("attn_logit_softcapping", 50.0 if model_type == "gemma2" else None)
    return ParamCount(
        model_type=model_type,
        total=total,
        embedding=embedding,
        lm_head=lm_head,
        position_embedding=arch.positions(cfg, d),
        final_norm=final_norm,
        other=other,
        layers=layers,
        per_layer=max(
            per_moe if experts else per_dense, per_dense - attn + mixer_per_layer if mixer_layers else 0
        ),
        attn_per_layer=attn,
        mlp_per_layer=mlp,
        norm_per_layer=norms,
        hidden=h,
        heads=d["nh"],
        kv_heads=d["nkv"],
        head_dim=d["hd"],
        q_dim=d["q"],
        kv_dim=d["kv"],
        intermediate=d["i"],
        vocab=V,
        tied=tied,
        block="gated" if use_alt else arch.block,
        norm="rms" if arch.norm == "rms" else "layer",
        norms_per_layer=n_norms,
        parallel_block=flag(arch.parallel, cfg),
        qk_norm=_qk_norm(arch, cfg, d) > 0,
        moe_experts=experts,
        moe_active=top_k,
        moe_computed=computed,
        moe_layers=moe_layers,
        expert_intermediate=ei,
        shared_expert_intermediate=si,
        attn_dropout=attn_dropout,
        hidden_dropout=hidden_dropout,
        embd_dropout=embd_dropout,
        final_logit_softcapping=None if softcap is None else float(softcap),
        normalized_head=arch.normalized_head,
        attn_logit_softcapping=None if attn_softcap is None else float(attn_softcap),
        linears=attn_lin + mlp_lin,
        layer_linear_weights=linear_weights,
        mixer_layers=mixer_layers,
        notes=notes + caveats,
        caveats=caveats,
    )

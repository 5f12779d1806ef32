"""Fallback parameter counting for model types without a built-in formula.

Instantiates the model on the meta device (no memory, no weights, no network) with transformers and counts
unique parameters (tied weights once, as ``named_parameters()`` de-duplicates them). Only imported when
``count_params`` meets an unknown ``model_type``; this is the only place that imports torch/transformers.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from advisor.estimate.params.shapes import LinearShape, ParamCount


def available() -> bool:
    return (
        importlib.util.find_spec("torch") is not None and importlib.util.find_spec("transformers") is not None
    )


def _first(obj: Any, *names: str, default: Any = None) -> Any:
    for n in names:
        v = getattr(obj, n, None)
        if v is not None:
            return v
    return default


def _instantiate(transformers: Any, cfg: Any) -> Any:
    """The LM-head model for the config: causal LM, else seq-to-seq LM (T5-like), else the bare model."""
    for auto in (transformers.AutoModelForCausalLM, transformers.AutoModelForSeq2SeqLM):
        try:
            return auto.from_config(cfg)
        except ValueError:  # "Unrecognized configuration class ... for this kind of AutoModel"
            continue
    return transformers.AutoModel.from_config(cfg)


def count_on_meta(config: dict[str, Any]) -> ParamCount:
    import torch
    import transformers

    cfg_dict = dict(config)
    model_type = cfg_dict.pop("model_type", None)
    if not model_type:
        raise ValueError("config has no model_type; cannot build it with transformers")
    cfg = transformers.AutoConfig.for_model(model_type, **cfg_dict)
    with torch.device("meta"):
        model = _instantiate(transformers, cfg)

    params = dict(model.named_parameters())  # de-duplicates tied/shared tensors
    total = sum(p.numel() for p in params.values())
    emb_mod = model.get_input_embeddings()
    out_mod = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    embedding = emb_mod.weight.numel() if emb_mod is not None else 0
    tied = out_mod is not None and emb_mod is not None and out_mod.weight is emb_mod.weight
    lm_head = 0
    if out_mod is not None and not tied:
        lm_head = sum(p.numel() for p in out_mod.parameters())

    text_cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    n_layers = int(_first(text_cfg, "num_hidden_layers", "n_layer", "num_layers", default=0))
    layer_list = None
    for _name, mod in model.named_modules():
        if isinstance(mod, torch.nn.ModuleList) and n_layers and len(mod) == n_layers:
            layer_list = mod
            break
    per_layer = attn = mlp = norm = 0
    linears: list[LinearShape] = []
    if layer_list is not None:
        first = layer_list[0]
        per_layer = max(sum(p.numel() for p in lay.parameters()) for lay in layer_list)
        for name, sub in first.named_modules():
            if isinstance(sub, torch.nn.Linear):
                low = name.lower()
                feeds = "attn_in"
                if any(k in low for k in ("o_proj", "out_proj", "dense", "c_proj", "wo")) and "attn" in low:
                    feeds = "attn_out"
                elif any(k in low for k in ("down", "fc2", "w2", "4h_to_h")):
                    feeds = "mlp_act"
                elif any(k in low for k in ("mlp", "ffn", "feed_forward", "gate", "up", "fc1", "w1", "w3")):
                    feeds = "mlp_in"
                linears.append(
                    LinearShape(
                        name=name.split(".")[-1],
                        d_in=sub.in_features,
                        d_out=sub.out_features,
                        bias=sub.bias is not None,
                        feeds_from=feeds,
                    )
                )
        for name, p in first.named_parameters():
            low = name.lower()
            if "norm" in low or "ln" in low.split(".")[0]:
                norm += p.numel()
            elif "attn" in low or "attention" in low:
                attn += p.numel()
            else:
                mlp += p.numel()
    h = int(_first(text_cfg, "hidden_size", "n_embd", "d_model", default=0))
    nh = int(_first(text_cfg, "num_attention_heads", "n_head", default=1))
    nkv = int(_first(text_cfg, "num_key_value_heads", "num_kv_heads", default=nh))
    hd = int(_first(text_cfg, "head_dim", default=(h // nh) if nh else 0))
    inter = int(_first(text_cfg, "intermediate_size", "ffn_dim", "n_inner", default=4 * h))
    vocab = int(_first(text_cfg, "vocab_size", default=0))
    gated = any(lin.name.startswith(("gate", "w1")) for lin in linears)
    lin_total = n_layers * sum(lin.d_in * lin.d_out for lin in linears)
    other = total - embedding - lm_head - n_layers * per_layer
    return ParamCount(
        model_type=str(model_type),
        source="meta-device",
        total=total,
        embedding=embedding,
        lm_head=lm_head,
        other=max(other, 0),
        layers=n_layers,
        per_layer=per_layer,
        attn_per_layer=attn,
        mlp_per_layer=mlp,
        norm_per_layer=norm,
        hidden=h,
        heads=nh,
        kv_heads=nkv,
        head_dim=hd,
        q_dim=nh * hd,
        kv_dim=nkv * hd,
        intermediate=inter,
        vocab=vocab,
        tied=tied,
        block="gated" if gated else "gelu",
        norm="rms" if "rms" in type(model).__name__.lower() or gated else "layer",
        linears=linears,
        layer_linear_weights=lin_total,
        notes=[
            f"counted by instantiating {type(model).__name__} on the meta device (transformers "
            f"{transformers.__version__}); shape facts for the memory model are best-effort"
        ],
    )

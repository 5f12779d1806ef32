"""The parts of a decoder layer a module name stands for (LLaMA-Factory freeze_trainable_modules, axolotl
unfrozen_parameters), sized from the catalog's shapes."""

from __future__ import annotations

from typing import Any

__all__ = ["ATTENTION", "MLP", "layer_part"]

# the names transformers gives a decoder layer's children (e.g. transformers 5.25 models/llama/
# modeling_llama.py LlamaDecoderLayer: self_attn, mlp, input_layernorm, post_attention_layernorm;
# gpt2: attn, mlp, ln_1, ln_2; mixtral: block_sparse_moe before transformers 5)
ATTENTION = {"self_attn", "attn", "attention", "self_attention"}
MLP = {"mlp", "block_sparse_moe", "feed_forward", "ffn", "moe"}


def _is_norm(name: str) -> bool:
    return name.endswith("norm") or name in {"ln_1", "ln_2", "ln_attn", "ln_mlp"}


def layer_part(pc: Any, name: str) -> int | None:
    """Parameters of one decoder layer under a child module's name (self_attn, mlp, a norm), or None when
    the name is not one the catalog can size."""
    if name in ATTENTION:
        return int(pc.attn_per_layer)
    if name in MLP:
        return int(pc.mlp_per_layer)
    if _is_norm(name) and pc.norms_per_layer:
        return int(pc.norm_per_layer // pc.norms_per_layer)
    return None

"""The parameter counter's result types: one Linear of a layer, and the whole count with its shape facts."""

from __future__ import annotations

from typing import Literal

from advisor.core.records import field, record

__all__ = ["LinearShape", "ParamCount", "UnknownModelTypeError"]


class UnknownModelTypeError(ValueError):
    """No built-in formula for this model_type and transformers/torch are not importable."""


# The estimator's results are frozen dataclasses, not pydantic models: they are built by this package
# from already-checked numbers (nothing to validate), and a pre-commit hook must not pay pydantic's import
# and schema building for them. Change them with records.replace().
@record(frozen=True, slots=True, kw_only=True)
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


@record(frozen=True, slots=True, kw_only=True)
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
    moe_computed: int = 0  # experts each token runs through in the implementation (0: moe_active)
    moe_layers: int = 0
    expert_intermediate: int = 0
    shared_expert_intermediate: int = 0
    attn_dropout: float = 0.0
    hidden_dropout: float = 0.0
    embd_dropout: float = 0.0
    final_logit_softcapping: float | None = None
    normalized_head: bool = False  # the lm_head multiplies by a normalised copy of its weight (Baichuan 2)
    attn_logit_softcapping: float | None = None  # eager attention tanh-caps the scores (Gemma 2)
    linears: list[LinearShape] = field(default_factory=list)  # per (dense or MoE) decoder layer
    # weights of all Linear layers inside the decoder layers, summed over layers (what bitsandbytes 4-bit
    # quantizes; lm_head and embeddings stay 16-bit)
    layer_linear_weights: int = 0
    # layers whose attention is another token mixer (LFM2's short convolutions): counted in ``total``, while
    # ``linears`` and the activation terms describe an attention layer
    mixer_layers: int = 0
    notes: list[str] = field(default_factory=list)
    # what the estimate must state with its figures: a term counted as a bound, or unknown, and why
    caveats: list[str] = field(default_factory=list)

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
    def attention_layers(self) -> int:
        """Layers that run attention: a hybrid's mixer layers (Mamba2, short convolutions) do not."""
        return self.layers - self.mixer_layers

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
    def experts_computed(self) -> int:
        """Routed experts a token's forward multiplies: top-k, or E where every expert sees every token."""
        return self.moe_computed or self.moe_active

    @property
    def computed_params(self) -> int:
        """Parameters multiplied per token: ``active_params`` with the experts the implementation runs."""
        if not self.moe_experts:
            return self.total
        idle = self.expert_params * (self.moe_experts - self.experts_computed) // self.moe_experts
        return self.total - idle

    @property
    def matmul_params(self) -> int:
        """Parameters used in matmuls per token (6N FLOPs rule): all but the input-embedding lookup."""
        lookup = self.embedding if not self.tied else 0
        return self.computed_params - lookup - self.position_embedding

    @property
    def largest_tensor(self) -> int:
        biggest_linear = max((lin.d_in * lin.d_out for lin in self.linears), default=0)
        return max(self.embedding, self.lm_head, biggest_linear)

    def summary(self) -> str:
        return (
            f"{self.model_type}: {self.total:,} params ({self.layers} layers x {self.per_layer:,}, "
            f"embedding {self.embedding:,}, lm_head {'tied' if self.tied else f'{self.lm_head:,}'})"
        )

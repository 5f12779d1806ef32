"""Exact parameter counts from a model's config.json (memory-model.md section 8).

Architectures are data: ``families.ARCHS`` gives, per ``model_type``, the Linears of one layer (in/out dims
as names of config-derived dims), biases, norms, q/k norms, tied embeddings, learned positions, MoE experts
and shared experts, and encoder-decoder stacks; ``counter.count_from_table`` is the one counter over it.

    per layer = sum(Linear weights d_in*d_out + biases d_out) + q/k norms + norms_per_layer * norm
    MoE layer = attention + E * expert MLP + router h*E (+ shared expert + its h->1 gate)
    total     = V*h + L*per_layer + final norm + (0 if tied else V*h [+ V if lm_head bias])
                + learned positions + extras (pooler, projections)

Gated-ness is decided by ``model_type``, never by ``hidden_act`` (Gemma's gelu is GeGLU). Tied weights are
counted once, like ``named_parameters()``, DeepSpeed's data_ptr dedup and safetensors do.

Nothing here imports torch or transformers; an unknown ``model_type`` falls back to ``_meta.count_on_meta``
(instantiation on the meta device) only when both are installed.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from advisor.estimate.params.shapes import LinearShape, ParamCount, UnknownModelTypeError

# `check` (the pre-commit path) turns this off: an unknown model_type is then not modelled instead of
# importing torch and transformers (seconds) to count it on the meta device; `estimate` counts it
META_DEVICE_COUNTING: ContextVar[bool] = ContextVar("gpu_advise_meta_device_counting", default=True)

__all__ = [
    "LinearShape",
    "ParamCount",
    "UnknownModelTypeError",
    "count_params",
    "formula_model_types",
]


def formula_model_types() -> list[str]:
    """model_type values the shape table covers (no transformers needed)."""
    from advisor.estimate.params.families_2025 import ARCHS

    return sorted(ARCHS)


def count_params(config: dict[str, Any]) -> ParamCount:
    """Exact parameter count of a model from its config.json dict.

    A multimodal config whose own model_type has no shape but whose ``text_config`` does is counted by its
    text decoder. Raises UnknownModelTypeError when the model type has no shape and transformers+torch are
    unavailable, ValueError when a dimension the shape needs is missing.
    """
    # the table is imported on the first count, not with the package (a pre-commit run may never count)
    from advisor.estimate.params.counter import count_from_table
    from advisor.estimate.params.families_2025 import ARCHS

    mt = str(config.get("model_type", "")).lower()
    text = config.get("text_config")
    if mt not in ARCHS and isinstance(text, dict):
        inner = dict(text)
        inner.setdefault("model_type", f"{mt}_text" if mt else "")
        if str(inner["model_type"]).lower() in ARCHS:
            pc = count_params(inner)
            note = f"counted the text decoder of the multimodal '{mt}' config only"
            if isinstance(config.get("vision_config"), dict):
                note += ": its vision encoder and projector are not counted (their memory is unknown)"
                pc.caveats.append(note)
            pc.notes.append(note)
            return pc
    if mt in ARCHS:
        return count_from_table(config, mt)
    if not META_DEVICE_COUNTING.get():
        raise UnknownModelTypeError(
            f"model_type '{mt or '?'}' is not modelled on the check path (no built-in formula; "
            "`gpu-advise estimate` counts it with transformers on the meta device)"
        )
    from advisor.estimate import _meta  # lazy: imports torch/transformers

    if _meta.available():
        return _meta.count_on_meta(config)
    raise UnknownModelTypeError(
        f"no parameter formula for model_type '{mt or '?'}' and transformers/torch are not installed "
        f"(known types: {', '.join(formula_model_types())})"
    )

"""What the run's files say about tokens per sample, packing and padding, for the time model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.facts.namespace_entries import truth, written

if TYPE_CHECKING:
    from advisor.estimate.timing import DataLength
    from advisor.plan.run_plan import RunPlan


def data_length(plan: RunPlan) -> DataLength:
    """Tokens per sample (settings dataset-tokens / dataset-samples), packing, padding-free batches, length
    grouping and whether packed rows attend within each sample (advisor.facts.packed_attention)."""
    from advisor.estimate.timing import DataLength

    tokens = samples = None
    for s in (plan.settings, plan.project):
        if s is not None:
            tokens = tokens if tokens is not None else getattr(s, "dataset_tokens", None)
            samples = samples if samples is not None else getattr(s, "dataset_samples", None)
    mean = float(tokens) / float(samples) if tokens and samples and tokens > 0 and samples > 0 else None
    # TRL SFTConfig.packing, axolotl sample_packing, LLaMA-Factory packing / neat_packing
    packed = any(truth(written(plan.training, k)) for k in ("packing", "sample_packing", "neat_packing"))
    per_document = None
    if packed:
        from advisor.facts.packed_attention import per_document_attention

        per_document = per_document_attention(plan)
    return DataLength(
        tokens_per_sample=mean,
        packed=packed,
        padding_free=bool(truth(written(plan.training, "padding_free"))),  # TRL SFTConfig.padding_free
        length_grouped=bool(truth(written(plan.training, "group_by_length"))),  # HF TrainingArguments
        per_document=per_document,
        source="dataset-tokens / dataset-samples",
    )

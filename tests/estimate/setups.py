"""The single-GPU bf16 full fine-tune that the phase-accounting tests vary one field of."""

from __future__ import annotations

from advisor.estimate import TrainingSetup, resolve_model


def checkpointed_full_ft(name: str, micro_batch: int, seq_len: int, **kw: object) -> TrainingSetup:
    """bf16 weights without autocast, fused AdamW, gradient checkpointing, SDPA, allocated bytes, the
    logits dropped before backward; `kw` replaces any field (`model=` a count of its own)."""
    fields: dict[str, object] = dict(
        model=resolve_model(name).count(),
        method="full",
        micro_batch=micro_batch,
        seq_len=seq_len,
        precision="bf16",
        amp=False,
        optimizer="adamw_torch_fused",
        gradient_checkpointing=True,
        attn_implementation="sdpa",
        metric="allocated",
        kept_logits_bytes=0,
    )
    fields.update(kw)
    return TrainingSetup(**fields)  # type: ignore[arg-type]

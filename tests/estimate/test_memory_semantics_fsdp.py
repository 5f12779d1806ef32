"""FSDP mixed precision computes in the param dtype (issue 21 section 2): accelerate keeps a full fine-tune's
FSDP shards in fp32 under bf16 mixed precision and gathers them in MixedPrecision.param_dtype (accelerate
1.16 utils/dataclasses.py:1981-2011), so the embedding output, the residual stream, the norms' outputs and
the lm_head input are bf16 - the activations of a bf16-stored run, not of an fp32 load under autocast."""

from __future__ import annotations

import pytest

from advisor.core.records import replace
from advisor.estimate import TrainingSetup, resolve_model
from advisor.estimate.memory.peak import phase_terms


def _activations(s: TrainingSetup) -> float:
    """Saved activations at backward start plus the recomputed layer (its saved tensors)."""
    pt = phase_terms(s)
    saved = sum(t.bytes for t in pt.phases["backward start"] if t.name == "activations")
    layer = sum(t.bytes for t in pt.phases["end of backward"] if t.name.startswith("last layer"))
    return saved + layer


@pytest.mark.parametrize("checkpointing", [False, True])
def test_fsdp_fp32_shards_save_bf16_activations(checkpointing: bool) -> None:
    s = TrainingSetup(
        model=resolve_model("meta-llama/Meta-Llama-3-8B").count(),
        micro_batch=1,
        seq_len=2048,
        storage_dtype="fp32",
        autocast="bf16",
        optimizer="adamw_torch_fused",
        gradient_checkpointing=checkpointing,
        attn_implementation="sdpa",
        strategy="fsdp",
        world_size=8,
        metric="allocated",
    )
    bf16_store = replace(s, storage_dtype="bf16")
    assert _activations(s) == pytest.approx(_activations(bf16_store))
    # on one GPU the fp32 weights are the compute weights: an fp32 residual stream under autocast
    single = replace(s, strategy="none", world_size=1)
    assert _activations(single) > _activations(replace(single, storage_dtype="bf16")) * 1.05

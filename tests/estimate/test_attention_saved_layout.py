"""Saved attention tensors that depend on layout: a fused q/k/v output kept whole by v's slice, and the
attention output copied for o_proj when the query was concatenated (partial rotary)."""

from __future__ import annotations

import pytest

from advisor.estimate import count_params, resolve_model
from advisor.estimate.memory import TrainingSetup
from advisor.estimate.memory.activations import ROTARY_CAT, _fused_qkv_extra, layer_bytes
from advisor.estimate.memory.resolve import ResolvedSetup, resolve_setup


def _resolved(model: str, method: str = "full") -> ResolvedSetup:
    info = resolve_model(model)
    assert info is not None and info.config, model
    pc = count_params(info.config)
    setup = TrainingSetup(
        model=pc,
        method=method,  # type: ignore[arg-type]
        micro_batch=1,
        seq_len=256,
        storage_dtype="bf16",
        autocast="bf16",
        optimizer="adamw_torch_fused",
        attn_implementation="sdpa",
    )
    return resolve_setup(setup)


@pytest.mark.parametrize(
    ("model", "fused"),
    [
        ("microsoft/Phi-3-mini-4k-instruct", True),
        ("EleutherAI/pythia-1.4b", True),
        ("meta-llama/Llama-3.2-1B", False),
    ],
)
def test_fused_qkv_keeps_q_and_k_slices_alive(model: str, fused: bool) -> None:
    r = _resolved(model)
    assert _fused_qkv_extra(r) == ((r.pc.q_dim + r.pc.kv_dim) if fused else 0)


def test_phi3_full_layer_matches_the_simulated_inventory() -> None:
    """Per token, one Phi-3-mini decoder layer (h 3072, I 8192, 32 heads, MHA), full bf16 + autocast, SDPA:
    the storages the simulated step (benchmarks/simulate.py, 2 minus 1 layer at seq 256) holds at the head."""
    r = _resolved("microsoft/Phi-3-mini-4k-instruct")
    assert r.pc.model_type in ROTARY_CAT
    h, i, q, kv, heads = 3072, 8192, 3072, 3072, 32
    inventory = (
        2 * 4 * h  # RMSNorm fp32 upcasts of the two norm inputs
        + 2 * 2 * h  # their bf16 casts back, saved by the weight multiply
        + 2 * 2 * h  # the weight multiply outputs: qkv_proj's and gate_up_proj's inputs
        + 2 * 2 * i  # gate_up output (gate and up are slices of it)
        + 2 * i  # silu output
        + 2 * i  # up * silu(gate): down_proj's input
        + 2 * (q + 2 * kv)  # qkv output, kept whole by v's slice
        + 2 * (q + kv)  # rotated q and k (torch.cat)
        + 2 * q  # attention output
        + 2 * q  # its contiguous copy, o_proj's input
        + 4 * heads  # logsumexp
    )
    assert layer_bytes(r)[0] == inventory


def test_gemma2_eager_keeps_the_capped_scores() -> None:
    """Gemma 2's attention tanh-caps the scores (its config's default 50.0 when the key is absent); tanh saves
    its output, one more bf16 (b, heads, s, s) tensor per layer, as the simulated step holds."""
    info = resolve_model("google/gemma-2-2b")
    assert info is not None and info.config
    cfg = dict(info.config)
    cfg.pop("attn_logit_softcapping", None)
    pc = count_params(cfg)
    assert pc.attn_logit_softcapping == 50.0
    uncapped = count_params(cfg | {"attn_logit_softcapping": None})
    assert uncapped.attn_logit_softcapping is None

    def saved(p: object) -> float:
        setup = TrainingSetup(
            model=p,  # type: ignore[arg-type]
            method="full",
            micro_batch=1,
            seq_len=256,
            storage_dtype="bf16",
            autocast="bf16",
            optimizer="adamw_torch_fused",
            attn_implementation="eager",
        )
        return layer_bytes(resolve_setup(setup))[0]

    assert saved(pc) - saved(uncapped) == 2 * pc.heads * 256

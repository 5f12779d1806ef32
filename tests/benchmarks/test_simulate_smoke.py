"""The simulated training step (benchmarks/simulate.py) is itself right: on a tiny Llama-shaped model its
weights, gradients and optimizer states equal the exact byte counts of the model's tensors."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import simulate as S  # noqa: E402

TINY = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "vocab_size": 1000,
    "tie_word_embeddings": False,
}


def _rounded(numel: int, nbytes: int) -> int:
    return S._round(numel * nbytes)


def _exact(method: str) -> tuple[int, int]:
    """(every parameter's bytes, the trainable parameters' bytes), each tensor rounded to 512 like CUDA."""
    model, _ = S.build_model(S.SimRun(config=TINY, method=method))
    every = sum(_rounded(p.numel(), p.element_size()) for p in model.parameters())
    trained = sum(_rounded(p.numel(), p.element_size()) for p in model.parameters() if p.requires_grad)
    return every, trained


@pytest.mark.parametrize("method", ["full", "lora"])
def test_weights_gradients_states_are_the_models_bytes(method: str) -> None:
    run = S.SimRun(config=TINY, method=method, micro_batch=2, seq=32, optimizer="adamw_torch_fused")
    sim = S.simulate(run)
    every, trained = _exact(method)
    assert sim.terms["weights"] == every
    assert sim.terms["gradients"] == trained
    assert sim.terms["optimizer states"] == 2 * trained + sum(  # exp_avg, exp_avg_sq + one fp32 step each
        S._round(4) for p in S.build_model(run)[0].parameters() if p.requires_grad
    )
    assert sim.terms["activations"] > 0
    if method == "lora":  # PEFT's adapters are fp32, the base bf16: the adapters are a sliver of it
        assert 0 < trained < every / 10


def test_foreach_adamw_step_copies_the_gradients() -> None:
    """foreach AdamW's temporary is one copy of the trainable parameters (torch/optim/adamw.py foreach)."""
    run = S.SimRun(config=TINY, method="full", seq=32, optimizer="adamw_torch")
    sim = S.simulate(run)
    assert sim.terms["optimizer-step temporaries"] >= 0.9 * sim.terms["gradients"]


SMALL = {
    **TINY,
    "hidden_size": 256,
    "intermediate_size": 512,
    "vocab_size": 4000,
    "tie_word_embeddings": True,
}


@pytest.mark.parametrize(
    ("method", "checkpointing"), [("full", False), ("full", True), ("lora", True), ("lora", False)]
)
def test_the_analytic_model_agrees_with_the_simulated_step(method: str, checkpointing: bool) -> None:
    """What the referee proved (issue 21): a checkpointed layer is recomputed after backward starts, SDPA's
    output is o_proj's input, LoRA's dropout saves a 1-byte mask."""
    run = S.SimRun(config=SMALL, method=method, seq=512, gradient_checkpointing=checkpointing)
    cmp_ = S.compare(S.simulate(run, both_gc=False), S.analytic(run))
    # the backward phase is left out: the estimate adds the logits and one layer's working set, which the
    # simulated step shows do not coexist (advisor/estimate/memory/peak.py says why it still adds them)
    # with checkpointing at 2 layers the tensors alive at the lm_head (its input, the final norm's) outweigh
    # the saved layer inputs: activations are compared without it
    terms = ["weights", "gradients", "optimizer states", "optimizer-step phase (dynamic)"]
    for term in terms + ([] if checkpointing else ["activations"]):
        sim, ana = cmp_[term]
        assert ana == pytest.approx(sim, rel=0.05), term
    if method == "full" and not checkpointing:  # SDPA's output counted once: the old model was +3.4% here
        sim, ana = cmp_["activations"]
        assert ana == pytest.approx(sim, rel=0.02)

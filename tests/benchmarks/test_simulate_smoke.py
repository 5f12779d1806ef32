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
    """The phase accounting the referee proved (issue 21): checkpointed layers recomputed after the logits
    are freed, SDPA's output shared with o_proj, a tied embedding's gradient at the end of backward."""
    run = S.SimRun(config=SMALL, method=method, seq=512, gradient_checkpointing=checkpointing)
    cmp_ = S.compare(S.simulate(run, both_gc=False), S.analytic(run))
    for term in ("weights", "gradients", "optimizer states", "backward phase (dynamic)", "peak allocated"):
        sim, ana = cmp_[term]
        assert ana == pytest.approx(sim, rel=0.05), term

"""Terms the simulated step measures apart (benchmarks/simulate.py): autocast's casts of fp32 adapters
saved for backward (none with checkpointing: autocast's cache is cleared when the forward's autocast exits)
and a per-parameter AdamW loop's temporaries; the analytic model agrees with both."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import simulate as S  # noqa: E402

SMALL = {
    "model_type": "llama",
    "hidden_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 512,
    "vocab_size": 4000,
    "tie_word_embeddings": True,
}


@pytest.mark.parametrize("checkpointing", [False, True])
def test_adapter_casts_saved_only_without_checkpointing(checkpointing: bool) -> None:
    run = S.SimRun(config=SMALL, method="lora", seq=256, gradient_checkpointing=checkpointing)
    sim = S.simulate(run, both_gc=False)
    ana = S.analytic(run)
    casts = sim.terms["autocast weight copies"]
    if checkpointing:
        assert casts == 0
        assert ana["autocast weight copies"] == 0
    else:
        assert casts > 0
        assert ana["autocast weight copies"] == pytest.approx(casts, rel=0.05)


@pytest.mark.parametrize("method", ["full", "lora"])
def test_per_parameter_adamw_temporaries(method: str) -> None:
    run = S.SimRun(config=SMALL, method=method, seq=128, optimizer="adamw_hf")
    sim = S.simulate(run, both_gc=False)
    ana = S.analytic(run)
    assert ana["optimizer-step temporaries"] == pytest.approx(
        sim.terms["optimizer-step temporaries"], rel=0.05
    )

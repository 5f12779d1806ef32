"""The recomputed layer's costliest adapter call (issue 21 section 1, benchmarks/simulate_grid.py).

PEFT's LoRA Linear runs `result = self.base_layer(x)`, then
`x = self._cast_input_dtype(x, lora_A.weight.dtype)` and `lora_B(lora_A(dropout(x)))`
(peft 0.21 tuners/lora/layer.py:1088-1102): with fp32 adapters under bf16 autocast, the fp32 cast and the
fp32 dropout output live beside the layer's saved tensors while down_proj's adapter runs, with the
residual, the MLP input and down_proj's input still held by the Python frames. The simulated Mistral-7B
step (LoRA all-linear, checkpointed, 1x1024) peaks there, 6 % above the old estimate (the layer's saved
tensors + the backward working set).
"""

from __future__ import annotations

import pytest

from advisor.estimate import TrainingSetup, resolve_model
from advisor.estimate.memory.activations import adapter_call_peak
from advisor.estimate.memory.peak import phase_terms

H, FF, T = 4096, 14336, 1024  # Mistral-7B hidden, intermediate; 1 x 1024 tokens


def _resolved(**kw: object) -> object:
    fields: dict[str, object] = dict(
        model=resolve_model("mistralai/Mistral-7B-v0.1").count(),
        method="lora",
        lora_r=16,
        lora_targets=["all-linear"],
        lora_dropout=0.05,
        micro_batch=1,
        seq_len=T,
        storage_dtype="bf16",
        autocast="bf16",
        optimizer="adamw_torch_fused",
        gradient_checkpointing=True,
        attn_implementation="sdpa",
        metric="allocated",
    )
    fields.update(kw)
    return phase_terms(TrainingSetup(**fields)).resolved  # type: ignore[arg-type]


def test_down_proj_adapter_under_autocast_holds_the_fp32_cast_and_dropout_output() -> None:
    r = _resolved()
    # residual + incoming gradient + MLP input + base output (bf16, h each), down_proj's input (bf16, i),
    # PEFT's fp32 cast + the fp32 dropout output (i each)
    assert adapter_call_peak(r, quantized=False) == pytest.approx((4 * 2 * H + 2 * FF + 2 * 4 * FF) * T)


def test_without_autocast_lora_a_saves_the_cast_itself() -> None:
    # no dropout: lora_A's saved input is PEFT's cast (counted with the layer's saved tensors), no transient
    r = _resolved(autocast="off", lora_dropout=0.0)
    assert adapter_call_peak(r, quantized=False) == pytest.approx((4 * 2 * H + 2 * FF) * T)
    # with dropout lora_A saves the dropout output: the cast dies after the call
    r = _resolved(autocast="off")
    assert adapter_call_peak(r, quantized=False) == pytest.approx((4 * 2 * H + 2 * FF + 4 * FF) * T)


def test_without_checkpointing_no_gradient_is_live_in_the_forward() -> None:
    r = _resolved(gradient_checkpointing=False)
    assert adapter_call_peak(r, quantized=False) == pytest.approx((3 * 2 * H + 2 * FF + 2 * 4 * FF) * T)


def test_a_4bit_base_call_holds_its_dequantized_weight() -> None:
    r = _resolved(lora_targets=["q_proj"], lora_dropout=0.0, autocast="off")
    # the widest call is a base one: down_proj's dequantized bf16 weight beside its input and output
    down = (4 * 2 * H + 2 * FF) * T + 2 * H * FF
    assert adapter_call_peak(r, quantized=True) == pytest.approx(down)


def test_full_finetune_and_default_targets_keep_the_backward_working_set() -> None:
    assert adapter_call_peak(_resolved(method="full"), quantized=False) == 0.0
    r = _resolved(lora_targets=None)  # q_proj, v_proj: their calls are smaller than the MLP's backward
    pt_work = 2 * (3 * FF + 2 * H) * T
    assert adapter_call_peak(r, quantized=False) < pt_work


def test_4bit_dequant_buffer_does_not_sum_with_the_other_backward_temporaries() -> None:
    # the simulated step peaks the same for LoRA and QLoRA all-linear here (0.673 GiB above the static
    # memory): the dequantized weight lives for one Linear's backward, the adapter call is the larger
    def phases(method: str) -> dict[str, float]:
        s = TrainingSetup(
            model=resolve_model("mistralai/Mistral-7B-v0.1").count(),
            method=method,  # type: ignore[arg-type]
            lora_r=16,
            lora_targets=["all-linear"],
            lora_dropout=0.05,
            micro_batch=1,
            seq_len=T,
            storage_dtype="bf16",
            autocast="bf16",
            gradient_checkpointing=True,
            attn_implementation="sdpa",
            metric="allocated",
            prepare_kbit_training=False,
            qlora_double_quant=False,
        )
        pt = phase_terms(s)
        return {k: sum(t.bytes for t in ts) for k, ts in pt.phases.items()}

    lora, qlora = phases("lora"), phases("qlora")
    assert qlora["backward start"] == pytest.approx(lora["backward start"])
    assert qlora["backward start"] / 2**30 == pytest.approx(0.673, rel=0.02)

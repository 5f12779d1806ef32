"""PEFT's fp32 adapters on a 16-bit base without autocast cost HBM traffic (issue 21 section 2, "Time").

PEFT upcasts bf16/fp16 adapter weights to fp32 (autocast_adapter_dtype=True, peft 0.21.2
tuners/tuners_utils.py:2705-2722) and casts every targeted Linear's input to the adapter dtype
(tuners/lora/layer.py:1100), so each targeted input gets an fp32 copy, and without autocast the adapter
output, `* scaling` and the sum run in fp32 before `result.to(torch_result_dtype)` (layer.py:1101-1114).
The step time leaves this out (fused or 16-bit adapter kernels pay none of it) and the Time line names it
with what PEFT's own layer would add (timing.not_timed). From helper h8's 12633cf.

The referee below runs the installed PEFT LoRA Linear forward and backward on CPU under a dispatch mode that
adds up the bytes each aten op reads and writes, once with fp32 adapters and once with adapters in the
base's bf16, and compares the difference with the time model's per-element table.
"""

from __future__ import annotations

import contextlib

import pytest

from advisor.core.records import replace
from advisor.estimate import TrainingSetup, estimate_time, resolve_model
from advisor.estimate.timing import (
    ADAPTER_CAST_BYTES_NO_AUTOCAST,
    ELEMENTWISE_HBM_EFFICIENCY,
    MFU_FP32_SIMT,
    adapter_cast_bytes_per_token,
)

# no traffic of their own (allocation, views, the seed gradient), identical in both runs anyway
_NO_TRAFFIC = ("empty_like", "detach", "aten.t.", "ones_like", "view", "expand")


def _extra_bytes_per_token(autocast: bool, tokens: int = 2048, d_in: int = 256, d_out: int = 512) -> float:
    torch = pytest.importorskip("torch")
    peft = pytest.importorskip("peft")
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class Count(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.bytes = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            out = func(*args, **(kwargs or {}))
            if not any(k in str(func) for k in _NO_TRAFFIC):
                for t in tree_flatten((args, kwargs))[0] + tree_flatten(out)[0]:
                    # the token-sized tensors, transposed ones too (the adapters' r x d weights: negligible)
                    if isinstance(t, torch.Tensor) and t.dim() == 2 and tokens in t.shape:
                        self.bytes += t.numel() * t.element_size()
            return out

    def run(fp32_adapters: bool) -> int:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(d_in, d_out, bias=False)).to(torch.bfloat16)
        config = peft.LoraConfig(r=8, target_modules=["0"], lora_dropout=0.0)
        model = peft.get_peft_model(model, config, autocast_adapter_dtype=fp32_adapters)
        x = torch.randn(tokens, d_in, dtype=torch.bfloat16, requires_grad=True)
        ctx = torch.autocast("cpu", dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
        counter = Count()
        with counter:
            with ctx:
                y = model(x)
            y.backward(torch.ones_like(y))
        return counter.bytes

    return (run(True) - run(False)) / tokens


def test_the_table_matches_what_the_real_peft_layer_moves() -> None:
    d_in, d_out = 256, 512
    measured = _extra_bytes_per_token(False, d_in=d_in, d_out=d_out)
    f_in, f_out, b_in, b_out = ADAPTER_CAST_BYTES_NO_AUTOCAST["linear"]
    modelled = (f_in + b_in) * d_in + (f_out + b_out) * d_out
    assert measured > 0
    assert modelled == pytest.approx(measured, rel=0.02)


LLAMA3_8B = "meta-llama/Meta-Llama-3-8B"
ALL = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _setup(**kw: object) -> TrainingSetup:
    fields: dict[str, object] = dict(
        method="lora",
        lora_r=16,
        lora_targets=ALL,
        micro_batch=2,
        seq_len=4096,
        gradient_checkpointing=False,
        optimizer="adamw_torch",
        storage_dtype="bf16",
        autocast="off",
        precision="bf16",
    )
    fields.update(kw)
    return TrainingSetup(model=resolve_model(LLAMA3_8B).count(), **fields)  # type: ignore[arg-type]


def test_bytes_per_token_follow_the_shapes_passes_and_dropout() -> None:
    s = _setup()
    pc = s.model
    f_in, f_out, b_in, b_out = ADAPTER_CAST_BYTES_NO_AUTOCAST["linear"]
    lins = [lin for lin in pc.linears if lin.name in ALL]
    d_in = sum(lin.d_in * lin.count for lin in lins)
    d_out = sum(lin.d_out * lin.count for lin in lins)
    want = ((f_in + b_in) * d_in + (f_out + b_out) * d_out) * pc.layers
    assert adapter_cast_bytes_per_token(s) == pytest.approx(want)
    # checkpointing runs the forward (and its casts) twice
    gc = adapter_cast_bytes_per_token(replace(s, gradient_checkpointing=True))
    assert gc == pytest.approx(want + (f_in * d_in + f_out * d_out) * pc.layers)
    # dropout on the fp32 copy: 4 extra bytes per input element in the forward and in the backward
    drop = adapter_cast_bytes_per_token(replace(s, lora_dropout=0.05))
    assert drop == pytest.approx(want + 8 * d_in * pc.layers)


@pytest.mark.parametrize(
    "change",
    [
        dict(trainable_dtype="bf16"),  # adapters in the base's dtype (autocast_adapter_dtype=False)
        dict(autocast="bf16"),  # autocast runs the adapter path in bf16
        dict(method="full", lora_targets=None, lora_r=None),
        dict(framework="torchtune"),  # torchtune builds the adapters in the model's dtype
        dict(strategy="fsdp", world_size=2),  # FSDP gathers the adapters in its param_dtype with the unit
        dict(torch_compile=True),  # Inductor fuses the casts
        dict(storage_dtype="fp32", precision="fp32"),  # an fp32 stream: the cast is a no-op
    ],
)
def test_no_cast_traffic_where_the_adapter_matches_the_stream(change: dict[str, object]) -> None:
    s = _setup(**change)
    assert adapter_cast_bytes_per_token(s) == 0.0
    t = estimate_time(s, 989.0, 1.0, "H100-SXM", 1, fp32_tflops=67.0)
    assert not any("fp32 adapters" in item for item in t.not_timed)


def test_the_time_line_says_what_peft_s_own_layer_adds_and_the_step_leaves_it_out() -> None:
    s = _setup()
    t = estimate_time(s, 989.0, 1.0, "H100-SXM", 1, fp32_tflops=67.0)
    same = estimate_time(_setup(trainable_dtype="bf16"), 989.0, 1.0, "H100-SXM", 1, fp32_tflops=67.0)
    # not in the point estimate (only the optimizer step of fp32 vs bf16 adapter states differs)
    assert t.step_time_s == pytest.approx(same.step_time_s, rel=5e-3)
    tokens = t.computed_tokens_per_step
    cast_s = tokens * adapter_cast_bytes_per_token(s) / (3350e9 * ELEMENTWISE_HBM_EFFICIENCY)
    from advisor.estimate import lora_params

    flops = 6.0 * lora_params(s.model, 16, sorted(ALL))
    matmul_s = tokens * flops * (1 / (67e12 * MFU_FP32_SIMT) - 1 / (989e12 * t.mfu))
    (item,) = [i for i in t.not_timed if "fp32 adapters" in i]
    assert f"adds about {cast_s + matmul_s:.2f} s per optimizer step" in item
    assert f"+{(cast_s + matmul_s) / t.step_time_s:.0%}" in item

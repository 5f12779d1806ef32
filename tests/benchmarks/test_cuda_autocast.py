"""The simulated step casts as CUDA autocast does, not as CPU autocast (benchmarks/cuda_autocast.py): the
policy table is the installed torch's AutocastCUDA registrations, each op's output dtype under the simulated
bf16 autocast equals what the compiled CUDA kernel gives (probed on fake CUDA tensors), and a GPT-NeoX
LayerNorm inside the simulated step (forward and checkpointing's recompute) runs in fp32."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import cuda_autocast as C  # noqa: E402

BF16 = torch.bfloat16


def test_the_table_is_the_installed_torchs_cuda_list() -> None:
    assert set(C.CUDA_POLICY) == C.registrations("AutocastCUDA")


def _x(*shape: int, dtype: Any = BF16) -> Any:
    return torch.randn(*shape).to(dtype)


# (op, args): ops a transformer's step calls, in each of CUDA's policies and CPU's own lower-precision kernels
CASES = [
    ("layer_norm", lambda: (_x(4, 8), [8], _x(8), _x(8))),
    ("native_layer_norm", lambda: (_x(4, 8), [8], _x(8), _x(8), 1e-5)),
    ("group_norm", lambda: (_x(2, 4, 3), 2)),
    ("rms_norm", lambda: (_x(4, 8), [8])),
    ("pow.Tensor_Scalar", lambda: (_x(4, 8), 3)),
    ("rsqrt", lambda: (_x(4, 8),)),
    ("exp", lambda: (_x(4, 8),)),
    ("softplus", lambda: (_x(4, 8),)),
    ("softmax.int", lambda: (_x(4, 8), -1)),
    ("log_softmax.int", lambda: (_x(4, 8), -1)),
    ("sum", lambda: (_x(4, 8),)),
    ("cumsum", lambda: (_x(4, 8), 1)),
    ("logsumexp", lambda: (_x(4, 8), [1])),
    ("norm.Scalar", lambda: (_x(4, 8),)),
    ("addcmul", lambda: (_x(4, 8), _x(4, 8, dtype=torch.float32), _x(4, 8))),
    ("mm", lambda: (_x(4, 8, dtype=torch.float32), _x(8, 4, dtype=torch.float32))),
    ("linear", lambda: (_x(4, 8, dtype=torch.float32), _x(6, 8, dtype=torch.float32))),
    ("bmm", lambda: (_x(2, 4, 8, dtype=torch.float32), _x(2, 8, 4, dtype=torch.float32))),
    ("einsum", lambda: ("ij,kj->ik", [_x(4, 8, dtype=torch.float32), _x(6, 8, dtype=torch.float32)])),
    ("mv", lambda: (_x(4, 8, dtype=torch.float32), _x(8, dtype=torch.float32))),
]


@pytest.mark.parametrize(("name", "make"), CASES, ids=[c[0] for c in CASES])
def test_output_dtype_is_the_compiled_cuda_kernels(name: str, make: Any) -> None:
    args = make()
    cuda = C.probe_cuda_dtype(name, *args, autocast=BF16)
    with C.cuda_policy(), torch.autocast("cpu", dtype=BF16):
        out = C._op(name)(*args)
    got = tuple(o.dtype for o in out) if isinstance(out, tuple) else out.dtype
    assert got == cuda


def test_layer_norm_is_fp32_and_the_override_goes_away() -> None:
    ln = torch.nn.LayerNorm(8).to(BF16)
    x = _x(4, 8).requires_grad_()
    with torch.autocast("cpu", dtype=BF16):
        plain = ln(x).dtype
    with C.cuda_policy(), torch.autocast("cpu", dtype=BF16):
        y = ln(x)
    assert y.dtype == torch.float32
    y.sum().backward()  # the casts are autograd's: the gradient comes back in the input's dtype
    assert x.grad is not None and x.grad.dtype == BF16
    with torch.autocast("cpu", dtype=BF16):
        assert ln(x).dtype == plain  # CPU's own kernels again outside the context


def test_an_op_only_cpu_lists_runs_uncast() -> None:
    # CPU autocast runs trace in fp32 (autocast_mode.cpp KERNEL_CPU(trace, fp32)); CUDA has no kernel for it
    # (the fallthrough): the op keeps its input's dtype
    assert C.overrides()["trace"] == "fallthrough"
    x = _x(4, 4)
    with C.cuda_policy(), torch.autocast("cpu", dtype=BF16):
        assert torch.trace(x).dtype == BF16
        # a composite op only CPU lists runs its parts under CUDA's policy (log_softmax, nll_loss: fp32)
        loss = torch.nn.functional.cross_entropy(x, torch.zeros(4, dtype=torch.long))
    assert loss.dtype == torch.float32


@pytest.mark.parametrize("checkpointing", [False, True])
def test_simulated_gpt_neox_layer_norms_run_in_fp32(checkpointing: bool) -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("peft")
    import simulate as S

    tiny = {
        "model_type": "gpt_neox",
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 128,
        "vocab_size": 500,
        "rotary_pct": 0.25,
    }
    run = S.SimRun(config=tiny, method="full", seq=32, gradient_checkpointing=checkpointing)
    model, _fm, _notes = S._materialised(run)
    seen: list[Any] = []
    norms = [m for m in model.modules() if isinstance(m, torch.nn.LayerNorm)]
    hooks = [m.register_forward_hook(lambda _m, _i, out: seen.append(out.dtype)) for m in norms]
    try:
        S.simulate(run, both_gc=False)
    finally:
        for h in hooks:
            h.remove()
    calls = 2 * 2 + 1  # two per layer and the final one
    assert len(seen) == calls + (2 * 2 if checkpointing else 0)  # recomputed in backward
    assert set(seen) == {torch.float32}

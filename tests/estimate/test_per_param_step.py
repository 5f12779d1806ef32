"""A per-parameter AdamW loop's step temporaries (torch 2.13 torch/optim/adam.py:544 _single_tensor_adam):
`denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)` holds sqrt's output and the quotient at
once, and the previous parameter's `denom` is still bound while the next one's are made."""

from __future__ import annotations

from advisor.estimate import count_params, resolve_model
from advisor.estimate.memory.optimizers import per_param_step_elements


def _loop_peak(sizes: list[int]) -> int:
    """A hand-written copy of the upstream loop's lifetimes: live temporaries per parameter."""
    peak, denom = 0, 0
    for n in sizes:
        sqrt_out = n
        quotient = n
        peak = max(peak, denom + sqrt_out + quotient)  # the old denom is rebound only after the new is made
        denom = quotient  # add_ is in place: the quotient becomes denom; sqrt's output is freed
    return peak


def _llama_1b():  # type: ignore[no-untyped-def]
    info = resolve_model("meta-llama/Llama-3.2-1B")
    assert info is not None
    return count_params(info.config)


def test_lora_adapters_previous_plus_twice_the_current() -> None:
    pc = _llama_1b()
    r = 16
    sizes = []
    for _layer in range(2):
        for lin in pc.linears:
            if lin.name in {"q_proj", "v_proj"}:
                sizes += [r * lin.d_in, lin.d_out * r]
    assert per_param_step_elements(pc, False, {"q_proj", "v_proj"}, r) == _loop_peak(sizes)
    assert _loop_peak(sizes) == 3 * r * 2048  # q's B after q's A, both 2048 x 16


def test_full_fine_tune_twice_the_embedding_first_in_order() -> None:
    pc = _llama_1b()
    assert per_param_step_elements(pc, True, set(), 0) == 2 * pc.embedding


def test_nothing_trained_nothing_held() -> None:
    assert per_param_step_elements(_llama_1b(), False, set(), 16) == 0

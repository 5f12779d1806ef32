"""bitsandbytes before 0.43.2 keeps each 4-bit Linear's input as a context attribute, not through
save_for_backward (bitsandbytes/autograd/_functions.py MatMul4Bit.forward, 0.42.0 line 522-523):

    if any(ctx.needs_input_grad[:2]):
        ctx.tensors = (A, B)

Non-reentrant checkpointing drops only what save_for_backward hands its saved-tensor hooks
(torch/utils/checkpoint.py), so every checkpointed layer keeps that input from its forward to its backward;
reentrant checkpointing runs the forward without grad, so none outlives it. The Function below is a
hand-written copy of that form; the count of live inputs at the start of backward is what
advisor.estimate.memory.terms.bnb_recomputed_only decides between (all layers, or the recomputed one).
"""

from __future__ import annotations

import weakref
from typing import Any

import pytest

from advisor.estimate import count_params, resolve_model
from advisor.estimate.memory import TrainingSetup
from advisor.estimate.memory.resolve import resolve_setup
from advisor.estimate.memory.terms import bnb_recomputed_only

torch = pytest.importorskip("torch")
checkpoint = pytest.importorskip("torch.utils.checkpoint").checkpoint

LAYERS, T, H = 4, 8, 16


class MatMul4Bit(torch.autograd.Function):  # the upstream form, a dense weight standing in for NF4
    @staticmethod
    def forward(ctx: Any, A: Any, B: Any) -> Any:
        output = torch.nn.functional.linear(A, B.t())
        if any(ctx.needs_input_grad[:2]):
            ctx.tensors = (A, B)
        else:
            ctx.tensors = (None, None)
        return output

    @staticmethod
    def backward(ctx: Any, grad_output: Any) -> Any:
        _, B = ctx.tensors  # the input gradient needs only the weight
        return grad_output @ B.t(), None


def _live_inputs_at_backward(reentrant: bool) -> int:
    weights = [torch.randn(H, H) for _ in range(LAYERS)]  # frozen, stored transposed as bitsandbytes does
    inputs: list[Any] = []

    def layer(x: Any, w: Any) -> Any:
        a = x * 1.0  # the Linear's input: a new tensor inside the layer (a norm's output)
        inputs.append(weakref.ref(a))
        return torch.relu(MatMul4Bit.apply(a, w))

    x = torch.randn(T, H, requires_grad=True)
    h = x
    for w in weights:
        h = checkpoint(layer, h, w, use_reentrant=reentrant)
    loss = h.sum()
    alive = sum(ref() is not None for ref in inputs)
    loss.backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    return alive


def test_non_reentrant_checkpointing_keeps_every_layers_input() -> None:
    assert _live_inputs_at_backward(reentrant=False) == LAYERS


def test_reentrant_checkpointing_keeps_none() -> None:
    assert _live_inputs_at_backward(reentrant=True) == 0


@pytest.mark.parametrize(("reentrant", "one"), [(True, True), (False, False), (None, False)])
def test_the_estimate_follows_the_checkpointing_kind(reentrant: bool | None, one: bool) -> None:
    info = resolve_model("meta-llama/Llama-2-7b-hf")
    assert info is not None and info.config
    setup = TrainingSetup(
        model=count_params(info.config),
        method="qlora",
        micro_batch=1,
        seq_len=1024,
        storage_dtype="bf16",
        autocast="bf16",
        optimizer="adamw_torch",
        attn_implementation="sdpa",
        gradient_checkpointing=True,
        bnb_keeps_input=True,
        checkpoint_reentrant=reentrant,
    )
    assert bnb_recomputed_only(resolve_setup(setup)) is one

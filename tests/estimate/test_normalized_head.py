"""Baichuan 2's lm_head (NormHead) multiplies by a normalised copy of its weight in every training forward,
a vocab x hidden tensor the matmul saves for backward: 0.96 GiB for Baichuan2-7B in bf16, held through the
loss backward, that the plain-Linear head of the logits term does not have.

The module below is a hand-written copy of the upstream form (Baichuan2-13B-Chat modeling_baichuan.py,
NormHead.forward, copy at jrd77/Baichuan2-13B-Chat@35e3d5af); the saved tensors of its forward are counted
with autograd's saved-tensor hooks, under CUDA's autocast policy where autocast is on
(benchmarks/cuda_autocast.py), and compared with advisor.estimate.memory.activations.normalized_head_bytes.
"""

from __future__ import annotations

import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from advisor.estimate import count_params, resolve_model
from advisor.estimate.memory import TrainingSetup
from advisor.estimate.memory.activations import logits_bytes, normalized_head_bytes
from advisor.estimate.memory.resolve import resolve_setup

torch = pytest.importorskip("torch")
nn = torch.nn

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import cuda_autocast  # noqa: E402

V, H, T = 96, 40, 6


class NormHead(nn.Module):  # the upstream form
    def __init__(self, hidden_size: int, vocab_size: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty((vocab_size, hidden_size)))
        nn.init.kaiming_uniform_(self.weight, a=5**0.5)
        self.first_flag = True

    def forward(self, hidden_states: Any) -> Any:
        if self.training:
            norm_weight = nn.functional.normalize(self.weight)
        elif self.first_flag:
            self.first_flag = False
            self.weight = nn.Parameter(nn.functional.normalize(self.weight))
            norm_weight = self.weight
        else:
            norm_weight = self.weight
        return nn.functional.linear(hidden_states, norm_weight)


def _saved_weight_bytes(trainable: bool, autocast: bool, dtype: Any) -> int:
    """Bytes of V x h tensors the head's forward saves for backward, the parameter itself excluded."""
    head = NormHead(H, V).to(dtype).train()
    head.weight.requires_grad_(trainable)
    x = torch.randn(1, T, H, dtype=torch.bfloat16 if autocast else dtype, requires_grad=True)
    seen: dict[int, int] = {}

    def pack(t: Any) -> Any:
        st = t.untyped_storage()
        full = t.numel() == V * H and st.nbytes() >= V * H  # not the expanded V x 1 norm
        if full and st.data_ptr() != head.weight.untyped_storage().data_ptr():
            seen[st.data_ptr()] = st.nbytes()
        return t

    with ExitStack() as stack:
        if autocast:
            stack.enter_context(cuda_autocast.cuda_policy())
            stack.enter_context(torch.autocast("cpu", dtype=torch.bfloat16))
        stack.enter_context(torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t))
        head(x).sum().backward()
    return sum(seen.values())


@pytest.mark.parametrize(
    ("trainable", "autocast", "dtype", "weight_bytes"),
    [
        (False, False, torch.bfloat16, 2),  # LoRA on a bf16 base, no autocast
        (False, True, torch.bfloat16, 2),  # LoRA with the Trainer's bf16 autocast
        (False, True, torch.float32, 4),  # fp32 storage under autocast
        (False, False, torch.float32, 4),
        (True, True, torch.bfloat16, 2),  # full fine-tune: norm's backward keeps W itself, not a copy
        (True, False, torch.bfloat16, 2),
        (True, False, torch.float32, 4),
    ],
)
def test_saved_bytes_match_the_upstream_form(
    trainable: bool, autocast: bool, dtype: Any, weight_bytes: int
) -> None:
    measured = _saved_weight_bytes(trainable, autocast, dtype)
    assert measured == normalized_head_bytes(autocast, weight_bytes) * V * H


def _logits(model: str, method: str) -> tuple[float, float, str]:
    info = resolve_model(model)
    assert info is not None and info.config, model
    setup = TrainingSetup(
        model=count_params(info.config),
        method=method,  # type: ignore[arg-type]
        micro_batch=1,
        seq_len=2048,
        storage_dtype="bf16",
        autocast="bf16",
        optimizer="adamw_torch",
        attn_implementation="flash_attention_2",
        gradient_checkpointing=True,
    )
    return logits_bytes(resolve_setup(setup))


def test_baichuan2_logits_term_holds_the_normalised_head() -> None:
    pc = count_params(resolve_model("baichuan-inc/Baichuan2-7B-Chat").config)  # type: ignore[union-attr]
    assert pc.normalized_head and pc.vocab == 125696 and pc.hidden == 4096
    peak, after, label = _logits("baichuan-inc/Baichuan2-7B-Chat", "lora")
    head = 2.0 * pc.vocab * pc.hidden  # 0.96 GiB, alive until the lm_head's backward
    assert peak - 12.0 * 2048 * pc.vocab == pytest.approx(head)  # beyond the fp32-upcast cross-entropy
    assert after - 2.0 * 2048 * pc.vocab == pytest.approx(head)
    assert "normalised lm_head" in label


def test_a_plain_linear_head_has_none() -> None:
    pc = count_params(resolve_model("Qwen/Qwen-7B-Chat").config)  # type: ignore[union-attr]
    assert not pc.normalized_head
    peak, _, label = _logits("Qwen/Qwen-7B-Chat", "lora")
    assert peak == pytest.approx(12.0 * 2048 * pc.vocab) and "normalised" not in label

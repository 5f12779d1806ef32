"""Pre-quantized integer checkpoints (GPTQ, AWQ) as a LoRA base: bytes per quantized weight, and the
fp16 weights their trainable kernels materialise (issue 21 section 2: GPTQ/AWQ bases).

GPTQ (auto-gptq 0.7.1 nn_modules/qlinear/qlinear_cuda_old.py:50-74, the buffers of every QuantLinear):
    qweight int32 (in // 32 * bits, out)        bits / 8 bytes per weight
    qzeros  int32 (ceil(in / group), out // 32 * bits)   bits / (8 * group)
    scales  fp16  (ceil(in / group), out)        2 / group
    g_idx   int32 (in,)                          4 / out (one index per input row)
AWQ (autoawq 0.2.9 awq/modules/linear/gemm.py:135-158, WQLinear_GEMM):
    qweight int32 (in, out // (32 // bits))      bits / 8
    qzeros  int32 (in // group, out // (32 // bits))     bits / (8 * group)
    scales  fp16  (in // group, out)             2 / group
Both quantize the decoder blocks' Linear layers; embeddings, norms and lm_head stay in fp16.

Training through them: auto-gptq's trainable path (qlinear_cuda_old.py:300-350) unpacks the codes with
int32 bitwise ops, forms `weight = scales * (weight - zeros)` in fp16 and calls torch.matmul(x, weight); when
the input needs a gradient (LoRA adapters below it), autograd keeps that fp16 weight for the input's
gradient. So a layer being backpropagated holds its Linears' weights in fp16 besides the packed codes.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["PACKED", "PackedKind", "packed_bytes", "packed_kind"]

PackedKind = Literal["gptq4", "gptq8", "awq4"]
PACKED: dict[str, tuple[str, int]] = {"gptq4": ("GPTQ", 4), "gptq8": ("GPTQ", 8), "awq4": ("AWQ", 4)}
DEFAULT_GROUP = 128  # transformers GPTQConfig(group_size=128), AutoAWQ q_group_size=128


def packed_bytes(kind: str, group_size: int | None = None, d_out: int = 4096) -> float:
    """Bytes per quantized weight of a GPTQ/AWQ Linear (the module docstring's buffers)."""
    method, bits = PACKED[kind]
    g = group_size if group_size and group_size > 0 else DEFAULT_GROUP
    per = bits / 8 + bits / (8 * g) + 2 / g
    if method == "GPTQ":
        per += 4 / max(d_out, 1)  # g_idx: one int32 per input row of the (in, out) weight
    return per


def packed_kind(method: str | None, bits: int | None) -> PackedKind | None:
    """The estimator's name for a checkpoint's quantization_config (quant_method, bits), or None."""
    m = (method or "").lower()
    if m == "gptq" and bits in (4, 8):
        return "gptq4" if bits == 4 else "gptq8"
    if m == "awq" and bits == 4:
        return "awq4"
    return None

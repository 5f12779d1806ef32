"""The three peak-memory figures a user compares an estimate with (issue 21 section 2).

Trainers log different numbers: litgpt and Liger's callback log torch.cuda.max_memory_allocated(),
ms-swift, axolotl and Answer.AI max_memory_reserved(), a GPU monitor shows nvidia-smi's memory.used. The
memory model (advisor/estimate/memory/peak.py) already computes all three:

    allocated  the live tensors at the peak phase
    reserved   allocated + the caching allocator's overhead: constants.ALLOCATOR_FRAG (10 %) of the memory
               that churns (everything but weights, optimizer states and DDP buckets), from Answer.AI's
               reserved 10.22 vs allocated 9.16 GiB and torchtune's 13.98 vs 13.96 GB
    device     reserved + the CUDA context (constants.CUDA_CONTEXT_GIB) + NCCL's buffers when several
               processes communicate (constants.NCCL_GIB) + paged optimizer state (CUDA unified memory,
               outside torch's allocator)

The fit verdict (GA401, GA404, `estimate`'s verdicts) compares the device figure with the card's usable
memory: that is what runs out. A leaf module: the facts and `gpu-advise estimate` both use it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FIT_USES", "KINDS", "READS", "memory_figures"]

KINDS = ("allocated", "reserved", "device")
READS = {
    "allocated": "torch.cuda.max_memory_allocated()",
    "reserved": "torch.cuda.max_memory_reserved()",
    "device": "nvidia-smi memory.used of the process",
}
FIT_USES = "device"


def memory_figures(
    allocated: float, reserved: float, device: float, band: float, digits: int, growth: float = 0.0
) -> dict[str, Any]:
    """{allocated, reserved, device}: {gib, low_gib, high_gib, reads}, and fit_uses: the figure the verdict
    compares with the usable memory. `band` is the model's relative uncertainty (the same for each figure:
    peak.py applies it to whichever metric it is asked for); `growth` (GiB) is the caching allocator's
    growth on variable-length batches (MemoryEstimate.growth_gib), the upper part of the reserved and
    device bands only: the live tensors do not grow."""
    out: dict[str, Any] = {}
    for kind, gib in zip(KINDS, (allocated, reserved, device), strict=True):
        extra = growth if kind != "allocated" else 0.0
        out[kind] = {
            "gib": round(gib, digits),
            "low_gib": round(gib * (1.0 - band), digits),
            "high_gib": round(gib * (1.0 + band) + extra, digits),
            "reads": READS[kind],
        }
    out["fit_uses"] = FIT_USES
    return out

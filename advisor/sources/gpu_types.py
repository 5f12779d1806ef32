"""The GPU catalog's entry types (advisor/data/gpus.yaml): one declaration each, with the checks,
bounds and descriptions advisor.core.datacodec.validate applies to a catalog entry.

A leaf module: advisor.sources.gpu_catalog validates, caches and looks them up; advisor.sources.hardware
re-exports them.
"""

from __future__ import annotations

import re
from typing import Literal

from advisor.core.datacodec import invalid
from advisor.core.records import field, record, spec


def _cc_format(v: str) -> str:
    if not re.fullmatch(r"\d+\.\d+", v):
        raise ValueError(f"compute_capability must look like '8.0', got {v!r}")
    return v


@record(frozen=True, slots=True, kw_only=True)
class NvlinkSpec:
    generation: int
    links: int | None = None
    per_gpu_unidir_gbs: float
    typical_topology: Literal[
        "nvswitch_all_to_all",
        "bridged_pairs",
        "optional_2way_bridge_pairs",
        "hybrid_cube_mesh",
        "xgmi_full_mesh",
        "xgmi_mixed",
    ]
    busbw_gbs: float = spec(description="realistic all-reduce busbw inside the NVLink domain, GB/s")
    pair_busbw_gbs: float | None = spec(
        default=None,
        description="busbw when only two GPUs of a mesh take part (one direct link each, no switch), GB/s",
    )
    busbw_measured: bool
    busbw_source: str


@record(frozen=True, slots=True, kw_only=True)
class PcieSpec:
    generation: int
    lanes: int = 16
    unidir_gbs: float
    busbw_gbs: float = spec(description="realistic all-reduce busbw when the ring crosses PCIe, GB/s")
    busbw_measured: bool
    busbw_source: str


@record(frozen=True, slots=True, kw_only=True)
class GpuSpec:
    """One GPU model of the catalog (advisor/data/gpus.yaml)."""

    id: str
    display_name: str
    vendor: Literal["nvidia", "amd"] = "nvidia"
    architecture: str
    compute_capability: str = spec(
        description="what torch.cuda.get_device_capability() reports (on ROCm: the gfx target's major.minor)",
        after=_cc_format,
    )
    gfx_target: str | None = spec(default=None, description="AMD only: the ROCm gfx target, e.g. gfx942")
    form_factor: str | None = None
    nvidia_smi_name: list[str] = field(default_factory=list)
    rocm_smi_name: list[str] = spec(
        default_factory=list, description="AMD only: names torch.cuda.get_device_name() and rocm-smi print"
    )
    aliases: list[str] = field(default_factory=list)
    memory_gb_marketed: float | None = None
    nvidia_smi_memory_total_mib: int | None = None
    rocm_smi_vram_total_bytes: int | None = spec(
        default=None, description="AMD only: rocm-smi --showmeminfo vram 'VRAM Total Memory (B)'"
    )
    usable_gib: float = spec(gt=0)
    memory_bandwidth_gbs: float
    bf16_dense_tflops: float | None = None
    fp16_dense_tflops: float | None = None
    fp8_dense_tflops: float | None = None
    tf32_dense_tflops: float | None = None
    fp32_tflops: float | None = spec(
        default=None,
        description="non-tensor FP32 peak (CUDA-core FMA rate; CDNA: FP32 matrix): what fp32 matmuls reach "
        "when TF32 is off, torch's default since 1.12",
    )
    mamf_bf16_tflops: float | None = None
    tf32_supported: bool
    bf16_native: bool
    nvlink: NvlinkSpec | None = None
    infinity_fabric: NvlinkSpec | None = spec(
        default=None, description="AMD only: the Infinity Fabric (xGMI) peer link, as an NVLink record"
    )
    pcie: PcieSpec
    p2p_supported: bool = True
    tdp_w: float | None = None
    confidence: Literal["high", "medium", "low"] = "medium"
    notes: str | None = None
    source: list[str] = field(default_factory=list)

    def __validate__(self) -> None:
        if self.vendor == "amd":
            if self.nvlink is not None or self.nvidia_smi_name or self.nvidia_smi_memory_total_mib:
                raise invalid(f"{self.id}: an AMD GPU has no NVLink and no nvidia-smi fields")
            if not self.rocm_smi_name or not self.gfx_target:
                raise invalid(f"{self.id}: an AMD GPU needs rocm_smi_name and gfx_target")
        elif self.infinity_fabric is not None or self.rocm_smi_name or self.gfx_target:
            raise invalid(f"{self.id}: infinity_fabric, rocm_smi_name and gfx_target are AMD-only")

    @property
    def cc(self) -> tuple[int, int]:
        """Compute capability as a comparable tuple, e.g. (8, 0)."""
        major, minor = self.compute_capability.split(".")
        return int(major), int(minor)

    @property
    def has_nvlink(self) -> bool:
        return self.nvlink is not None

    @property
    def peer_link(self) -> NvlinkSpec | None:
        """The GPU-to-GPU link a descriptor's `nvlink` groups stand for: NVLink, or AMD's Infinity Fabric."""
        return self.nvlink if self.nvlink is not None else self.infinity_fabric

    @property
    def device_names(self) -> list[str]:
        """The names the vendor's tools print for this GPU (nvidia-smi, or torch/rocm-smi on ROCm)."""
        return [*self.nvidia_smi_name, *self.rocm_smi_name]

    @property
    def memory_total_mib(self) -> float | None:
        """Total device memory as the vendor's tool reports it, MiB (None when not recorded)."""
        if self.nvidia_smi_memory_total_mib is not None:
            return float(self.nvidia_smi_memory_total_mib)
        if self.rocm_smi_vram_total_bytes is not None:
            return self.rocm_smi_vram_total_bytes / 2**20
        return None

    def dense_tflops(self, precision: str) -> float | None:
        """Dense tensor peak for 'bf16' | 'fp16' | 'fp8' | 'tf32' (None: no such hardware path)."""
        return {
            "bf16": self.bf16_dense_tflops,
            "fp16": self.fp16_dense_tflops,
            "fp8": self.fp8_dense_tflops,
            "tf32": self.tf32_dense_tflops,
        }.get(precision.lower())

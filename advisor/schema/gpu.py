"""Validation of the GPU catalog's entries (advisor/data/gpus.yaml): the results are
advisor.sources.gpu_types.GpuSpec. A module of its own so that the catalog validates its entries without
importing the machine descriptor's schema, which looks GPU names up in that catalog."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from advisor.schema import to_view
from advisor.sources import gpu_types as views


class NvlinkSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

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
    busbw_gbs: float = Field(description="realistic all-reduce busbw inside the NVLink domain, GB/s")
    pair_busbw_gbs: float | None = Field(
        default=None,
        description="busbw when only two GPUs of a mesh take part (one direct link each, no switch), GB/s",
    )
    busbw_measured: bool
    busbw_source: str


class PcieSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    generation: int
    lanes: int = 16
    unidir_gbs: float
    busbw_gbs: float = Field(description="realistic all-reduce busbw when the ring crosses PCIe, GB/s")
    busbw_measured: bool
    busbw_source: str


class GpuSpec(BaseModel):
    """One GPU model of the catalog (advisor/data/gpus.yaml)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    id: str
    display_name: str
    vendor: Literal["nvidia", "amd"] = "nvidia"
    architecture: str
    compute_capability: str = Field(
        description="what torch.cuda.get_device_capability() reports (on ROCm: the gfx target's major.minor)"
    )
    gfx_target: str | None = Field(default=None, description="AMD only: the ROCm gfx target, e.g. gfx942")
    form_factor: str | None = None
    nvidia_smi_name: list[str] = Field(default_factory=list)
    rocm_smi_name: list[str] = Field(
        default_factory=list, description="AMD only: names torch.cuda.get_device_name() and rocm-smi print"
    )
    aliases: list[str] = Field(default_factory=list)
    memory_gb_marketed: float | None = None
    nvidia_smi_memory_total_mib: int | None = None
    rocm_smi_vram_total_bytes: int | None = Field(
        default=None, description="AMD only: rocm-smi --showmeminfo vram 'VRAM Total Memory (B)'"
    )
    usable_gib: float = Field(gt=0)
    memory_bandwidth_gbs: float
    bf16_dense_tflops: float | None = None
    fp16_dense_tflops: float | None = None
    fp8_dense_tflops: float | None = None
    tf32_dense_tflops: float | None = None
    mamf_bf16_tflops: float | None = None
    tf32_supported: bool
    bf16_native: bool
    nvlink: NvlinkSpec | None = None
    infinity_fabric: NvlinkSpec | None = Field(
        default=None, description="AMD only: the Infinity Fabric (xGMI) peer link, as an NVLink record"
    )
    pcie: PcieSpec
    p2p_supported: bool = True
    tdp_w: float | None = None
    confidence: Literal["high", "medium", "low"] = "medium"
    notes: str | None = None
    source: list[str] = Field(default_factory=list)

    @field_validator("compute_capability")
    @classmethod
    def _cc_format(cls, v: str) -> str:
        if not re.fullmatch(r"\d+\.\d+", v):
            raise ValueError(f"compute_capability must look like '8.0', got {v!r}")
        return v

    @model_validator(mode="after")
    def _vendor_fields(self) -> GpuSpec:
        if self.vendor == "amd":
            if self.nvlink is not None or self.nvidia_smi_name or self.nvidia_smi_memory_total_mib:
                raise ValueError(f"{self.id}: an AMD GPU has no NVLink and no nvidia-smi fields")
            if not self.rocm_smi_name or not self.gfx_target:
                raise ValueError(f"{self.id}: an AMD GPU needs rocm_smi_name and gfx_target")
        elif self.infinity_fabric is not None or self.rocm_smi_name or self.gfx_target:
            raise ValueError(f"{self.id}: infinity_fabric, rocm_smi_name and gfx_target are AMD-only")
        return self


VIEWS = {"NvlinkSpec": views.NvlinkSpec, "PcieSpec": views.PcieSpec, "GpuSpec": views.GpuSpec}


def validate_gpu(entry: Any) -> views.GpuSpec:
    """One entry of the GPU catalog; raises pydantic.ValidationError."""
    return to_view(GpuSpec.model_validate(entry), VIEWS)

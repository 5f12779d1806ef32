"""Hardware descriptors: validated into advisor.sources.machine_types.Machine, whose declaration holds
the checks (advisor.core.datacodec.validate); the GPU catalog's entries are validated by
advisor.sources.gpu_catalog.validate_gpu, re-exported here. `gpu-advise schema hardware` prints
Machine's JSON schema."""

from __future__ import annotations

from typing import Any

from advisor.core.datacodec import validate
from advisor.sources.gpu_catalog import validate_gpu
from advisor.sources.gpu_types import GpuSpec, NvlinkSpec, PcieSpec
from advisor.sources.machine_types import MAX_TOTAL_GPUS, GpuGroup, Machine
from advisor.sources.schema.jsonschema import json_schema as record_schema

__all__ = [
    "MAX_TOTAL_GPUS",
    "GpuGroup",
    "GpuSpec",
    "Machine",
    "NvlinkSpec",
    "PcieSpec",
    "json_schema",
    "validate_gpu",
    "validate_machine",
]


def validate_machine(data: Any) -> Machine:
    """A hardware descriptor's mapping; raises advisor.core.datacodec.Invalid (a ValueError)."""
    return validate(Machine, data)


def json_schema() -> dict[str, Any]:
    return record_schema(Machine)

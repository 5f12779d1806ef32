"""Validation of hardware descriptors: the result is advisor.sources.machine_types.Machine (the GPU
catalog's entries are validated by advisor.sources.gpu_catalog.validate_gpu, re-exported here).
`gpu-advise schema hardware` prints Machine's JSON schema."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from advisor.schema import to_view
from advisor.sources import machine_types as views
from advisor.sources.gpu_catalog import resolve_gpu, unknown_gpu_message, validate_gpu
from advisor.sources.gpu_types import GpuSpec, NvlinkSpec, PcieSpec
from advisor.sources.machine_types import parse_network


def _err(message: str, path: tuple[str | int, ...] = ()) -> PydanticCustomError:
    return PydanticCustomError("hardware", "{message}", {"message": message, "path": path})


class GpuGroup(BaseModel):
    """The GPUs of one node: all of one model."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    model: str = Field(description="GPU catalog key or alias, e.g. H100-NVL, A100-80GB, RTX-4090")
    count: int = Field(ge=1, le=1024, description="GPUs per node")
    memory_gib: float | None = Field(
        default=None, gt=0, le=1 << 20, description="override of the catalog's usable memory per GPU, GiB"
    )

    @field_validator("model", mode="before")
    @classmethod
    def _number_as_name(cls, v: Any) -> Any:
        # `model: 4090` is an int to YAML
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    @field_validator("model")
    @classmethod
    def _known_model(cls, v: str) -> str:
        if resolve_gpu(v) is None:
            raise _err(unknown_gpu_message(v))
        return v


NvlinkValue = list[list[int]] | Literal["all"]
# GPUs in all (nodes x GPUs per node): twice the largest cluster published (xAI Colossus, 2025: ~200,000)
MAX_TOTAL_GPUS = 2**19


class Machine(BaseModel):
    """A hardware descriptor: what a run executes on."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    name: str = Field(default="", description="machine name; a file descriptor defaults to its file stem")
    gpus: GpuGroup
    nvlink: NvlinkValue = Field(
        default_factory=list,
        description="groups of GPU indices joined by NVLink (AMD: Infinity Fabric); `all` = every pair "
        "(NVSwitch, or an xGMI mesh); [] = none",
    )
    cpu_cores: int | None = Field(
        default=None, ge=1, description="logical CPUs (vCPUs) per node the job may use; None = unknown"
    )
    ram_gib: float | None = Field(default=None, gt=0, description="host RAM per node, GiB; None = unknown")
    nodes: int = Field(default=1, ge=1, le=MAX_TOTAL_GPUS, description="number of identical nodes")
    network: str | None = Field(
        default=None,
        description="inter-node fabric: <ib|eth|efa|roce>-<Gb/s per NIC>g[x<NICs per node>] or none; "
        "without xN, ib/efa/roce mean one NIC per GPU and eth one NIC per node",
    )
    notes: str | None = Field(default=None, description="free text shown by `hardware show`")

    @field_validator("nvlink", mode="before")
    @classmethod
    def _nvlink_shape(cls, v: Any) -> Any:
        if v is None or v is False:
            return []
        if isinstance(v, str):
            low = v.strip().lower()
            if low == "all":
                return "all"
            if low in ("none", ""):
                return []
            raise _err(f"nvlink must be `all`, `none` or a list of GPU index groups, got {v!r}")
        if not isinstance(v, list):
            raise _err(f"nvlink must be `all`, `none` or a list of GPU index groups, got {v!r}")
        out: list[list[int]] = []
        for i, group in enumerate(v):
            if not isinstance(group, list):
                raise _err(
                    f"nvlink[{i}] must be a list of GPU indices such as [0, 1], got {group!r}", ("nvlink", i)
                )
            for j, idx in enumerate(group):
                if not isinstance(idx, int) or isinstance(idx, bool):
                    raise _err(f"nvlink[{i}][{j}] must be a GPU index, got {idx!r}", ("nvlink", i, j))
            out.append(list(group))
        return out

    @field_validator("network", mode="before")
    @classmethod
    def _network_format(cls, v: Any) -> Any:
        if v is None or v is False:
            return None
        if not isinstance(v, str):
            raise _err(f"network must be a string such as ib-400g, eth-100g or none, got {v!r}")
        if v.strip().lower() in ("none", ""):
            return None
        try:
            parse_network(v)
        except ValueError as exc:
            raise _err(str(exc)) from None
        return v.strip().lower()

    @model_validator(mode="after")
    def _consistent(self) -> Machine:
        count = self.gpus.count
        gpu = resolve_gpu(self.gpus.model)
        if isinstance(self.nvlink, list):
            seen: dict[int, int] = {}
            for i, group in enumerate(self.nvlink):
                if len(group) < 2:
                    raise _err(f"nvlink[{i}] joins fewer than two GPUs: {group}", ("nvlink", i))
                for j, idx in enumerate(group):
                    if not 0 <= idx < count:
                        raise _err(
                            f"nvlink[{i}][{j}]: GPU index {idx} is out of range: this machine has "
                            f"{count} GPU{'s' if count != 1 else ''} per node (0..{count - 1})",
                            ("nvlink", i, j),
                        )
                    if idx in seen:
                        where = "twice in this group" if seen[idx] == i else f"also in nvlink[{seen[idx]}]"
                        raise _err(
                            f"nvlink[{i}][{j}]: GPU {idx} is {where}; NVLink groups must not overlap "
                            "(merge groups that share a GPU)",
                            ("nvlink", i, j),
                        )
                    seen[idx] = i
        has_links = self.nvlink == "all" or bool(self.nvlink)
        if has_links and gpu is not None and gpu.peer_link is None and count > 1:
            raise _err(f"{gpu.display_name} has no NVLink, so nvlink must be [] (or none)", ("nvlink",))
        if count * self.nodes > MAX_TOTAL_GPUS:
            # per-GPU facts (NVLink groups, placements) are built per node: 10**12 nodes ran out of memory
            raise _err(
                f"nodes: {self.nodes} x {count} GPUs is more than {MAX_TOTAL_GPUS:,} GPUs in all; not a "
                "machine gpu-advise models",
                ("nodes",),
            )
        if self.nodes > 1 and self.network is None:
            raise _err(
                f"nodes: {self.nodes} needs `network` (e.g. ib-400g, eth-100g) to say how the nodes "
                "are joined",
                ("nodes",),
            )
        return self


VIEWS = {"GpuGroup": views.GpuGroup, "Machine": views.Machine}

__all__ = [
    "GpuGroup",
    "GpuSpec",
    "Machine",
    "NvlinkSpec",
    "PcieSpec",
    "json_schema",
    "validate_gpu",
    "validate_machine",
]


def validate_machine(data: Any) -> views.Machine:
    """A hardware descriptor's mapping; raises pydantic.ValidationError."""
    return to_view(Machine.model_validate(data), VIEWS)


def json_schema() -> dict[str, Any]:
    return Machine.model_json_schema(mode="validation")

"""The machine a run executes on: a hardware descriptor as a frozen dataclass (validate_machine in
advisor.sources.hardware builds one), and the network spelling it accepts. Machine.gpu reads the catalog."""

from __future__ import annotations

import re
from typing import Any, Literal

from advisor.records import field, fields, is_record, record, replace
from advisor.sources.gpu_catalog import resolve_gpu
from advisor.sources.gpu_types import GpuSpec

_NETWORK = re.compile(r"^(ib|eth|efa|roce)-(\d+(?:\.\d+)?)g(?:x(\d+))?$", re.IGNORECASE)


def parse_network(network: str) -> tuple[str, float, int | None]:
    """'ib-400gx8' -> ('ib', 400.0, 8): kind, Gb/s per NIC, NICs per node (None: not given)."""
    m = _NETWORK.match(network.strip())
    if not m:
        raise ValueError(
            f"network {network!r} is not understood: write <ib|eth|efa|roce>-<Gb/s per NIC>g"
            "[x<NICs per node>], e.g. ib-400g, ib-400gx8, eth-100g, or none"
        )
    kind, gbps, nics = m.groups()
    return kind.lower(), float(gbps), int(nics) if nics else None


@record(frozen=True, slots=True, kw_only=True)
class GpuGroup:
    """The GPUs of one node: all of one model."""

    model: str  # GPU catalog key or alias, e.g. H100-NVL, A100-80GB, RTX-4090
    count: int  # GPUs per node
    memory_gib: float | None = None  # override of the catalog's usable memory per GPU, GiB


@record(frozen=True, slots=True, kw_only=True)
class Machine:
    """A hardware descriptor: what a run executes on (validate_machine builds one from plain data)."""

    name: str = ""
    gpus: GpuGroup
    # groups joined by NVLink (AMD: Infinity Fabric); `all` = NVSwitch or an xGMI mesh; [] = none
    nvlink: list[list[int]] | Literal["all"] = field(default_factory=list)
    cpu_cores: int | None = None  # logical CPUs per node the job may use; None = unknown
    ram_gib: float | None = None  # host RAM per node, GiB; None = unknown
    nodes: int = 1
    network: str | None = None  # <ib|eth|efa|roce>-<Gb/s per NIC>g[x<NICs per node>]
    notes: str | None = None

    @property
    def gpu(self) -> GpuSpec:
        """The catalog GPU, with `gpus.memory_gib` applied when given (it also picks between cards that
        share one nvidia-smi name, e.g. `model: NVIDIA GeForce RTX 3080, memory_gib: 12`)."""
        memory_mib = self.gpus.memory_gib * 1024 if self.gpus.memory_gib is not None else None
        spec = resolve_gpu(self.gpus.model, memory_mib=memory_mib)
        assert spec is not None  # validated
        if self.gpus.memory_gib is not None and self.gpus.memory_gib != spec.usable_gib:
            spec = replace(spec, usable_gib=self.gpus.memory_gib)
        return spec

    @property
    def memory_gib(self) -> float:
        """Usable memory per GPU, GiB (the override when given, else the catalog's)."""
        return self.gpu.usable_gib

    @property
    def card(self) -> str:
        """The GPUs in words, as every output that names the machine shows them: "4x H100-NVL 94 GB",
        "2 nodes x 8x H100-SXM 80 GB" (a name such as 1xH100 alone does not say which H100)."""
        gpu = self.gpu
        if self.gpus.memory_gib is None and gpu.memory_gb_marketed:
            memory = f"{gpu.memory_gb_marketed:g} GB"
        else:
            memory = f"{gpu.usable_gib:g} GiB"
        nodes = f"{self.nodes} nodes x " if self.nodes > 1 else ""
        return f"{nodes}{self.gpus.count}x {gpu.id} {memory}"

    @property
    def gpus_per_node(self) -> int:
        return self.gpus.count

    @property
    def total_gpus(self) -> int:
        return self.gpus.count * self.nodes

    def to_descriptor(self) -> dict[str, Any]:
        """The descriptor as plain data (what a YAML file would hold), without computed fields."""
        return _plain(self)


def _plain(value: Any) -> Any:
    """A dataclass as nested dicts and lists, leaving out None values."""
    if is_record(value):
        items = ((f.name, getattr(value, f.name)) for f in fields(value))
        return {k: _plain(v) for k, v in items if v is not None}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value

"""The machine a run executes on: a hardware descriptor as a record, declared once with the checks,
bounds and descriptions that advisor.core.datacodec.validate applies to a descriptor (validate_machine in
advisor.sources.hardware), and the network spelling it accepts. Machine.gpu reads the catalog."""

from __future__ import annotations

import re
from typing import Any, Literal

from advisor.core.datacodec import invalid
from advisor.core.lazy_pattern import LazyPattern
from advisor.core.records import fields, is_record, record, replace, spec
from advisor.sources.gpu_catalog import resolve_gpu, unknown_gpu_message
from advisor.sources.gpu_types import GpuSpec

_NETWORK = LazyPattern(r"^(ib|eth|efa|roce)-(\d+(?:\.\d+)?)g(?:x(\d+))?$", re.IGNORECASE)


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


def _number_as_name(v: Any) -> Any:
    # `model: 4090` is an int to YAML
    return str(v) if isinstance(v, int) and not isinstance(v, bool) else v


def _known_model(v: str) -> str:
    if resolve_gpu(v) is None:
        raise invalid(unknown_gpu_message(v))
    return v


def _nvlink_shape(v: Any) -> Any:
    if v is None or v is False:
        return []
    if isinstance(v, str):
        low = v.strip().lower()
        if low == "all":
            return "all"
        if low in ("none", ""):
            return []
    if not isinstance(v, list):
        raise invalid(f"nvlink must be `all`, `none` or a list of GPU index groups, got {v!r}")
    out: list[list[int]] = []
    for i, group in enumerate(v):
        if not isinstance(group, list):
            raise invalid(
                f"nvlink[{i}] must be a list of GPU indices such as [0, 1], got {group!r}", ("nvlink", i)
            )
        for j, idx in enumerate(group):
            if not isinstance(idx, int) or isinstance(idx, bool):
                raise invalid(f"nvlink[{i}][{j}] must be a GPU index, got {idx!r}", ("nvlink", i, j))
        out.append(list(group))
    return out


def _network_format(v: Any) -> Any:
    if v is None or v is False:
        return None
    if not isinstance(v, str):
        raise invalid(f"network must be a string such as ib-400g, eth-100g or none, got {v!r}")
    if v.strip().lower() in ("none", ""):
        return None
    try:
        parse_network(v)
    except ValueError as exc:
        raise invalid(str(exc)) from None
    return v.strip().lower()


# GPUs in all (nodes x GPUs per node): twice the largest cluster published (xAI Colossus, 2025: ~200,000)
MAX_TOTAL_GPUS = 2**19


@record(frozen=True, slots=True, kw_only=True)
class GpuGroup:
    """The GPUs of one node: all of one model."""

    model: str = spec(
        description="GPU catalog key or alias, e.g. H100-NVL, A100-80GB, RTX-4090",
        before=_number_as_name,
        after=_known_model,
    )
    count: int = spec(ge=1, le=1024, description="GPUs per node")
    memory_gib: float | None = spec(
        default=None, gt=0, le=1 << 20, description="override of the catalog's usable memory per GPU, GiB"
    )


@record(frozen=True, slots=True, kw_only=True)
class Machine:
    """A hardware descriptor: what a run executes on."""

    name: str = spec(default="", description="machine name; a file descriptor defaults to its file stem")
    gpus: GpuGroup
    nvlink: list[list[int]] | Literal["all"] = spec(
        default_factory=list,
        description="groups of GPU indices joined by NVLink (AMD: Infinity Fabric); `all` = every pair "
        "(NVSwitch, or an xGMI mesh); [] = none",
        before=_nvlink_shape,
    )
    cpu_cores: int | None = spec(
        default=None, ge=1, description="logical CPUs (vCPUs) per node the job may use; None = unknown"
    )
    ram_gib: float | None = spec(default=None, gt=0, description="host RAM per node, GiB; None = unknown")
    nodes: int = spec(default=1, ge=1, le=MAX_TOTAL_GPUS, description="number of identical nodes")
    network: str | None = spec(
        default=None,
        description="inter-node fabric: <ib|eth|efa|roce>-<Gb/s per NIC>g[x<NICs per node>] or none; "
        "without xN, ib/efa/roce mean one NIC per GPU and eth one NIC per node",
        before=_network_format,
    )
    notes: str | None = spec(default=None, description="free text shown by `hardware show`")

    def __validate__(self) -> None:
        count = self.gpus.count
        gpu = resolve_gpu(self.gpus.model)
        if isinstance(self.nvlink, list):
            _check_groups(self.nvlink, count)
        has_links = self.nvlink == "all" or bool(self.nvlink)
        if has_links and gpu is not None and gpu.peer_link is None and count > 1:
            raise invalid(f"{gpu.display_name} has no NVLink, so nvlink must be [] (or none)", ("nvlink",))
        if count * self.nodes > MAX_TOTAL_GPUS:
            # per-GPU facts (NVLink groups, placements) are built per node: 10**12 nodes ran out of memory
            raise invalid(
                f"nodes: {self.nodes} x {count} GPUs is more than {MAX_TOTAL_GPUS:,} GPUs in all; not a "
                "machine gpu-advise models",
                ("nodes",),
            )
        if self.nodes > 1 and self.network is None:
            raise invalid(
                f"nodes: {self.nodes} needs `network` (e.g. ib-400g, eth-100g) to say how the nodes "
                "are joined",
                ("nodes",),
            )

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


def _check_groups(nvlink: list[list[int]], count: int) -> None:
    seen: dict[int, int] = {}
    for i, group in enumerate(nvlink):
        if len(group) < 2:
            raise invalid(f"nvlink[{i}] joins fewer than two GPUs: {group}", ("nvlink", i))
        for j, idx in enumerate(group):
            if not 0 <= idx < count:
                raise invalid(
                    f"nvlink[{i}][{j}]: GPU index {idx} is out of range: this machine has "
                    f"{count} GPU{'s' if count != 1 else ''} per node (0..{count - 1})",
                    ("nvlink", i, j),
                )
            if idx in seen:
                where = "twice in this group" if seen[idx] == i else f"also in nvlink[{seen[idx]}]"
                raise invalid(
                    f"nvlink[{i}][{j}]: GPU {idx} is {where}; NVLink groups must not overlap "
                    "(merge groups that share a GPU)",
                    ("nvlink", i, j),
                )
            seen[idx] = i


def _plain(value: Any) -> Any:
    """A dataclass as nested dicts and lists, leaving out None values."""
    if is_record(value):
        items = ((f.name, getattr(value, f.name)) for f in fields(value))
        return {k: _plain(v) for k, v in items if v is not None}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value

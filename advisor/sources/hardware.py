"""Hardware: the GPU catalog, the built-in machines and hardware descriptor files.

A hardware descriptor (YAML) says what the run will execute on::

    name: 4xH100-NVL
    gpus: {model: H100-NVL, count: 4}     # model: a GPU catalog key; memory_gib may override
    nvlink: [[0, 1], [2, 3]]              # groups joined by NVLink (AMD: Infinity Fabric); `all` = NVSwitch
                                           # (or an xGMI mesh); [] = none
    cpu_cores: 64
    ram_gib: 512
    nodes: 1                               # >1: the same box repeated, joined by `network`
    network: ib-400g                       # <ib|eth|efa|roce>-<Gb/s per NIC>g[x<NICs per node>]

Everything here is read lazily and cached: importing this module reads no file. Errors in a
descriptor raise `HardwareError` whose message names the file and the 1-based line and column.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, is_dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml

try:  # the C loader is several times faster
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    _Loader = yaml.SafeLoader

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
GPUS_FILE = DATA_DIR / "gpus.yaml"
MACHINES_DIR = DATA_DIR / "machines"

__all__ = [
    "GpuGroup",
    "GpuSpec",
    "HardwareError",
    "Machine",
    "NvlinkSpec",
    "PcieSpec",
    "builtin_machines",
    "gpu_catalog",
    "hardware_schema",
    "load_hardware",
    "machine_yaml",
    "normalize_gpu_name",
    "parse_network",
    "resolve_gpu",
    "suggest_gpu",
    "unknown_gpu_message",
    "validate_machine",
]


class HardwareError(Exception):
    """A hardware name, descriptor or detection problem, with a message fit for the user.

    `file`, `line` and `col` (1-based) are set when the problem is in a descriptor file.
    """

    def __init__(
        self, message: str, *, file: str | None = None, line: int | None = None, col: int | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.col = col

    def __str__(self) -> str:
        return self.message


# --------------------------------------------------------------------------------------------
# GPU catalog


# The catalog's GPUs and the machines, as validated by advisor.schema.hardware (which builds these, and
# holds the checks, bounds and descriptions): frozen dataclasses, so that the cached GPU catalog and
# machines need no pydantic.
@dataclass(frozen=True, slots=True, kw_only=True)
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
    busbw_gbs: float  # realistic all-reduce busbw inside the NVLink domain, GB/s
    pair_busbw_gbs: float | None = None  # busbw with only two GPUs of a switchless mesh, GB/s
    busbw_measured: bool
    busbw_source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PcieSpec:
    generation: int
    lanes: int = 16
    unidir_gbs: float
    busbw_gbs: float  # realistic all-reduce busbw when the ring crosses PCIe, GB/s
    busbw_measured: bool
    busbw_source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuSpec:
    """One GPU model of the catalog (advisor/data/gpus.yaml)."""

    id: str
    display_name: str
    vendor: Literal["nvidia", "amd"] = "nvidia"
    architecture: str
    compute_capability: str  # torch.cuda.get_device_capability(); on ROCm the gfx target's major.minor
    gfx_target: str | None = None  # AMD: e.g. gfx942
    form_factor: str | None = None
    nvidia_smi_name: list[str] = field(default_factory=list)
    rocm_smi_name: list[str] = field(default_factory=list)  # AMD: torch / rocm-smi device names
    aliases: list[str] = field(default_factory=list)
    memory_gb_marketed: float | None = None
    nvidia_smi_memory_total_mib: int | None = None
    rocm_smi_vram_total_bytes: int | None = None
    usable_gib: float
    memory_bandwidth_gbs: float
    bf16_dense_tflops: float | None = None
    fp16_dense_tflops: float | None = None
    fp8_dense_tflops: float | None = None
    tf32_dense_tflops: float | None = None
    mamf_bf16_tflops: float | None = None
    tf32_supported: bool
    bf16_native: bool
    nvlink: NvlinkSpec | None = None
    infinity_fabric: NvlinkSpec | None = None  # AMD: the xGMI peer link
    pcie: PcieSpec
    p2p_supported: bool = True
    tdp_w: float | None = None
    confidence: Literal["high", "medium", "low"] = "medium"
    notes: str | None = None
    source: list[str] = field(default_factory=list)

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


_VENDOR_PREFIX = re.compile(r"^(?:(?:nvidia|tesla|geforce|quadro|amd|instinct)\b[\s\-_]*)+", re.IGNORECASE)
_SEPARATORS = re.compile(r"[\s\-_]+")


def normalize_gpu_name(name: str) -> str:
    """Lower case, without a leading NVIDIA/Tesla/GeForce/Quadro/AMD/Instinct and without spaces, '-', '_'."""
    text = _VENDOR_PREFIX.sub("", name.strip())
    return _SEPARATORS.sub("", text).lower()


@cache
def _catalog_and_index() -> tuple[Mapping[str, GpuSpec], dict[str, str]]:
    from advisor.cache import cached, file_stamps

    return cached(
        "gpus",
        str(GPUS_FILE),
        file_stamps([GPUS_FILE]),
        _build_catalog_and_index,
        to_data=_catalog_to_data,
        from_data=_catalog_from_data,
    )


def _catalog_to_data(value: tuple[Mapping[str, GpuSpec], dict[str, str]]) -> Any:
    from advisor.datacodec import encode

    return encode(value)


def _catalog_from_data(data: Any) -> tuple[Mapping[str, GpuSpec], dict[str, str]]:
    from advisor.datacodec import DataError, decode

    # Only the index is decoded now, each GPU when first looked up (_LazyCatalog): a run needs one or
    # two of the ~80 entries; decoding all of them took 2.1 ms warm (0.7 lazily), several times that cold.
    if not (isinstance(data, list) and len(data) == 2 and isinstance(data[0], dict)):
        raise DataError("the cached GPU catalog is not [entries, index]")
    entries: dict[str, Any] = data[0]
    index = decode(dict[str, str], data[1])
    if not all(isinstance(e, dict) for e in entries.values()) or not set(index.values()) <= set(entries):
        raise DataError("the cached GPU catalog's index names GPUs it does not hold")
    return _LazyCatalog(entries), index


class _LazyCatalog(Mapping[str, GpuSpec]):
    """The GPU catalog read from the on-disk cache: entries stay plain data until looked up.

    An entry whose cached data does not decode (a corrupt cache file) is taken from the YAML instead.
    """

    def __init__(self, entries: dict[str, Any]) -> None:
        self._entries = entries
        self._specs: dict[str, GpuSpec] = {}

    def __getitem__(self, gpu_id: str) -> GpuSpec:
        spec = self._specs.get(gpu_id)
        if spec is None:
            from advisor.datacodec import DataError, decode

            data = self._entries[gpu_id]
            try:
                spec = decode(GpuSpec, data)
            except DataError:
                spec = _build_catalog_and_index()[0][gpu_id]
            self._specs[gpu_id] = spec
        return spec

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


def _build_catalog_and_index() -> tuple[dict[str, GpuSpec], dict[str, str]]:
    from advisor.schema.hardware import validate_gpu

    raw = yaml.load(GPUS_FILE.read_text(encoding="utf-8"), Loader=_Loader)
    catalog: dict[str, GpuSpec] = {}
    index: dict[str, str] = {}
    device_keys: set[str] = set()  # keys that come from a vendor tool's device name
    for entry in raw["gpus"]:
        spec = validate_gpu(entry)
        if spec.id in catalog:
            raise RuntimeError(f"{GPUS_FILE}: duplicate GPU id {spec.id!r}")
        catalog[spec.id] = spec
        for name in (spec.id, *spec.aliases):
            key = normalize_gpu_name(name)
            if index.get(key, spec.id) != spec.id:
                raise RuntimeError(f"{GPUS_FILE}: {name!r} names both {index[key]} and {spec.id}")
            index[key] = spec.id
        for name in spec.device_names:
            key = normalize_gpu_name(name)
            # nvidia-smi prints one name for some memory variants (RTX 3080 10/12 GB, 4060 Ti 8/16 GB):
            # the first entry is the default, resolve_gpu(name, memory_mib=...) picks by memory
            if key in index and index[key] != spec.id and key not in device_keys:
                raise RuntimeError(f"{GPUS_FILE}: {name!r} names both {index[key]} and {spec.id}")
            index.setdefault(key, spec.id)
            device_keys.add(key)
    return catalog, index


def gpu_catalog() -> Mapping[str, GpuSpec]:
    """Every GPU of the catalog, keyed by id (e.g. 'H100-NVL'), in file order. Cached; read-only."""
    return _catalog_and_index()[0]


# Driver-dependent nvidia-smi spellings that no exact name covers: first match wins. Only used
# for names that carry the vendor prefix, i.e. what nvidia-smi or torch printed, never for names
# a user typed (a typo there gets a did-you-mean, not a guess).
_SMI_HEURISTICS: tuple[tuple[tuple[str, ...], tuple[str, ...], str], ...] = (
    # (must contain, must not contain, id)
    (("h100", "nvl"), (), "H100-NVL"),
    (("h100", "pcie"), (), "H100-PCIe"),
    (("h100",), (), "H100-SXM"),
    (("h200", "nvl"), (), "H200-NVL"),
    (("h200",), ("nvl",), "H200"),
    (("h20",), ("h200",), "H20"),
    (("h800",), (), "H800"),
    (("gh200", "144"), (), "GH200-144GB"),
    (("gh200",), (), "GH200"),
    (("gb200",), (), "GB200"),
    (("b200",), ("gb200",), "B200"),
    (("a800", "pcie"), (), "A800-PCIe-80GB"),
    (("a800",), (), "A800-SXM-80GB"),
    (("a100", "pcie", "40"), (), "A100-PCIe-40GB"),
    (("a100", "pcie"), (), "A100-PCIe-80GB"),
    (("a100", "40"), (), "A100-SXM-40GB"),
    (("a100",), (), "A100-SXM-80GB"),
    (("v100", "pcie", "32"), (), "V100-PCIe-32GB"),
    (("v100", "pcie"), (), "V100-PCIe-16GB"),
    (("v100", "32"), (), "V100-SXM2-32GB"),
    (("v100",), (), "V100-SXM2-16GB"),
    (("rtx6000", "ada"), (), "RTX-6000-Ada"),
    (("rtxpro6000", "maxq"), (), "RTX-PRO-6000-Max-Q"),
    (("rtxpro6000",), (), "RTX-PRO-6000"),
    (("mi300x",), (), "MI300X"),
    (("mi325x",), (), "MI325X"),
    (("mi250x",), (), "MI250X"),
)


def resolve_gpu(name: str, memory_mib: float | None = None) -> GpuSpec | None:
    """The catalog GPU a name means, or None.

    Accepts catalog ids, aliases (short names such as 'H100', 'A100-80GB', '4090') and the names
    nvidia-smi (or torch/rocm-smi on ROCm) prints, with or without the 'NVIDIA ' / 'Tesla ' / 'AMD '
    prefix; case, spaces, dashes and underscores do not matter. `memory_mib` (nvidia-smi's
    memory.total) picks among cards that print the same name, such as the RTX 3080 10 GB and 12 GB.
    """
    if not isinstance(name, str) or not name.strip():
        return None
    catalog, index = _catalog_and_index()
    key = normalize_gpu_name(name)
    if key in index:
        spec = catalog[index[key]]
        if memory_mib:
            spec = _by_memory(key, memory_mib) or spec
        return spec
    if _VENDOR_PREFIX.match(name.strip()):
        for need, avoid, gpu_id in _SMI_HEURISTICS:
            if all(n in key for n in need) and not any(a in key for a in avoid):
                return catalog[gpu_id]
    return None


@cache
def _by_memory(key: str, memory_mib: float) -> GpuSpec | None:
    """Of the GPUs whose device name normalises to `key`, the one whose memory is closest; None when
    only one GPU prints that name. Cached: Machine.gpu asks on every access."""
    catalog = _catalog_and_index()[0]
    same_name = [g for g in catalog.values() if key in {normalize_gpu_name(n) for n in g.device_names}]
    known = [(abs(g.memory_total_mib - memory_mib), g) for g in same_name if g.memory_total_mib]
    if len(same_name) < 2 or not known:
        return None
    return min(known, key=lambda pair: pair[0])[1]


def suggest_gpu(name: str, n: int = 3) -> list[str]:
    """Catalog ids close to a name that did not resolve (for a did-you-mean)."""
    _, index = _catalog_and_index()
    key = normalize_gpu_name(name)
    close = difflib.get_close_matches(key, list(index), n=n * 3, cutoff=0.6)
    out: list[str] = []
    for match in close:
        gpu_id = index[match]
        if gpu_id not in out:
            out.append(gpu_id)
    return out[:n]


def unknown_gpu_message(name: str) -> str:
    """The error for a GPU model the catalog does not know, with a did-you-mean (schema/hardware uses it)."""
    hint = suggest_gpu(name)
    msg = f"unknown GPU model {name!r}"
    if hint:
        msg += f"; did you mean {' or '.join(repr(h) for h in hint)}?"
    else:
        msg += f"; known models: {', '.join(gpu_catalog())}"
    return msg


# --------------------------------------------------------------------------------------------
# Machine descriptor

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


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuGroup:
    """The GPUs of one node: all of one model."""

    model: str  # GPU catalog key or alias, e.g. H100-NVL, A100-80GB, RTX-4090
    count: int  # GPUs per node
    memory_gib: float | None = None  # override of the catalog's usable memory per GPU, GiB


@dataclass(frozen=True, slots=True, kw_only=True)
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
    if is_dataclass(value):
        items = ((f.name, getattr(value, f.name)) for f in fields(value))
        return {k: _plain(v) for k, v in items if v is not None}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def validate_machine(data: Any) -> Machine:
    """A Machine from a descriptor's mapping; raises pydantic.ValidationError (a ValueError)."""
    from advisor.schema.hardware import validate_machine as validate

    return validate(data)


def machine_yaml(machine: Machine) -> str:
    """The machine as descriptor YAML (loads back with load_hardware to an equal Machine)."""
    data = machine.to_descriptor()
    head = f"# {machine.gpus.count} x {machine.gpu.display_name}"
    if machine.nodes > 1:
        head += f", {machine.nodes} nodes"
    lines = [head, f"name: {_yaml_scalar(data['name'])}"]
    gpus = ", ".join(f"{k}: {_yaml_scalar(v)}" for k, v in data["gpus"].items())
    lines.append(f"gpus: {{{gpus}}}")
    nvlink = data["nvlink"]
    lines.append(f"nvlink: {nvlink if nvlink == 'all' else '[' + ', '.join(str(g) for g in nvlink) + ']'}")
    for key in ("cpu_cores", "ram_gib", "nodes", "network", "notes"):
        if key in data and not (key == "nodes" and data[key] == 1):
            lines.append(f"{key}: {_yaml_scalar(data[key])}")
    return "\n".join(lines) + "\n"


def _yaml_scalar(value: Any) -> str:
    if isinstance(value, str):
        # quote anything YAML 1.1 would read as another type, or that has YAML syntax in it
        plain = yaml.safe_load(value) == value if re.fullmatch(r"[\w.+-]+", value) else False
        return value if plain else yaml.safe_dump(value, default_style='"', width=1_000_000).strip()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def hardware_schema() -> dict[str, Any]:
    """JSON schema of the hardware descriptor."""
    from advisor.schema.hardware import json_schema

    schema = json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "gpu-advise hardware descriptor"
    return schema


# --------------------------------------------------------------------------------------------
# Reading descriptors


def _mark_of(root: yaml.Node, loc: tuple[str | int, ...], *, key: bool) -> yaml.Mark:
    """The mark of the node at `loc` (the key node when `key`), or of the deepest one found."""
    node = root
    mark = root.start_mark
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value == str(part):
                    mark = k.start_mark if key and part == loc[-1] else v.start_mark
                    node = v
                    break
            else:
                return mark
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            node = node.value[part]
            mark = node.start_mark
        else:
            return mark
    return mark


def _duplicate_keys(node: yaml.Node) -> Iterator[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode):
                if k.value in seen:
                    yield k
                seen.add(k.value)
            yield from _duplicate_keys(v)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from _duplicate_keys(item)


_FIELD_NAMES = {"": {f.name for f in fields(Machine)}, "gpus": {f.name for f in fields(GpuGroup)}}


def _describe(error: Any) -> tuple[tuple[str | int, ...], bool, str]:
    """(location, points-at-the-key, message) of one pydantic error."""
    loc = tuple(error["loc"])
    ctx = error.get("ctx") or {}
    if error["type"] == "hardware":
        path = tuple(ctx.get("path") or ()) or loc
        return path, False, ctx["message"]
    # drop union-branch labels such as "list[list[int]]" or "literal['all']"
    clean = tuple(p for p in loc if isinstance(p, int) or p in _FIELD_NAMES[""] | _FIELD_NAMES["gpus"])
    dotted = ".".join(str(p) for p in clean) or "descriptor"
    if error["type"] == "extra_forbidden":
        parent = ".".join(str(p) for p in loc[:-1])
        allowed = sorted(_FIELD_NAMES.get(parent, set()))
        msg = f"unknown key {loc[-1]!r}" + (f" in {parent}" if parent else "")
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        msg += f"; did you mean {close[0]!r}?" if close else f"; allowed keys: {', '.join(allowed)}"
        return loc, True, msg
    if error["type"] == "missing":
        return loc[:-1], False, f"missing required key {dotted!r}"
    return clean, False, f"{dotted}: {error['msg']} (got {error.get('input')!r})"


def _parse_cached(text: str, source: str, default_name: str) -> Machine:
    """_parse_descriptor through the on-disk cache, keyed by the text and the GPU catalog's stamp."""
    from advisor.cache import cached, file_stamps

    key = (text, source, default_name, file_stamps([GPUS_FILE]))
    slot = os.path.abspath(source)
    from advisor.datacodec import decode, encode

    return cached(
        "machine",
        slot,
        key,
        lambda: _parse_descriptor(text, source, default_name=default_name),
        to_data=encode,
        from_data=lambda data: decode(Machine, data),
    )


def _parse_descriptor(text: str, source: str, *, default_name: str | None = None) -> Machine:
    def fail(message: str, mark: yaml.Mark | None) -> HardwareError:
        line = mark.line + 1 if mark is not None else 1
        col = mark.column + 1 if mark is not None else 1
        return HardwareError(f"{source}:{line}:{col}: {message}", file=source, line=line, col=col)

    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise fail(f"invalid YAML: {problem}", mark) from None
    if root is None:
        raise fail("the hardware descriptor is empty", None)
    if not isinstance(root, yaml.MappingNode):
        raise fail("a hardware descriptor must be a mapping (name:, gpus:, nvlink:, ...)", root.start_mark)
    for dup in _duplicate_keys(root):
        raise fail(f"duplicate key {dup.value!r}", dup.start_mark)
    data = yaml.load(text, Loader=_Loader)
    if default_name and isinstance(data, dict) and not data.get("name"):
        data["name"] = default_name
    from pydantic import ValidationError

    try:
        return validate_machine(data)
    except ValidationError as exc:
        problems = [_describe(e) for e in exc.errors()]
        lines = []
        first: HardwareError | None = None
        for loc, at_key, msg in problems:
            err = fail(msg, _mark_of(root, loc, key=at_key))
            first = first or err
            lines.append(err.message)
        assert first is not None
        raise HardwareError("\n".join(lines), file=first.file, line=first.line, col=first.col) from None


class _CaseInsensitive(dict[str, Machine]):
    """A dict of machines whose lookups ignore case; iteration keeps the canonical names."""

    def __init__(self, items: Mapping[str, Machine]) -> None:
        super().__init__(items)
        self._folded = {k.casefold(): k for k in items}

    def _key(self, key: str) -> str:
        return self._folded.get(key.casefold(), key)

    def __getitem__(self, key: str) -> Machine:
        return super().__getitem__(self._key(key))

    def __contains__(self, key: object) -> bool:
        return super().__contains__(self._key(key) if isinstance(key, str) else key)

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(self._key(key), default)


@cache
def builtin_machines() -> dict[str, Machine]:
    """The shipped machines (advisor/data/machines/*.yaml) by name; lookups ignore case."""
    machines: dict[str, Machine] = {}
    for path in sorted(MACHINES_DIR.glob("*.yaml")):
        machine = _parse_descriptor(path.read_text(encoding="utf-8"), str(path), default_name=path.stem)
        machines[machine.name] = machine
    return _CaseInsensitive(machines)


def load_hardware(name_or_path: str | Path) -> Machine:
    """A built-in machine by name (case-insensitive) or a descriptor YAML file."""
    text = str(name_or_path)
    path = Path(text).expanduser()
    if path.is_file():
        from advisor.sources.read import ReadRefused, read_text_file

        try:
            content = read_text_file(path)  # regular files only, at most 10 MB read
        except ReadRefused as exc:
            raise HardwareError(f"{text}: cannot read hardware descriptor: {exc.reason}", file=text) from None
        return _parse_cached(content, text, path.stem)
    for candidate in MACHINES_DIR.glob("*.yaml"):  # parse only the one asked for: start-up matters
        if candidate.stem.casefold() == text.casefold():
            content = candidate.read_text(encoding="utf-8")
            machine = _parse_cached(content, str(candidate), candidate.stem)
            if machine.name.casefold() == text.casefold():
                return machine
    machines = builtin_machines()
    if text in machines:
        return machines[text]
    if path.suffix.lower() in (".yaml", ".yml", ".json") or "/" in text or "\\" in text:
        raise HardwareError(f"{text}: hardware descriptor file not found", file=text)
    close = difflib.get_close_matches(text.casefold(), [m.casefold() for m in machines], n=3, cutoff=0.5)
    canon = {m.casefold(): m for m in machines}
    msg = f"unknown hardware {text!r}: not a built-in machine and not a file"
    if close:
        msg += f"; did you mean {' or '.join(repr(canon[c]) for c in close)}?"
    msg += f" (built-in: {', '.join(machines)})"
    raise HardwareError(msg)

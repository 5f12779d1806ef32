"""The GPU catalog (advisor/data/gpus.yaml): read lazily and cached, looked up by id, alias or device name.

Importing this module reads no file. It validates entries into advisor.sources.gpu_types's records
(advisor.core.datacodec.validate), so it does not import the machine descriptor code.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

import yaml

from advisor import PACKAGE_DIR
from advisor.core.suggest import close_matches
from advisor.sources.gpu_types import GpuSpec

try:  # the C loader is several times faster
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    _Loader = yaml.SafeLoader

DATA_DIR = PACKAGE_DIR / "data"
GPUS_FILE = DATA_DIR / "gpus.yaml"


_VENDOR_PREFIX = re.compile(r"^(?:(?:nvidia|tesla|geforce|quadro|amd|instinct)\b[\s\-_]*)+", re.IGNORECASE)
_SEPARATORS = re.compile(r"[\s\-_]+")


def normalize_gpu_name(name: str) -> str:
    """Lower case, without a leading NVIDIA/Tesla/GeForce/Quadro/AMD/Instinct and without spaces, '-', '_'."""
    text = _VENDOR_PREFIX.sub("", name.strip())
    return _SEPARATORS.sub("", text).lower()


@cache
def _catalog_and_index() -> tuple[Mapping[str, GpuSpec], dict[str, str]]:
    from advisor.core.cache import cached, content_stamps, file_stamps, has_prebuilt, prebuilt

    if has_prebuilt("gpus"):  # an installed wheel: decoded at build time (setup.py)
        data = prebuilt("gpus", content_stamps([GPUS_FILE]))
        if data is not None:
            try:
                return _catalog_from_data(data)
            except Exception:  # the wrong shape: read the YAML
                pass
    return cached(
        "gpus",
        str(GPUS_FILE),
        file_stamps([GPUS_FILE]),
        _build_catalog_and_index,
        to_data=_catalog_to_data,
        from_data=_catalog_from_data,
    )


def prebuilt_gpus() -> tuple[object, Any]:
    """(key, data) of the GPU catalog, for the build to store in the package (setup.py)."""
    from advisor.core.cache import content_stamps

    return content_stamps([GPUS_FILE]), _catalog_to_data(_build_catalog_and_index())


def _catalog_to_data(value: tuple[Mapping[str, GpuSpec], dict[str, str]]) -> Any:
    from advisor.core.datacodec import encode

    return encode(value)


def _catalog_from_data(data: Any) -> tuple[Mapping[str, GpuSpec], dict[str, str]]:
    from advisor.core.datacodec import DataError, decode

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
            from advisor.core.datacodec import DataError, decode

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


def validate_gpu(entry: Any) -> GpuSpec:
    """One entry of the GPU catalog; raises advisor.core.datacodec.Invalid (a ValueError)."""
    from advisor.core.datacodec import validate

    return validate(GpuSpec, entry)


def _build_catalog_and_index() -> tuple[dict[str, GpuSpec], dict[str, str]]:
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
    close = close_matches(key, list(index), n=n * 3, cutoff=0.6)
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

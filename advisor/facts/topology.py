"""Placement facts: which GPUs of a machine share NVLink, and how fast a collective can run.

GPU indices are global across nodes: index = node * gpus_per_node + local index. Everything here
is a pure function of a `Machine` (advisor.sources.hardware) and unit-tested.

Bus bandwidth figures (busbw, the nccl-tests definition) come from the GPU catalog: the measured
all-reduce busbw inside an NVLink domain (on AMD the Infinity Fabric mesh, where a job on part of
the mesh gets fewer direct links), or across PCIe. Across nodes, NCCL reduces inside the
node first, so the inter-node busbw tracks the node's aggregate NIC bandwidth: 2 nodes x 8 A100
with 4x 200 Gb/s IB measured 86 GB/s (NVIDIA/nccl-tests#175, 100 GB/s of NICs); 4 nodes x 8 B200
with 8x 400 Gb/s EFA measured 377-382 GB/s (stas00/ml-engineering network/README.md, 400 GB/s of
NICs). Hence busbw = NIC GB/s per node x ~0.9 over RDMA; 100 GbE TCP without RDMA is taken as
~0.8 x line rate (derived, hardware.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Literal

from advisor.sources.hardware import GpuSpec, Machine, parse_network

LinkKind = Literal["nvlink", "pcie", "network"]

RDMA_EFFICIENCY = 0.9  # nccl-tests#175: 86/100; stas00 P6-B200: 377/400
TCP_EFFICIENCY = 0.8  # derived: 100 GbE TCP <= ~10 GB/s


def _local_groups(machine: Machine) -> list[frozenset[int]]:
    count = machine.gpus.count
    if count < 2:
        return []
    if machine.nvlink == "all":
        return [frozenset(range(count))]
    return sorted((frozenset(g) for g in machine.nvlink if len(g) > 1), key=min)


def nvlink_groups(machine: Machine) -> list[frozenset[int]]:
    """Groups of (global) GPU indices joined by NVLink, ordered by their lowest index.

    GPUs on no NVLink appear in no group. Each node contributes its own groups.
    """
    count = machine.gpus.count
    out: list[frozenset[int]] = []
    for node in range(machine.nodes):
        out.extend(frozenset(node * count + i for i in g) for g in _local_groups(machine))
    return out


def _check(machine: Machine, ids: Iterable[int]) -> list[int]:
    total = machine.total_gpus
    out = []
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < total:
            raise ValueError(
                f"GPU index {i!r} is out of range for {machine.name or 'this machine'} (0..{total - 1})"
            )
        out.append(i)
    return out


def _group_of(machine: Machine, gpu: int) -> frozenset[int] | None:
    # from the GPU's own node: nvlink_groups() lists every node's groups, once per call (4,096 nodes
    # took 3 s, 10**12 ran out of memory)
    count = machine.gpus.count
    node, local = divmod(gpu, count)
    for group in _local_groups(machine):
        if local in group:
            return frozenset(node * count + i for i in group)
    return None


def link_kind(machine: Machine, a: int, b: int) -> LinkKind:
    """How GPUs a and b (global indices) talk: over NVLink, PCIe (same node) or the network.

    A GPU and itself count as "nvlink" (no slower link is crossed).
    """
    a, b = _check(machine, (a, b))
    count = machine.gpus.count
    if a // count != b // count:
        return "network"
    if a == b:
        return "nvlink"
    group = _group_of(machine, a)
    return "nvlink" if group is not None and b in group else "pcie"


def all_nvlinked(machine: Machine, gpu_ids: Iterable[int]) -> bool:
    """True when every pair of these GPUs is joined by NVLink (one NVLink group holds them all).

    Zero or one GPU: True (there is nothing to link).
    """
    ids = set(_check(machine, gpu_ids))
    if len(ids) < 2:
        return True
    group = _group_of(machine, min(ids))
    return group is not None and ids <= group


def nvlink_group_for(machine: Machine, k: int) -> list[int] | None:
    """The k lowest GPU indices of the first NVLink group that can hold k GPUs, or None.

    k == 1 needs no NVLink: [0].
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if k == 1:
        return [0]
    for group in nvlink_groups(machine):
        if len(group) >= k:
            return sorted(group)[:k]
    return None


def network_busbw_gbs(machine: Machine) -> float | None:
    """Realistic all-reduce busbw across nodes, GB/s (None when the machine names no network)."""
    if machine.network is None:
        return None
    kind, gbps, nics = parse_network(machine.network)
    if nics is None:  # GPUDirect-RDMA fabrics are rail-optimised: one NIC per GPU
        nics = machine.gpus.count if kind in ("ib", "efa", "roce") else 1
    efficiency = TCP_EFFICIENCY if kind == "eth" else RDMA_EFFICIENCY
    return gbps / 8 * nics * efficiency


def _intra_node_busbw(machine: Machine, local: set[int]) -> float:
    if len(local) < 2:
        return math.inf
    gpu = machine.gpu
    link = gpu.peer_link
    for group in _local_groups(machine):
        if local <= group and link is not None:
            if link.pair_busbw_gbs is not None and len(local) < len(group):
                # a switchless mesh (AMD xGMI) gives each GPU one direct link per peer, so a job on k of
                # its GPUs uses k-1 links: 2 of 8 MI300X measured 47.7 GB/s vs 312.9 with all 8 (stas00)
                return min(link.busbw_gbs, link.pair_busbw_gbs * (len(local) - 1))
            return link.busbw_gbs
    return gpu.pcie.busbw_gbs


def slowest_link_busbw_gbs(machine: Machine, gpu_ids: Iterable[int]) -> float:
    """Realistic all-reduce busbw (GB/s) of a collective over these GPUs: its slowest hop.

    A ring runs at its slowest hop: GPUs all inside one NVLink group get the NVLink figure; any
    pair crossing PCIe makes it the PCIe figure (nccl-tests#178: 208 -> 20 GB/s when a 3rd A100
    joins a bridged pair); GPUs on several nodes are also bounded by the network. Fewer than two
    GPUs communicate nothing: math.inf.
    """
    ids = sorted(set(_check(machine, gpu_ids)))
    if len(ids) < 2:
        return math.inf
    count = machine.gpus.count
    per_node: dict[int, set[int]] = {}
    for i in ids:
        per_node.setdefault(i // count, set()).add(i % count)
    busbw = min(_intra_node_busbw(machine, local) for local in per_node.values())
    if len(per_node) > 1:
        net = network_busbw_gbs(machine)
        if net is None:  # pragma: no cover - Machine requires network when nodes > 1
            raise ValueError("GPUs on several nodes but the machine names no network")
        busbw = min(busbw, net)
    return busbw


def _spec(gpu: GpuSpec | Machine) -> GpuSpec:
    return gpu.gpu if isinstance(gpu, Machine) else gpu


def bf16_supported(gpu: GpuSpec | Machine) -> bool:
    """bf16 tensor cores, from the catalog. NVIDIA: compute capability >= 8.0 (torch.cuda.is_bf16_supported()
    can say True on V100/T4 through emulation; HF Trainer then does not stop bf16=True). AMD CDNA2/3: yes.
    """
    spec = _spec(gpu)
    return spec.bf16_native and (spec.vendor != "nvidia" or spec.cc >= (8, 0))


def tf32_supported(gpu: GpuSpec | Machine) -> bool:
    """TF32 tensor math, from the catalog: NVIDIA Ampere and later (cc >= 8.0), AMD CDNA3 but not CDNA2."""
    return _spec(gpu).tf32_supported


def fp8_supported(gpu: GpuSpec | Machine) -> bool:
    """FP8 tensor cores: the catalog has an FP8 rate (NVIDIA cc >= 8.9: Ada, Hopper, Blackwell; AMD MI300)."""
    return _spec(gpu).fp8_dense_tflops is not None

"""Which GPUs a run's processes land on, and what joins them (NVLink, PCIe, the network)."""

from __future__ import annotations

from typing import Any

from advisor.facts import topology
from advisor.provenance import Namespace, Value


def placement_facts(plan: Any, names: dict[str, Any]) -> Namespace:
    ns = Namespace("placement")
    machine = plan.hardware
    batch = names["batch"]
    per_node = batch.processes_per_node
    nodes = batch.nodes if isinstance(batch.nodes, int) else 1
    visible = batch.entry("visible_gpus")
    selected = visible.value if isinstance(visible, Value) and visible.known else None
    selection_origin = visible.origin if isinstance(visible, Value) else None
    ns.set("selected_by_index", Value(selected is not None, selection_origin, "derived"))
    ns.set("selection", Value(selected, selection_origin, "derived"))
    if machine is None or not isinstance(per_node, int):
        return ns

    count = machine.gpus.count
    ns.set("machine_gpus", Value(count, None, "hardware"))
    if selected is not None:
        local = list(selected)
        used = local[:per_node] if len(local) >= per_node else local
    else:
        local = list(range(count))
        used = list(range(min(per_node, count)))  # ranks take visible devices 0..n-1
    ns.set("visible_count", Value(len(local), selection_origin, "derived"))
    out_of_range = [g for g in used if g >= count]
    ns.set("out_of_range", Value(out_of_range, selection_origin, "derived"))
    if out_of_range:
        return ns
    ns.set("nodes_exceed_machine", Value(nodes > machine.nodes, batch.entry("nodes").origin, "derived"))
    gpu_ids = [n * count + g for n in range(min(nodes, machine.nodes)) for g in used]
    ns.set("gpu_ids", Value(used, selection_origin, "derived"))
    k = len(used)
    ns.set("gpus_per_node", Value(k, selection_origin, "derived"))
    groups = topology.nvlink_groups(machine)
    ns.set("has_nvlink", Value(bool(groups) and any(len(g) > 1 for g in groups), None, "hardware"))
    one_group = topology.all_nvlinked(machine, used)
    ns.set("in_one_nvlink_group", Value(one_group, selection_origin, "derived"))
    suggestion = topology.nvlink_group_for(machine, k) if k >= 2 else None
    ns.set("nvlink_group_for_job", Value(suggestion, None, "derived"))
    if len(gpu_ids) >= 2:
        kinds = {topology.link_kind(machine, a, b) for a in gpu_ids for b in gpu_ids if a < b}
        slowest = "network" if "network" in kinds else "pcie" if "pcie" in kinds else "nvlink"
        ns.set("slowest_link", Value(slowest, selection_origin, "derived"))
        ns.set("busbw_gbs", Value(topology.slowest_link_busbw_gbs(machine, gpu_ids), None, "derived"))
        ns.set("intra_node_link", Value("nvlink" if one_group else "pcie", selection_origin, "derived"))
    return ns

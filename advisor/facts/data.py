"""DataLoader workers against the CPUs of a node."""

from __future__ import annotations

from typing import Any

from advisor.provenance import Namespace, Value


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def data_facts(plan: Any, names: dict[str, Any]) -> Namespace:
    ns = Namespace("data")
    workers_entry = plan.training.entry("dataloader_num_workers")
    workers = _as_int(plan.training.dataloader_num_workers)
    origin = workers_entry.origin if isinstance(workers_entry, Value) else None
    ns.set("workers", Value(workers, origin, "training_args"))
    batch = names["batch"]
    procs = batch.processes_per_node
    if workers is not None and isinstance(procs, int):
        ns.set("processes_per_node", Value(procs, batch.entry("processes_per_node").origin, "derived"))
        ns.set("workers_per_node", Value(workers * procs, origin, "derived"))
        # each rank is a process of its own besides its workers
        ns.set("cpu_processes_per_node", Value((workers + 1) * procs, origin, "derived"))
    hw = names.get("hardware")
    if hw:
        ns.set("cpu_cores", Value(hw.cpu_cores, None, "hardware"))
    return ns

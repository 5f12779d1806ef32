"""DataLoader workers against the CPUs of a node, and pinned host memory."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.core.provenance import Value
from advisor.facts.declare import FactNamespace, fact
from advisor.facts.namespace_entries import entry_origin

if TYPE_CHECKING:
    from advisor.facts.batch import BatchFacts
    from advisor.facts.hardware import HardwareFacts
    from advisor.plan.run_plan import RunPlan


class DataFacts(FactNamespace, name="data", doc="DataLoader workers and the CPU processes they add."):
    workers = fact(int, "dataloader_num_workers per process", unit="workers")
    workers_written = fact(bool, "dataloader_num_workers is written (not the default)")
    processes_per_node = fact(int, "training processes that run per node", unit="processes")
    declared_processes_per_node = fact(int, "the process count written, when fewer can run", unit="processes")
    workers_per_node = fact(int, "workers x processes per node", unit="workers")
    cpu_processes_per_node = fact(int, "(workers + 1) x processes per node", unit="processes")
    processes_total = fact(int, "training processes over all nodes", unit="processes")
    workers_total = fact(int, "workers over all nodes", unit="workers")
    cpu_cores = fact(int, "CPU cores per node of the machine", unit="cores")
    max_workers_per_process = fact(
        int, "most workers per process that leave one core per rank", unit="workers"
    )
    media = fact(bool, "the data decodes images, audio or video (CPU-heavy loading)")
    pin_memory = fact(bool, "dataloader_pin_memory as the Trainer reads it")
    on_gpu = fact(bool, "the run trains on GPUs (not use_cpu)")


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in {"true", "false"}:
        return value.strip().lower() == "true"
    return None


_MEDIA_WORDS = ("image", "vision", "video", "audio", "pixel", "mm_", "processor_type", "media_dir")


def decodes_media(plan: RunPlan) -> bool:
    """The run feeds images, video or audio (LLaVA's image_folder/vision_tower, LLaMA-Factory's
    image_max_pixels/media_dir, axolotl's processor_type): decoding is CPU work that needs more
    DataLoader workers than tokenized text does."""
    for key, _ in plan.training.items():
        low = key.lower()
        if any(word in low for word in _MEDIA_WORDS):
            return True
    return False


def running_processes(plan: RunPlan, batch: Any) -> int | None:
    """The training processes per node that get a GPU: the launch's count, capped at the GPUs the
    job can see (more ranks than visible GPUs is GA304's error; the ranks past the last GPU fail,
    and GA304's fix starts one per visible GPU). A plain `python` run is one process."""
    procs = batch.processes_per_node
    if not isinstance(procs, int) or isinstance(procs, bool):
        return None
    visible = batch.entry("visible_gpus")
    machine = getattr(plan, "hardware", None)
    count = machine.gpus.count if machine is not None else None
    n_visible: int | None = None
    if isinstance(visible, Value) and visible.known and isinstance(visible.value, list):
        ids = visible.value
        if count is not None:  # CUDA stops at the first index the machine does not have
            first_bad = next((i for i, g in enumerate(ids) if not isinstance(g, int) or g >= count), None)
            ids = ids[:first_bad] if first_bad is not None else ids
        n_visible = len(ids)
    elif count is not None:
        n_visible = count
    if n_visible is not None and 0 < n_visible < procs:
        return n_visible
    return procs


def data_facts(plan: RunPlan, batch: BatchFacts, hardware: HardwareFacts) -> DataFacts:
    ns = DataFacts()
    workers_entry = plan.training.entry("dataloader_num_workers")
    workers = _as_int(plan.training.dataloader_num_workers)
    origin = workers_entry.origin if isinstance(workers_entry, Value) else None
    source = workers_entry.source if isinstance(workers_entry, Value) else "default"
    ns.workers = Value(workers, origin, source)
    ns.workers_written = Value(source != "default", origin, "derived")
    declared = batch.processes_per_node
    procs = running_processes(plan, batch)
    if workers is not None and isinstance(procs, int):
        proc_origin = entry_origin(batch, "processes_per_node")
        ns.processes_per_node = Value(procs, proc_origin, "derived")
        if isinstance(declared, int) and declared != procs:
            # GA304 reports the mismatch; judge the workers of the processes that can run
            ns.declared_processes_per_node = Value(declared, proc_origin, "derived")
        ns.workers_per_node = Value(workers * procs, origin, "derived")
        # each rank is a process of its own besides its workers
        ns.cpu_processes_per_node = Value((workers + 1) * procs, origin, "derived")
        nodes = batch.nodes
        if isinstance(nodes, int) and not isinstance(nodes, bool) and nodes >= 1:
            ns.processes_total = Value(procs * nodes, proc_origin, "derived")
            ns.workers_total = Value(workers * procs * nodes, origin, "derived")
    hw = hardware
    if hw:
        ns.cpu_cores = Value(hw.cpu_cores, None, "hardware")
        if isinstance(procs, int) and procs > 0 and isinstance(hw.cpu_cores, int):
            # the most workers per process that leave one core per rank: floor(cores / ranks) - 1
            ns.max_workers_per_process = Value(max(hw.cpu_cores // procs - 1, 0), None, "derived")
    media = decodes_media(plan)
    ns.media = Value(media, None, "derived")
    pin = plan.training.entry("dataloader_pin_memory")
    if isinstance(pin, Value) and pin.known:
        ns.pin_memory = Value(_as_bool(pin.value), pin.origin, pin.source)
    use_cpu = _as_bool(plan.training.use_cpu) or _as_bool(plan.training.no_cuda) or False
    accel_cpu = _as_bool(plan.accelerate.use_cpu) or False
    ns.on_gpu = Value(not (use_cpu or accel_cpu), None, "derived")
    return ns

"""DataLoader workers against the CPUs of a node, and pinned host memory."""

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


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in {"true", "false"}:
        return value.strip().lower() == "true"
    return None


_MEDIA_WORDS = ("image", "vision", "video", "audio", "pixel", "mm_", "processor_type", "media_dir")


def decodes_media(plan: Any) -> bool:
    """The run feeds images, video or audio (LLaVA's image_folder/vision_tower, LLaMA-Factory's
    image_max_pixels/media_dir, axolotl's processor_type): decoding is CPU work that needs more
    DataLoader workers than tokenized text does."""
    for key, _ in plan.training.items():
        low = key.lower()
        if any(word in low for word in _MEDIA_WORDS):
            return True
    return False


def data_facts(plan: Any, names: dict[str, Any]) -> Namespace:
    ns = Namespace("data")
    workers_entry = plan.training.entry("dataloader_num_workers")
    workers = _as_int(plan.training.dataloader_num_workers)
    origin = workers_entry.origin if isinstance(workers_entry, Value) else None
    source = workers_entry.source if isinstance(workers_entry, Value) else "default"
    ns.set("workers", Value(workers, origin, source))
    ns.set("workers_written", Value(source != "default", origin, "derived"))
    batch = names["batch"]
    procs = batch.processes_per_node
    if workers is not None and isinstance(procs, int):
        ns.set("processes_per_node", Value(procs, batch.entry("processes_per_node").origin, "derived"))
        ns.set("workers_per_node", Value(workers * procs, origin, "derived"))
        # each rank is a process of its own besides its workers
        ns.set("cpu_processes_per_node", Value((workers + 1) * procs, origin, "derived"))
        world = batch.world_size
        if isinstance(world, int):
            ns.set("workers_total", Value(workers * world, origin, "derived"))
    hw = names.get("hardware")
    if hw:
        ns.set("cpu_cores", Value(hw.cpu_cores, None, "hardware"))
        if isinstance(procs, int) and procs > 0 and isinstance(hw.cpu_cores, int):
            # the most workers per process that leave one core per rank: floor(cores / ranks) - 1
            ns.set("max_workers_per_process", Value(max(hw.cpu_cores // procs - 1, 0), None, "derived"))
    media = decodes_media(plan)
    ns.set("media", Value(media, None, "derived"))
    pin = plan.training.entry("dataloader_pin_memory")
    if isinstance(pin, Value) and pin.known:
        ns.set("pin_memory", Value(_as_bool(pin.value), pin.origin, pin.source))
    use_cpu = _as_bool(plan.training.use_cpu) or _as_bool(plan.training.no_cuda) or False
    accel_cpu = _as_bool(plan.accelerate.use_cpu) or False
    ns.set("on_gpu", Value(not (use_cpu or accel_cpu), None, "derived"))
    return ns

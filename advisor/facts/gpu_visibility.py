"""The GPUs a run can see: the machine's count, CUDA_VISIBLE_DEVICES, accelerate's gpu_ids, the deepspeed
launcher's --include / --exclude (which drop CUDA_VISIBLE_DEVICES)."""

from __future__ import annotations

import re
from typing import Any

from advisor.core.document import Location
from advisor.core.provenance import Value
from advisor.core.records import record
from advisor.facts.namespace_entries import value_entry
from advisor.plan.run_plan import RunPlan
from advisor.sources import launchers


@record(slots=True)
class GpuList:
    ids: list[int] | None  # None: unknown
    origin: Location | None
    unknown: str | None = None
    via: str | None = None  # "CUDA_VISIBLE_DEVICES", "gpu_ids", "include"


def parse_gpu_list(text: Any) -> list[int] | None:
    """'0,1,3' -> [0, 1, 3]; 'all' or None -> None; anything else (UUIDs) -> None."""
    if text is None:
        return None
    if isinstance(text, int) and not isinstance(text, bool):
        return [text] if text >= 0 else None  # CUDA_VISIBLE_DEVICES=-1 hides every GPU: no list
    s = str(text).strip()
    if s == "" or s.lower() == "all":
        return None if s else []
    parts = [p.strip() for p in s.split(",") if p.strip()]
    if not all(re.fullmatch(r"\d{1,9}", p) for p in parts):  # longer is no device index (and int() may raise)
        return None
    return [int(p) for p in parts]


def machine_gpu_count(plan: RunPlan) -> int | None:
    hw = plan.hardware
    return None if hw is None else hw.gpus.count


def gpu_exclusion(plan: RunPlan) -> tuple[Value, list[int]] | None:
    """deepspeed `--exclude localhost:0` / `--exclude host:0,1`: (the flag, the local GPU indices it
    takes away). None when there is no exclusion of one host's GPUs (several hosts, a whole host)."""
    exclude = value_entry(plan.launch, "exclude")
    if exclude is None or not exclude.known:
        return None
    text = str(exclude.value).strip()
    m = re.fullmatch(r"[^:@\s]+:([\d,]+)", text)
    ids = parse_gpu_list(m.group(1)) if m else None
    return (exclude, sorted(set(ids))) if ids else None


def visible_gpus(plan: RunPlan) -> GpuList:
    """The GPUs a run's processes can see (physical indices), from CUDA_VISIBLE_DEVICES and the
    launcher's own selection (accelerate gpu_ids, deepspeed --include / --exclude)."""
    launcher = plan.launch.launcher
    cvd = value_entry(plan.env, "CUDA_VISIBLE_DEVICES")
    mask: list[int] | None = None
    mask_origin = None
    if cvd is not None:
        if not cvd.known:
            return GpuList(None, cvd.origin, cvd.unknown, "CUDA_VISIBLE_DEVICES")
        mask = parse_gpu_list(cvd.value)
        mask_origin = cvd.origin

    if launchers.spec_of(launcher).filters_gpus:
        include = value_entry(plan.launch, "include")
        filters = any(
            value_entry(plan.launch, k) is not None for k in ("include", "exclude", "num_gpus", "num_nodes")
        )
        if include is not None and include.known:
            m = re.search(r":([\d,]+)", str(include.value))
            ids = parse_gpu_list(m.group(1)) if m else None
            return GpuList(ids, include.origin, via="include")
        excluded = gpu_exclusion(plan)
        total = machine_gpu_count(plan)
        if excluded is not None and total is not None and value_entry(plan.launch, "num_gpus") is None:
            flag, gone = excluded
            return GpuList([i for i in range(total) if i not in gone], flag.origin, via="exclude")
        if filters:
            return GpuList(None, None)  # deepspeed deletes CUDA_VISIBLE_DEVICES here
        return GpuList(mask, mask_origin, via="CUDA_VISIBLE_DEVICES" if mask is not None else None)

    gpu_ids = value_entry(plan.accelerate, "gpu_ids")
    reads_gpu_ids = launcher is None or launchers.spec_of(launcher).reads_accelerate_config
    if reads_gpu_ids and gpu_ids is not None and gpu_ids.known:
        ids = parse_gpu_list(gpu_ids.value)
        if ids:  # an empty gpu_ids selects nothing we can count: left to the GPUs otherwise visible
            if mask is not None:
                ids = [mask[i] for i in ids if i < len(mask)]
            return GpuList(ids, gpu_ids.origin, via="gpu_ids")
    return GpuList(mask, mask_origin, via="CUDA_VISIBLE_DEVICES" if mask is not None else None)

"""World size and effective batch, computed the way each launcher really starts processes.

See config-formats.md: accelerate's num_processes is the total over machines and without a config
file it takes every visible GPU; torchrun starts one process unless told otherwise; the deepspeed
launcher takes every GPU and drops CUDA_VISIBLE_DEVICES when --num_gpus/--include is given;
llamafactory-cli starts torchrun on every visible GPU. Tensor, context and sequence parallel
sizes divide the data-parallel size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from advisor.plan import RunPlan, coerce_text
from advisor.provenance import Namespace, Value
from advisor.sources.document import Location


@dataclass(slots=True)
class GpuList:
    ids: list[int] | None  # None: unknown
    origin: Location | None
    unknown: str | None = None


def parse_gpu_list(text: Any) -> list[int] | None:
    """'0,1,3' -> [0, 1, 3]; 'all' or None -> None; anything else (UUIDs) -> None."""
    if text is None:
        return None
    if isinstance(text, int) and not isinstance(text, bool):
        return [text]
    s = str(text).strip()
    if s == "" or s.lower() == "all":
        return None if s else []
    parts = [p.strip() for p in s.split(",") if p.strip()]
    if not all(re.fullmatch(r"\d+", p) for p in parts):
        return None
    return [int(p) for p in parts]


def _value(ns: Namespace, key: str) -> Value | None:
    entry = ns.entry(key)
    return entry if isinstance(entry, Value) else None


def _int(v: Value | None) -> int | None:
    if v is None or not v.known:
        return None
    val = v.value
    if isinstance(val, str):
        val = coerce_text(val)
    if isinstance(val, bool) or not isinstance(val, int | float):
        return None
    return int(val)


def machine_gpu_count(plan: RunPlan) -> int | None:
    hw = plan.hardware
    return None if hw is None else hw.gpus.count


def visible_gpus(plan: RunPlan) -> GpuList:
    """The GPUs a run's processes can see (physical indices), from CUDA_VISIBLE_DEVICES and the
    launcher's own selection (accelerate gpu_ids, deepspeed --include)."""
    launcher = plan.launch.launcher
    cvd = _value(plan.env, "CUDA_VISIBLE_DEVICES")
    mask: list[int] | None = None
    mask_origin = None
    if cvd is not None:
        if not cvd.known:
            return GpuList(None, cvd.origin, cvd.unknown)
        mask = parse_gpu_list(cvd.value)
        mask_origin = cvd.origin

    if launcher == "deepspeed":
        include = _value(plan.launch, "include")
        filters = any(_value(plan.launch, k) is not None for k in ("include", "exclude", "num_gpus", "num_nodes"))
        if include is not None and include.known:
            m = re.search(r":([\d,]+)", str(include.value))
            ids = parse_gpu_list(m.group(1)) if m else None
            return GpuList(ids, include.origin)
        if filters:
            return GpuList(None, None)  # deepspeed deletes CUDA_VISIBLE_DEVICES here
        return GpuList(mask, mask_origin)

    gpu_ids = _value(plan.accelerate, "gpu_ids")
    if gpu_ids is not None and gpu_ids.known:
        ids = parse_gpu_list(gpu_ids.value)
        if ids is not None:
            if mask is not None:
                ids = [mask[i] for i in ids if i < len(mask)]
            return GpuList(ids, gpu_ids.origin)
    return GpuList(mask, mask_origin)


def _parallel_divisor(plan: RunPlan) -> tuple[int, list[Location]]:
    """tp x cp x sp: processes that share one data-parallel replica."""
    divisor, where = 1, []
    candidates = [
        (plan.accelerate.child("parallelism_config"), "parallelism_config_tp_size"),
        (plan.accelerate.child("parallelism_config"), "parallelism_config_cp_size"),
        (plan.accelerate.child("parallelism_config"), "parallelism_config_sp_size"),
        (plan.training, "tensor_parallel_size"),
        (plan.training, "context_parallel_size"),
        (plan.training, "sequence_parallel_degree"),
        (plan.deepspeed, "sequence_parallel_size"),
        (plan.deepspeed.child("tensor_parallel"), "autotp_size"),
    ]
    for ns, key in candidates:
        n = _int(_value(ns, key))
        if n and n > 1:
            divisor *= n
            v = _value(ns, key)
            if v is not None and v.origin is not None:
                where.append(v.origin)
    return divisor, where


def _implied_launcher(plan: RunPlan) -> str | None:
    launcher = plan.launch.launcher
    if launcher:
        return launcher
    if plan.spec.accelerate is not None:
        return "accelerate"
    dialect = plan.training.dialect
    if dialect == "llamafactory":
        return "llamafactory"
    if dialect == "axolotl":
        return "axolotl"
    return None


def processes(plan: RunPlan) -> tuple[Value, Value, bool]:
    """(processes per node, nodes, pinned). pinned=False when the count follows the machine."""
    launcher = _implied_launcher(plan)
    visible = visible_gpus(plan)
    n_visible = len(visible.ids) if visible.ids is not None else machine_gpu_count(plan)
    visible_note = (
        f"{len(visible.ids)} GPUs in the visible set"
        if visible.ids is not None
        else f"all {n_visible} GPUs of the machine"
        if n_visible
        else None
    )

    def follows_machine(reason: str, origin: Location | None) -> Value:
        if n_visible is None:
            return Value(None, origin, "derived", unknown=f"{reason}, and no hardware is given")
        return Value(n_visible, origin, "derived", note=f"{reason}: {visible_note}")

    root = plan.root_location
    if launcher in {"accelerate", "trl", "axolotl"}:
        nproc = _value(plan.accelerate, "num_processes")
        machines = _value(plan.accelerate, "num_machines")
        n_machines = _int(machines) or 1
        machines_value = machines if machines is not None and machines.known else Value(1, None, "default")
        if nproc is not None and not nproc.known:
            return nproc, machines_value, True
        total = _int(nproc)
        if total is not None and total > 0:
            per_node = max(total // n_machines, 1)
            note = f"num_processes {total} over {n_machines} machines" if n_machines > 1 else None
            return Value(per_node, nproc.origin, nproc.source, note=note), machines_value, True
        dist = plan.accelerate.distributed_type
        if plan.spec.accelerate is not None and (dist is False or str(dist).upper() == "NO"):
            return Value(1, _origin(plan.accelerate, "distributed_type"), "accelerate", note="distributed_type NO"), machines_value, True
        if plan.spec.accelerate is not None:
            return (
                Value(None, _origin(plan.accelerate, "distributed_type"), "accelerate",
                      unknown="the accelerate config sets no num_processes: accelerate asks for --num_processes"),
                machines_value,
                True,
            )
        return follows_machine("accelerate without a config file or --num_processes starts one process per visible GPU", root), machines_value, False

    if launcher == "torchrun":
        nproc = _value(plan.launch, "nproc_per_node")
        nnodes = _value(plan.launch, "nnodes")
        nodes_value = Value(1, None, "default", note="torchrun --nnodes defaults to 1")
        if nnodes is not None:
            if not nnodes.known:
                nodes_value = nnodes
            else:
                top = str(nnodes.value).split(":")[-1]
                nodes_value = Value(int(top) if top.isdigit() else None, nnodes.origin, "launch",
                                    unknown=None if top.isdigit() else f"--nnodes {nnodes.value}")
        if nproc is None:
            return Value(1, root, "default", note="torchrun starts one process unless --nproc_per_node is given"), nodes_value, True
        if not nproc.known:
            return nproc, nodes_value, False
        if str(nproc.value).lower() in {"gpu", "auto"}:
            return follows_machine(f"--nproc_per_node {nproc.value} takes every visible GPU", nproc.origin), nodes_value, False
        n = _int(nproc)
        if n is None:
            return Value(None, nproc.origin, "launch", unknown=f"--nproc_per_node {nproc.value}"), nodes_value, True
        return Value(n, nproc.origin, "launch"), nodes_value, True

    if launcher == "deepspeed":
        num_nodes = _value(plan.launch, "num_nodes")
        nodes_value = num_nodes if num_nodes is not None else Value(1, None, "default")
        num_gpus = _value(plan.launch, "num_gpus")
        if num_gpus is not None:
            if not num_gpus.known:
                return num_gpus, nodes_value, False
            return Value(_int(num_gpus), num_gpus.origin, "launch"), nodes_value, True
        if visible.ids is not None:
            return Value(len(visible.ids), visible.origin, "launch", note="GPUs selected for the deepspeed launcher"), nodes_value, True
        return follows_machine("the deepspeed launcher without --num_gpus or --include takes every GPU", root), nodes_value, False

    if launcher == "llamafactory":
        env_n = _value(plan.env, "NPROC_PER_NODE")
        nnodes = _value(plan.env, "NNODES")
        nodes_value = nnodes if nnodes is not None else Value(1, None, "default")
        if env_n is not None:
            return Value(_int(env_n), env_n.origin, "launch", unknown=env_n.unknown), nodes_value, env_n.known
        return follows_machine("llamafactory-cli starts torchrun on every visible GPU", root), nodes_value, False

    if launcher == "python":
        return Value(1, root, "launch", note="plain python starts one process"), Value(1, None, "default"), True

    return (
        Value(None, None, "derived", unknown="no launch script or accelerate config says how many processes start"),
        Value(1, None, "default"),
        True,
    )


def _origin(ns: Namespace, key: str) -> Location | None:
    v = _value(ns, key)
    return v.origin if v else None


def batch_facts(plan: RunPlan) -> Namespace:
    ns = Namespace("batch")
    per_node, nodes, pinned = processes(plan)
    ns.set("processes_per_node", per_node)
    ns.set("nodes", nodes)
    ns.set("pinned", Value(pinned, per_node.origin, "derived"))
    visible = visible_gpus(plan)
    ns.set("visible_gpus", Value(visible.ids, visible.origin, "derived", unknown=visible.unknown))

    world = None
    if per_node.known and nodes.known and per_node.value is not None and nodes.value is not None:
        world = per_node.value * int(nodes.value)
        related = [loc for loc in (nodes.origin,) if loc is not None]
        ns.set("world_size", Value(world, per_node.origin, "derived", related=related, note=per_node.note))
    else:
        reason = per_node.unknown or nodes.unknown or "unknown"
        ns.set("world_size", Value(None, per_node.origin, "derived", unknown=reason))

    divisor, div_where = _parallel_divisor(plan)
    ns.set("model_parallel_size", Value(divisor, div_where[0] if div_where else None, "derived", related=div_where[1:]))
    dp = world // divisor if world is not None and divisor and world % divisor == 0 else None
    if world is not None and dp is None:
        ns.set("dp_size", Value(None, None, "derived", unknown=f"world size {world} is not divisible by tp x cp x sp = {divisor}"))
    else:
        ns.set("dp_size", Value(dp, per_node.origin, "derived", unknown=None if dp is not None else "world size unknown"))

    micro, accum = _micro_and_accum(plan)
    ns.set("per_device", micro)
    ns.set("accumulation", accum)
    if dp is not None and micro.known and accum.known and isinstance(micro.value, int) and isinstance(accum.value, int):
        eff = micro.value * accum.value * dp
        related = [loc for loc in (accum.origin, per_node.origin) if loc is not None]
        ns.set(
            "effective_batch",
            Value(eff, micro.origin, "derived", related=related,
                  note=f"{micro.value} per device x {accum.value} accumulation x {dp} data-parallel processes"),
        )
        ns.set("per_process_batch", Value(micro.value * accum.value, micro.origin, "derived"))
    else:
        ns.set("effective_batch", Value(None, micro.origin, "derived", unknown="world size or batch unknown"))
    return ns


def _micro_and_accum(plan: RunPlan) -> tuple[Value, Value]:
    t = plan.training
    micro = _value(t, "per_device_train_batch_size") or Value(None, None, "default", unknown="no batch size")
    accum = _value(t, "gradient_accumulation_steps") or Value(1, None, "default")
    batch_size = _value(t, "batch_size")
    if t.dialect == "axolotl" and batch_size is not None and accum.source == "default":
        m, b = _int(micro), _int(batch_size)
        if m and b:
            accum = Value(b // m, batch_size.origin, "training_args", note=f"batch_size {b} // micro_batch_size {m}")
    if plan.spec.training is None and plan.deepspeed:
        ds_micro = _value(plan.deepspeed, "train_micro_batch_size_per_gpu")
        ds_accum = _value(plan.deepspeed, "gradient_accumulation_steps")
        if ds_micro is not None and isinstance(ds_micro.value, int):
            micro = ds_micro
        if ds_accum is not None and isinstance(ds_accum.value, int):
            accum = ds_accum
    for v in (micro, accum):
        if v.known and isinstance(v.value, str):
            coerced = coerce_text(v.value)
            if isinstance(coerced, int):
                v.value = coerced
    return micro, accum

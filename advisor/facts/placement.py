"""Which GPUs a run's processes land on, and what joins them (NVLink, PCIe, the network).

Ranks take the visible devices in order: local rank r uses visible device r (torchrun, accelerate
and deepspeed all set the device from LOCAL_RANK), so a job of k processes per node runs on the
first k GPUs of its visible set. Tensor-parallel groups are blocks of consecutive ranks (the
innermost dimension of the device mesh in accelerate/torch and DeepSpeed AutoTP).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.core.provenance import Value
from advisor.core.rule_helpers import plural
from advisor.facts import topology
from advisor.facts.declare import FactNamespace, fact
from advisor.facts.device_map import distributed_device_maps
from advisor.facts.namespace_entries import entry_origin
from advisor.facts.world_size import implied_launcher, machine_count
from advisor.sources import launchers

if TYPE_CHECKING:
    from advisor.facts.batch import BatchFacts
    from advisor.plan.run_plan import RunPlan


class PlacementFacts(
    FactNamespace, name="placement", doc="Which GPUs the processes land on and what links join them."
):
    serving = fact(bool, "the run serves a model (vllm): placement of its tensor-parallel workers")
    consistent = fact(bool, "the process count fits the visible GPUs")
    machine_gpus = fact(int, "GPUs per node of the machine", unit="GPUs")
    gpu_ids = fact(list[int], "GPU indices the processes of one node use")
    placed_at = fact(list[int], "the same, located where the selection is written")
    gpus_per_node = fact(int, "GPUs the job uses per node", unit="GPUs")
    has_nvlink = fact(bool, "the machine has NVLink between some GPUs")
    partial_nvlink = fact(bool, "NVLink joins some GPUs, not all (pairs, not NVSwitch)")
    proper_subset = fact(bool, "the job selects some of the machine's GPUs, not all")
    device_map_distributed = fact(
        list[dict],
        "from_pretrained(device_map=...) in a multi-process run",
        items=("branch", "location", "processes", "python", "severity", "value"),
    )
    nvlink_groups = fact(list, "groups of GPU indices joined by NVLink")
    nvlink_busbw_gbs = fact(float, "all-reduce bus bandwidth over NVLink", unit="GB/s")
    pcie_busbw_gbs = fact(float, "all-reduce bus bandwidth over PCIe", unit="GB/s")
    tp_size = fact(int, "tensor-parallel size", unit="GPUs")
    nvlink_group_for_tp = fact(list[int], "an NVLink group that holds one tensor-parallel group")
    tp_groups = fact(list, "the GPU indices of each tensor-parallel group")
    tp_groups_over_pcie = fact(list, "tensor-parallel groups whose GPUs talk over PCIe")
    selected_by_index = fact(bool, "GPUs are selected by index (CUDA_VISIBLE_DEVICES=...)")
    selection = fact(list[int], "the selected GPU indices")
    selected_via = fact(str, "what selects them")
    count_problems = fact(
        list[dict],
        "process counts that do not match the visible GPUs",
        items=(
            "detail",
            "gpus",
            "idle",
            "kind",
            "location",
            "machine_gpus",
            "processes",
            "related",
            "selection",
            "severity",
            "via",
            "visible",
        ),
    )
    process_count_fix = fact(int, "the process count that matches the visible GPUs", unit="processes")
    visible_count = fact(int, "GPUs visible to the job", unit="GPUs")
    out_of_range = fact(list[int], "selected GPU indices the machine does not have")
    nodes_exceed_machine = fact(bool, "the job asks for more nodes than the machine has")
    in_one_nvlink_group = fact(bool, "all GPUs of the job are in one NVLink group")
    nvlink_group_for_job = fact(list[int], "an NVLink group that holds the job's GPUs, if any")
    slowest_link = fact(str, "the slowest link between two of the job's GPUs")
    busbw_gbs = fact(float, "all-reduce bus bandwidth over the job's GPUs", unit="GB/s")
    intra_node_link = fact(str, "nvlink or pcie between the job's GPUs")
    slow_interconnect = fact(bool, "the job's GPUs talk over PCIe though NVLink exists")
    job_processes = fact(
        int,
        "processes in the job on the given machine: the world size, or where the files do not write the "
        "count, one per GPU the run sees there (assumed_on says so)",
        unit="processes",
    )
    assumed_on = fact(
        str,
        "where the files do not write the process count, the GPUs it is judged on ('the 4 GPUs of 4xL40S')",
    )
    assumed_because = fact(str, "why the count is not written ('$NPROC_PER_NODE is not set in the script')")


# Below this all-reduce busbw (GB/s) a network is "not fast" for FSDP/ZeRO-3: with H100-class
# compute and 4k tokens per micro-batch the ZeRO-3 all-gathers take longer than the layer's
# compute (hardware.md §2.4, r3 = (n-1)/n * b * achieved / (2 * T_mb * busbw) > 1 below ~70 GB/s;
# 2 nodes x 8 A100 over 4x200 Gb/s IB measure 86 GB/s, 100 GbE TCP about 10).
FAST_NETWORK_GBS = 50.0


def tensor_parallel_size(plan: RunPlan) -> Value | None:
    """The tensor-parallel degree written anywhere in the run (accelerate parallelism_config,
    axolotl tensor_parallel_size, DeepSpeed tensor_parallel.autotp_size)."""
    places = [
        (plan.accelerate, "parallelism_config.parallelism_config_tp_size"),
        (plan.training, "tensor_parallel_size"),
        (plan.deepspeed, "tensor_parallel.autotp_size"),
        (plan.launch, "tensor_parallel_size"),
    ]
    for ns, path in places:
        e = ns.known_value(path)
        if e is not None:
            try:
                n = int(e.value)
            except (TypeError, ValueError):
                continue
            if not isinstance(e.value, bool) and n > 1:
                return Value(n, e.origin, e.source)
    return None


def _size(plan: RunPlan, key: str) -> Value | None:
    e = plan.launch.lookup(key)
    if isinstance(e, Value) and e.known and not isinstance(e.value, bool):
        try:
            return Value(int(e.value), e.origin, e.source)
        except (TypeError, ValueError):
            return None
    return None


def _serving_facts(
    plan: RunPlan, ns: PlacementFacts, selected: list[int] | None, selection_origin: Any
) -> PlacementFacts:
    """A vLLM server: one engine per data-parallel rank, each on tp x pp GPUs, taken in order from
    the visible GPUs (the first tp x pp x dp of them); a TP group is tp consecutive GPUs of that
    block. It is not a training run: no process count, batch or data-loading facts."""
    machine = plan.hardware
    ns.serving = Value(True, plan.root_location, "derived")
    tp = _size(plan, "tensor_parallel_size")
    pp = _size(plan, "pipeline_parallel_size")
    dp = _size(plan, "data_parallel_size")
    tp_n = tp.value if tp is not None and tp.value > 0 else 1
    needed = (
        tp_n * (pp.value if pp is not None and pp.value > 0 else 1) * (dp.value if dp and dp.value > 0 else 1)
    )
    if machine is None:
        ns.consistent = Value(False, None, "derived")
        return ns
    count = machine.gpus.count
    local = list(selected) if selected is not None else list(range(count))
    ns.machine_gpus = Value(count, None, "hardware")
    # enough GPUs that exist for every engine (else vLLM stops at start-up; nothing to judge here)
    fits = len(local) >= needed and all(g < count for g in local[:needed])
    ns.consistent = Value(fits, None, "derived")
    if not fits:
        return ns
    used = local[:needed]
    ns.gpu_ids = Value(used, selection_origin, "derived")
    ns.placed_at = Value(used, selection_origin or (tp.origin if tp else None), "derived")
    ns.gpus_per_node = Value(len(used), selection_origin, "derived")
    groups = topology.nvlink_groups(machine)
    has_nvlink = bool(groups) and any(len(g) > 1 for g in groups)
    ns.has_nvlink = Value(has_nvlink, None, "hardware")
    ns.partial_nvlink = Value(has_nvlink and machine.nvlink != "all", None, "hardware")
    ns.proper_subset = Value(selected is not None and len(set(selected)) < count, selection_origin, "derived")
    ns.nvlink_groups = Value([sorted(g) for g in groups if max(g) < count], None, "hardware")
    # (no nvlink_group_for_job: the GA301 job-placement judgement is about training all-reduces)
    gpu = machine.gpu
    if gpu.peer_link is not None:  # NVLink, or AMD's Infinity Fabric
        ns.nvlink_busbw_gbs = Value(gpu.peer_link.busbw_gbs, None, "hardware")
    ns.pcie_busbw_gbs = Value(gpu.pcie.busbw_gbs, None, "hardware")
    if tp is not None and tp.value > 1:
        ns.tp_size = tp
        ns.nvlink_group_for_tp = Value(topology.nvlink_group_for(machine, tp_n), None, "derived")
        blocks = [used[i : i + tp_n] for i in range(0, len(used) - len(used) % tp_n, tp_n)]
        over_pcie = [b for b in blocks if not topology.all_nvlinked(machine, b)]
        ns.tp_groups = Value(blocks, tp.origin, "derived")
        ns.tp_groups_over_pcie = Value(over_pcie, tp.origin, "derived")
    return ns


def index_range(first: int, last: int, word: str = "rank") -> str:
    """'rank 3', 'ranks 2-3': a range of one is a single index."""
    return f"{word} {first}" if first == last else f"{word}s {first}-{last}"


def _listing(ids: list[int]) -> str:
    return ",".join(str(i) for i in ids)


def _count_detail(item: dict[str, Any], machine_name: str | None) -> str:
    """GA304's sentence for one problem, with counts in the singular where they are one."""
    kind = item["kind"]
    if kind == "out_of_range":
        last = item["machine_gpus"] - 1
        gpus = ", ".join(str(g) for g in item["gpus"])
        return (
            f"GPU index {gpus} in {item['via']} does not exist on {machine_name} "
            f"({'GPU 0' if last == 0 else f'GPUs 0-{last}'}): CUDA hides an invalid index and every index "
            f"after it. Use indices below {item['machine_gpus']}."
        )
    procs, visible = item["processes"], item["visible"]
    if kind == "too_many":
        verb = "fails" if procs - 1 == visible else "fail"
        where = (
            f"visible ({item['via']}={_listing(item['selection'])})"
            if item["selection"] is not None
            else f"on {machine_name}"
        )
        return (
            f"{plural(procs, 'process', 'processes')} per node but only {plural(visible, 'GPU')} {where}: "
            f'{index_range(visible, procs - 1)} {verb} with "invalid device ordinal" (or share a GPU). Start '
            f"{plural(visible, 'process', 'processes')} or make {plural(procs, 'GPU')} visible."
        )
    idle = item["idle"]
    sits = f"GPU {idle[0]} sits" if len(idle) == 1 else f"GPUs {', '.join(str(g) for g in idle)} sit"
    return (
        f"{item['via']} selects {plural(visible, 'GPU')} ({_listing(item['selection'])}) but only "
        f"{plural(procs, 'process', 'processes')} start: {sits} idle. Make the process count and the "
        "selection agree."
    )


def count_problems(
    plan: RunPlan,
    per_node: Any,
    selected: list[int] | None,
    selection_origin: Any,
    proc_origin: Any,
    via: str | None,
) -> list[dict[str, Any]]:
    """GA304's evidence: processes per node against the GPUs they can see.

    - more processes than visible GPUs: rank r calls set_device(r) and the ranks past the last
      visible GPU fail ("invalid device ordinal"), or, with accelerate, two ranks share a GPU;
    - fewer processes than the GPUs the script selects: the GPUs past the last rank sit idle
      (a plain `python` run is left out: one process may use several GPUs on purpose, device_map);
    - a selected index the machine does not have: CUDA hides it and every index after it.
    """
    out: list[dict[str, Any]] = []
    machine = plan.hardware
    count = machine.gpus.count if machine is not None else None
    if selected is not None and count is not None:
        bad = [g for g in selected if g >= count]
        if bad:
            out.append(
                {
                    "location": selection_origin,
                    "kind": "out_of_range",
                    "severity": "error",
                    "gpus": bad,
                    "machine_gpus": count,
                    "selection": selected,
                    "via": via,
                }
            )
            out[-1]["detail"] = _count_detail(out[-1], machine.name)
            return out
    if not isinstance(per_node, int):
        return out
    n_visible = len(selected) if selected is not None else count
    if n_visible is None:
        return out
    if per_node > n_visible:
        out.append(
            {
                "location": proc_origin or selection_origin,
                "kind": "too_many",
                "severity": "error",
                "processes": per_node,
                "visible": n_visible,
                "selection": selected,
                "via": via,
                "related": [selection_origin] if selection_origin is not None else [],
            }
        )
    elif (
        per_node < n_visible
        and selected is not None
        and plan.launch.launcher is not None
        and not launchers.spec_of(plan.launch.launcher).is_interpreter
    ):
        out.append(
            {
                "location": selection_origin,
                "kind": "idle",
                "severity": "warning",
                "processes": per_node,
                "visible": n_visible,
                "selection": selected,
                "via": via,
                "idle": selected[per_node:],
                "related": [proc_origin] if proc_origin is not None else [],
            }
        )
    name = machine.name if machine is not None else None
    for item in out:
        item["detail"] = _count_detail(item, name)
    return out


def _shards(plan: RunPlan) -> bool:
    """The run is set up for FSDP or DeepSpeed (accelerate's distributed_type, a DeepSpeed file, fsdp)."""
    dist = str(plan.accelerate.distributed_type or "").upper()
    fsdp = plan.training.lookup("fsdp")
    return (
        dist in ("FSDP", "DEEPSPEED")
        or plan.spec.deepspeed is not None
        or (isinstance(fsdp, Value) and fsdp.known and bool(fsdp.value))
    )


def process_count_fix(plan: RunPlan, per_node: Any, n_visible: int) -> Value | None:
    """GA304's fix: the written process count (torchrun --nproc_per_node, accelerate
    num_processes, deepspeed --num_gpus, NPROC_PER_NODE), as a Value at its position whose value is
    the number of visible GPUs. None where the count is not a plain number written in one place
    (a shell variable, a GPU query): that is for the user to change."""
    where = launchers.spec_of(implied_launcher(plan)).processes.written_at
    if where is None or n_visible < 1:
        return None
    if n_visible == 1 and _shards(plan):
        return None  # one process would shard nothing (GA406): leaving FSDP/ZeRO is the user's choice
    group, key = where
    entry = plan.namespaces()[group].entry(key)
    if not isinstance(entry, Value) or not entry.known or entry.origin is None:
        return None
    try:
        written = int(entry.value)
    except (TypeError, ValueError):
        return None
    if isinstance(entry.value, bool) or written != per_node:
        return None
    if entry.source == "launch":
        command = plan.spec.command
        words = {} if command is None else (command.env if group == "env" else command.launcher_args)
        word = words.get(key)
        if word is None or not (word.raw or "").isdigit():
            return None
    elif not entry.origin.key:
        return None
    return Value(n_visible, entry.origin, entry.source)


def placement_facts(plan: RunPlan, batch: BatchFacts) -> PlacementFacts:
    ns = PlacementFacts()
    machine = plan.hardware
    per_node = batch.processes_per_node
    nodes = batch.nodes if isinstance(batch.nodes, int) else 1
    visible = batch.entry("visible_gpus")
    selected = visible.value if isinstance(visible, Value) and visible.known else None
    selection_origin = visible.origin if isinstance(visible, Value) else None
    ns.selected_by_index = Value(selected is not None, selection_origin, "derived")
    ns.selection = Value(selected, selection_origin, "derived")
    ns.selected_via = Value(batch.selected_via, selection_origin, "derived")
    ns.serving = Value(False, None, "derived")
    sites = distributed_device_maps(plan, batch.world_size)
    ns.device_map_distributed = Value(sites, None, "derived")
    if launchers.spec_of(plan.launch.launcher).serves:
        return _serving_facts(plan, ns, selected, selection_origin)
    tp = tensor_parallel_size(plan)
    if tp is not None:
        ns.tp_size = tp

    # processes against the GPUs they can see (no machine needed when the script selects them)
    count = machine.gpus.count if machine is not None else None
    n_visible = len(selected) if selected is not None else count
    proc_origin = entry_origin(batch, "processes_per_node")
    problems = count_problems(plan, per_node, selected, selection_origin, proc_origin, batch.selected_via)
    ns.count_problems = Value(problems, None, "derived")
    if isinstance(per_node, int) and any(p["kind"] in ("too_many", "idle") for p in problems):
        fix = process_count_fix(plan, per_node, problems[0]["visible"])
        if fix is not None:
            ns.process_count_fix = fix
    # the layout is physically possible: every process has a GPU that exists (else GA304 says so,
    # and the link rules would judge a layout that cannot start)
    ns.consistent = Value(not any(p["severity"] == "error" for p in problems), None, "derived")
    if isinstance(per_node, int) and n_visible is not None:
        ns.visible_count = Value(n_visible, selection_origin, "derived")
    first = selection_origin or proc_origin
    world = batch.world_size
    if isinstance(world, int):
        ns.job_processes = Value(world, entry_origin(batch, "world_size"), "derived")
    # where the files do not write the count, the link facts are judged with the count the launcher
    # gives on this machine (one per GPU), and say so; GA304's count problems above are not
    counted = batch.entry("processes_per_node")
    assumed = machine_count(plan, counted if isinstance(counted, Value) else None, bool(batch.pinned))
    if assumed is not None:
        origin = proc_origin or plan.root_location
        note = f"one process per GPU: {assumed.on}"
        ns.assumed_on = Value(assumed.on, origin, "derived", note=note)
        ns.assumed_because = Value(assumed.because, origin, "derived")
        if not isinstance(per_node, int):
            per_node = assumed.per_node
        if isinstance(batch.nodes, int):
            ns.job_processes = Value(assumed.per_node * batch.nodes, origin, "derived", note=note)
    if machine is None or not isinstance(per_node, int):
        return ns
    assert count is not None  # the machine's GPU count, set above with the machine

    ns.machine_gpus = Value(count, None, "hardware")
    if selected is not None:
        local = list(selected)
        used = local[:per_node] if len(local) >= per_node else local
    else:
        local = list(range(count))
        used = list(range(min(per_node, count)))  # ranks take visible devices 0..n-1
    out_of_range = [g for g in local if g >= count]
    ns.out_of_range = Value(out_of_range, selection_origin, "derived")
    if out_of_range:
        return ns
    ns.nodes_exceed_machine = Value(nodes > machine.nodes, entry_origin(batch, "nodes"), "derived")
    gpu_ids = [n * count + g for n in range(min(nodes, machine.nodes)) for g in used]
    ns.gpu_ids = Value(used, selection_origin, "derived")
    ns.placed_at = Value(used, first, "derived")
    k = len(used)
    ns.gpus_per_node = Value(k, selection_origin, "derived")
    groups = topology.nvlink_groups(machine)
    has_nvlink = bool(groups) and any(len(g) > 1 for g in groups)
    ns.has_nvlink = Value(has_nvlink, None, "hardware")
    # NVLink joins some GPUs and not others: which GPUs a job gets matters
    ns.partial_nvlink = Value(has_nvlink and machine.nvlink != "all", None, "hardware")
    ns.proper_subset = Value(selected is not None and len(set(selected)) < count, selection_origin, "derived")
    one_group = topology.all_nvlinked(machine, used)
    ns.in_one_nvlink_group = Value(one_group, selection_origin, "derived")
    suggestion = topology.nvlink_group_for(machine, k) if k >= 2 else None
    ns.nvlink_group_for_job = Value(suggestion, None, "derived")
    ns.nvlink_groups = Value(
        [sorted(g) for g in topology.nvlink_groups(machine) if max(g) < count], None, "hardware"
    )
    gpu = machine.gpu
    if gpu.peer_link is not None:  # NVLink, or AMD's Infinity Fabric
        ns.nvlink_busbw_gbs = Value(gpu.peer_link.busbw_gbs, None, "hardware")
    ns.pcie_busbw_gbs = Value(gpu.pcie.busbw_gbs, None, "hardware")
    if len(gpu_ids) >= 2:
        kinds = {topology.link_kind(machine, a, b) for a in gpu_ids for b in gpu_ids if a < b}
        slowest = "network" if "network" in kinds else "pcie" if "pcie" in kinds else "nvlink"
        busbw = topology.slowest_link_busbw_gbs(machine, gpu_ids)
        ns.slowest_link = Value(slowest, selection_origin, "derived")
        ns.busbw_gbs = Value(round(busbw, 1), None, "derived")
        ns.intra_node_link = Value("nvlink" if one_group else "pcie", selection_origin, "derived")
        slow = slowest == "pcie" or (slowest == "network" and busbw < FAST_NETWORK_GBS)
        ns.slow_interconnect = Value(slow, selection_origin, "derived")
    if tp is not None and tp.value <= k:
        ns.nvlink_group_for_tp = Value(topology.nvlink_group_for(machine, tp.value), None, "derived")
        blocks = [used[i : i + tp.value] for i in range(0, k - k % tp.value, tp.value)]
        over_pcie = [b for b in blocks if not topology.all_nvlinked(machine, b)]
        ns.tp_groups = Value(blocks, tp.origin, "derived")
        ns.tp_groups_over_pcie = Value(over_pcie, tp.origin, "derived")
    return ns

"""How many processes a run starts, counted the way each launcher really starts them.

See config-formats.md: accelerate's num_processes is the total over machines and without a config
file it takes every visible GPU; torchrun starts one process unless told otherwise; the deepspeed
launcher takes every GPU and drops CUDA_VISIBLE_DEVICES when --num_gpus/--include is given;
llamafactory-cli starts torchrun on every visible GPU. Tensor, context and sequence parallel
sizes divide the data-parallel size. Counts the script takes from the machine at run time
(`$(nvidia-smi -L | wc -l)`) or from Slurm (`$SLURM_NNODES` from `#SBATCH --nodes`) are followed.
"""

from __future__ import annotations

import re
from typing import Any

from advisor.facts.counts import count, count_value
from advisor.facts.gpu_visibility import gpu_exclusion, machine_gpu_count, visible_gpus
from advisor.facts.namespace_entries import entry_origin, value_entry
from advisor.plan import RunPlan, coerce_text
from advisor.provenance import Namespace, Value
from advisor.sources.document import Location


def has_training_arguments(plan: RunPlan) -> bool:
    """The run's script reads TrainingArguments: the plan's `training.reads_training_arguments`
    (advisor.plan.reads_training_arguments, computed once when the plan is built)."""
    v = value_entry(plan.training, "reads_training_arguments")
    if v is not None and isinstance(v.value, bool):
        return v.value
    from advisor.plan import reads_training_arguments

    return reads_training_arguments(plan.spec)


# Places that set the size of one model-parallel dimension; the same dimension written twice
# (accelerate's parallelism_config_sp_size and DeepSpeed's sequence_parallel_size) counts once.
_PARALLEL_DIMENSIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "tp": (
        ("accelerate", "parallelism_config.parallelism_config_tp_size"),
        ("training", "tensor_parallel_size"),
        ("deepspeed", "tensor_parallel.autotp_size"),
    ),
    "cp": (
        ("accelerate", "parallelism_config.parallelism_config_cp_size"),
        ("training", "context_parallel_size"),
        # axolotl's ring-attention degree (renamed context_parallel_size in later axolotl)
        ("training", "sequence_parallel_degree"),
    ),
    "sp": (
        ("accelerate", "parallelism_config.parallelism_config_sp_size"),
        ("deepspeed", "sequence_parallel_size"),
    ),
}


def parallel_divisor(plan: RunPlan) -> tuple[int, list[Location]]:
    """tp x cp x sp: processes that share one data-parallel replica (the largest size written for
    each dimension, multiplied across dimensions)."""
    spaces = {"accelerate": plan.accelerate, "training": plan.training, "deepspeed": plan.deepspeed}
    divisor, where = 1, []
    for places in _PARALLEL_DIMENSIONS.values():
        best, best_at = 1, None
        for space, key in places:  # lookup, never child(): reading must not add empty sections
            v = spaces[space].value(key)
            n = count(v)
            if n is not None and n > best:
                best, best_at = n, v.origin if v is not None else None
        divisor *= best
        if best > 1 and best_at is not None:
            where.append(best_at)
    return divisor, where


def implied_launcher(plan: RunPlan) -> str | None:
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


# ------------------------------------------------------------------------------------------------
# Counting GPUs at run time: `$(nvidia-smi -L | wc -l)`, `torch.cuda.device_count()`
# ------------------------------------------------------------------------------------------------

_GPU_QUERY = re.compile(
    r"nvidia-smi|nvidia_smi|device_count|gpu_count|num_gpus\(\)|\bnproc\b.*gpu", re.IGNORECASE
)
_VAR_REF = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")


def counts_gpus_at_run_time(raw: str, variables: dict[str, Any]) -> bool:
    """True when a shell word's value comes from counting the GPUs of the machine it runs on
    (`$(nvidia-smi -L | wc -l)`, `$(python -c 'import torch; print(torch.cuda.device_count())')`),
    following the script's own variables."""
    return _gpu_query_text(raw, variables) is not None


def _launch_word(plan: RunPlan, key: str) -> Any:
    command = plan.spec.command
    return None if command is None else command.launcher_args.get(key)


def _script_variables(plan: RunPlan) -> dict[str, Any]:
    data = getattr(plan.spec.root, "data", None)
    return getattr(data, "variables", None) or {}


def _queries_gpus(plan: RunPlan, key: str) -> bool:
    word = _launch_word(plan, key)
    return word is not None and counts_gpus_at_run_time(word.raw or "", _script_variables(plan))


def _gpu_query_text(raw: str, variables: dict[str, Any]) -> str | None:
    """The command substitution that counts the GPUs, as written, found through the variables (six
    levels deep). Each variable is looked at once: a script whose variables name each other many times
    over (fuzz seed 11: 88 s through the recursion) stays linear."""
    frontier, seen = [raw], set()
    for _ in range(8):
        following = []
        for text in frontier:
            if _GPU_QUERY.search(text):
                return text
            for name in _VAR_REF.findall(text):
                word = variables.get(name)
                if name not in seen and word is not None:
                    seen.add(name)
                    following.append(getattr(word, "raw", "") or "")
        if not following:
            return None
        frontier = following
    return None


def _query_reason(plan: RunPlan, key: str) -> str:
    word = _launch_word(plan, key)
    raw = word.raw if word is not None else "?"
    query = _gpu_query_text(raw, _script_variables(plan)) or raw
    shown = raw if query == raw else f"{raw} = {query}"
    return f"--{key} {shown} is a command substitution that counts the GPUs at run time"


# ------------------------------------------------------------------------------------------------
# Slurm: `--num_machines $SLURM_NNODES` takes its value from `#SBATCH --nodes N`
# ------------------------------------------------------------------------------------------------

_SLURM_NODES = ("SLURM_NNODES", "SLURM_JOB_NUM_NODES")
_SLURM_GPUS = ("SLURM_GPUS_ON_NODE", "SLURM_GPUS_PER_NODE")
# the #SBATCH options that set each group of variables, in order of preference
_SBATCH_FOR = {
    _SLURM_NODES: ("nodes",),
    _SLURM_GPUS: ("gpus_per_node", "ntasks_per_node"),
}


def _refers_to(raw: str, names: tuple[str, ...], variables: dict[str, Any], depth: int = 0) -> bool:
    """The shell word uses one of these variables, directly or through the script's variables."""
    for name in _VAR_REF.findall(raw):
        if name in names:
            return True
        word = variables.get(name)
        if (
            depth < 6
            and word is not None
            and _refers_to(getattr(word, "raw", "") or "", names, variables, depth + 1)
        ):
            return True
    return re.search(r"\b(" + "|".join(names) + r")\b", raw) is not None if "$((" in raw else False


def _sbatch_count(plan: RunPlan, keys: tuple[str, ...]) -> Value | None:
    sb = plan.launch.entry("sbatch")
    if not isinstance(sb, Namespace):
        return None
    for key in keys:
        v = value_entry(sb, key)
        if v is None or not v.known:
            continue
        text = str(v.value)
        if key == "nodes" and not re.fullmatch(r"\d+", text.strip()):
            continue  # "--nodes 2-4": sbatch may give any count in the range
        m = re.fullmatch(r"\s*(?:[a-z0-9_]+:)?(\d{1,9})\s*", text)  # --gpus-per-node h100:8
        if m and int(m.group(1)) >= 1:
            return Value(
                int(m.group(1)), v.origin, "launch", note=f"#SBATCH --{key.replace('_', '-')} {text}"
            )
    return None


def _with_sbatch(plan: RunPlan, key: str, value: Value) -> Value:
    """An unknown launcher count whose shell word reads $SLURM_NNODES / $SLURM_JOB_NUM_NODES (or the
    per-node GPU variables): its value under the script's own #SBATCH directives, at the #SBATCH
    line. Otherwise the value itself."""
    if value.known or value.source != "launch":
        return value
    word = _launch_word(plan, key)
    if word is None:
        return value
    variables = _script_variables(plan)
    seeds: dict[str, Value] = {}
    for names, keys in _SBATCH_FOR.items():
        if _refers_to(word.raw or "", names, variables):
            sb = _sbatch_count(plan, keys)
            if sb is None:
                return value
            seeds.update({n: sb for n in names})
    if not seeds:
        return value
    resolved = _reread_with(plan, key, {n: int(v.value) for n, v in seeds.items()})
    if resolved is None:
        return value
    first = next(iter(seeds.values()))
    shown = " / ".join(f"${n}" for n in seeds)
    return Value(
        coerce_text(resolved),
        first.origin,
        "launch",
        related=[loc for loc in (value.origin,) if loc is not None],
        note=f"--{key} {word.raw} = {resolved} with {shown} from {first.note}",
    )


def _reread_with(plan: RunPlan, key: str, env: dict[str, int]) -> str | None:
    """Read the launch script again with these variables exported first; the flag's text then."""
    command = plan.spec.command
    root = plan.spec.root
    text = getattr(root, "text", None)
    if command is None or not isinstance(text, str):
        return None
    from advisor.sources.launch import read_launch

    prefix = "export " + " ".join(f"{k}={v}" for k, v in env.items()) + "\n"
    doc = read_launch(root.path, prefix + text)
    for other in getattr(doc.data, "commands", []) or []:
        if other.span.line == command.span.line + 1 and other.launcher == command.launcher:
            word = other.launcher_args.get(key)
            return word.text if word is not None and word.text is not None else None
    return None


def data_parallel_gpus(plan: RunPlan) -> tuple[Value | None, bool]:
    """`python train.py` with the HF Trainer on several visible GPUs: nn.DataParallel over all of
    them (config-formats.md §1.2: n_gpu = torch.cuda.device_count(), train_batch_size = per-device
    x n_gpu). (the number of GPUs, pinned); (None, True) when it does not apply."""
    if plan.launch.launcher != "python" or not has_training_arguments(plan):
        return None, True
    visible = visible_gpus(plan)
    if visible.ids is not None:
        n = len(visible.ids)
        return (
            Value(n, visible.origin, "launch", note=f"nn.DataParallel over the {n} visible GPUs")
            if n > 1
            else None
        ), True
    if visible.unknown is not None:
        return Value(None, visible.origin, "derived", unknown=visible.unknown), True
    total = machine_gpu_count(plan)
    reason = "plain python with the HF Trainer wraps the model in nn.DataParallel over every visible GPU"
    if total is None:
        return Value(
            None, plan.root_location, "derived", unknown=f"{reason}, and no hardware is given", note=reason
        ), False
    if total <= 1:
        return None, True
    return Value(
        total, plan.root_location, "derived", note=f"{reason}: all {total} GPUs of the machine"
    ), False


def processes(plan: RunPlan) -> tuple[Value, Value, bool]:
    """(processes per node, nodes, pinned). pinned=False when the count follows the machine the
    run lands on (every visible GPU), not a number written in the run's files."""
    launcher = implied_launcher(plan)
    visible = visible_gpus(plan)
    n_visible = len(visible.ids) if visible.ids is not None else machine_gpu_count(plan)
    masked = visible.ids is not None  # the script itself says which GPUs: the count is pinned
    visible_note = (
        f"{len(visible.ids)} GPUs in the visible set"
        if visible.ids is not None
        else f"all {n_visible} GPUs of the machine"
        if n_visible
        else None
    )

    def follows_machine(reason: str, origin: Location | None) -> tuple[Value, bool]:
        if n_visible is None:
            return Value(
                None, origin, "derived", unknown=f"{reason}, and no hardware is given", note=reason
            ), masked
        return Value(n_visible, origin, "derived", note=f"{reason}: {visible_note}"), masked

    def launch_count(key: str, v: Value) -> Value:
        return count_value(_with_sbatch(plan, key, v), f"--{key}" if v.source == "launch" else key)

    root = plan.root_location
    if launcher in {"accelerate", "trl", "axolotl"}:
        nproc = value_entry(plan.accelerate, "num_processes")
        machines = value_entry(plan.accelerate, "num_machines")
        machines_value = (
            launch_count("num_machines", machines) if machines is not None else Value(1, None, "default")
        )
        n_machines = count(machines_value) or 1
        if nproc is not None and not nproc.known:
            if nproc.source == "launch" and _queries_gpus(plan, "num_processes"):
                value, pinned = follows_machine(_query_reason(plan, "num_processes"), nproc.origin)
                return value, machines_value, pinned
            nproc = _with_sbatch(plan, "num_processes", nproc)
            if not nproc.known:
                return nproc, machines_value, True
        if nproc is not None:
            checked = count_value(nproc, "--num_processes" if nproc.source == "launch" else "num_processes")
            if not checked.known:
                return checked, machines_value, True
            total = int(checked.value)
            per_node = max(total // n_machines, 1)
            note = f"num_processes {total} over {n_machines} machines" if n_machines > 1 else None
            if checked.note:
                note = f"{checked.note}; {note}" if note else checked.note
            return (
                Value(per_node, checked.origin, checked.source, related=list(checked.related), note=note),
                machines_value,
                True,
            )
        dist = plan.accelerate.distributed_type
        if plan.spec.accelerate is not None and (dist is False or str(dist).upper() == "NO"):
            return (
                Value(
                    1,
                    entry_origin(plan.accelerate, "distributed_type"),
                    "accelerate",
                    note="distributed_type NO",
                ),
                machines_value,
                True,
            )
        if plan.spec.accelerate is not None:
            return (
                Value(
                    None,
                    entry_origin(plan.accelerate, "distributed_type"),
                    "accelerate",
                    unknown="the accelerate config sets no num_processes: accelerate asks for it",
                ),
                machines_value,
                True,
            )
        named = value_entry(plan.launch, "config_file") or value_entry(plan.launch, "accelerate_config")
        if named is not None:  # named but not found (GA004): we cannot know what it says
            why = f"the accelerate config '{named.value}' was not found" if named.known else named.unknown
            return Value(None, named.origin, "launch", unknown=why), machines_value, True
        reason = "accelerate without a config file or --num_processes starts one process per visible GPU"
        if launcher == "axolotl" and plan.launch.launcher is None:
            reason = (
                "axolotl starts accelerate, which without a config file or --num_processes starts one "
                "process per visible GPU"
            )
        value, pinned = follows_machine(reason, root)
        return value, machines_value, pinned

    if launcher == "torchrun":
        nproc = value_entry(plan.launch, "nproc_per_node")
        nnodes = value_entry(plan.launch, "nnodes")
        nodes_value = Value(1, None, "default", note="torchrun --nnodes defaults to 1")
        if nnodes is not None:
            nnodes = _with_sbatch(plan, "nnodes", nnodes)
            if not nnodes.known:
                nodes_value = nnodes
            else:
                top = str(nnodes.value).split(":")[-1]  # --nnodes 1:4 (elastic): the most
                nodes_value = count_value(
                    Value(top, nnodes.origin, "launch", related=list(nnodes.related), note=nnodes.note),
                    "--nnodes",
                )
        if nproc is None:
            return (
                Value(
                    1, root, "default", note="torchrun starts one process unless --nproc_per_node is given"
                ),
                nodes_value,
                True,
            )
        if not nproc.known:
            if _queries_gpus(plan, "nproc_per_node"):
                value, pinned = follows_machine(_query_reason(plan, "nproc_per_node"), nproc.origin)
                return value, nodes_value, pinned
            nproc = _with_sbatch(plan, "nproc_per_node", nproc)
            if not nproc.known:
                return nproc, nodes_value, True
        if str(nproc.value).lower() in {"gpu", "auto"}:
            value, pinned = follows_machine(
                f"--nproc_per_node {nproc.value} takes every visible GPU", nproc.origin
            )
            return value, nodes_value, pinned
        return count_value(nproc, "--nproc_per_node"), nodes_value, True

    if launcher == "deepspeed":
        from_hostfile = _hostfile_processes(plan)
        if from_hostfile is not None:
            return from_hostfile
        num_nodes = value_entry(plan.launch, "num_nodes")
        nodes_value = (
            launch_count("num_nodes", num_nodes) if num_nodes is not None else Value(1, None, "default")
        )
        num_gpus = _deepspeed_num_gpus(plan)
        if num_gpus is not None:
            if not num_gpus.known:
                if _queries_gpus(plan, "num_gpus"):
                    value, _ = follows_machine(_query_reason(plan, "num_gpus"), num_gpus.origin)
                    return value, nodes_value, False
                num_gpus = _with_sbatch(plan, "num_gpus", num_gpus)
                if not num_gpus.known:
                    return num_gpus, nodes_value, True
            return count_value(num_gpus, "--num_gpus"), nodes_value, True
        selected = (
            Value(len(visible.ids), visible.origin, "launch", note="GPUs selected for the deepspeed launcher")
            if visible.ids is not None
            else None
        )
        if visible.via == "include" and selected is not None:
            return selected, nodes_value, True
        excluded = gpu_exclusion(plan)
        if excluded is not None and value_entry(plan.launch, "include") is None:
            flag, gone = excluded
            reason = (
                f"the deepspeed launcher takes the machine's GPUs except GPU "
                f"{','.join(str(i) for i in gone)} (--exclude {flag.value})"
            )
            machine_gpus = machine_gpu_count(plan)
            if machine_gpus is None:
                return (
                    Value(
                        None,
                        flag.origin,
                        "derived",
                        unknown=f"{reason}, and no hardware is given",
                        note=reason,
                    ),
                    nodes_value,
                    False,
                )
            left = len([i for i in range(machine_gpus) if i not in gone])
            note = f"{reason}: {left} of the machine's {machine_gpus} GPUs"
            return (
                Value(left, flag.origin, "derived", note=note),
                nodes_value,
                False,
            )
        if selected is not None:
            return selected, nodes_value, True
        value, pinned = follows_machine(
            "the deepspeed launcher without --num_gpus or --include takes every GPU", root
        )
        return value, nodes_value, pinned

    if launcher in ("llamafactory", "swift"):
        # both start torchrun themselves from NPROC_PER_NODE / NNODES (llamafactory-cli: cli.py; ms-swift
        # 4.6.0 swift/cli/main.py:30-35,74-83, which starts torchrun only when one of them is set)
        env_n = value_entry(plan.env, "NPROC_PER_NODE")
        nnodes = value_entry(plan.env, "NNODES")
        nodes_value = count_value(nnodes, "NNODES") if nnodes is not None else Value(1, None, "default")
        if env_n is not None:
            env_count = Value(env_n.value, env_n.origin, "launch", unknown=env_n.unknown)
            return count_value(env_count, "NPROC_PER_NODE"), nodes_value, True
        if launcher == "llamafactory":
            value, pinned = follows_machine("llamafactory-cli starts torchrun on every visible GPU", root)
            return value, nodes_value, pinned
        note = (
            "swift starts torchrun with NNODES only: torchrun's default of 1 process per node"
            if nnodes is not None
            else "swift starts one process unless NPROC_PER_NODE or NNODES is set"
        )
        return Value(1, root, "launch", note=note), nodes_value, True

    if launcher == "python":
        n_gpu, pinned = data_parallel_gpus(plan)
        note = n_gpu.note if n_gpu is not None and n_gpu.note else "plain python starts one process"
        return Value(1, root, "launch", note=note), Value(1, None, "default"), pinned

    return (
        Value(
            None,
            None,
            "derived",
            unknown="no launch script or accelerate config says how many processes start",
        ),
        Value(1, None, "default"),
        True,
    )


def _hostfile_processes(plan: RunPlan) -> tuple[Value, Value, bool] | None:
    """The deepspeed launcher with a hostfile it can read: the slots of the hosts selected (advisor/
    sources/hostfile.py has DeepSpeed's rules); None when there is no hostfile or it is not there
    (DeepSpeed then runs on the local GPUs, as without one)."""
    from advisor.sources.hostfile import active_slots

    hostfile = getattr(plan.spec, "hostfile", None)
    if hostfile is None or not hostfile.found:
        return None
    word = value_entry(plan.launch, "hostfile")
    origin = word.origin if word is not None else plan.root_location

    def unknown(reason: str) -> tuple[Value, Value, bool]:
        return (
            Value(None, origin, "derived", unknown=reason),
            Value(None, origin, "derived", unknown=reason),
            True,
        )

    if not hostfile.hosts:
        return unknown(f"the hostfile {hostfile.path.name}: {hostfile.problem}")
    given: dict[str, object] = {}
    for key in ("num_nodes", "num_gpus", "include", "exclude"):
        v = _deepspeed_num_gpus(plan) if key == "num_gpus" else value_entry(plan.launch, key)
        if v is not None and not v.known:
            return unknown(f"--{key} is not known ({v.unknown or 'unknown value'})")
        if v is not None:
            given[key] = v.value
    try:
        slots = active_slots(
            hostfile.hosts,
            str(given.get("include", "")),
            str(given.get("exclude", "")),
            int(str(given.get("num_nodes", -1))),
            int(str(given.get("num_gpus", -1))),
        )
    except ValueError:
        return unknown("--num_nodes or --num_gpus is not a number")
    if isinstance(slots, str):
        return unknown(f"the deepspeed launcher refuses the hostfile selection: {slots}")
    counts = [len(v) for v in slots.values()]
    if not counts:
        return unknown("no host of the hostfile is left by --include/--exclude")
    note = f"hostfile {hostfile.path.name}: " + ", ".join(f"{h} {len(v)}" for h, v in slots.items())
    if len(set(counts)) == 1:
        hosts_note = f"{len(counts)} host(s) of {hostfile.path.name}"
        return (
            Value(counts[0], origin, "launch", note=note),
            Value(len(counts), origin, "launch", note=hosts_note),
            True,
        )
    total = sum(counts)  # hosts with different slot counts: the processes in all, on "one" node
    return (
        Value(total, origin, "launch", note=f"{note}: {total} in all"),
        Value(1, origin, "launch", note=note),
        True,
    )


def _deepspeed_num_gpus(plan: RunPlan) -> Value | None:
    """`--num_gpus`, or its other name `--num_accelerators` (deepspeed launcher/runner.py
    add_argument("--num_gpus", "--num_accelerators"))."""
    return value_entry(plan.launch, "num_gpus") or value_entry(plan.launch, "num_accelerators")

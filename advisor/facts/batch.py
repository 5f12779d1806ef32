"""World size and effective batch, computed the way each launcher really starts processes.

See config-formats.md: accelerate's num_processes is the total over machines and without a config
file it takes every visible GPU; torchrun starts one process unless told otherwise; the deepspeed
launcher takes every GPU and drops CUDA_VISIBLE_DEVICES when --num_gpus/--include is given;
llamafactory-cli starts torchrun on every visible GPU. Tensor, context and sequence parallel
sizes divide the data-parallel size.

Also here: DeepSpeed's own batch arithmetic (config-formats.md §3.1: the missing batch values are
derived with integer floor division at the data-parallel world size, then
train_batch_size == micro x accumulation x world is asserted), and the places where accumulation
or the micro-batch is written twice (accelerate's deepspeed_config, the DeepSpeed JSON,
TrainingArguments), compared with the semantics of HF's DeepSpeed integration ("ds X vs hf Y").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from advisor.facts.counts import count, count_value
from advisor.plan import RunPlan, coerce_text
from advisor.provenance import Namespace, Value
from advisor.sources.document import Location


@dataclass(slots=True)
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
    if not all(re.fullmatch(r"\d+", p) for p in parts):
        return None
    return [int(p) for p in parts]


def _value(ns: Namespace, key: str) -> Value | None:
    entry = ns.entry(key)
    return entry if isinstance(entry, Value) else None


def strict_int(value: Any) -> int | None:
    """A JSON/YAML number that is a whole number (not a bool, not a string)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def machine_gpu_count(plan: RunPlan) -> int | None:
    hw = plan.hardware
    return None if hw is None else hw.gpus.count


def _exclusion(plan: RunPlan) -> tuple[Value, list[int]] | None:
    """deepspeed `--exclude localhost:0` / `--exclude host:0,1`: (the flag, the local GPU indices it
    takes away). None when there is no exclusion of one host's GPUs (several hosts, a whole host)."""
    exclude = _value(plan.launch, "exclude")
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
    cvd = _value(plan.env, "CUDA_VISIBLE_DEVICES")
    mask: list[int] | None = None
    mask_origin = None
    if cvd is not None:
        if not cvd.known:
            return GpuList(None, cvd.origin, cvd.unknown, "CUDA_VISIBLE_DEVICES")
        mask = parse_gpu_list(cvd.value)
        mask_origin = cvd.origin

    if launcher == "deepspeed":
        include = _value(plan.launch, "include")
        filters = any(
            _value(plan.launch, k) is not None for k in ("include", "exclude", "num_gpus", "num_nodes")
        )
        if include is not None and include.known:
            m = re.search(r":([\d,]+)", str(include.value))
            ids = parse_gpu_list(m.group(1)) if m else None
            return GpuList(ids, include.origin, via="include")
        excluded = _exclusion(plan)
        total = machine_gpu_count(plan)
        if excluded is not None and total is not None and _value(plan.launch, "num_gpus") is None:
            flag, gone = excluded
            return GpuList([i for i in range(total) if i not in gone], flag.origin, via="exclude")
        if filters:
            return GpuList(None, None)  # deepspeed deletes CUDA_VISIBLE_DEVICES here
        return GpuList(mask, mask_origin, via="CUDA_VISIBLE_DEVICES" if mask is not None else None)

    gpu_ids = _value(plan.accelerate, "gpu_ids")
    if launcher in {"accelerate", "trl", "axolotl", None} and gpu_ids is not None and gpu_ids.known:
        ids = parse_gpu_list(gpu_ids.value)
        if ids:  # an empty gpu_ids selects nothing we can count: left to the GPUs otherwise visible
            if mask is not None:
                ids = [mask[i] for i in ids if i < len(mask)]
            return GpuList(ids, gpu_ids.origin, via="gpu_ids")
    return GpuList(mask, mask_origin, via="CUDA_VISIBLE_DEVICES" if mask is not None else None)


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


def _parallel_divisor(plan: RunPlan) -> tuple[int, list[Location]]:
    """tp x cp x sp: processes that share one data-parallel replica (the largest size written for
    each dimension, multiplied across dimensions)."""
    spaces = {"accelerate": plan.accelerate, "training": plan.training, "deepspeed": plan.deepspeed}
    divisor, where = 1, []
    for places in _PARALLEL_DIMENSIONS.values():
        best, best_at = 1, None
        for space, key in places:  # lookup, never child(): reading must not add empty sections
            entry = spaces[space].lookup(key)
            v = entry if isinstance(entry, Value) else None
            n = count(v)
            if n is not None and n > best:
                best, best_at = n, v.origin if v is not None else None
        divisor *= best
        if best > 1 and best_at is not None:
            where.append(best_at)
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


def _gpu_query_text(raw: str, variables: dict[str, Any], depth: int = 0) -> str | None:
    """The command substitution that counts the GPUs, as written, found through the variables."""
    if _GPU_QUERY.search(raw):
        return raw
    if depth > 6:
        return None
    for name in _VAR_REF.findall(raw):
        word = variables.get(name)
        found = (
            _gpu_query_text(getattr(word, "raw", "") or "", variables, depth + 1)
            if word is not None
            else None
        )
        if found is not None:
            return found
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
        v = _value(sb, key)
        if v is None or not v.known:
            continue
        text = str(v.value)
        if key == "nodes" and not re.fullmatch(r"\d+", text.strip()):
            continue  # "--nodes 2-4": sbatch may give any count in the range
        m = re.fullmatch(r"\s*(?:[a-z0-9_]+:)?(\d+)\s*", text)  # --gpus-per-node h100:8
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


def _dataparallel(plan: RunPlan) -> tuple[Value | None, bool]:
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
    launcher = _implied_launcher(plan)
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
        nproc = _value(plan.accelerate, "num_processes")
        machines = _value(plan.accelerate, "num_machines")
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
                    1, _origin(plan.accelerate, "distributed_type"), "accelerate", note="distributed_type NO"
                ),
                machines_value,
                True,
            )
        if plan.spec.accelerate is not None:
            return (
                Value(
                    None,
                    _origin(plan.accelerate, "distributed_type"),
                    "accelerate",
                    unknown="the accelerate config sets no num_processes: accelerate asks for it",
                ),
                machines_value,
                True,
            )
        named = _value(plan.launch, "config_file") or _value(plan.launch, "accelerate_config")
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
        nproc = _value(plan.launch, "nproc_per_node")
        nnodes = _value(plan.launch, "nnodes")
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
        num_nodes = _value(plan.launch, "num_nodes")
        nodes_value = (
            launch_count("num_nodes", num_nodes) if num_nodes is not None else Value(1, None, "default")
        )
        num_gpus = _value(plan.launch, "num_gpus")
        if num_gpus is not None:
            if not num_gpus.known:
                if _queries_gpus(plan, "num_gpus"):
                    value, _ = follows_machine(_query_reason(plan, "num_gpus"), num_gpus.origin)
                    return value, nodes_value, False
                num_gpus = _with_sbatch(plan, "num_gpus", num_gpus)
                if not num_gpus.known:
                    return num_gpus, nodes_value, True
            return count_value(num_gpus, "--num_gpus"), nodes_value, True
        if visible.via == "include" and visible.ids is not None:
            return (
                Value(
                    len(visible.ids),
                    visible.origin,
                    "launch",
                    note="GPUs selected for the deepspeed launcher",
                ),
                nodes_value,
                True,
            )
        excluded = _exclusion(plan)
        if excluded is not None and _value(plan.launch, "include") is None:
            flag, gone = excluded
            reason = (
                f"the deepspeed launcher takes the machine's GPUs except GPU "
                f"{','.join(str(i) for i in gone)} (--exclude {flag.value})"
            )
            total = machine_gpu_count(plan)
            if total is None:
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
            left = len([i for i in range(total) if i not in gone])
            return (
                Value(left, flag.origin, "derived", note=f"{reason}: {left} of the machine's {total} GPUs"),
                nodes_value,
                False,
            )
        if visible.ids is not None:
            return (
                Value(
                    len(visible.ids),
                    visible.origin,
                    "launch",
                    note="GPUs selected for the deepspeed launcher",
                ),
                nodes_value,
                True,
            )
        value, pinned = follows_machine(
            "the deepspeed launcher without --num_gpus or --include takes every GPU", root
        )
        return value, nodes_value, pinned

    if launcher == "llamafactory":
        env_n = _value(plan.env, "NPROC_PER_NODE")
        nnodes = _value(plan.env, "NNODES")
        nodes_value = count_value(nnodes, "NNODES") if nnodes is not None else Value(1, None, "default")
        if env_n is not None:
            return (
                count_value(
                    Value(env_n.value, env_n.origin, "launch", unknown=env_n.unknown), "NPROC_PER_NODE"
                ),
                nodes_value,
                True,
            )
        value, pinned = follows_machine("llamafactory-cli starts torchrun on every visible GPU", root)
        return value, nodes_value, pinned

    if launcher == "python":
        n_gpu, pinned = _dataparallel(plan)
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


def _origin(ns: Namespace, key: str) -> Location | None:
    v = _value(ns, key)
    return v.origin if v else None


# ------------------------------------------------------------------------------------------------
# DeepSpeed batch arithmetic (DeepSpeed runtime/config.py _set_batch_related_parameters and
# _batch_assertion)
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DsBatch:
    train: int | None
    micro: int | None
    gas: int | None
    error: str | None  # DeepSpeed's assertion text when the values do not hold at this world size


def deepspeed_batch(train: int | None, micro: int | None, gas: int | None, world: int) -> DsBatch:
    """Derive the missing batch values the way DeepSpeed does (integer floor division at the
    data-parallel world size), then apply DeepSpeed's assertions.

    >>> deepspeed_batch(24, 3, None, 16)
    DsBatch(train=24, micro=3, gas=0, error='Gradient accumulation steps: 0 has to be greater than 0')
    """
    if world < 1:
        raise ValueError(f"world size must be at least 1, got {world}")
    # A written value of 0 or below fails _batch_assertion (deepspeed 0.19.8 runtime/config.py lines
    # 596-600: each "has to be greater than 0"), or earlier with ZeroDivisionError in
    # _set_batch_related_parameters (line 621, train_batch // micro_batch); it is never divided here.
    for name, written in (
        ("Train batch size", train),
        ("Micro batch size per gpu", micro),
        ("Gradient accumulation steps", gas),
    ):
        if written is not None and written <= 0:
            return DsBatch(train, micro, gas, f"{name}: {written} has to be greater than 0")
    if train is not None and micro is not None and gas is not None:
        pass
    elif train is not None and micro is not None:
        gas = train // micro // world
    elif train is not None and gas is not None:
        micro = (train // world // gas) if gas else 0
    elif micro is not None and gas is not None:
        train = micro * gas * world
    elif train is not None:
        gas, micro = 1, train // world
    elif micro is not None:
        gas, train = 1, micro * world
    else:
        return DsBatch(
            train,
            micro,
            gas,
            "Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided",
        )
    assert train is not None and micro is not None and gas is not None
    if train <= 0:
        return DsBatch(train, micro, gas, f"Train batch size: {train} has to be greater than 0")
    if micro <= 0:
        return DsBatch(train, micro, gas, f"Micro batch size per gpu: {micro} has to be greater than 0")
    if gas <= 0:
        return DsBatch(train, micro, gas, f"Gradient accumulation steps: {gas} has to be greater than 0")
    if train != micro * gas * world:
        return DsBatch(
            train,
            micro,
            gas,
            "Check batch related parameters. train_batch_size is not equal to "
            f"micro_batch_per_gpu * gradient_acc_step * world_size {train} != {micro} * {gas} * {world}",
        )
    return DsBatch(train, micro, gas, None)


def deepspeed_valid_world_sizes(
    train: int | None, micro: int | None, gas: int | None, upto: int = 1024
) -> list[int]:
    """The data-parallel world sizes (1..upto) at which DeepSpeed accepts these batch values."""
    return [w for w in range(1, upto + 1) if deepspeed_batch(train, micro, gas, w).error is None]


COMMON_WORLD_SIZES = (1, 2, 4, 8, 16, 32, 64)


def has_training_arguments(plan: RunPlan) -> bool:
    """The run's script reads TrainingArguments: the plan's `training.reads_training_arguments`
    (advisor.plan.reads_training_arguments, computed once when the plan is built)."""
    v = _value(plan.training, "reads_training_arguments")
    if v is not None and isinstance(v.value, bool):
        return v.value
    from advisor.plan import reads_training_arguments

    return reads_training_arguments(plan.spec)


def deepspeed_consumer(plan: RunPlan) -> str | None:
    """Who reads the DeepSpeed JSON: "hf" (the HF Trainer's integration fills "auto" from
    TrainingArguments and raises on mismatches) or "native" (DeepSpeed alone: `--deepspeed_config`,
    or a DeepSpeed file with no TrainingArguments in the run). None when the run has no DeepSpeed file."""
    if plan.spec.deepspeed is None:
        return None
    command = plan.spec.command
    if (
        command is not None
        and "deepspeed_config" in command.script_args
        and "deepspeed" not in command.script_args
    ):
        return "native"
    return "hf" if has_training_arguments(plan) else "native"


def _ds_scalar(plan: RunPlan, key: str) -> Value | None:
    v = plan.deepspeed.entry(key)
    return v if isinstance(v, Value) and v.known else None


def _is_auto(v: Value | None) -> bool:
    return v is not None and isinstance(v.value, str) and v.value.strip().lower() == "auto"


def deepspeed_batch_check(
    plan: RunPlan, per_device: Value, accumulation: Value, world: int | None, dp: int | None
) -> list[dict[str, Any]]:
    """GA102's evidence: the DeepSpeed batch values that fail (or only hold at some world sizes)."""
    consumer = deepspeed_consumer(plan)
    if consumer is None:
        return []
    tv, mv, gv = (
        _ds_scalar(plan, k)
        for k in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")
    )
    present = [v for v in (tv, mv, gv) if v is not None]
    if not present:
        return []
    anchor = tv or mv or gv
    assert anchor is not None
    item: dict[str, Any] = {"location": anchor.origin, "consumer": consumer, "world": dp}

    if consumer == "hf":
        # HF fills "auto" from TrainingArguments; a written train_batch_size must equal
        # world_size x per_device_train_batch_size x gradient_accumulation_steps.
        train = strict_int(tv.value) if tv is not None else None
        if train is None or plan.training.auto_find_batch_size is True:
            return []
        pd, acc = per_device.value, accumulation.value
        if not (isinstance(pd, int) and isinstance(acc, int)) or pd <= 0 or acc <= 0:
            return []
        item.update(
            train=train,
            micro=pd,
            gas=acc,
            world=world,
            related=[loc for loc in (per_device.origin, accumulation.origin) if loc is not None],
        )
        if world is not None:
            expected = world * pd * acc
            if train == expected:
                return []
            item.update(
                kind="hf_mismatch",
                expected=expected,
                severity="error",
                detail=f"ds train_batch_size={train} vs hf train_batch_size (calculated)={expected}"
                f" ({world} processes x {pd} per device x {acc} accumulation)",
            )
            return [item]
        per_process = pd * acc
        worlds = [train // per_process] if train % per_process == 0 else []
        item.update(
            kind="hf_only_at",
            valid_worlds=worlds,
            severity="warning",
            detail=f"train_batch_size {train} = processes x {pd} per device x {acc} accumulation"
            + (f" holds only at {worlds[0]} processes" if worlds else " holds at no process count"),
        )
        return [item]

    # native DeepSpeed: every value must be a number; "auto" means an HF/accelerate template
    if any(_is_auto(v) for v in present):
        return []
    values = [strict_int(v.value) if v is not None else None for v in (tv, mv, gv)]
    if any(v is not None and (n is None or n <= 0) for v, n in zip((tv, mv, gv), values, strict=True)):
        return []  # a string, a float or a value <= 0 where DeepSpeed expects a count: GA001's business
    train, micro, gas = values
    if train is None and micro is None:
        item.update(
            kind="missing",
            severity="error",
            detail="neither train_batch_size nor train_micro_batch_size_per_gpu is given",
        )
        return [item]
    item.update(train=train, micro=micro, gas=gas)
    if dp is not None:
        result = deepspeed_batch(train, micro, gas, dp)
        if result.error is None:
            return []
        item.update(
            kind="fails",
            severity="error",
            derived_micro=result.micro,
            derived_gas=result.gas,
            valid_worlds=_shown(deepspeed_valid_world_sizes(train, micro, gas)),
            detail=f"{_derivation(train, micro, gas, dp, result)} ('{result.error}')",
        )
        return [item]
    worlds = deepspeed_valid_world_sizes(train, micro, gas)
    failing_common = [w for w in COMMON_WORLD_SIZES if w not in worlds]
    if len(worlds) >= 1024:
        return []  # holds at every world size (only micro, or micro + gas)
    item.update(
        kind="only_at",
        valid_worlds=_shown(worlds),
        failing=failing_common,
        severity="warning" if failing_common else "info",
        detail=_written(train, micro, gas),
    )
    return [item]


def _derivation(train: int | None, micro: int | None, gas: int | None, world: int, result: DsBatch) -> str:
    if train is not None and micro is not None and gas is None:
        return f"gradient_accumulation_steps = {train} // {micro} // {world} = {result.gas}"
    if train is not None and gas is not None and micro is None:
        return f"train_micro_batch_size_per_gpu = {train} // {world} // {gas} = {result.micro}"
    if train is not None and micro is None and gas is None:
        return f"train_micro_batch_size_per_gpu = {train} // {world} = {result.micro}"
    return f"{result.train} != {result.micro} x {result.gas} x {world}"


def _shown(worlds: list[int], limit: int = 12) -> list[int | str]:
    return [*worlds[:limit], "..."] if len(worlds) > limit else list(worlds)


def _written(train: int | None, micro: int | None, gas: int | None) -> str:
    parts = [
        f"{k} {v}"
        for k, v in (
            ("train_batch_size", train),
            ("train_micro_batch_size_per_gpu", micro),
            ("gradient_accumulation_steps", gas),
        )
        if v is not None
    ]
    return ", ".join(parts)


# ------------------------------------------------------------------------------------------------
# Accumulation / micro-batch written in two places (HF's "ds X vs hf Y")
# ------------------------------------------------------------------------------------------------


def _hf_show(value: Any) -> str:
    return str(value)


def batch_conflicts(plan: RunPlan) -> list[dict[str, Any]]:
    """GA103's evidence. HF's DeepSpeed integration (`trainer_config_process`) fills "auto" values
    from TrainingArguments and records every other value that differs, type included, so the string
    "8" differs from the number 8; `trainer.train()` then raises with "ds X vs hf Y" lines."""
    out: list[dict[str, Any]] = []
    has_ta = has_training_arguments(plan)
    t = plan.training
    hf_accum = _value(t, "gradient_accumulation_steps")
    hf_micro = _value(t, "per_device_train_batch_size")
    ds_cfg = plan.accelerate.entry("deepspeed_config")
    ds_cfg = ds_cfg if isinstance(ds_cfg, Namespace) else Namespace("accelerate.deepspeed_config")
    acc_gas = _value(ds_cfg, "gradient_accumulation_steps")
    acc_file = _value(ds_cfg, "deepspeed_config_file")

    def hf_int(v: Value | None) -> Any:
        if v is None or not v.known:
            return None
        return coerce_text(v.value) if isinstance(v.value, str) else v.value

    def pair(ds: Value, ds_key: str, hf: Value | None, hf_key: str, kind: str, source: str) -> None:
        hv = hf_int(hf)
        if hv is None or hf is None:
            return
        dv = ds.value
        if dv == hv and type(dv) is type(hv):
            return
        default = hf.source == "default"
        out.append(
            {
                "location": ds.origin,
                "related": [hf.origin] if hf.origin is not None else [],
                "kind": kind,
                "source": source,
                "key": ds_key,
                "ds_value": dv,
                "hf_key": hf_key,
                "hf_value": hv,
                "hf_default": default,
                "string": isinstance(dv, str),
                "detail": f"ds {ds_key}={_hf_show(dv)} vs hf {hf_key}={_hf_show(hv)}",
            }
        )

    if plan.spec.deepspeed is not None and deepspeed_consumer(plan) == "hf":
        gas = _ds_scalar(plan, "gradient_accumulation_steps")
        if gas is not None and not _is_auto(gas):
            pair(
                gas,
                "gradient_accumulation_steps",
                hf_accum,
                "gradient_accumulation_steps",
                "ds_json",
                "deepspeed",
            )
        micro = _ds_scalar(plan, "train_micro_batch_size_per_gpu")
        if micro is not None and not _is_auto(micro) and t.auto_find_batch_size is not True:
            pair(
                micro,
                "train_micro_batch_size_per_gpu",
                hf_micro,
                "per_device_train_batch_size",
                "ds_json",
                "deepspeed",
            )

    dist = str(plan.accelerate.distributed_type or "").upper()
    if acc_gas is not None and acc_gas.known and dist == "DEEPSPEED":
        if acc_file is not None and acc_gas.source == "accelerate" and acc_file.source == "accelerate":
            out.append(
                {
                    "location": acc_gas.origin,
                    "related": [acc_file.origin] if acc_file.origin is not None else [],
                    "kind": "accelerate_with_file",
                    "source": "accelerate",
                    "key": "gradient_accumulation_steps",
                    "ds_value": acc_gas.value,
                    "hf_key": None,
                    "hf_value": None,
                    "hf_default": False,
                    "string": False,
                    "detail": "deepspeed_config.gradient_accumulation_steps beside deepspeed_config_file",
                }
            )
        elif acc_file is None and plan.spec.deepspeed is None and has_ta:
            # accelerate's DeepSpeed plugin builds the config with this value (an int, from the
            # ACCELERATE_GRADIENT_ACCUMULATION_STEPS environment variable)
            as_int = count(acc_gas)
            if as_int is not None:
                shown = Value(as_int, acc_gas.origin, acc_gas.source)
                pair(
                    shown,
                    "gradient_accumulation_steps",
                    hf_accum,
                    "gradient_accumulation_steps",
                    "accelerate",
                    "accelerate",
                )
    return out


# ------------------------------------------------------------------------------------------------


def batch_facts(plan: RunPlan) -> Namespace:
    ns = Namespace("batch")
    per_node, nodes, pinned = processes(plan)
    ns.set("processes_per_node", per_node)
    ns.set("nodes", nodes)
    ns.set("pinned", Value(pinned, per_node.origin, "derived"))
    ns.set("launcher", Value(_implied_launcher(plan), per_node.origin, "derived"))
    ns.set("follows", Value(None if pinned else per_node.note, per_node.origin, "derived"))
    visible = visible_gpus(plan)
    ns.set("visible_gpus", Value(visible.ids, visible.origin, "derived", unknown=visible.unknown))
    ns.set("selected_via", Value(visible.via if visible.ids is not None else None, visible.origin, "derived"))

    world = None
    per_node = count_value(per_node, "processes per node")
    nodes = count_value(nodes, "nodes")
    if per_node.known and nodes.known:
        world = int(per_node.value) * int(nodes.value)
        related = [loc for loc in (nodes.origin,) if loc is not None]
        note = (
            "; ".join(n for n in (per_node.note, nodes.note) if n and nodes.source != "default")
            or per_node.note
        )
        ns.set("world_size", Value(world, per_node.origin, "derived", related=related, note=note))
    else:
        reason = per_node.unknown or nodes.unknown or "unknown"
        ns.set("world_size", Value(None, per_node.origin, "derived", unknown=reason))

    divisor, div_where = _parallel_divisor(plan)
    ns.set(
        "model_parallel_size",
        Value(divisor, div_where[0] if div_where else None, "derived", related=div_where[1:]),
    )
    dp = world // divisor if world is not None and divisor and world % divisor == 0 else None
    if world is not None and dp is None:
        ns.set(
            "dp_size",
            Value(
                None,
                None,
                "derived",
                unknown=f"world size {world} is not divisible by tp x cp x sp = {divisor}",
            ),
        )
    else:
        ns.set(
            "dp_size",
            Value(
                dp,
                per_node.origin,
                "derived",
                unknown=None if dp is not None else ns.entry("world_size").unknown or "world size unknown",
            ),
        )

    micro, accum = _micro_and_accum(plan)
    ds = native_deepspeed_batch(plan, dp)
    ds_origin = None
    if ds is not None:
        anchor = next(
            v
            for v in (
                _ds_scalar(plan, k)
                for k in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")
            )
            if v is not None
        )
        ds_origin = anchor.origin
        derived = f"DeepSpeed's batch derivation at {dp} data-parallel processes"
        micro = Value(
            ds.micro, _ds_origin(plan, "train_micro_batch_size_per_gpu", anchor), "deepspeed", note=derived
        )
        accum = Value(
            ds.gas, _ds_origin(plan, "gradient_accumulation_steps", anchor), "deepspeed", note=derived
        )
    ns.set("per_device", micro)
    ns.set("accumulation", accum)
    n_gpu, _ = _dataparallel(plan)
    ns.set("dataparallel_gpus", n_gpu or Value(None, None, "derived"))
    split = split_batches(plan)
    ns.set("split_batches", split or Value(False, None, "default"))
    ns.set("split_problems", Value(_split_problems(split, micro, dp), None, "derived"))
    if split is not None and dp is not None and micro.known and accum.known:
        # accelerate splits each per_device_train_batch_size batch over the processes
        # (accelerate/data_loader.py:1284 `dataloader.batch_size // num_processes`)
        m, g = int(micro.value), int(accum.value)
        related = [loc for loc in (accum.origin, split.origin) if loc is not None]
        note = f"{m} per step split over {dp} processes x {g} accumulation (split_batches)"
        ns.set("effective_batch", Value(m * g, micro.origin, "derived", related=related, note=note))
        ns.set("per_process_batch", Value(max(m // dp, 1) * g, micro.origin, "derived"))
    elif n_gpu is not None and not n_gpu.known:
        ns.set("effective_batch", Value(None, n_gpu.origin, "derived", unknown=n_gpu.unknown))
    elif dp is not None and micro.known and accum.known:
        m, g = int(micro.value), int(accum.value)
        gpus = int(n_gpu.value) if n_gpu is not None else 1
        eff = m * g * dp * gpus
        related = [loc for loc in (accum.origin, per_node.origin) if loc is not None]
        if n_gpu is not None:
            note = f"{m} per device x {gpus} GPUs under nn.DataParallel x {g} accumulation"
        else:
            note = f"{m} per device x {g} accumulation x {dp} data-parallel processes"
        if ds is not None:
            note += " (DeepSpeed's batch derivation)"
        ns.set(
            "effective_batch",
            Value(eff, ds_origin or micro.origin, "derived", related=related, note=note),
        )
        ns.set("per_process_batch", Value(m * g * gpus, micro.origin, "derived"))
    else:
        reason = (
            micro.unknown or accum.unknown or ns.entry("dp_size").unknown or "world size or batch unknown"
        )
        ns.set("effective_batch", Value(None, micro.origin, "derived", unknown=reason))

    ns.set("deepspeed_consumer", Value(deepspeed_consumer(plan), None, "derived"))
    ns.set("deepspeed_problems", Value(deepspeed_batch_check(plan, micro, accum, world, dp), None, "derived"))
    ns.set("conflicts", Value(batch_conflicts(plan), None, "derived"))
    from advisor.facts.generation_batch import generation_facts

    generation = generation_facts(plan, dp, micro, accum)
    ns.set("generation", Value(generation, None, "derived"))
    ns.set("generation_problems", Value(list(generation.get("problems", [])), None, "derived"))
    return ns


def split_batches(plan: RunPlan) -> Value | None:
    """TrainingArguments `accelerator_config: {split_batches: true}` (the value, when it is true)."""
    entry = plan.training.lookup("accelerator_config.split_batches")
    if (
        isinstance(entry, Value)
        and entry.known
        and (entry.value is True or str(entry.value).lower() == "true")
    ):
        return entry
    return None


def _split_problems(split: Value | None, micro: Value, dp: int | None) -> list[dict[str, Any]]:
    """accelerate refuses a split batch that does not divide by the process count
    (accelerate/data_loader.py:1183-1187: `batch_size > 1 and batch_size % num_processes != 0` raises
    ValueError in prepare_data_loader; BatchSamplerShard:160 the same)."""
    if split is None or dp is None or dp <= 1 or not micro.known:
        return []
    m = int(micro.value)
    if m <= 1 or m % dp == 0:
        return []
    return [
        {
            "location": micro.origin or split.origin,
            "related": [split.origin] if split.origin is not None and split.origin != micro.origin else [],
            "batch": m,
            "processes": dp,
        }
    ]


def _micro_and_accum(plan: RunPlan) -> tuple[Value, Value]:
    t = plan.training
    if has_training_arguments(plan):
        no_batch = "no per-device batch size is written"
    else:
        no_batch = (
            "no per-device batch size: the run reads no TrainingArguments "
            "(no training file and no TrainingArguments flags on a command)"
        )
    micro = _value(t, "per_device_train_batch_size") or Value(None, None, "default", unknown=no_batch)
    accum = _value(t, "gradient_accumulation_steps") or Value(1, None, "default")
    batch_size = _value(t, "batch_size")
    if t.dialect == "axolotl" and batch_size is not None and accum.source == "default":
        m, b = count(micro), count(batch_size)
        if m and b:
            accum = Value(
                b // m, batch_size.origin, "training_args", note=f"batch_size {b} // micro_batch_size {m}"
            )
    if plan.deepspeed:
        # a DeepSpeed number stands in for a TrainingArguments value that is not written
        ds_micro = _value(plan.deepspeed, "train_micro_batch_size_per_gpu")
        ds_accum = _value(plan.deepspeed, "gradient_accumulation_steps")
        if ds_micro is not None and strict_int(ds_micro.value) is not None and micro.source == "default":
            micro = ds_micro
        if ds_accum is not None and strict_int(ds_accum.value) is not None and accum.source == "default":
            accum = ds_accum
    return count_value(micro, "the per-device batch size"), count_value(accum, "gradient_accumulation_steps")


def _ds_origin(plan: RunPlan, key: str, anchor: Value) -> Location | None:
    v = _ds_scalar(plan, key)
    return v.origin if v is not None else anchor.origin


def native_deepspeed_batch(plan: RunPlan, dp: int | None) -> DsBatch | None:
    """DeepSpeed alone (no TrainingArguments): the batch values as DeepSpeed derives them at this
    data-parallel size (§3.1), when they resolve without an error."""
    if dp is None or deepspeed_consumer(plan) != "native":
        return None
    values = [
        _ds_scalar(plan, k)
        for k in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")
    ]
    if any(_is_auto(v) for v in values):
        return None
    ints = [strict_int(v.value) if v is not None else None for v in values]
    if any(v is not None and n is None for v, n in zip(values, ints, strict=True)):
        return None
    result = deepspeed_batch(ints[0], ints[1], ints[2], dp)
    return result if result.error is None else None

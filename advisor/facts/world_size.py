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

from advisor.core.document import Location
from advisor.core.lazy_pattern import LazyPattern
from advisor.core.provenance import Namespace, Value
from advisor.core.records import record
from advisor.core.rule_helpers import plural
from advisor.facts.counts import count, count_value
from advisor.facts.gpu_visibility import gpu_exclusion, machine_gpu_count, visible_gpus
from advisor.facts.namespace_entries import entry_origin, value_entry
from advisor.plan.run_plan import RunPlan, coerce_text
from advisor.sources import launchers


def has_training_arguments(plan: RunPlan) -> bool:
    """The run's script reads TrainingArguments: the plan's `training.reads_training_arguments`
    (advisor.plan.run_plan.reads_training_arguments, computed once when the plan is built)."""
    v = value_entry(plan.training, "reads_training_arguments")
    if v is not None and isinstance(v.value, bool):
        return v.value
    from advisor.plan.run_plan import reads_training_arguments

    return reads_training_arguments(plan.spec, plan.context)


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


def configured_launcher(plan: RunPlan) -> str | None:
    """The launch's launcher; else the one a config file of the run implies by its kind (an accelerate
    config: accelerate)."""
    if plan.launch.launcher:
        return str(plan.launch.launcher)
    spec = launchers.implied_by_kind("accelerate") if plan.spec.accelerate is not None else None
    return spec.name if spec is not None else None


def implied_launcher(plan: RunPlan) -> str | None:
    """configured_launcher; else the one the training config's dialect implies (a LLaMA-Factory or axolotl
    config: that launcher)."""
    launcher = configured_launcher(plan)
    if launcher is not None:
        return launcher
    spec = launchers.implied_by_dialect(plan.training.dialect)
    return spec.name if spec is not None else None


# ------------------------------------------------------------------------------------------------
# Counting GPUs at run time: `$(nvidia-smi -L | wc -l)`, `torch.cuda.device_count()`
# ------------------------------------------------------------------------------------------------

_GPU_QUERY = LazyPattern(
    r"nvidia-smi|nvidia_smi|device_count|gpu_count|num_gpus\(\)|\bnproc\b.*gpu", re.IGNORECASE
)
_VAR_REF = LazyPattern(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")


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
    if not launchers.spec_of(plan.launch.launcher).is_interpreter or not has_training_arguments(plan):
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


class _Run:
    """The plan as a launcher's process count reads it (advisor.sources.launchers.RunInputs)."""

    def __init__(self, plan: RunPlan) -> None:
        self._plan = plan
        self.root = plan.root_location
        self.named = plan.launch.launcher is not None
        self.has_accelerate_config = plan.spec.accelerate is not None
        self.hostfile: Any = getattr(plan.spec, "hostfile", None)
        gpus = visible_gpus(plan)
        self.visible = launchers.VisibleGpus(gpus.ids, gpus.origin, gpus.via)
        self._n_visible = len(gpus.ids) if gpus.ids is not None else machine_gpu_count(plan)
        self._masked = gpus.ids is not None  # the script itself says which GPUs: the count is pinned

    def flag(self, key: str) -> Value | None:
        return value_entry(self._plan.launch, key)

    def env(self, key: str) -> Value | None:
        return value_entry(self._plan.env, key)

    def accelerate(self, key: str) -> Value | None:
        return value_entry(self._plan.accelerate, key)

    def accelerate_origin(self, key: str) -> Location | None:
        return entry_origin(self._plan.accelerate, key)

    def count(self, value: Value | None) -> int | None:
        return count(value)

    def count_value(self, value: Value, what: str) -> Value:
        return count_value(value, what)

    def resolved(self, key: str, value: Value) -> Value:
        return _with_sbatch(self._plan, key, value)

    def counted_at_run_time(self, key: str) -> str | None:
        return _query_reason(self._plan, key) if _queries_gpus(self._plan, key) else None

    def every_visible_gpu(self, reason: str, origin: Location | None) -> tuple[Value, bool]:
        n = self._n_visible
        if n is None:
            why = f"{reason}, and no hardware is given"
            return Value(None, origin, "derived", unknown=why, note=reason), self._masked
        shown = (
            f"{n} GPUs in the visible set"
            if self.visible.ids is not None
            else f"all {n} GPUs of the machine"
            if n
            else None
        )
        return Value(n, origin, "derived", note=f"{reason}: {shown}"), self._masked

    def machine_gpus(self) -> int | None:
        return machine_gpu_count(self._plan)

    def gpu_exclusion(self) -> tuple[Value, list[int]] | None:
        return gpu_exclusion(self._plan)

    def hostfile_slots(
        self, include: str, exclude: str, num_nodes: int, num_gpus: int
    ) -> dict[str, list[int]] | str:
        from advisor.sources.hostfile import active_slots

        return active_slots(self.hostfile.hosts, include, exclude, num_nodes, num_gpus)

    def data_parallel(self) -> tuple[Value | None, bool]:
        return data_parallel_gpus(self._plan)


def processes(plan: RunPlan) -> tuple[Value, Value, bool]:
    """(processes per node, nodes, pinned), as the run's launcher (launch or implied) counts them
    (its module in advisor/sources/launchers). pinned=False when the count follows the machine the
    run lands on (every visible GPU), not a number written in the run's files."""
    name = implied_launcher(plan)
    launcher = launchers.launcher(name)
    if launcher is None:
        why = "no launch script or accelerate config says how many processes start"
        return Value(None, None, "derived", unknown=why), Value(1, None, "default"), True
    counted = launcher.processes(_Run(plan))
    return counted.per_node, counted.nodes, counted.pinned


# ------------------------------------------------------------------------------------------------
# The count on the machine given with -H, where the files do not write it
# ------------------------------------------------------------------------------------------------


@record(frozen=True, slots=True)
class MachineCount:
    """The processes per node a run starts on the machine it is checked for, where its files do not
    write the count: one per GPU it can see there. on: 'the 4 GPUs of 4xL40S'; because: why the files
    do not settle it ('$NPROC_PER_NODE is not set in the script')."""

    per_node: int
    on: str
    because: str


def _configures_sharding(plan: RunPlan) -> bool:
    """A DeepSpeed config or FSDP in the run: something a distributed launcher starts, one process per
    GPU (a DeepSpeed JSON checked on its own, a TrainingArguments file naming one)."""
    fsdp = plan.training.lookup("fsdp")
    return plan.spec.deepspeed is not None or (isinstance(fsdp, Value) and fsdp.known and bool(fsdp.value))


def machine_count(plan: RunPlan, per_node: Value | None, pinned: bool) -> MachineCount | None:
    """The count the findings that depend on it are judged with when the files do not write it, on the
    machine the check is given (-H or the settings' hardware); None when the files write it, or no
    machine is given (then nothing is assumed).

    - the launcher takes every visible GPU (a bare `deepspeed`, `accelerate launch` without a config):
      the count it gives on that machine (already the world size, pinned=False);
    - the count is a shell value the script's caller supplies (`--nproc_per_node=$NPROC_PER_NODE` with
      the variable unset, a script argument): one process per GPU the run can see there;
    - no launch at all, but a DeepSpeed config or FSDP (a standalone ZeRO-3 JSON): the same.
    A count that is written but wrong ("0", a hostfile problem) is not replaced."""
    machine = plan.hardware
    if machine is None or per_node is None:
        return None
    visible = visible_gpus(plan)
    if visible.ids is None and visible.unknown is not None:
        return None  # CUDA_VISIBLE_DEVICES=$GPUS: which GPUs, and how many, is not known
    if visible.ids is not None:
        n = len(visible.ids)
        on = f"the {plural(n, 'GPU')} {visible.via or 'the script'} selects on {machine.name}"
    else:
        n = machine.gpus.count
        on = f"the {plural(n, 'GPU')} of {machine.name}"
    if per_node.known:
        if pinned or count(per_node) is None:
            return None
        # every_visible_gpu (and deepspeed --exclude) write "{reason}: {what it comes to}"
        because = (per_node.note or "the launcher takes every visible GPU").rsplit(": ", 1)[0]
        return MachineCount(
            int(per_node.value), f"the {plural(per_node.value, 'GPU')} of {machine.name}", because
        )
    launcher = implied_launcher(plan)
    if launcher is None:
        if not _configures_sharding(plan):
            return None
    else:
        spec = launchers.spec_of(launcher)
        if spec.is_interpreter or spec.serves or not (per_node.unknown or "").startswith("$"):
            return None
    return MachineCount(n, on, per_node.unknown or "the process count is not written")

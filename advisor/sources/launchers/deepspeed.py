"""The deepspeed launcher (deepspeed.launcher.runner): every GPU of every host unless --num_gpus."""

from __future__ import annotations

from advisor.core.provenance import Value
from advisor.sources.launchers.counting import flag_count, launch_count, one_node, per_visible_gpu
from advisor.sources.launchers.protocol import ProcessCount, RunInputs
from advisor.sources.launchers.spec import Flags, LauncherSpec, Processes

SPEC = LauncherSpec(
    name="deepspeed",
    summary="DeepSpeed's multi-node launcher",
    commands=(("deepspeed",),),
    modules=("deepspeed.launcher.runner",),
    flags=Flags(
        bools=frozenset(
            {
                "no_python",
                "no_local_rank",
                "no_ssh",
                "no_ssh_check",
                "force_multi",
                "save_pid",
                "bind_cores_to_rank",
                "module",
                "elastic_training",
                "help",
            }
        ),
        values=frozenset(
            {
                "hostfile",
                "include",
                "exclude",
                "num_nodes",
                "num_gpus",
                "num_accelerators",
                "min_elastic_nodes",
                "max_elastic_nodes",
                "master_port",
                "master_addr",
                "node_rank",
                "launcher",
                "launcher_args",
                "ssh_port",
                "comment",
                "bind_core_list",
                "venv_script",
                "enable_each_rank_log",
                "autotuning",
                "user_script",
            }
        ),
        shorts=(("H", "hostfile"), ("i", "include"), ("e", "exclude"), ("h", "help")),
    ),
    env={"CUDA_VISIBLE_DEVICES": "the GPUs it may use (--include overrides it)"},
    processes=Processes(
        flags=("num_gpus", "num_accelerators", "include"),
        default="every GPU of every host",
        written_at=("launch", "num_gpus"),
    ),
    source="deepspeed/launcher/runner.py: parse_args",
    starts_deepspeed=True,
    filters_gpus=True,
    probe_as="torchrun",
    hostfile_flags=("hostfile",),
    # deepspeed 0.12.2 launcher/launch.py:231-238: with --no_python the script is run as an executable
    # (and --module with it is refused), never as `python -m`
    no_module_flags=frozenset({"no_python"}),
)


def _num_gpus(run: RunInputs) -> Value | None:
    """`--num_gpus`, or its other name `--num_accelerators` (deepspeed launcher/runner.py
    add_argument("--num_gpus", "--num_accelerators"))."""
    return run.flag("num_gpus") or run.flag("num_accelerators")


def processes(run: RunInputs) -> ProcessCount:
    """The hostfile's slots when it names one; else --num_gpus on each of --num_nodes, the GPUs
    --include selects, the machine's GPUs but those --exclude drops, or every GPU."""
    from_hostfile = _hostfile_processes(run)
    if from_hostfile is not None:
        return from_hostfile
    num_nodes = run.flag("num_nodes")
    nodes = launch_count(run, "num_nodes", num_nodes) if num_nodes is not None else one_node()
    num_gpus = _num_gpus(run)
    if num_gpus is not None:
        read = flag_count(run, "num_gpus", num_gpus, nodes, query_pinned=False)
        if isinstance(read, ProcessCount):
            return read
        return ProcessCount(run.count_value(read, "--num_gpus"), nodes)
    visible = run.visible
    selected = (
        Value(len(visible.ids), visible.origin, "launch", note="GPUs selected for the deepspeed launcher")
        if visible.ids is not None
        else None
    )
    if visible.via == "include" and selected is not None:
        return ProcessCount(selected, nodes)
    excluded = run.gpu_exclusion()
    if excluded is not None and run.flag("include") is None:
        flag, gone = excluded
        reason = (
            f"the deepspeed launcher takes the machine's GPUs except GPU "
            f"{','.join(str(i) for i in gone)} (--exclude {flag.value})"
        )
        machine_gpus = run.machine_gpus()
        if machine_gpus is None:
            why = f"{reason}, and no hardware is given"
            return ProcessCount(Value(None, flag.origin, "derived", unknown=why, note=reason), nodes, False)
        left = len([i for i in range(machine_gpus) if i not in gone])
        note = f"{reason}: {left} of the machine's {machine_gpus} GPUs"
        return ProcessCount(Value(left, flag.origin, "derived", note=note), nodes, False)
    if selected is not None:
        return ProcessCount(selected, nodes)
    include = run.flag("include")
    if include is not None:
        return ProcessCount(Value(None, include.origin, "derived", unknown=_include_unread(include)), nodes)
    return per_visible_gpu(
        run, "the deepspeed launcher without --num_gpus or --include takes every GPU", nodes
    )


def _include_unread(include: Value) -> str:
    """Why --include gives no GPU count: its value is not known, or it names no slot this reader can count.
    `localhost:` with an empty slot list (an unset `localhost:${DEVICES}`) makes the launcher fail: deepspeed
    0.12.2 launcher/runner.py:295-296 parse_resource_filter splits at ':' and runs int('') on the slots."""
    if not include.known:
        return f"--include is not known ({include.unknown or 'unknown value'})"
    text = str(include.value)
    if any(node.endswith(":") or ":," in node or node.endswith(",") for node in text.split("@")):
        return (
            f"--include {text} has an empty slot list: the deepspeed launcher fails on it "
            "(launcher/runner.py parse_resource_filter: int('') on the slots)"
        )
    return f"--include {text} selects GPUs by host name, which only a hostfile resolves"


def _hostfile_processes(run: RunInputs) -> ProcessCount | None:
    """The deepspeed launcher with a hostfile it can read: the slots of the hosts selected (advisor/
    sources/hostfile.py has DeepSpeed's rules); None when there is no hostfile or it is not there
    (DeepSpeed then runs on the local GPUs, as without one)."""
    hostfile = run.hostfile
    if hostfile is None or not hostfile.found:
        return None
    word = run.flag("hostfile")
    origin = word.origin if word is not None else run.root

    def unknown(reason: str) -> ProcessCount:
        return ProcessCount(
            Value(None, origin, "derived", unknown=reason), Value(None, origin, "derived", unknown=reason)
        )

    if not hostfile.hosts:
        return unknown(f"the hostfile {hostfile.path.name}: {hostfile.problem}")
    given: dict[str, object] = {}
    for key in ("num_nodes", "num_gpus", "include", "exclude"):
        v = _num_gpus(run) if key == "num_gpus" else run.flag(key)
        if v is not None and not v.known:
            return unknown(f"--{key} is not known ({v.unknown or 'unknown value'})")
        if v is not None:
            given[key] = v.value
    try:
        slots = run.hostfile_slots(
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
        return ProcessCount(
            Value(counts[0], origin, "launch", note=note),
            Value(len(counts), origin, "launch", note=hosts_note),
        )
    total = sum(counts)  # hosts with different slot counts: the processes in all, on "one" node
    return ProcessCount(
        Value(total, origin, "launch", note=f"{note}: {total} in all"), Value(1, origin, "launch", note=note)
    )

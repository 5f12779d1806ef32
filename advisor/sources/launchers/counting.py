"""The counting every launcher shares: a count flag (--nproc_per_node, --num_processes, --num_gpus)
as written, followed through the script's variables, #SBATCH and run-time GPU queries; an
environment variable's count (NPROC_PER_NODE); one process per visible GPU."""

from __future__ import annotations

from advisor.core.provenance import Value
from advisor.sources.launchers.protocol import ProcessCount, RunInputs


def one_node() -> Value:
    return Value(1, None, "default")


def flag_count(
    run: RunInputs,
    key: str,
    value: Value,
    nodes: Value,
    *,
    may_query: bool = True,
    query_pinned: bool | None = None,
) -> ProcessCount | Value:
    """The count flag `key` as the run writes it: the known value (#SBATCH variables resolved), or the
    ProcessCount it settles: every visible GPU when it counts the GPUs at run time (`$(nvidia-smi -L |
    wc -l)`), the unknown value itself when nothing resolves it."""
    if value.known:
        return value
    reason = run.counted_at_run_time(key) if may_query else None
    if reason is not None:
        per_node, pinned = run.every_visible_gpu(reason, value.origin)
        return ProcessCount(per_node, nodes, pinned if query_pinned is None else query_pinned)
    value = run.resolved(key, value)
    return value if value.known else ProcessCount(value, nodes, True)


def launch_count(run: RunInputs, key: str, value: Value) -> Value:
    """A count written as a launcher flag or config key (`--num_machines`, `num_machines`)."""
    return run.count_value(run.resolved(key, value), f"--{key}" if value.source == "launch" else key)


def env_count(run: RunInputs, name: str) -> Value | None:
    """A count an environment variable gives (NPROC_PER_NODE), None when the launch does not set it."""
    v = run.env(name)
    if v is None:
        return None
    return run.count_value(Value(v.value, v.origin, "launch", unknown=v.unknown), name)


def env_nodes(run: RunInputs, name: str = "NNODES") -> Value:
    v = run.env(name)
    return run.count_value(v, name) if v is not None else one_node()


def per_visible_gpu(run: RunInputs, reason: str, nodes: Value) -> ProcessCount:
    """One process per visible GPU, said at the launch script."""
    per_node, pinned = run.every_visible_gpu(reason, run.root)
    return ProcessCount(per_node, nodes, pinned)

"""torchrun (torch.distributed.run): one process per --nproc_per_node on each of --nnodes nodes."""

from __future__ import annotations

from advisor.core.provenance import Value
from advisor.sources.launchers.counting import flag_count
from advisor.sources.launchers.protocol import ProcessCount, RunInputs
from advisor.sources.launchers.spec import Flags, LauncherSpec, LocalStart, Processes

SPEC = LauncherSpec(
    name="torchrun",
    summary="PyTorch's elastic launcher",
    commands=(("torchrun",),),
    modules=("torch.distributed.run", "torch.distributed.launch"),
    flags=Flags(
        bools=frozenset(
            {"standalone", "no_python", "module", "run_path", "use_env", "virtual_local_rank", "help"}
        ),
        values=frozenset(
            {
                "nnodes",
                "nproc_per_node",
                "node_rank",
                "master_addr",
                "master_port",
                "rdzv_backend",
                "rdzv_endpoint",
                "rdzv_id",
                "rdzv_conf",
                "max_restarts",
                "monitor_interval",
                "start_method",
                "role",
                "log_dir",
                "redirects",
                "tee",
                "local_ranks_filter",
                "numa_binding",
                "local_addr",
                "logs_specs",
                "event_log_handler",
                "log_line_prefix_template",
                "signals_to_handle",
            }
        ),
        shorts=(("m", "module"), ("r", "redirects"), ("t", "tee"), ("h", "help")),
    ),
    env={"PET_NPROC_PER_NODE": "--nproc_per_node", "PET_NNODES": "--nnodes"},
    processes=Processes(
        flags=("nproc_per_node",), default="one process per node", written_at=("launch", "nproc_per_node")
    ),
    source="torch/distributed/run.py: get_args_parser",
    probe_as="torchrun",
    # one machine, no rendezvous server (torch/distributed/run.py --standalone)
    local_start=LocalStart(before=("--standalone", "--nnodes", "1"), count_flag="nproc_per_node"),
)


def processes(run: RunInputs) -> ProcessCount:
    """--nproc_per_node on each of --nnodes (elastic `1:4`: the most); one process when not given,
    every visible GPU for `gpu`/`auto` (torch/distributed/run.py determine_local_world_size)."""
    nodes = Value(1, None, "default", note="torchrun --nnodes defaults to 1")
    nnodes = run.flag("nnodes")
    if nnodes is not None:
        nnodes = run.resolved("nnodes", nnodes)
        if not nnodes.known:
            nodes = nnodes
        else:
            top = str(nnodes.value).split(":")[-1]
            written = Value(top, nnodes.origin, "launch", related=list(nnodes.related), note=nnodes.note)
            nodes = run.count_value(written, "--nnodes")
    nproc = run.flag("nproc_per_node")
    if nproc is None:
        note = "torchrun starts one process unless --nproc_per_node is given"
        return ProcessCount(Value(1, run.root, "default", note=note), nodes)
    read = flag_count(run, "nproc_per_node", nproc, nodes)
    if isinstance(read, ProcessCount):
        return read
    if str(read.value).lower() in {"gpu", "auto"}:
        per_node, pinned = run.every_visible_gpu(
            f"--nproc_per_node {read.value} takes every visible GPU", read.origin
        )
        return ProcessCount(per_node, nodes, pinned)
    return ProcessCount(run.count_value(read, "--nproc_per_node"), nodes)

"""torchrun (torch.distributed.run): one process per --nproc_per_node on each of --nnodes nodes."""

from __future__ import annotations

from advisor.sources.launchers.spec import Flags, LauncherSpec, Processes

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
    processes=Processes(flags=("nproc_per_node",), default="one process per node"),
    source="torch/distributed/run.py: get_args_parser",
)

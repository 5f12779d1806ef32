"""The deepspeed launcher (deepspeed.launcher.runner): every GPU of every host unless --num_gpus."""

from __future__ import annotations

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
    processes=Processes(flags=("num_gpus", "num_accelerators", "include"), default="every GPU of every host"),
    source="deepspeed/launcher/runner.py: parse_args",
)

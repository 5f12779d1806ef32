"""llamafactory-cli (also `lmf`): `train CONFIG` starts torchrun itself.

Read from LLaMA-Factory 0.9.5, src/llamafactory/launcher.py lines 56-68 and 114-120: `train` runs
torchrun when FORCE_TORCHRUN is set or more than one device is visible, with --nnodes $NNODES (1),
--node_rank $NODE_RANK (0), --nproc_per_node $NPROC_PER_NODE (every visible device),
--master_addr $MASTER_ADDR and --master_port $MASTER_PORT; the config file is its argument."""

from __future__ import annotations

from advisor.sources.launchers.spec import LauncherSpec, Processes

SPEC = LauncherSpec(
    name="llamafactory",
    summary="LLaMA-Factory's command line",
    commands=(("llamafactory-cli",), ("lmf",)),
    form="subcommand",
    subcommands=frozenset({"train"}),
    env={
        "FORCE_TORCHRUN": "start torchrun even on one visible device",
        "NNODES": "torchrun --nnodes (default 1)",
        "NODE_RANK": "torchrun --node_rank (default 0)",
        "NPROC_PER_NODE": "torchrun --nproc_per_node (default: every visible device)",
        "MASTER_ADDR": "torchrun --master_addr (default 127.0.0.1)",
        "MASTER_PORT": "torchrun --master_port (default: a free port)",
    },
    processes=Processes(env=("NPROC_PER_NODE",), default="every visible GPU"),
    source="llamafactory/launcher.py:56-68,114-120 (0.9.5)",
)

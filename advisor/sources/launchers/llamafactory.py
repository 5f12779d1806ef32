"""llamafactory-cli (also `lmf`): `train CONFIG` starts torchrun itself.

Read from LLaMA-Factory 0.9.5, src/llamafactory/launcher.py lines 56-68 and 114-120: `train` runs
torchrun when FORCE_TORCHRUN is set or more than one device is visible, with --nnodes $NNODES (1),
--node_rank $NODE_RANK (0), --nproc_per_node $NPROC_PER_NODE (every visible device),
--master_addr $MASTER_ADDR and --master_port $MASTER_PORT; the config file is its argument."""

from __future__ import annotations

from advisor.sources.launchers.counting import env_count, env_nodes, per_visible_gpu
from advisor.sources.launchers.protocol import ProcessCount, RunInputs
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
    processes=Processes(
        env=("NPROC_PER_NODE",), default="every visible GPU", written_at=("env", "NPROC_PER_NODE")
    ),
    source="llamafactory/launcher.py:56-68,114-120 (0.9.5)",
    runs_trainer=True,
    flags_dialect="llamafactory",
    implied_by_dialect="llamafactory",
    probe_as="torchrun",
)


def processes(run: RunInputs) -> ProcessCount:
    """torchrun with NPROC_PER_NODE on each of NNODES, every visible GPU without NPROC_PER_NODE."""
    nodes = env_nodes(run)
    per_node = env_count(run, "NPROC_PER_NODE")
    if per_node is not None:
        return ProcessCount(per_node, nodes)
    return per_visible_gpu(run, "llamafactory-cli starts torchrun on every visible GPU", nodes)

"""axolotl: `axolotl train CONFIG [--launcher accelerate|torchrun] [-- LAUNCHER FLAGS]`, or
`python -m axolotl.cli.train CONFIG` under a launcher (axolotl/cli/main.py: train)."""

from __future__ import annotations

from advisor.sources.launchers.accelerate import NO_CONFIG, accelerate_processes
from advisor.sources.launchers.protocol import ProcessCount, RunInputs
from advisor.sources.launchers.spec import LauncherSpec, Processes

SPEC = LauncherSpec(
    name="axolotl",
    summary="axolotl's command line",
    commands=(("axolotl",),),
    modules=("axolotl.cli.train",),
    form="subcommand",
    subcommands=frozenset({"train"}),
    processes=Processes(
        default="as its --launcher (accelerate by default)", written_at=("accelerate", "num_processes")
    ),
    source="axolotl/cli/main.py: train",
    reads_accelerate_config=True,
    runs_trainer=True,
    flags_override_config=True,
    implied_by_dialect="axolotl",
    probe_as="accelerate",
    # `axolotl train CFG --launcher torchrun -- --nproc_per_node 2`: axolotl/cli/main.py train
    # (--launcher, default accelerate) hands the words after `--` to the launcher it starts
    launcher_flag="launcher",
    starts=("accelerate", "torchrun"),
)


def processes(run: RunInputs) -> ProcessCount:
    """As accelerate, which it starts (its --launcher torchrun is read as accelerate's count too)."""
    reason = NO_CONFIG
    if not run.named:
        reason = (
            "axolotl starts accelerate, which without a config file or --num_processes starts one "
            "process per visible GPU"
        )
    return accelerate_processes(run, reason)

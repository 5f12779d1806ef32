"""The trl command line: `trl sft|dpo|grpo|... --config recipe.yaml` runs accelerate launch on
TRL's own script; accelerate's flags given after the command go to accelerate
(trl/cli.py: main, which splits them off with accelerate's launch_command_parser)."""

from __future__ import annotations

from advisor.sources.launchers.accelerate import FLAGS as ACCELERATE_FLAGS
from advisor.sources.launchers.accelerate import NO_CONFIG, accelerate_processes
from advisor.sources.launchers.protocol import ProcessCount, RunInputs
from advisor.sources.launchers.spec import LauncherSpec, Processes

SPEC = LauncherSpec(
    name="trl",
    summary="TRL's command line",
    commands=(("trl",),),
    form="subcommand",
    subcommands=frozenset(
        {
            "sft",
            "dpo",
            "grpo",
            "kto",
            "reward",
            "rloo",
            "ppo",
            "orpo",
            "online_dpo",
            "xpo",
            "nash_md",
            "gkd",
            "bco",
            "cpo",
            "prm",
            "gspo",
        }
    ),
    subcommand_flags=ACCELERATE_FLAGS,
    # accelerate flag names that are also TrainingArguments fields: they stay the run's flags
    run_keeps=frozenset(
        {
            "config",
            "gradient_accumulation_steps",
            "debug",
            "fsdp_min_num_params",
            "fsdp_transformer_layer_cls_to_wrap",
            "help",
        }
    ),
    processes=Processes(
        flags=("num_processes",), default="as accelerate launch", written_at=("accelerate", "num_processes")
    ),
    source="trl/cli.py: main",
    reads_accelerate_config=True,
    runs_trainer=True,
    runs_trl=True,
    probe_as="accelerate",
    accelerate_config_flags=("config_file", "accelerate_config"),
)


def processes(run: RunInputs) -> ProcessCount:
    """As accelerate launch, which it runs on TRL's script."""
    return accelerate_processes(run, NO_CONFIG)

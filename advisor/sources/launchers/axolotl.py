"""axolotl: `axolotl train CONFIG [--launcher accelerate|torchrun] [-- LAUNCHER FLAGS]`, or
`python -m axolotl.cli.train CONFIG` under a launcher (axolotl/cli/main.py: train)."""

from __future__ import annotations

from advisor.sources.launchers.spec import LauncherSpec, Processes

SPEC = LauncherSpec(
    name="axolotl",
    summary="axolotl's command line",
    commands=(("axolotl",),),
    modules=("axolotl.cli.train",),
    form="subcommand",
    subcommands=frozenset({"train"}),
    processes=Processes(default="as its --launcher (accelerate by default)"),
    source="axolotl/cli/main.py: train",
)

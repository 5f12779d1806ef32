"""`gpu-advise plan`: the merged view of each run, with where every value came from."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from advisor.commands.base import OutputFormat, command, die

if TYPE_CHECKING:
    import typer

else:
    from advisor.commands.base import typer  # PlainTyper until advisor.cli builds the app and rebinds it here


@command()
def plan(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Files or folders (default: the current folder).")
    ] = None,
    hardware: Annotated[str | None, typer.Option("--hardware", "-H")] = None,
    output_format: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.text,
    show_all: Annotated[bool, typer.Option("--all", help="Also show empty values (None, [], '').")] = False,
) -> None:
    """Show the merged plan of each run, with where every value came from."""
    from advisor.facts import run_names
    from advisor.pipeline.check import CheckError, CheckOptions, build_plans, resolve_settings
    from advisor.report.plan_view import render_plans
    from advisor.sources.settings import SettingsError

    options = CheckOptions(hardware=hardware)
    seeds = list(paths or [Path(".")])
    try:
        settings = resolve_settings(seeds, options)
        plans, _ = build_plans(seeds, options, settings)
    except (CheckError, SettingsError) as exc:
        die(exc)
        return
    from advisor.report.text import color_enabled

    color = color_enabled("auto", isatty=sys.stdout.isatty())
    runs = [(p, run_names(p)) for p in plans]  # the facts are computed here; the reporter renders
    sys.stdout.write(
        render_plans(runs, as_json=output_format is OutputFormat.json, show_all=show_all, color=color)
    )

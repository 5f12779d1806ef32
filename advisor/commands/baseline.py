"""`gpu-advise baseline`: write the findings baseline that `check --baseline` reads."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from advisor import records
from advisor.commands.base import command, die, split_csv
from advisor.commands.check import errors_exit_code

if TYPE_CHECKING:
    import typer

else:
    from advisor.commands.base import typer  # PlainTyper until advisor.cli builds the app and rebinds it here


@command("baseline")
def write_baseline(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Files or folders (default: the current folder).")
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Baseline file (default: `baseline` in the settings, else .gpu-advise-baseline.json).",
        ),
    ] = None,
    hardware: Annotated[str | None, typer.Option("--hardware", "-H")] = None,
    select: Annotated[list[str] | None, typer.Option("--select")] = None,
    ignore: Annotated[list[str] | None, typer.Option("--ignore")] = None,
    rules: Annotated[list[Path] | None, typer.Option("--rules", help="Extra folder of rule files.")] = None,
) -> None:
    """Record the current findings, so that `check --baseline FILE` reports only new ones."""
    from advisor.baseline import DEFAULT_FILE, render_baseline, write_atomic
    from advisor.check import CheckError, CheckOptions, resolve_settings, run_check
    from advisor.paths import relative
    from advisor.settings import SettingsError

    seeds = list(paths or [Path(".")])
    options = CheckOptions(
        hardware=hardware,
        select=split_csv(select),
        ignore=split_csv(ignore) or [],
        rules_dirs=list(rules or []),
    )
    try:
        settings = resolve_settings(seeds, options)
        target = output or (settings.root / settings.baseline if settings.baseline else Path(DEFAULT_FILE))
        options.settings = records.replace(settings, baseline=None)
        from advisor.estimate.params import META_DEVICE_COUNTING

        counting = META_DEVICE_COUNTING.set(False)  # the same findings as check: no meta-device count
        try:
            result = run_check(seeds, options)
        finally:
            META_DEVICE_COUNTING.reset(counting)
    except (CheckError, SettingsError) as exc:
        die(str(exc))
        return
    try:
        write_atomic(target, render_baseline(result.findings, target))
    except OSError as exc:
        die(f"cannot write {target}: {exc.strerror or exc}")
    n = len(result.findings)
    typer.echo(f"gpu-advise: wrote {n} finding{'s' if n != 1 else ''} to {relative(target)}", err=True)
    if result.errors:
        for err in result.errors:
            typer.echo(f"gpu-advise: internal error: {err}", err=True)
        raise typer.Exit(errors_exit_code(result))

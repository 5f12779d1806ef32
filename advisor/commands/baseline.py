"""`gpu-advise baseline`: write the findings baseline that `check --baseline` reads."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from advisor.commands.base import command, die, split_csv
from advisor.commands.check import errors_exit_code
from advisor.core import records

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
    from advisor.core.paths import relative
    from advisor.engine.baseline import render_baseline, write_atomic
    from advisor.pipeline.check import CheckError, CheckOptions, resolve_settings, run_check
    from advisor.sources.settings import SettingsError

    seeds = list(paths or [Path(".")])
    options = CheckOptions(
        hardware=hardware,
        select=split_csv(select),
        ignore=split_csv(ignore) or [],
        rules_dirs=list(rules or []),
    )
    try:
        settings = resolve_settings(seeds, options)
        target = output or _settings_target(settings, seeds)
        options.settings = records.replace(settings, baseline=None)
        from advisor.estimate.params import META_DEVICE_COUNTING

        counting = META_DEVICE_COUNTING.set(False)  # the same findings as check: no meta-device count
        try:
            result = run_check(seeds, options)
        finally:
            META_DEVICE_COUNTING.reset(counting)
    except (CheckError, SettingsError) as exc:
        die(exc)
        return
    try:
        write_atomic(target, render_baseline(result.findings, target))
    except OSError as exc:
        die(f"cannot write {target}: {exc.strerror or exc}")
    from advisor.core.escape import escape_text

    n = len(result.findings)
    wrote = f"gpu-advise: wrote {n} finding{'s' if n != 1 else ''} to {relative(target)}"
    typer.echo(escape_text(wrote), err=True)  # the path may come from the settings: a user string
    if result.errors:
        from advisor.engine.rule_engine import error_label

        for err in result.errors:  # a project's own rule that failed is its error, not ours (exit 2)
            typer.echo(escape_text(f"gpu-advise: {error_label(err, result.rules)}: {err}"), err=True)
        raise typer.Exit(errors_exit_code(result))


def _settings_target(settings: Any, seeds: list[Path]) -> Path:
    """The baseline file when --output does not name one: the settings' `baseline` (as `check` reads
    it) or .gpu-advise-baseline.json. Neither was named by the user, and the settings may come from a
    pull request, so the file must lie inside the project boundary (`baseline = "../.bashrc"`, or a
    committed link at the default name, would replace a file outside). CheckError otherwise."""
    import os

    from advisor.engine.baseline import DEFAULT_FILE
    from advisor.pipeline.check import CheckError, setting_position
    from advisor.sources.boundary import ProjectBoundary, project_boundary

    if settings.baseline:
        target = settings.root / os.path.expanduser(settings.baseline)
        where = f"{setting_position(settings, 'baseline', settings.baseline)}: baseline"
        boundary = project_boundary(settings, [settings.root])
    else:  # in the current folder: a link there may leave the project only for the current folder
        target, where = Path(DEFAULT_FILE), DEFAULT_FILE
        boundary = project_boundary(settings, seeds)
        boundary = ProjectBoundary((*boundary.roots, Path(os.path.realpath(Path.cwd()))))
    reason = boundary.outside_reason(target)
    if reason is not None:
        raise CheckError(f"{where}: {reason.replace('; not read', '; not written')} (name it with --output)")
    return target

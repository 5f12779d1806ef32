"""The command line: options in, calls out, the reporter picks the output. Heavy imports stay lazy."""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    name="gpu-advise",
    help="Config linter and static advisor for multi-GPU training.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
hardware_app = typer.Typer(help="GPU machines: built-in descriptors and detection.", no_args_is_help=True)
app.add_typer(hardware_app, name="hardware")


class OutputFormat(StrEnum):
    text = "text"
    json = "json"


class FailOn(StrEnum):
    error = "error"
    warning = "warning"
    info = "info"


def _die(message: str) -> None:
    typer.echo(f"gpu-advise: {message}", err=True)
    raise typer.Exit(2)


def _csv(values: list[str] | None) -> list[str] | None:
    if values is None:
        return None
    return [part.strip() for v in values for part in v.split(",") if part.strip()]


def _emit(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text)
        return
    tmp = output.with_name(f".{output.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, output)


@app.command()
def check(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Files or folders (default: the current folder).")
    ] = None,
    hardware: Annotated[
        str | None, typer.Option("--hardware", "-H", help="Built-in machine name or descriptor YAML.")
    ] = None,
    output_format: Annotated[
        OutputFormat, typer.Option("--format", help="Output format.")
    ] = OutputFormat.text,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the report to a file.")] = None,
    select: Annotated[
        list[str] | None, typer.Option("--select", help="Rule codes, prefixes or names (comma-separated).")
    ] = None,
    extend_select: Annotated[
        list[str] | None, typer.Option("--extend-select", help="Add to the selection.")
    ] = None,
    ignore: Annotated[
        list[str] | None, typer.Option("--ignore", help="Rule codes, prefixes or names to skip.")
    ] = None,
    fail_on: Annotated[
        FailOn | None, typer.Option("--fail-on", help="Lowest severity that fails (default warning).")
    ] = None,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="Exit 0 even with findings.")] = False,
    rules: Annotated[list[Path] | None, typer.Option("--rules", help="Extra folder of rule files.")] = None,
    online: Annotated[
        bool, typer.Option("--online", help="Allow network access (model configs from the Hub).")
    ] = False,
    base: Annotated[
        str | None, typer.Option("--base", help="Compare every run with the same run at this git revision.")
    ] = None,
    color: Annotated[bool | None, typer.Option("--color/--no-color", help="Force colour on or off.")] = None,
) -> None:
    """Check training runs and report findings at exact file:line:col positions."""
    from advisor.check import CheckError, CheckOptions, run_check
    from advisor.engine import at_or_above
    from advisor.settings import SettingsError

    options = CheckOptions(
        hardware=hardware,
        select=_csv(select),
        ignore=_csv(ignore) or [],
        extend_select=_csv(extend_select) or [],
        rules_dirs=list(rules or []),
        online=online,
        base=base,
    )
    try:
        result = run_check(list(paths or [Path(".")]), options)
    except (CheckError, SettingsError) as exc:
        _die(str(exc))
        return
    if output_format is OutputFormat.json:
        from advisor.report.json_report import render_json

        text = render_json(result)
    else:
        from advisor.report.text import render_text

        use_color = color if color is not None else (output is None and sys.stdout.isatty())
        text = render_text(result, color=use_color)
    _emit(text, output)
    threshold = (fail_on.value if fail_on else None) or result.settings.fail_on or "warning"
    if result.errors:
        raise typer.Exit(2)
    if not exit_zero and any(at_or_above(f.severity, threshold) for f in result.findings):
        raise typer.Exit(1)


@app.command()
def plan(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Files or folders (default: the current folder).")
    ] = None,
    hardware: Annotated[str | None, typer.Option("--hardware", "-H")] = None,
    output_format: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.text,
) -> None:
    """Show the merged plan of each run, with where every value came from."""
    from advisor.check import CheckError, CheckOptions, build_plans, resolve_settings
    from advisor.report.plan_view import render_plans
    from advisor.settings import SettingsError

    options = CheckOptions(hardware=hardware)
    seeds = list(paths or [Path(".")])
    try:
        settings = resolve_settings(seeds, options)
        plans, _ = build_plans(seeds, options, settings)
    except (CheckError, SettingsError) as exc:
        _die(str(exc))
        return
    sys.stdout.write(render_plans(plans, as_json=output_format is OutputFormat.json))


@app.command("rules")
def list_rules(
    output_format: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.text,
    rules: Annotated[list[Path] | None, typer.Option("--rules", help="Extra folder of rule files.")] = None,
) -> None:
    """List every rule: code, name, default severity, fixable, summary."""
    import json

    from advisor.engine import RuleError, load_catalog

    try:
        catalog = load_catalog(rules or [])
    except RuleError as exc:
        _die(str(exc))
        return
    if output_format is OutputFormat.json:
        rows = [
            {
                "code": r.code,
                "name": r.spec.name,
                "severity": r.spec.severity,
                "summary": r.spec.summary,
                "fixable": r.spec.fix is not None,
            }
            for r in catalog
        ]
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    for r in catalog:
        fix = "fix" if r.spec.fix else "   "
        typer.echo(f"{r.code}  {r.spec.name:<32} {r.spec.severity:<8} {fix}  {r.spec.summary}")


@app.command("rule")
def show_rule(code: Annotated[str, typer.Argument(help="Rule code or name, e.g. GA203.")]) -> None:
    """Print one rule's documentation."""
    from advisor.engine import load_catalog
    from advisor.report.rule_doc import render_rule

    for r in load_catalog():
        if code.upper() == r.code or code == r.spec.name or code in r.spec.aliases:
            sys.stdout.write(render_rule(r))
            return
    _die(f"no rule '{code}' (see `gpu-advise rules`)")


@hardware_app.command("list")
def hardware_list() -> None:
    """List the built-in machines."""
    from advisor.sources.hardware import builtin_machines

    for _, m in sorted(builtin_machines().items()):
        nvlink = "NVSwitch" if m.nvlink == "all" else (f"NVLink {m.nvlink}" if m.nvlink else "PCIe only")
        typer.echo(
            f"{m.name:<24} {m.gpus.count} x {m.gpu.display_name:<28} {m.memory_gib:>6.1f} GiB  {nvlink}"
        )


@hardware_app.command("show")
def hardware_show(name: Annotated[str, typer.Argument(help="Built-in name or descriptor file.")]) -> None:
    """Print a machine descriptor as YAML."""
    from advisor.sources.hardware import HardwareError, load_hardware, machine_yaml

    try:
        machine = load_hardware(name)
    except HardwareError as exc:
        _die(str(exc))
        return
    sys.stdout.write(machine_yaml(machine))


@hardware_app.command("detect")
def hardware_detect(
    query: Annotated[
        Path | None,
        typer.Option("--query", help="Saved `nvidia-smi --query-gpu=name,memory.total --format=csv` output."),
    ] = None,
    topo: Annotated[Path | None, typer.Option("--topo", help="Saved `nvidia-smi topo -m` output.")] = None,
    name: Annotated[str | None, typer.Option("--name", help="Name for the descriptor.")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o")] = None,
) -> None:
    """Build a hardware descriptor from nvidia-smi on this machine, or from its saved output."""
    from advisor.sources.hardware import HardwareError, machine_yaml
    from advisor.sources.nvidia_smi import detect, machine_from_smi

    try:
        if query is not None or topo is not None:
            query_text = query.read_text(encoding="utf-8") if query else None
            topo_text = topo.read_text(encoding="utf-8") if topo else None
            machine = machine_from_smi(query_text, topo_text)
        else:
            machine = detect()
    except (HardwareError, OSError) as exc:
        _die(str(exc))
        return
    if name:
        machine = machine.model_copy(update={"name": name})
    _emit(machine_yaml(machine), output)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        typer.echo("gpu-advise: interrupted", err=True)
        sys.exit(130)


if __name__ == "__main__":
    main()

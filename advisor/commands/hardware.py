"""`gpu-advise hardware list|show|detect`: built-in machines and detection."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from advisor.commands.base import command, die, emit
from advisor.core import records

if TYPE_CHECKING:
    import typer

else:
    from advisor.commands.base import typer  # PlainTyper until advisor.cli builds the app and rebinds it here


@command("list", group="hardware")
def hardware_list() -> None:
    """List the built-in machines."""
    from advisor.sources.hardware import builtin_machines

    for _, m in sorted(builtin_machines().items()):
        fabric = ("xGMI mesh", "Infinity Fabric") if m.gpu.vendor == "amd" else ("NVSwitch", "NVLink")
        nvlink = fabric[0] if m.nvlink == "all" else (f"{fabric[1]} {m.nvlink}" if m.nvlink else "PCIe only")
        typer.echo(
            f"{m.name:<24} {m.gpus.count} x {m.gpu.display_name:<28} {m.memory_gib:>6.1f} GiB  {nvlink}"
        )


@command("show", group="hardware")
def hardware_show(name: Annotated[str, typer.Argument(help="Built-in name or descriptor file.")]) -> None:
    """Print a machine descriptor as YAML."""
    from advisor.sources.hardware import HardwareError, load_hardware, machine_yaml

    try:
        machine = load_hardware(name)
    except HardwareError as exc:
        die(exc)
        return
    sys.stdout.write(machine_yaml(machine))


@command("detect", group="hardware")
def hardware_detect(
    query: Annotated[
        Path | None,
        typer.Option(
            "--query",
            help="Saved `nvidia-smi --query-gpu=name,memory.total --format=csv` output "
            "(AMD: `rocm-smi --showproductname --showmeminfo vram`).",
        ),
    ] = None,
    topo: Annotated[Path | None, typer.Option("--topo", help="Saved `nvidia-smi topo -m` output.")] = None,
    name: Annotated[str | None, typer.Option("--name", help="Name for the descriptor.")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o")] = None,
) -> None:
    """Build a hardware descriptor from nvidia-smi on this machine, or from its saved output."""
    from advisor.sources.hardware import HardwareError, machine_yaml
    from advisor.sources.nvidia_smi import detect, machine_from_smi
    from advisor.sources.read import ReadRefused, read_text_file

    try:
        if query is not None or topo is not None:
            # the safe reader: a FIFO or /dev/zero is refused at once, and at most 10 MB is read
            query_text = read_text_file(query) if query else None
            topo_text = read_text_file(topo) if topo else None
            machine = machine_from_smi(query_text, topo_text, query_source=str(query))
        else:
            machine = detect()
    except (HardwareError, OSError, ReadRefused) as exc:
        die(exc)
        return
    if name:
        machine = records.replace(machine, name=name)
    emit(machine_yaml(machine), output)

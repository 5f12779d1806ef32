"""Human output: findings grouped by file, then one summary line per run."""

from __future__ import annotations

import io
from collections import Counter
from itertools import groupby

from advisor.check import CheckResult, RunSummary
from advisor.report import relative

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _run_line(run: RunSummary) -> str:
    parts = [f"run {run.name}"]
    if run.launcher:
        parts.append(run.launcher)
    parts.append(f"world size {run.world_size if run.world_size is not None else '?'}")
    if run.effective_batch is not None:
        parts.append(f"effective batch {run.effective_batch} ({run.effective_batch_formula})")
    else:
        parts.append("effective batch ?")
    if run.strategy:
        parts.append(run.strategy)
    if run.peak_vram_gib is not None and run.gpu_memory_gib is not None:
        parts.append(f"peak {run.peak_vram_gib:.1f} of {run.gpu_memory_gib:.1f} GiB per GPU")
    if run.est_hours_single_gpu is not None:
        parts.append(f"~{run.est_hours_single_gpu:.1f} h on one GPU")
    if run.hardware:
        parts.append(f"on {run.hardware}")
    return ", ".join(parts)


def render_text(result: CheckResult, *, color: bool | None = None, width: int | None = None) -> str:
    from rich.console import Console
    from rich.markup import escape

    console = Console(record=True, force_terminal=color, no_color=color is False, width=width or 120,
                      highlight=False, soft_wrap=True, file=io.StringIO())
    for file, group in groupby(result.findings, key=lambda f: str(f.location.file)):
        console.print(f"[bold]{escape(relative(file))}[/bold]")
        for f in group:
            style = _STYLE[f.severity]
            console.print(
                f"  {f.location.line}:{f.location.col}\t[{style}]{f.rule}[/{style}] "
                f"[dim]{f.severity}[/dim]  {escape(f.message)}  [dim]({f.name})[/dim]"
            )
            for r in f.related:
                console.print(f"  \t[dim]related: {escape(relative(r.file))}:{r.line}:{r.col}[/dim]")
            if f.fix is not None and f.fix.description:
                console.print(f"  \t[green]fix[/green] ({f.fix.safety}): {escape(f.fix.description)}")
    if result.findings:
        console.print()
    for run in result.runs:
        console.print(f"[dim]{escape(_run_line(run))}[/dim]")
        for note in run.notes:
            console.print(f"[dim]  note: {escape(note)}[/dim]")
    counts = Counter(f.severity for f in result.findings)
    if result.findings:
        detail = ", ".join(f"{counts[s]} {s}{'s' if counts[s] != 1 else ''}" for s in ("error", "warning", "info") if counts[s])
        console.print(f"Found {len(result.findings)} finding{'s' if len(result.findings) != 1 else ''} ({detail}) "
                      f"in {len(result.runs)} run{'s' if len(result.runs) != 1 else ''}.")
    else:
        console.print(f"[green]No findings[/green] in {len(result.runs)} run{'s' if len(result.runs) != 1 else ''}.")
    for err in result.errors:
        console.print(f"[red]internal error[/red]: {escape(err)}")
    return console.export_text(styles=bool(color))

"""`gpu-advise estimate`: memory and time of a run, or of a model by name."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

from advisor.commands.base import OutputFormat, color_when, command, die

if TYPE_CHECKING:
    import typer

    ColorOption: TypeAlias = Any  # built by option_aliases with the app
    NoColorOption: TypeAlias = Any  # built by option_aliases with the app
else:
    from advisor.commands.base import typer  # PlainTyper until advisor.cli builds the app and rebinds it here


class Method(StrEnum):
    full = "full"
    lora = "lora"
    qlora = "qlora"


class Strategy(StrEnum):
    ddp = "ddp"
    fsdp = "fsdp"
    zero1 = "zero1"
    zero2 = "zero2"
    zero3 = "zero3"


class Precision(StrEnum):
    bf16 = "bf16"
    fp16 = "fp16"
    fp32 = "fp32"


@command()
def estimate(
    targets: Annotated[
        list[str] | None,
        typer.Argument(help="A model id (with the flags below), or run files/folders (default: .)."),
    ] = None,
    method: Annotated[
        Method, typer.Option("--method", help="full, lora or qlora (model id only).")
    ] = Method.full,
    batch: Annotated[int | None, typer.Option("--batch", help="Micro-batch per GPU (sequences).")] = None,
    seq: Annotated[int | None, typer.Option("--seq", help="Tokens per sequence.")] = None,
    gpus: Annotated[
        int | None, typer.Option("--gpus", help="GPUs (default: all of --hardware, else 1).")
    ] = None,
    strategy: Annotated[
        Strategy | None, typer.Option("--strategy", help="ddp, fsdp, zero1, zero2, zero3.")
    ] = None,
    offload: Annotated[
        bool, typer.Option("--offload", help="Offload optimizer states (and ZeRO-3 params) to CPU.")
    ] = False,
    optim: Annotated[str | None, typer.Option("--optim", help="HF optim name, e.g. adamw_8bit.")] = None,
    grad_ckpt: Annotated[
        bool | None, typer.Option("--grad-ckpt/--no-grad-ckpt", help="Gradient checkpointing (default: off).")
    ] = None,
    precision: Annotated[Precision | None, typer.Option("--precision", help="bf16, fp16 or fp32.")] = None,
    tokens: Annotated[
        float | None, typer.Option("--tokens", help="Tokens in the whole run (for hours).")
    ] = None,
    hardware: Annotated[
        str | None, typer.Option("--hardware", "-H", help="Built-in machine name or descriptor YAML.")
    ] = None,
    online: Annotated[
        bool, typer.Option("--online", help="Fetch unknown model configs from the Hub.")
    ] = False,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="The model the runs train (a Hub id or a local folder), over what their files name "
            "(runs only; the per-run setting is `model` in [[runs]]).",
        ),
    ] = None,
    output_format: Annotated[
        OutputFormat, typer.Option("--format", help="Output format.")
    ] = OutputFormat.text,
    color: ColorOption = None,
    no_color: NoColorOption = False,
) -> None:
    """Peak GPU memory (a breakdown), fit per GPU, strategies compared, and time, for a model or for runs."""
    from advisor.pipeline.estimate_run import (
        EstimateError,
        Request,
        build_model_report,
        build_run_reports,
        is_model_path,
    )

    items = list(targets or ["."])
    as_runs = len(items) > 1 or (Path(items[0]).exists() and not is_model_path(items[0]))
    if as_runs:
        # a run's GPUs, strategy, batch and precision come from its own files: a flag that would
        # silently not apply is refused (edit the launch script or configs, or pass -H for the machine)
        model_only = {
            "--method": method is not Method.full,
            "--batch": batch is not None,
            "--seq": seq is not None,
            "--gpus": gpus is not None,
            "--strategy": strategy is not None,
            "--offload": offload,
            "--optim": optim is not None,
            "--grad-ckpt/--no-grad-ckpt": grad_ckpt is not None,
            "--precision": precision is not None,
            "--tokens": tokens is not None,
        }
        given = [flag for flag, used in model_only.items() if used]
        if given:
            die(
                f"{', '.join(given)}: only for a model id; a run's values come from its files "
                "(edit them, or see `gpu-advise plan`; -H sets the machine)"
            )
    elif model is not None:
        die(f"--model: only for runs (files or folders); {items[0]} is estimated as the model id given")
    if model is not None and not model.strip():
        die("--model: give a model id or folder")
    try:
        if as_runs:
            missing = [t for t in items if not Path(t).exists()]
            if missing:
                raise EstimateError(f"{missing[0]}: no such file or folder")
            reports = build_run_reports([Path(t) for t in items], hardware, online, model=model)
        else:
            reports = [
                build_model_report(
                    Request(
                        model=items[0],
                        method=method.value,
                        batch=batch,
                        seq=seq,
                        gpus=gpus,
                        strategy=strategy.value if strategy else None,
                        offload=offload,
                        hardware=hardware,
                        online=online,
                        optimizer=optim,
                        grad_ckpt=grad_ckpt,
                        precision=precision.value if precision else None,
                        tokens=tokens,
                    )
                )
            ]
    except EstimateError as exc:
        die(exc)
        return
    if output_format is OutputFormat.json:
        from advisor.report.estimate_view import render_json

        sys.stdout.write(render_json(reports, runs=as_runs))
        return
    from advisor.report.estimate_view import render_text
    from advisor.report.text import color_enabled

    use_color = color_enabled(color_when(color, no_color), isatty=sys.stdout.isatty())
    sys.stdout.write(render_text(reports, color=use_color) if reports else "No runs found.\n")

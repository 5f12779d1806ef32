"""The command line: options in, calls out, the reporter picks the output. Heavy imports stay lazy.

`check` is the pre-commit hot path: main() parses its usual options itself (`_fast_check`) and runs
it without importing typer (~25 ms, the largest import of a run); anything else (another command,
-h, --fix, --verify, an option it does not know or a value it cannot parse) goes through the typer
app, built on first use (`app` is a lazy module attribute). The commands are plain functions whose
typer annotations are strings (postponed evaluation) until the app is built.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

if TYPE_CHECKING:
    import typer

    # built by _option_aliases with the app
    VersionOption: TypeAlias = Any
    ColorOption: TypeAlias = Any
    NoColorOption: TypeAlias = Any

# Where a user reports an internal error (the project publishes no Project-URL yet).
ISSUES_URL = "https://github.com/gpu-advise/gpu-advise/issues"
EXIT_INTERNAL = 3  # 0 clean, 1 findings, 2 the tool could not do its job, 3 a bug in the tool


def _internal_error(exc: BaseException) -> typer.Exit:
    """One line on stderr, never a traceback (GPU_ADVISE_DEBUG=1 re-raises for developers)."""
    if os.environ.get("GPU_ADVISE_DEBUG") == "1":
        raise exc
    detail = " ".join(str(exc).split())[:300] or "(no message)"
    typer.echo(
        f"gpu-advise: internal error: {type(exc).__name__}: {detail}; "
        f"please report it at {ISSUES_URL} with the command and files",
        err=True,
    )
    return typer.Exit(EXIT_INTERNAL)


class _Plain:
    """What the command bodies use of typer (echo, Exit), for the fast path that never imports it;
    replaced by typer itself when the app is built."""

    class Exit(SystemExit):
        def __init__(self, code: int = 0) -> None:
            super().__init__(code)
            self.exit_code = code

    @staticmethod
    def echo(message: str = "", err: bool = False) -> None:
        stream = sys.stderr if err else sys.stdout
        stream.write(f"{message}\n")
        stream.flush()


# the real module once _build_app runs; until then a stand-in with the two names the fast path uses
typer = _Plain  # type: ignore[assignment]


def _guarded_group() -> type:
    from typer.core import TyperGroup

    class _GuardedGroup(TyperGroup):
        """Every command runs inside this: an uncaught exception is an internal error (exit 3), never a
        traceback and never exit 1, which means findings; Ctrl-C says so and exits 130."""

        def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
            # --version after any command too (`gpu-advise check --version`), as after the app
            before_end = args[: args.index("--")] if "--" in args else args
            if "--version" in before_end:
                typer.echo(f"gpu-advise {version()}")
                ctx.exit(0)
            return super().parse_args(ctx, args)

        def invoke(self, ctx: Any) -> Any:
            from typer.exceptions import Abort, TyperException

            try:
                return super().invoke(ctx)
            except (typer.Exit, Abort, TyperException):  # exits and usage errors that typer reports itself
                raise
            except BrokenPipeError:
                raise  # click quiets a closed stdout (`gpu-advise plan | head`)
            except KeyboardInterrupt:
                typer.echo("gpu-advise: interrupted", err=True)
                raise typer.Exit(130) from None
            except Exception as exc:
                raise _internal_error(exc) from None

    return _GuardedGroup


# -h as well as --help, on the app and (inherited through click's context) on every command
HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}


_COMMANDS: list[tuple[str | None, str | None, Any]] = []  # (group, name, function), in definition order
_CALLBACK: list[Any] = []


def _command(name: str | None = None, group: str | None = None) -> Any:
    """Register a command of the typer app (built lazily by _build_app)."""

    def register(fn: Any) -> Any:
        _COMMANDS.append((group, name, fn))
        return fn

    return register


def _callback(fn: Any) -> Any:
    _CALLBACK.append(fn)
    return fn


def _build_app() -> tuple[Any, Any]:
    """The typer app and its `hardware` group: typer is imported here, and the names the commands'
    string annotations use (typer, the option aliases) become module globals first."""
    global typer
    import typer as real_typer

    typer = real_typer
    globals().update(_option_aliases(real_typer))
    app = real_typer.Typer(
        cls=_guarded_group(),
        name="gpu-advise",
        help="Config linter and static advisor for multi-GPU training.",
        add_completion=False,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        context_settings=HELP_OPTIONS,
    )
    hardware_app = real_typer.Typer(
        help="GPU machines: built-in descriptors and detection.",
        no_args_is_help=True,
        context_settings=HELP_OPTIONS,
    )
    app.add_typer(hardware_app, name="hardware")
    for fn in _CALLBACK:
        app.callback()(fn)
    for group, name, fn in _COMMANDS:
        (hardware_app if group == "hardware" else app).command(name)(fn)
    return app, hardware_app


def __getattr__(name: str) -> Any:
    """`app` and `hardware_app`, built on first use (PEP 562); plain module globals from then on."""
    if name in ("app", "hardware_app"):
        built_app, built_hardware = _build_app()
        globals().update(app=built_app, hardware_app=built_hardware)
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("gpu-advise")
    except PackageNotFoundError:  # a source checkout that was never installed
        return "unknown"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"gpu-advise {version()}")
        raise typer.Exit(0)


@_callback
def _app(show_version: VersionOption = False) -> None:
    """Config linter and static advisor for multi-GPU training."""


class ColorWhen(StrEnum):
    auto = "auto"
    always = "always"
    never = "never"


def _option_aliases(typer: Any) -> dict[str, Any]:
    """Annotated option types shared by several commands (their annotations name them)."""
    return {
        "VersionOption": Annotated[
            bool,
            typer.Option(
                "--version",
                callback=_print_version,
                is_eager=True,
                expose_value=False,
                help="Print the version.",
            ),
        ],
        "ColorOption": Annotated[
            ColorWhen | None,
            typer.Option(
                "--color",
                help="auto (default: a terminal, unless NO_COLOR or TERM=dumb; FORCE_COLOR forces), always, "
                "never.",
            ),
        ],
        "NoColorOption": Annotated[bool, typer.Option("--no-color", help="Same as --color never.")],
    }


def _color_when(color: ColorWhen | None, no_color: bool) -> str:
    return "never" if no_color else (color.value if color else "auto")


class OutputFormat(StrEnum):
    text = "text"
    json = "json"


class CheckFormat(StrEnum):
    text = "text"
    concise = "concise"
    json = "json"
    sarif = "sarif"
    github = "github"


class SchemaKind(StrEnum):
    settings = "settings"
    hardware = "hardware"


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
    from advisor.baseline import write_atomic

    try:
        write_atomic(output, text)
    except OSError as exc:
        _die(f"cannot write {output}: {exc.strerror or exc}")


def _seeds(paths: list[Path] | None) -> list[Path]:
    """The paths to check. A settings file (pyproject.toml, .gpu-advise.toml: TOML, not a run config)
    stands for the project it configures, its folder: the hook passes it when the settings change."""
    seeds: list[Path] = []
    for p in paths or [Path(".")]:
        seed = (p.parent if p.suffix.lower() == ".toml" and p.is_file() else p) or Path(".")
        if seed not in seeds:
            seeds.append(seed)
    return seeds


@_command()
def check(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Files or folders (default: the current folder).")
    ] = None,
    hardware: Annotated[
        str | None, typer.Option("--hardware", "-H", help="Built-in machine name or descriptor YAML.")
    ] = None,
    output_format: Annotated[
        CheckFormat | None,
        typer.Option("--format", help="Output format (default: text; github when GITHUB_ACTIONS=true)."),
    ] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the report to a file.")] = None,
    statistics: Annotated[bool, typer.Option("--statistics", help="Count findings per rule.")] = False,
    baseline: Annotated[
        Path | None, typer.Option("--baseline", help="Report only findings not in this baseline file.")
    ] = None,
    no_inline_ignores: Annotated[
        bool, typer.Option("--no-inline-ignores", help="Ignore `# gpu-advise: ignore[...]` comments.")
    ] = False,
    fix: Annotated[bool, typer.Option("--fix", help="Apply safe fixes, then report what remains.")] = False,
    unsafe_fixes: Annotated[
        bool, typer.Option("--unsafe-fixes", help="Also apply unsafe fixes (implies --fix unless --diff).")
    ] = False,
    diff: Annotated[
        bool, typer.Option("--diff", help="Print the fixes as a unified diff; write nothing.")
    ] = False,
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
    base_default: Annotated[
        str | None,
        typer.Option(
            "--base-default",
            metavar="REV",
            help="Without --base, compare with REV when it exists (the pre-commit hook passes HEAD; "
            "skipped outside git, before the first commit, and for runs whose settings declare "
            "effective-batch).",
        ),
    ] = None,
    color: ColorOption = None,
    no_color: NoColorOption = False,
    verify: Annotated[
        bool, typer.Option("--verify", help="Back the advice with a short real training probe per run.")
    ] = False,
    verify_scaling: Annotated[
        bool, typer.Option("--verify-scaling", help="Also probe on one process; report scaling efficiency.")
    ] = False,
    verify_report: Annotated[
        Path | None, typer.Option("--verify-report", help="Write the probe results as JSON to this file.")
    ] = None,
    verify_steps: Annotated[
        int, typer.Option("--verify-steps", min=1, help="Optimizer steps measured after warm-up.")
    ] = 20,
    verify_timeout: Annotated[
        float, typer.Option("--verify-timeout", min=1, help="Wall-time limit per probe launch, seconds.")
    ] = 600.0,
    verify_real_weights: Annotated[
        bool, typer.Option("--verify-real-weights", help="Load local checkpoint weights (default: random).")
    ] = False,
    verify_required: Annotated[bool, typer.Option("--verify-required", hidden=True)] = False,
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
        base_default=base_default,
        inline_ignores=not no_inline_ignores,
        baseline=baseline,
    )
    probe = None
    if verify or verify_scaling or verify_report is not None or verify_required:
        from advisor.probe.spec import ProbeOptions

        probe = ProbeOptions(
            steps=verify_steps,
            timeout=verify_timeout,
            scaling=verify_scaling,
            report=verify_report,
            real_weights=verify_real_weights,
            online=online,
        )
    fixing = fix or unsafe_fixes or diff
    options.verify = None if fixing else probe  # with --fix, probe the fixed files
    fmt = output_format or (
        CheckFormat.github
        if os.environ.get("GITHUB_ACTIONS") == "true" and not statistics
        else CheckFormat.text
    )
    if statistics and fmt in (CheckFormat.sarif, CheckFormat.github):
        _die("--statistics works with --format text or json")
    seeds = _seeds(paths)
    from advisor.estimate.params import META_DEVICE_COUNTING

    # the check path never imports torch/transformers: a model type without a built-in formula is
    # reported as not modelled here (`estimate` counts it on the meta device)
    counting = META_DEVICE_COUNTING.set(False)
    try:
        result = run_check(seeds, options)
        if fix or unsafe_fixes or diff:
            options.verify = None if diff else probe
            result = _fix(result, seeds, options, unsafe=unsafe_fixes, diff=diff, output=output)
    except (CheckError, SettingsError) as exc:
        _die(str(exc))
        return
    finally:
        META_DEVICE_COUNTING.reset(counting)
    verification = getattr(result, "verification", None)
    if probe is not None and verification is not None and verification.unavailable:
        typer.echo(f"gpu-advise: {verification.unavailable}", err=True)
    elif probe is not None and verify_report is not None and verification is not None:
        try:
            verification.write(verify_report)
        except OSError as exc:
            _die(f"cannot write {verify_report}: {exc.strerror or exc}")
    threshold = (fail_on.value if fail_on else None) or result.settings.fail_on or "warning"
    code = 0
    if result.errors:
        code = _errors_exit_code(result)
    elif not exit_zero and any(at_or_above(f.severity, threshold) for f in result.findings):
        code = 1
    if verify_required and verification is not None and verification.unavailable:
        code = 2
    if not diff:
        when = _color_when(color, no_color)
        text = _render(result, fmt, code, statistics=statistics, color=when, to_file=output is not None)
        if verification is not None and fmt is CheckFormat.text and not statistics:
            from advisor.probe.render import render_verification

            text += render_verification(verification)
        _emit(text, output)
    if code:
        raise typer.Exit(code)


def _errors_exit_code(result: Any) -> int:
    """Rule evaluation errors: 2 when every failing rule is a user's own rule file (theirs to fix),
    3 when a built-in rule or the engine failed (ours: an internal error)."""
    import re

    from advisor.report.sarif import is_builtin

    by_code = {r.code: r for r in getattr(result, "rules", [])}
    for err in result.errors:
        # advisor/engine.py Engine.evaluate writes "rule CODE (FILE) failed on ..."
        m = re.match(r"rule (\S+) \(", str(err))
        rule = by_code.get(m.group(1)) if m else None
        if rule is None or is_builtin(rule):
            return EXIT_INTERNAL
    return 2


def _render(result: Any, fmt: CheckFormat, code: int, *, statistics: bool, color: str, to_file: bool) -> str:
    if statistics:
        from advisor.report.statistics import render_statistics

        return render_statistics(result, as_json=fmt is CheckFormat.json)
    if fmt is CheckFormat.json:
        from advisor.report.json_report import render_json

        return render_json(result)
    if fmt is CheckFormat.sarif:
        from advisor.report.sarif import render_sarif

        return render_sarif(result, code)
    if fmt is CheckFormat.github:
        from advisor.report.github import render_github

        return render_github(result)
    if fmt is CheckFormat.concise:
        from advisor.report.text import render_concise

        return render_concise(result)
    from advisor.report.text import color_enabled, render_text

    text = render_text(result, color=color_enabled(color, isatty=not to_file and sys.stdout.isatty()))
    notes = []
    if getattr(result, "baseline", None) is not None:
        from advisor.baseline import describe

        notes.append(describe(result.baseline))
    return text + "".join(f"{n}\n" for n in notes)


def _fix(
    result: Any, seeds: list[Path], options: Any, *, unsafe: bool, diff: bool, output: Path | None
) -> Any:
    """--fix / --unsafe-fixes / --diff: apply (or show) the fixes, then check again."""
    from advisor.boundary import project_boundary
    from advisor.check import run_check
    from advisor.fix import fix_until_stable
    from advisor.paths import relative
    from advisor.report.escape import escape_text

    # the fix rounds re-check in memory without the probe; --verify probes the files as written
    probe, options.verify = options.verify, None

    def final() -> Any:
        options.verify = probe
        return run_check(seeds, options)

    result, outcome = fix_until_stable(
        result,
        lambda: run_check(seeds, options),
        unsafe=unsafe,
        write=not diff,
        boundary=project_boundary(result.settings, seeds),
        final=final if probe is not None else None,
    )
    for f, why in outcome.skipped:
        loc = f.location
        where = f"{relative(loc.file)}:{loc.line}:{loc.col}"
        typer.echo(escape_text(f"gpu-advise: not fixed: {where} {f.rule}: {why}"), err=True)
    for path, why in outcome.refused:
        typer.echo(escape_text(f"gpu-advise: not written: {relative(path)}: {why}"), err=True)
    if diff:
        patch = outcome.diff()  # byte-exact; in an Actions log its lines must not run as commands
        if output is None and patch and os.environ.get("GITHUB_ACTIONS") == "true":
            from advisor.report.escape import guard_workflow_commands

            patch = guard_workflow_commands(patch)
        _emit(patch, output)
        typer.echo(f"gpu-advise: would apply {outcome.summary()}", err=True)
        return result
    typer.echo(f"gpu-advise: applied {outcome.summary()}", err=True)
    return result


@_command("verify")
def verify_command(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Files or folders (default: the current folder).")
    ] = None,
    hardware: Annotated[
        str | None, typer.Option("--hardware", "-H", help="Built-in machine name or descriptor YAML.")
    ] = None,
    output_format: Annotated[CheckFormat | None, typer.Option("--format", help="Output format.")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the report to a file.")] = None,
    select: Annotated[list[str] | None, typer.Option("--select", help="Rule codes or prefixes.")] = None,
    ignore: Annotated[list[str] | None, typer.Option("--ignore", help="Codes or prefixes to skip.")] = None,
    fail_on: Annotated[FailOn | None, typer.Option("--fail-on", help="Lowest severity that fails.")] = None,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="Exit 0 even with findings.")] = False,
    rules: Annotated[list[Path] | None, typer.Option("--rules", help="Extra folder of rule files.")] = None,
    online: Annotated[bool, typer.Option("--online", help="Let the probe reach the Hub.")] = False,
    scaling: Annotated[
        bool, typer.Option("--scaling", "--verify-scaling", help="Also probe on one process (scaling).")
    ] = False,
    report: Annotated[
        Path | None, typer.Option("--report", "--verify-report", help="Write the probe results as JSON.")
    ] = None,
    steps: Annotated[int, typer.Option("--steps", "--verify-steps", min=1, help="Steps after warm-up.")] = 20,
    timeout: Annotated[
        float, typer.Option("--timeout", "--verify-timeout", min=1, help="Seconds per probe launch.")
    ] = 600.0,
    real_weights: Annotated[
        bool, typer.Option("--real-weights", "--verify-real-weights", help="Load local checkpoint weights.")
    ] = False,
    color: ColorOption = None,
    no_color: NoColorOption = False,
) -> None:
    """Run a short real training probe per run (our probe, the run's launcher settings) and report
    measured against predicted: `check --verify` (exit 2 when torch/accelerate/peft are missing)."""
    check(
        paths=paths,
        hardware=hardware,
        output_format=output_format,
        output=output,
        select=select,
        ignore=ignore,
        fail_on=fail_on,
        exit_zero=exit_zero,
        rules=rules,
        online=online,
        color=color,
        no_color=no_color,
        verify=True,
        verify_scaling=scaling,
        verify_report=report,
        verify_steps=steps,
        verify_timeout=timeout,
        verify_real_weights=real_weights,
        verify_required=True,
    )


@_command()
def plan(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Files or folders (default: the current folder).")
    ] = None,
    hardware: Annotated[str | None, typer.Option("--hardware", "-H")] = None,
    output_format: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.text,
    show_all: Annotated[bool, typer.Option("--all", help="Also show empty values (None, [], '').")] = False,
) -> None:
    """Show the merged plan of each run, with where every value came from."""
    from advisor.check import CheckError, CheckOptions, build_plans, resolve_settings
    from advisor.facts import run_names
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
    from advisor.report.text import color_enabled

    color = color_enabled("auto", isatty=sys.stdout.isatty())
    runs = [(p, run_names(p)) for p in plans]  # the facts are computed here; the reporter renders
    sys.stdout.write(
        render_plans(runs, as_json=output_format is OutputFormat.json, show_all=show_all, color=color)
    )


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


@_command()
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
    output_format: Annotated[
        OutputFormat, typer.Option("--format", help="Output format.")
    ] = OutputFormat.text,
    color: ColorOption = None,
    no_color: NoColorOption = False,
) -> None:
    """Peak GPU memory (a breakdown), fit per GPU, strategies compared, and time, for a model or for runs."""
    from advisor.estimate_run import (
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
            _die(
                f"{', '.join(given)}: only for a model id; a run's values come from its files "
                "(edit them, or see `gpu-advise plan`; -H sets the machine)"
            )
    try:
        if as_runs:
            missing = [t for t in items if not Path(t).exists()]
            if missing:
                raise EstimateError(f"{missing[0]}: no such file or folder")
            reports = build_run_reports([Path(t) for t in items], hardware, online)
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
        _die(str(exc))
        return
    if output_format is OutputFormat.json:
        from advisor.report.estimate_view import render_json

        sys.stdout.write(render_json(reports, runs=as_runs))
        return
    from advisor.report.estimate_view import render_text
    from advisor.report.text import color_enabled

    use_color = color_enabled(_color_when(color, no_color), isatty=sys.stdout.isatty())
    sys.stdout.write(render_text(reports, color=use_color) if reports else "No runs found.\n")


@_command("rules")
def list_rules(
    output_format: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.text,
    rules: Annotated[list[Path] | None, typer.Option("--rules", help="Extra folder of rule files.")] = None,
) -> None:
    """List every rule: code, name, default severity, fixable, summary."""
    from advisor.engine import RuleError, load_catalog
    from advisor.report.escape import escape_text, escape_value, strict_json

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
        sys.stdout.write(strict_json(escape_value(rows)) + "\n")
        return
    for r in catalog:
        fix = "fix" if r.spec.fix else "   "
        typer.echo(escape_text(f"{r.code}  {r.spec.name:<32} {r.spec.severity:<8} {fix}  {r.spec.summary}"))


@_command("facts")
def list_facts(
    namespace: Annotated[str | None, typer.Argument(help="One namespace, e.g. batch.")] = None,
    output_format: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.text,
) -> None:
    """List the facts rule expressions can read: namespace, name, type, unit, doc (docs/facts.md)."""
    import difflib

    from advisor.facts import catalogue_view
    from advisor.facts.catalogue import by_name
    from advisor.report.escape import strict_json

    if namespace is not None and namespace not in by_name():
        close = difflib.get_close_matches(namespace, list(by_name()), n=1)
        _die(f"no fact namespace {namespace!r}" + (f"; did you mean {close[0]!r}?" if close else ""))
        return
    if output_format is OutputFormat.json:
        sys.stdout.write(strict_json(catalogue_view.rows(namespace)) + "\n")
        return
    sys.stdout.write(catalogue_view.text(namespace))


@_command("rule")
def show_rule(code: Annotated[str, typer.Argument(help="Rule code or name, e.g. GA203.")]) -> None:
    """Print one rule's documentation."""
    from advisor.engine import load_catalog
    from advisor.report.rule_doc import render_rule
    from advisor.report.sarif import help_uri
    from advisor.report.text import color_enabled
    from advisor.selectors import find_rule

    r = find_rule(code, load_catalog())
    if r is None:
        _die(f"no rule '{code}' (see `gpu-advise rules`)")
        return
    uri = help_uri(r)
    page = render_rule(r) + (f"\nDocumentation: {uri}\n" if uri else "")
    if color_enabled("auto", isatty=sys.stdout.isatty()):
        # on a terminal: the Markdown rendered by rich (headings, code blocks, wrapping);
        # piped, the Markdown itself (the text of docs/rules/CODE.md)
        from rich.console import Console
        from rich.markdown import Markdown

        Console().print(Markdown(page))
    else:
        sys.stdout.write(page)


@_command("baseline")
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
        hardware=hardware, select=_csv(select), ignore=_csv(ignore) or [], rules_dirs=list(rules or [])
    )
    try:
        settings = resolve_settings(seeds, options)
        target = output or (settings.root / settings.baseline if settings.baseline else Path(DEFAULT_FILE))
        options.settings = dataclasses.replace(settings, baseline=None)
        from advisor.estimate.params import META_DEVICE_COUNTING

        counting = META_DEVICE_COUNTING.set(False)  # the same findings as check: no meta-device count
        try:
            result = run_check(seeds, options)
        finally:
            META_DEVICE_COUNTING.reset(counting)
    except (CheckError, SettingsError) as exc:
        _die(str(exc))
        return
    try:
        write_atomic(target, render_baseline(result.findings, target))
    except OSError as exc:
        _die(f"cannot write {target}: {exc.strerror or exc}")
    n = len(result.findings)
    typer.echo(f"gpu-advise: wrote {n} finding{'s' if n != 1 else ''} to {relative(target)}", err=True)
    if result.errors:
        for err in result.errors:
            typer.echo(f"gpu-advise: internal error: {err}", err=True)
        raise typer.Exit(_errors_exit_code(result))


@_command("schema")
def schema(
    kind: Annotated[SchemaKind, typer.Argument(help="settings or hardware")] = SchemaKind.settings,
) -> None:
    """Print the JSON schema of the settings or of a hardware descriptor (for editor completion)."""
    import json

    if kind is SchemaKind.hardware:
        from advisor.sources.hardware import hardware_schema

        data = hardware_schema()
    else:
        from advisor.settings import settings_schema

        data = settings_schema()
    sys.stdout.write(json.dumps(data, indent=2) + "\n")


@_command("list", group="hardware")
def hardware_list() -> None:
    """List the built-in machines."""
    from advisor.sources.hardware import builtin_machines

    for _, m in sorted(builtin_machines().items()):
        fabric = ("xGMI mesh", "Infinity Fabric") if m.gpu.vendor == "amd" else ("NVSwitch", "NVLink")
        nvlink = fabric[0] if m.nvlink == "all" else (f"{fabric[1]} {m.nvlink}" if m.nvlink else "PCIe only")
        typer.echo(
            f"{m.name:<24} {m.gpus.count} x {m.gpu.display_name:<28} {m.memory_gib:>6.1f} GiB  {nvlink}"
        )


@_command("show", group="hardware")
def hardware_show(name: Annotated[str, typer.Argument(help="Built-in name or descriptor file.")]) -> None:
    """Print a machine descriptor as YAML."""
    from advisor.sources.hardware import HardwareError, load_hardware, machine_yaml

    try:
        machine = load_hardware(name)
    except HardwareError as exc:
        _die(str(exc))
        return
    sys.stdout.write(machine_yaml(machine))


@_command("detect", group="hardware")
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
            machine = machine_from_smi(query_text, topo_text)
        else:
            machine = detect()
    except (HardwareError, OSError, ReadRefused) as exc:
        _die(str(exc))
        return
    if name:
        machine = dataclasses.replace(machine, name=name)
    _emit(machine_yaml(machine), output)


# `check`'s options that the fast path parses: option -> (parameter, kind); "many" repeats into a list
_FAST_OPTIONS: dict[str, tuple[str, str]] = {
    "-H": ("hardware", "value"),
    "--hardware": ("hardware", "value"),
    "--format": ("output_format", "value"),
    "-o": ("output", "value"),
    "--output": ("output", "value"),
    "--baseline": ("baseline", "value"),
    "--select": ("select", "many"),
    "--extend-select": ("extend_select", "many"),
    "--ignore": ("ignore", "many"),
    "--fail-on": ("fail_on", "value"),
    "--rules": ("rules", "many"),
    "--base": ("base", "value"),
    "--base-default": ("base_default", "value"),
    "--color": ("color", "value"),
    "--statistics": ("statistics", "flag"),
    "--exit-zero": ("exit_zero", "flag"),
    "--online": ("online", "flag"),
    "--no-color": ("no_color", "flag"),
    "--no-inline-ignores": ("no_inline_ignores", "flag"),
}
_FAST_TYPES: dict[str, Any] = {
    "output_format": CheckFormat,
    "fail_on": FailOn,
    "color": ColorWhen,
    "output": Path,
    "baseline": Path,
    "rules": Path,
}


def _parse_check(argv: list[str]) -> dict[str, Any] | None:
    """`check`'s arguments as keyword arguments of check(), or None for anything this small parser
    does not cover (typer then parses it, with its own help and usage errors)."""
    kwargs: dict[str, Any] = {}
    paths: list[Path] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "--":
            paths.extend(Path(a) for a in argv[i:])
            break
        if not arg.startswith("-") or arg == "-":
            paths.append(Path(arg))
            continue
        name, eq, inline = arg.partition("=")
        spec = _FAST_OPTIONS.get(name)
        if spec is None:
            return None  # -h, --fix, --verify, a typo: typer's business
        param, kind = spec
        if kind == "flag":
            if eq:
                return None
            kwargs[param] = True
            continue
        if eq:
            value = inline
        elif i < len(argv):
            value, i = argv[i], i + 1
        else:
            return None  # a missing value: typer's usage error
        try:
            converted = _FAST_TYPES[param](value) if param in _FAST_TYPES else value
        except ValueError:
            return None  # not one of the choices: typer's usage error names them
        if kind == "many":
            kwargs.setdefault(param, []).append(converted)
        else:
            kwargs[param] = converted
    kwargs["paths"] = paths or None
    return kwargs


def _fast_check(argv: list[str]) -> bool:
    """Run `check` without typer when its options are the usual ones; False to let typer run."""
    if not argv or argv[0] != "check":
        return False
    kwargs = _parse_check(argv[1:])
    if kwargs is None:
        return False
    try:
        check(**kwargs)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        typer.echo("gpu-advise: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.stdout = None  # a closed stdout (`| head`): nothing more to say, and no flush error at exit
        sys.exit(1)
    except Exception as exc:
        sys.exit(_internal_error(exc).exit_code)
    return True


def main() -> None:
    if _fast_check(sys.argv[1:]):
        return
    try:
        (globals().get("app") or __getattr__("app"))()
    except KeyboardInterrupt:
        typer.echo("gpu-advise: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # outside a command (start-up, option parsing): still one line
        sys.exit(_internal_error(exc).exit_code)


if __name__ == "__main__":
    main()

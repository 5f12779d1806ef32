"""`gpu-advise check` (the pre-commit hot path: advisor.cli runs it without typer) and `verify`."""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

from advisor.commands.base import (
    EXIT_INTERNAL,
    CheckFormat,
    FailOn,
    color_when,
    command,
    die,
    emit,
    seed_paths,
    split_csv,
)


class VerifyDevice(StrEnum):
    cuda = "cuda"
    cpu = "cpu"


if TYPE_CHECKING:
    import typer

    ColorOption: TypeAlias = Any  # built by option_aliases with the app
    NoColorOption: TypeAlias = Any  # built by option_aliases with the app
else:
    from advisor.commands.base import typer  # PlainTyper until advisor.cli builds the app and rebinds it here


@command()
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
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Print the findings only: no run lines, no summary.")
    ] = False,
    baseline: Annotated[
        Path | None, typer.Option("--baseline", help="Report only findings not in this baseline file.")
    ] = None,
    no_inline_ignores: Annotated[
        bool, typer.Option("--no-inline-ignores", help="Ignore `# gpu-advise: ignore[...]` comments.")
    ] = False,
    fix: Annotated[bool, typer.Option("--fix", help="Apply safe fixes, then report what remains.")] = False,
    unsafe_fixes: Annotated[
        bool,
        typer.Option(
            "--unsafe-fixes",
            help="Enable unsafe fixes: --fix applies them, --diff shows them; alone it writes nothing.",
        ),
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
            help="Without --base, compare with REV when it exists [default: HEAD] (skipped outside git, "
            "before the first commit, and for runs whose settings declare effective-batch).",
        ),
    ] = None,
    no_base: Annotated[
        bool,
        typer.Option(
            "--no-base", help="Compare with no revision (not even HEAD): judge the files as they are."
        ),
    ] = False,
    fail_only_on_changed: Annotated[
        bool,
        typer.Option(
            "--fail-only-on-changed",
            help="The PATHS are the changed files (the pre-commit hook passes the staged ones): only "
            "findings located in or caused by them fail; the others are shown as not blocking.",
        ),
    ] = False,
    policy_from_base: Annotated[
        bool,
        typer.Option(
            "--policy-from-base",
            help="With --base: the base revision's settings, rule folders, baseline and inline "
            "suppressions govern; the change's own are not used (the CI gate on forks).",
        ),
    ] = False,
    color: ColorOption = None,
    no_color: NoColorOption = False,
    verify: Annotated[
        bool, typer.Option("--verify", help="Back the advice with a short real training probe per run.")
    ] = False,
    verify_scaling: Annotated[
        bool,
        typer.Option("--verify-scaling", help="With --verify: also probe on one process (scaling)."),
    ] = False,
    verify_report: Annotated[
        Path | None,
        typer.Option("--verify-report", help="With --verify: write the probe results as JSON to this file."),
    ] = None,
    verify_steps: Annotated[
        int | None,
        typer.Option("--verify-steps", min=1, help="With --verify: optimizer steps after warm-up [20]."),
    ] = None,
    verify_timeout: Annotated[
        float | None,
        typer.Option("--verify-timeout", min=1, help="With --verify: seconds per probe launch [600]."),
    ] = None,
    verify_real_weights: Annotated[
        bool,
        typer.Option("--verify-real-weights", help="With --verify: load local checkpoint weights."),
    ] = False,
    verify_device: Annotated[
        VerifyDevice | None,
        typer.Option(
            "--verify-device",
            help="With --verify: cuda (default: refused on a machine without a GPU) or cpu (a CPU probe: "
            "batch and parameter bytes, CPU timings).",
        ),
    ] = None,
    verify_required: Annotated[bool, typer.Option("--verify-required", hidden=True)] = False,
    require_separator: Annotated[
        bool,
        typer.Option(
            "--require-separator",
            help="Refuse to run unless the paths follow `--` (the pre-commit hooks pass it, so a file "
            "named like an option is never read as one).",
        ),
    ] = False,
    exclude: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude",
            help="Globs of files and folders to skip (comma-separated); replaces the settings' exclude "
            "and the built-in list.",
        ),
    ] = None,
    extend_exclude: Annotated[
        list[str] | None,
        typer.Option("--extend-exclude", help="Globs to skip besides exclude (comma-separated)."),
    ] = None,
    force_exclude: Annotated[
        bool,
        typer.Option(
            "--force-exclude",
            help="Apply the exclusions (and .gitignore) to the paths named here too, and skip quietly "
            "the files gpu-advise does not read (the pre-commit hooks pass it).",
        ),
    ] = False,
) -> None:
    """Check training runs and report findings at exact file:line:col positions."""
    if paths:
        paths = _readable(paths, quiet=force_exclude)
        if not paths and output is None and not statistics and _plain_text(output_format):
            return  # every file named is one gpu-advise does not read (the hook passes every staged file)
    from advisor.engine.rule_engine import at_or_above
    from advisor.pipeline.check import CheckError, CheckOptions, run_check
    from advisor.sources.settings import SettingsError

    options = CheckOptions(
        hardware=hardware,
        select=split_csv(select),
        ignore=split_csv(ignore) or [],
        extend_select=split_csv(extend_select) or [],
        rules_dirs=list(rules or []),
        online=online,
        base=base,
        base_default=None if no_base else (base_default or "HEAD"),
        inline_ignores=not no_inline_ignores,
        baseline=baseline,
        policy_from_base=policy_from_base,
    )
    if policy_from_base and base is None:
        die("--policy-from-base needs --base REV (the revision whose policy governs)")
    if no_base and base is not None:
        die("--no-base and --base REV contradict each other: give one")
    # require_separator is enforced by advisor.cli.main, the one place that sees the `--` itself
    probe = None
    # the training probe runs only when --verify (or the verify command) asks for it: an option of
    # its own alone, maybe a file name parsed as one (`--verify-report=p.json`), is refused
    probe_options = {
        "--verify-scaling": verify_scaling,
        "--verify-report": verify_report is not None,
        "--verify-steps": verify_steps is not None,
        "--verify-timeout": verify_timeout is not None,
        "--verify-real-weights": verify_real_weights,
        "--verify-device": verify_device is not None,
    }
    alone = [flag for flag, given in probe_options.items() if given]
    if alone and not (verify or verify_required):
        die(f"{', '.join(alone)} without --verify: the training probe runs only when --verify asks for it")
    if verify or verify_required:
        from advisor.pipeline.probe.spec import ProbeOptions

        probe = ProbeOptions(
            steps=20 if verify_steps is None else verify_steps,
            timeout=600.0 if verify_timeout is None else verify_timeout,
            scaling=verify_scaling,
            report=verify_report,
            real_weights=verify_real_weights,
            online=online,
            device=(verify_device or VerifyDevice.cuda).value,
        )
    # as ruff's: --unsafe-fixes only enables the unsafe fixes for --fix and --diff; alone it writes nothing
    fixing = fix or diff
    options.verify = None if fixing else probe  # with --fix, probe the fixed files
    fmt = output_format or (
        CheckFormat.github
        if os.environ.get("GITHUB_ACTIONS") == "true" and not statistics
        else CheckFormat.text
    )
    if statistics and fmt in (CheckFormat.sarif, CheckFormat.github):
        die("--statistics works with --format text or json")
    seeds = seed_paths(paths) if paths != [] else []
    from advisor.sources.exclude import FileSelection

    options.files = FileSelection(split_csv(exclude), split_csv(extend_exclude) or [], force_exclude)
    from advisor.estimate.params import META_DEVICE_COUNTING

    # the check path never imports torch/transformers: a model type without a built-in formula is
    # reported as not modelled here (`estimate` counts it on the meta device)
    counting = META_DEVICE_COUNTING.set(False)
    try:
        result = run_check(seeds, options)
        if fixing:
            options.verify = None if diff else probe
            result = _fix(result, seeds, options, unsafe=unsafe_fixes, diff=diff, output=output)
        elif unsafe_fixes:
            _say_available(result)
    except (CheckError, SettingsError) as exc:
        die(exc)
        return
    finally:
        META_DEVICE_COUNTING.reset(counting)
    verification = getattr(result, "verification", None)
    if probe is not None and verification is not None and verification.unavailable:
        from advisor.core.escape import escape_text

        typer.echo(escape_text(f"gpu-advise: {verification.unavailable}"), err=True)
    elif probe is not None and verify_report is not None and verification is not None:
        try:
            verification.write(verify_report)
        except OSError as exc:
            die(f"cannot write {verify_report}: {exc.strerror or exc}")
    threshold = (fail_on.value if fail_on else None) or result.settings.fail_on or "warning"
    failing = result.findings
    note = None
    if fail_only_on_changed:
        from advisor.pipeline.blocking import not_blocking_note, split_blocking

        failing = split_blocking(result, list(paths or []))  # the files given, not the seeds they stand for
        note = not_blocking_note(len(result.findings), len(failing))
    code = 0
    if result.errors:
        code = errors_exit_code(result)
    elif not exit_zero and any(at_or_above(f.severity, threshold) for f in failing):
        code = 1
    if verification is not None and verification.unavailable and (verify_required or verification.refused):
        code = max(code, 2)  # asked to measure and could not: the tool did not do its job
    if not diff:
        when = color_when(color, no_color)
        text = _render(
            result, fmt, code, statistics=statistics, color=when, to_file=output is not None, quiet=quiet
        )
        if note is not None and fmt in (CheckFormat.text, CheckFormat.concise) and not statistics:
            text += f"{note}\n"
        if verification is not None and fmt is CheckFormat.text and not statistics:
            from advisor.pipeline.probe.render import render_verification

            text += render_verification(verification)
        emit(text, output)
        if not (result.runs or result.findings or result.errors or quiet) and fmt is not CheckFormat.json:
            typer.echo(_no_runs_hint(seeds), err=True)
    if code:
        raise typer.Exit(code)


def _no_runs_hint(seeds: list[Path]) -> str:
    """What an empty result means: nothing found to check, not a clean project (issue 18 item 10)."""
    from advisor.core.escape import escape_text
    from advisor.core.paths import relative

    where = ", ".join(relative(p) for p in seeds) or "."
    return escape_text(
        f"gpu-advise: no training runs found under {where} (looked for launch scripts such as *.sh, "
        "*.slurm and *.sbatch, training, accelerate and DeepSpeed configs in YAML, JSON or TOML, and "
        "training scripts they launch)"
    )


def _plain_text(output_format: CheckFormat | None) -> bool:
    """Whether the report is text, where an empty check prints nothing (json and sarif print a report)."""
    if output_format is None:
        return os.environ.get("GITHUB_ACTIONS") != "true"
    return output_format in (CheckFormat.text, CheckFormat.concise)


def _readable(paths: list[Path], *, quiet: bool) -> list[Path]:
    """The named paths gpu-advise reads; each file it does not read is one line on stderr ("README.md:
    not a file gpu-advise reads; skipped"), or nothing under --force-exclude (the hook names them all)."""
    from advisor.sources.named import named_paths

    named = named_paths(paths)
    if not quiet:
        from advisor.core.escape import escape_text

        for path in named.unread:
            typer.echo(escape_text(f"gpu-advise: {path}: not a file gpu-advise reads; skipped"), err=True)
    return named.kept


def errors_exit_code(result: Any) -> int:
    """Rule evaluation errors: 2 when every failing rule is a user's own rule file (theirs to fix),
    3 when a built-in rule or the engine failed (ours: an internal error)."""
    from advisor.engine.rule_engine import is_internal_error

    rules = getattr(result, "rules", [])
    return EXIT_INTERNAL if any(is_internal_error(err, rules) for err in result.errors) else 2


def _render(
    result: Any,
    fmt: CheckFormat,
    code: int,
    *,
    statistics: bool,
    color: str,
    to_file: bool,
    quiet: bool = False,
) -> str:
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
    from advisor.report.text import color_enabled, output_width, render_concise, render_text

    tty = not to_file and sys.stdout.isatty()
    if fmt is CheckFormat.concise:
        return render_concise(result, color=color_enabled(color, isatty=tty), quiet=quiet)
    text = render_text(
        result, color=color_enabled(color, isatty=tty), quiet=quiet, width=output_width(isatty=tty)
    )
    if quiet:
        return text
    notes = []
    if getattr(result, "baseline", None) is not None:
        from advisor.engine.baseline import describe

        notes.append(describe(result.baseline))
    return text + "".join(f"{n}\n" for n in notes)


def _fix(
    result: Any, seeds: list[Path], options: Any, *, unsafe: bool, diff: bool, output: Path | None
) -> Any:
    """--fix / --unsafe-fixes / --diff: apply (or show) the fixes, then check again."""
    from advisor.core.escape import escape_text
    from advisor.core.paths import relative
    from advisor.engine.fix import fix_until_stable
    from advisor.pipeline.check import run_check

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
        boundary=_check_context(result, seeds).boundary_for(result.settings, seeds),
        final=final if probe is not None else None,
    )
    for f, why in outcome.skipped:
        loc = f.location
        where = f"{relative(loc.file)}:{loc.line}:{loc.col}"
        typer.echo(escape_text(f"gpu-advise: not fixed: {where} {f.rule}: {why}"), err=True)
    for path, why in outcome.refused:
        typer.echo(escape_text(f"gpu-advise: not written: {relative(path)}: {why}"), err=True)
    for f, why in outcome.widened:
        loc = f.location
        where = f"{relative(loc.file)}:{loc.line}:{loc.col}"
        typer.echo(escape_text(f"gpu-advise: unsafe fix applied: {where} {f.rule}: {why}"), err=True)
    if diff:
        patch = outcome.diff()  # byte-exact; in an Actions log its lines must not run as commands
        if output is None and patch and os.environ.get("GITHUB_ACTIONS") == "true":
            from advisor.core.escape import guard_workflow_commands

            patch = guard_workflow_commands(patch)
        emit(patch, output)
        typer.echo(
            f"gpu-advise: would apply {outcome.summary()}{_hidden(result, unsafe, '--diff')}", err=True
        )
        return result
    typer.echo(f"gpu-advise: applied {outcome.summary()}{_hidden(result, unsafe, '--fix')}", err=True)
    return result


def _fix_counts(result: Any) -> tuple[int, int]:
    """(safe, unsafe): the findings whose fix --fix applies, and those only --unsafe-fixes adds."""
    from advisor.engine.fix import eligible

    safe = unsafe = 0
    for f in result.findings:
        if eligible(f.fix, unsafe=False):
            safe += 1
        elif eligible(f.fix, unsafe=True):
            unsafe += 1
    return safe, unsafe


def _check_context(result: Any, seeds: list[Path]) -> Any:
    """The check's context (its boundary is --fix's: files are written only where they may be read)."""
    from advisor.plan.context import CheckContext
    from advisor.sources.settings import SettingsScope

    return result.context or CheckContext.build(SettingsScope.single(result.settings), seeds)


def _hidden(result: Any, unsafe: bool, mode: str) -> str:
    """Without --unsafe-fixes, the unsafe fixes left (ruff: "N hidden fixes can be enabled with the
    `--unsafe-fixes` option"), so "0 fixes" never hides that there are some."""
    if unsafe:
        return ""
    n = _fix_counts(result)[1]
    if not n:
        return ""
    verb = "applies" if mode == "--fix" else "shows"
    them = "them" if n != 1 else "it"
    return f"; {n} unsafe fix{'es' if n != 1 else ''} available: --unsafe-fixes {mode} {verb} {them}"


def _say_available(result: Any) -> None:
    """--unsafe-fixes alone: nothing is written; say what --fix and --diff would do with it."""
    safe, unsafe = _fix_counts(result)
    total = safe + unsafe
    them = "them" if total != 1 else "it"
    typer.echo(
        f"gpu-advise: {total} fix{'es' if total != 1 else ''} available ({unsafe} unsafe), nothing written: "
        f"--unsafe-fixes --fix applies {them}, --unsafe-fixes --diff shows the patch",
        err=True,
    )


@command("verify")
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
    device: Annotated[
        VerifyDevice,
        typer.Option(
            "--device", "--verify-device", help="cuda (refused without a GPU) or cpu (a CPU probe)."
        ),
    ] = VerifyDevice.cuda,
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
        verify_device=device,
        verify_required=True,
    )

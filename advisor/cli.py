"""The command line: options in, calls out, the reporter picks the output. Heavy imports stay lazy.

`check` is the pre-commit hot path: main() parses its usual options itself (`_fast_check`) and runs
it without importing typer (~25 ms, the largest import of a run); anything else (another command,
-h, --fix, --verify, an option it does not know or a value it cannot parse) goes through the typer
app, built on first use (`app` is a lazy module attribute). The commands are plain functions whose
typer annotations are strings (postponed evaluation) until the app is built.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from advisor.commands import MODULES, base
from advisor.commands.base import (
    CALLBACKS,
    COMMANDS,
    EXIT_INTERNAL,
    HELP_OPTIONS,
    ISSUES_URL,
    CheckFormat,
    ColorWhen,
    FailOn,
    guarded_group,
    internal_error,
    option_aliases,
)
from advisor.commands.startup import start_collecting

__all__ = ["EXIT_INTERNAL", "ISSUES_URL", "main"]


def _build_app() -> tuple[Any, Any]:
    """The typer app and its `hardware` group. typer is imported here; the names the commands' string
    annotations use (typer, the option aliases) are bound in every command module first."""
    import typer as real_typer

    from advisor.commands import baseline, catalog, check, estimate, hardware, plan, schema

    aliases = option_aliases(real_typer)
    for module in (base, baseline, catalog, check, estimate, hardware, plan, schema):
        vars(module).update(typer=real_typer, **aliases)
    app = real_typer.Typer(
        cls=guarded_group(),
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
    for fn in CALLBACKS:
        app.callback()(fn)
    for group, name, fn in sorted(COMMANDS, key=lambda c: MODULES.index(c[2].__module__.rpartition(".")[2])):
        (hardware_app if group == "hardware" else app).command(name)(fn)
    return app, hardware_app


def __getattr__(name: str) -> Any:
    """`app` and `hardware_app`, built on first use (PEP 562); plain module globals from then on."""
    if name in ("app", "hardware_app"):
        built_app, built_hardware = _build_app()
        globals().update(app=built_app, hardware_app=built_hardware)
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    "--no-base": ("no_base", "flag"),
    "--fail-only-on-changed": ("fail_only_on_changed", "flag"),
    "--color": ("color", "value"),
    "--statistics": ("statistics", "flag"),
    "-q": ("quiet", "flag"),
    "--quiet": ("quiet", "flag"),
    "--exit-zero": ("exit_zero", "flag"),
    "--online": ("online", "flag"),
    "--no-color": ("no_color", "flag"),
    "--no-inline-ignores": ("no_inline_ignores", "flag"),
    "--require-separator": ("require_separator", "flag"),
    "--exclude": ("exclude", "many"),
    "--extend-exclude": ("extend_exclude", "many"),
    "--force-exclude": ("force_exclude", "flag"),
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
    from advisor.commands.check import check

    start_collecting()
    try:
        check(**kwargs)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        base.typer.echo("gpu-advise: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.stdout = None  # a closed stdout (`| head`): nothing more to say, and no flush error at exit
        sys.exit(1)
    except Exception as exc:
        sys.exit(internal_error(exc).exit_code)
    return True


_SEPARATOR_MISSING = (
    "--require-separator: the paths must follow `--`; end the hook's `args:` with it, "
    "e.g. args: [--hardware, 4xH100-NVL, --]"
)


def _separator_missing(argv: list[str]) -> bool:
    """`check --require-separator` without a `--` after it: the pre-commit hooks' entry. pre-commit
    appends the staged file names after the hook's `args:`, and a user's `args:` replace the hook's
    `[--]`; without the separator a root-level file named `--ignore=ALL,x.yaml` would be parsed as
    an option (issue 17 item 3). Both parsers (the fast path and typer) stop at the first `--`."""
    return bool(argv) and argv[0] == "check" and "--require-separator" in argv and "--" not in argv


def main() -> None:
    argv = sys.argv[1:]
    if _separator_missing(argv):
        base.typer.echo(f"gpu-advise: {_SEPARATOR_MISSING}", err=True)
        sys.exit(2)
    if _fast_check(argv):
        return
    try:
        command_line = globals().get("app") or __getattr__("app")
        start_collecting()
        command_line()
    except KeyboardInterrupt:
        base.typer.echo("gpu-advise: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # outside a command (start-up, option parsing): still one line
        sys.exit(internal_error(exc).exit_code)


if __name__ == "__main__":
    main()  # the console script is advisor/__main__.py:run (no start-up collections, no teardown)

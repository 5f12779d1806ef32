"""What every command module shares: the command registry the typer app is built from, the typer
stand-in of the fast path, the exit codes, the option enums and small output helpers.

The command modules (advisor/commands/*.py) register plain functions with `command`; advisor.cli
builds the typer app from COMMANDS on first use and then rebinds `typer` and the option aliases in
this module and in every command module (their typer annotations are strings until then).
"""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

if TYPE_CHECKING:
    import typer

    # built by option_aliases with the app
    VersionOption: TypeAlias = Any
    ColorOption: TypeAlias = Any
    NoColorOption: TypeAlias = Any

# Where a user reports an internal error (the project publishes no Project-URL yet).
ISSUES_URL = "https://github.com/gpu-advise/gpu-advise/issues"
EXIT_INTERNAL = 3  # 0 clean, 1 findings, 2 the tool could not do its job, 3 a bug in the tool


def internal_error(exc: BaseException) -> typer.Exit:
    """One line on stderr, never a traceback (GPU_ADVISE_DEBUG=1 re-raises for developers)."""
    if os.environ.get("GPU_ADVISE_DEBUG") == "1":
        raise exc
    from advisor.core.escape import escape_text

    detail = " ".join(str(exc).split())[:300] or "(no message)"
    typer.echo(
        escape_text(
            f"gpu-advise: internal error: {type(exc).__name__}: {detail}; "
            f"please report it at {ISSUES_URL} with the command and files"
        ),
        err=True,
    )
    return typer.Exit(EXIT_INTERNAL)


class PlainTyper:
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
typer = PlainTyper  # type: ignore[assignment]


def guarded_group() -> type:
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
                raise internal_error(exc) from None

    return _GuardedGroup


# -h as well as --help, on the app and (inherited through click's context) on every command
HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}


COMMANDS: list[tuple[str | None, str | None, Any]] = []  # (group, name, function), in definition order
CALLBACKS: list[Any] = []


def command(name: str | None = None, group: str | None = None) -> Any:
    """Register a command of the typer app (built lazily by _build_app)."""

    def register(fn: Any) -> Any:
        COMMANDS.append((group, name, fn))
        return fn

    return register


def callback(fn: Any) -> Any:
    CALLBACKS.append(fn)
    return fn


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("gpu-advise")
    except PackageNotFoundError:  # a source checkout that was never installed
        return "unknown"


def print_version(value: bool) -> None:
    if value:
        typer.echo(f"gpu-advise {version()}")
        raise typer.Exit(0)


@callback
def _app(show_version: VersionOption = False) -> None:
    """Config linter and static advisor for multi-GPU training."""


class ColorWhen(StrEnum):
    auto = "auto"
    always = "always"
    never = "never"


def option_aliases(typer: Any) -> dict[str, Any]:
    """Annotated option types shared by several commands (their annotations name them)."""
    return {
        "VersionOption": Annotated[
            bool,
            typer.Option(
                "--version",
                callback=print_version,
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


def color_when(color: ColorWhen | None, no_color: bool) -> str:
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


def die(message: str | BaseException) -> None:
    """The problem on stderr and exit 2: a message, or an error's lines (advisor.core.errors.problem_lines:
    each problem of a descriptor file on a line of its own). Each line quotes user strings (a settings
    key, a rule name, a path), so it is escaped whole: no newline to start an `::error` line in an
    Actions log, no ANSI."""
    from advisor.core.errors import problem_lines
    from advisor.core.escape import escape_text

    lines = (message,) if isinstance(message, str) else problem_lines(message)
    for line in lines:
        typer.echo(escape_text(f"gpu-advise: {line}"), err=True)
    raise typer.Exit(2)


def split_csv(values: list[str] | None) -> list[str] | None:
    if values is None:
        return None
    return [part.strip() for v in values for part in v.split(",") if part.strip()]


def emit(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text)
        return
    from advisor.core.safe_write import write_file

    try:  # a device, FIFO or link's target written through; a regular file replaced atomically
        write_file(output, text, parents=True)
    except OSError as exc:
        die(f"cannot write {output}: {exc.strerror or exc}")


def seed_paths(paths: list[Path] | None) -> list[Path]:
    """The paths to check. A settings file (pyproject.toml, .gpu-advise.toml: TOML, not a run config)
    stands for the project it configures, its folder: the hook passes it when the settings change."""
    seeds: list[Path] = []
    for p in paths or [Path(".")]:
        seed = (p.parent if p.suffix.lower() == ".toml" and p.is_file() else p) or Path(".")
        if seed not in seeds:
            seeds.append(seed)
    return seeds

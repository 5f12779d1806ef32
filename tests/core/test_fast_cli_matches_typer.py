"""The fast path of `gpu-advise check` (advisor/cli.py `_parse_check`, run without importing typer) parses
every option exactly as typer does, and hands anything else to typer (issue 19 item 5).

What it keeps equal: each of check's options that typer knows is either parsed by the fast path into the
very keyword arguments typer would pass to check(), or refused by it (typer then parses it); and the fast
path knows no option typer does not. A new option added to check() without a thought for the fast path
falls to typer, which is correct; a fast-path entry whose name, kind or type drifted from typer's fails here.
"""

from __future__ import annotations

import functools
import inspect
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from advisor import cli
from advisor.commands import base
from tests.conftest import REPO, write_files


def _typer_check_command() -> Any:
    import typer.main

    group: Any = typer.main.get_command(cli.app)
    return group.commands["check"]


def _typer_kwargs(args: list[str]) -> dict[str, Any]:
    """The keyword arguments typer's own app would call check() with for `check ARGS`."""
    seen: dict[str, Any] = {}
    entry = next(c for c in base.COMMANDS if c[1] == "check" or c[2].__name__ == "check")
    real = entry[2]

    @functools.wraps(real)
    def record(**kwargs: Any) -> None:
        seen.update(kwargs)

    index = base.COMMANDS.index(entry)
    base.COMMANDS[index] = (entry[0], entry[1], record)
    try:
        app, _ = cli._build_app()
    finally:
        base.COMMANDS[index] = entry
    import typer.main

    command = typer.main.get_command(app)
    command.main(["check", *args], prog_name="gpu-advise", standalone_mode=False)
    assert seen, f"typer did not call check for {args}"
    return seen


def _fast_kwargs(args: list[str]) -> dict[str, Any] | None:
    """What the fast path calls check() with: its parsed arguments over check()'s defaults."""
    from advisor.commands.check import check

    parsed = cli._parse_check(args)
    if parsed is None:
        return None
    defaults = {
        name: p.default for name, p in inspect.signature(check).parameters.items() if p.default is not p.empty
    }
    return {**defaults, **parsed}


_SAMPLES = {"hardware": "4xH100-NVL", "base": "origin/main", "base_default": "main"}


def _values(option: Any) -> list[str]:
    if hasattr(option.type, "choices"):
        return [str(c) for c in option.type.choices]
    if "Path" in type(option.type).__name__:
        return ["out/report.json"]
    return [_SAMPLES.get(option.name or "", "GA101,GA2")]


def _option_cases() -> list[Any]:
    cases = []
    for p in _typer_check_command().params:
        if p.param_type_name != "option":
            continue
        for opt in p.opts:
            if p.is_flag:
                cases.append(pytest.param([opt], id=opt))
                continue
            for value in _values(p):
                cases.append(pytest.param([opt, value], id=f"{opt} {value}"))
                if opt.startswith("--"):
                    cases.append(pytest.param([f"{opt}={value}"], id=f"{opt}={value}"))
            if p.multiple:
                cases.append(pytest.param([opt, "a", opt, "b"], id=f"{opt} twice"))
    return cases


@pytest.mark.parametrize("args", _option_cases())
def test_each_option_is_parsed_as_typer_parses_it_or_left_to_typer(args: list[str]) -> None:
    fast = _fast_kwargs([*args, "train.yaml"])
    if fast is None:
        assert args[0].split("=")[0] not in cli._FAST_OPTIONS, f"the fast path knows {args[0]} but refused it"
        return
    assert fast == _typer_kwargs([*args, "train.yaml"])


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["configs/"],
        ["a.yaml", "b.yaml", "-q", "--select", "GA1", "--format", "json", "-H", "8xA100-80GB"],
        ["--require-separator", "--", "--ignore=ALL,x.yaml", "-q", "a.yaml"],
        ["--", "-"],
        ["-", "a.yaml"],
        ["--exclude", "out/*", "--extend-exclude", "wandb", "--force-exclude", "--no-color", "--", "a"],
    ],
    ids=lambda a: " ".join(a) or "no arguments",
)
def test_paths_and_the_separator_match(args: list[str]) -> None:
    fast = _fast_kwargs(args)
    assert fast is not None
    assert fast == _typer_kwargs(args)


def test_the_fast_path_knows_no_option_typer_does_not() -> None:
    typer_opts = {
        opt: (p.name, "flag" if p.is_flag else "many" if p.multiple else "value")
        for p in _typer_check_command().params
        if p.param_type_name == "option"
        for opt in p.opts
    }
    for opt, (param, kind) in cli._FAST_OPTIONS.items():
        assert opt in typer_opts, f"the fast path parses {opt}, which typer's check does not know"
        assert typer_opts[opt] == (param, kind), opt


@pytest.mark.parametrize(
    "args",
    [
        ["--select", "GA203", "--format", "json"],
        ["-q", "--ignore", "GA203", "--statistics"],
        ["--format", "concise", "--fail-on", "error", "--exit-zero"],
        ["--select", "GA203", "--format", "yaml"],  # typer's usage error in both: the fast path refuses it
    ],
    ids=lambda a: " ".join(a),
)
def test_the_real_cli_gives_the_same_report_either_way(tmp_path: Path, args: list[str]) -> None:
    """`gpu-advise check ARGS` through the console script's fast path and through typer's app print the
    same report and exit with the same code."""
    write_files(tmp_path, {"sub/args.yaml": "dataloader_num_workers: 0\ndataloader_prefetch_factor: 2\n"})
    env_code = "import sys; sys.argv[0] = 'gpu-advise'; from advisor import cli; "
    fast = subprocess.run(
        [sys.executable, "-c", env_code + "cli.main()", "check", *args, "sub"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "PYTHONPATH": str(REPO)},
        check=False,
    )
    slow = subprocess.run(
        [sys.executable, "-c", env_code + "cli.app(prog_name='gpu-advise')", "check", *args, "sub"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "PYTHONPATH": str(REPO)},
        check=False,
    )
    assert (fast.returncode, fast.stdout) == (slow.returncode, slow.stdout), fast.stderr + slow.stderr
    assert fast.returncode in (0, 1, 2)
    if "--format" in args and "yaml" not in args:
        assert "args.yaml" in fast.stdout

"""Issue 17 item 3: file names that look like options. pre-commit appends the staged file names after
the hook's args, so a root-level file named `--ignore=ALL,x.yaml` or `--verify-report=p.json` reached
the parser as an option (the hook passed on a bad config; the training probe started).

Through the real command line (`python -m advisor`, the console script's main): both parsers, the fast
path of advisor/cli.py and the typer app, read everything after `--` as a path; `--require-separator`
(the hooks' entry) refuses a command line without `--`; and no option but `--verify` starts the probe.
tests/gate/test_precommit.py plays the same with the real pre-commit.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write_files

BAD = "dataloader_num_workers: 0\ndataloader_prefetch_factor: 2\n"  # GA203, an error at 2:29


def _gpu_advise(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"} | {"HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "advisor", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()  # the project root for the boundary
    write_files(
        tmp_path,
        {"--ignore=ALL,x.yaml": "output_dir: out\n", "--verify-report=p.json": "{}\n", "args.yaml": BAD},
    )
    return tmp_path


@pytest.mark.parametrize(
    "parser",
    [
        pytest.param([], id="fast-path"),
        pytest.param(["--diff"], id="typer"),  # --diff is not an option of the fast path: typer parses
    ],
)
def test_every_name_after_the_separator_is_a_path(parser: list[str], project: Path) -> None:
    proc = _gpu_advise(
        project,
        "check",
        "--format",
        "concise",
        *parser,
        "--",
        "--ignore=ALL,x.yaml",
        "--verify-report=p.json",
        "args.yaml",
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the finding counts: --ignore=ALL did not apply
    if not parser:
        assert "args.yaml:2:29: GA203" in proc.stdout
    else:
        assert "-dataloader_prefetch_factor: 2" in proc.stdout  # the diff of GA203's fix
    assert not (project / "p.json").exists()  # no probe report: the name was a file, not an option
    assert "Traceback" not in proc.stderr


def test_a_path_named_like_an_option_is_a_missing_path_after_the_separator(project: Path) -> None:
    proc = _gpu_advise(project, "check", "--", "--version", "--nope")
    assert proc.returncode == 2
    assert "--version: no such file or folder" in proc.stderr
    assert "gpu-advise " not in proc.stdout  # --version was not obeyed


@pytest.mark.parametrize("tail", [["--ignore=ALL,x.yaml", "args.yaml"], []], ids=["files", "no-files"])
def test_require_separator_refuses_a_command_line_without_it(tail: list[str], project: Path) -> None:
    """What pre-commit runs when a user's `args:` replaced the hooks' `[--]` and forgot their own."""
    proc = _gpu_advise(project, "check", "--base-default", "HEAD", "--require-separator", *tail)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith("gpu-advise: --require-separator: the paths must follow `--`")
    assert len(proc.stderr.splitlines()) == 1 and proc.stdout == ""


@pytest.mark.parametrize("extra", [[], ["--diff"]], ids=["fast-path", "typer"])
def test_require_separator_with_the_separator_checks(extra: list[str], project: Path) -> None:
    proc = _gpu_advise(
        project, "check", "--require-separator", "--format", "concise", *extra, "--", "--ignore=ALL,x.yaml"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr  # a clean file, checked as a file
    proc = _gpu_advise(project, "check", "--require-separator", "--format", "concise", "--", "args.yaml")
    assert proc.returncode == 1 and "args.yaml:2:29: GA203" in proc.stdout


@pytest.mark.parametrize(
    "option",
    [
        ["--verify-report=p.json"],
        ["--verify-report", "p.json"],
        ["--verify-scaling"],
        ["--verify-steps", "3"],
        ["--verify-timeout", "5"],
        ["--verify-real-weights"],
    ],
)
def test_only_verify_starts_the_training_probe(option: list[str], project: Path) -> None:
    """Before, `--verify-report` (or `--verify-scaling`) alone switched the probe on."""
    proc = _gpu_advise(project, "check", *option, "args.yaml")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    flag = option[0].split("=")[0]
    assert proc.stderr.strip() == (
        f"gpu-advise: {flag} without --verify: the training probe runs only when --verify asks for it"
    )
    assert proc.stdout == "" and not (project / "p.json").exists()

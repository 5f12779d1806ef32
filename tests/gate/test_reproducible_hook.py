"""Issue 18 item 5: what the hook says can be reproduced by hand.

The hook compared each run with HEAD (`--base-default HEAD`) while a plain `gpu-advise check` on the
same tree said "No findings" and exited 0. A plain check in a git work tree now compares with HEAD the
same way (`--no-base` turns it off, `--base REV` still wins; outside git and before the first commit it
is skipped silently), so the command a user types gives the hook's answer. Real git, the real command
line (`python -m advisor`), and once the real pre-commit.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write_files
from tests.gate.conftest import git, needs_git
from tests.gate.test_precommit import _config, _pre_commit, hook  # noqa: F401  (hook: a fixture)

pytestmark = needs_git

TRAIN = "output_dir: out\nper_device_train_batch_size: 2\ngradient_accumulation_steps: 8\n"
LAUNCH = "#!/bin/bash\naccelerate launch --num_processes 1 train.py configs/train.yaml\n"
FILES = {"launch.sh": LAUNCH, "train.py": "print('train')\n", "configs/train.yaml": TRAIN}


def _gpu_advise(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"} | {"HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "advisor", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _findings(proc: subprocess.CompletedProcess[str]) -> list[tuple[str, str, int, int]]:
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return [(f["rule"], f["file"], f["line"], f["column"]) for f in json.loads(proc.stdout)["findings"]]


_FINDING = re.compile(r"^\s+\d+:\d+\s+GA\d{3}\b")


def finding_texts(output: str, code: str) -> list[str]:
    """The text report's findings of rule `code`, each with its wrapped lines joined, whitespace
    normalised (the report wraps long messages to the terminal's width)."""
    found: list[list[str]] = []
    inside = False
    for line in output.splitlines():
        if _FINDING.match(line):
            inside = re.search(rf"\b{code}\b", line) is not None
            if inside:
                found.append([])
        elif not line.strip() or not line.startswith(" "):
            inside = False
        if inside:
            found[-1].append(line)
    return [" ".join(" ".join(lines).split()) for lines in found]


def _committed_then_four_gpus(project: Path) -> None:
    write_files(project, FILES)
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "tuned on one GPU")
    (project / "launch.sh").write_text(LAUNCH.replace("processes 1", "processes 4"), encoding="utf-8")


def test_a_plain_check_compares_with_head_as_the_hook_does(tmp_path: Path) -> None:
    project = tmp_path / "project"
    _committed_then_four_gpus(project)

    plain = _gpu_advise(project, "check")
    assert plain.returncode == 1, plain.stdout + plain.stderr
    assert "GA101" in plain.stdout and "baseline (git HEAD)" in plain.stdout
    assert "configs/train.yaml" in plain.stdout

    hook_args = ["--format", "json", "--base-default", "HEAD", "--require-separator", "--", "launch.sh"]
    as_the_hook = _gpu_advise(project, "check", *hook_args)
    by_hand = _gpu_advise(project, "check", "--format", "json", "--", "launch.sh")
    assert _findings(by_hand) == _findings(as_the_hook)
    assert ("GA101", "configs/train.yaml", 2, 30) in _findings(by_hand)
    # the same answer from a sub-folder and from outside the work tree
    assert _findings(_gpu_advise(project / "configs", "check", "--format", "json", "..")) == [
        ("GA101", "train.yaml", 2, 30)
    ]
    outside = _findings(_gpu_advise(tmp_path, "check", "--format", "json", "project"))
    assert outside == [("GA101", "project/configs/train.yaml", 2, 30)]


def test_no_base_judges_the_files_as_they_are_and_base_still_wins(tmp_path: Path) -> None:
    project = tmp_path / "project"
    _committed_then_four_gpus(project)

    off = _gpu_advise(project, "check", "--no-base")
    assert off.returncode == 0, off.stdout + off.stderr
    assert "GA101" not in off.stdout and "No findings" in off.stdout
    # the fast path and typer's parser read it alike (--diff goes through typer)
    assert "GA101" not in _gpu_advise(project, "check", "--no-base", "--diff").stdout

    # --base REV is the comparison asked for: the launch is committed on four GPUs, REV has one
    git(project, "commit", "-q", "-am", "four GPUs")
    assert _findings(_gpu_advise(project, "check", "--format", "json")) == []  # HEAD has four now
    assert ("GA101", "configs/train.yaml", 2, 30) in _findings(
        _gpu_advise(project, "check", "--format", "json", "--base", "HEAD~1")
    )
    both = _gpu_advise(project, "check", "--no-base", "--base", "HEAD~1")
    assert both.returncode == 2
    assert "--no-base and --base REV contradict" in both.stderr and "Traceback" not in both.stderr


@pytest.mark.parametrize("where", ["outside-git", "before-first-commit"])
def test_no_commit_to_compare_with_is_skipped_silently(tmp_path: Path, where: str) -> None:
    project = tmp_path / "project"
    write_files(project, {**FILES, "launch.sh": LAUNCH.replace("processes 1", "processes 4")})
    if where == "before-first-commit":
        git(project, "init", "-q", "-b", "main")
        git(project, "add", "-A")
    proc = _gpu_advise(project, "check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No findings" in proc.stdout
    assert proc.stderr == ""  # no git error, no warning


def test_the_hooks_output_is_what_the_plain_command_prints(tmp_path: Path, hook) -> None:  # noqa: F811
    """The real pre-commit, then the command a user types in the same tree: the same finding lines."""
    hook_repo, rev, env = hook
    project = tmp_path / "project"
    _committed_then_four_gpus(project)
    (project / ".pre-commit-config.yaml").write_text(_config(hook_repo, rev, "gpu-advise"), encoding="utf-8")
    git(project, "add", "-A")
    ran = _pre_commit(project, env, "run")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    shown = finding_texts(ran.stdout, "GA101")
    assert len(shown) == 1 and "Set gradient_accumulation_steps to 2" in shown[0], ran.stdout

    by_hand = _gpu_advise(project, "check")
    assert by_hand.returncode == 1, by_hand.stdout + by_hand.stderr
    assert finding_texts(by_hand.stdout, "GA101") == shown

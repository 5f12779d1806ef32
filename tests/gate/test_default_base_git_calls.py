"""The hook's comparison with HEAD asks git for the work tree and the commit once (issue 18 item 11).

A plain `check` in a git work tree compares each run with the same run at HEAD: finding the commit
(has_commit) and writing its files out (materialise) each asked `rev-parse --show-toplevel` and
`rev-parse --verify HEAD^{commit}`, seven git processes a check (~5 ms each on the hook's path); the
answer of the first is now handed to the second. Since 40d2789 the blobs' sizes are asked first
(`cat-file --batch-check`) so an oversized blob is never read: five. Counted through a `git` on PATH
that logs each call and runs the real one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO
from tests.gate.conftest import git, needs_git
from tests.gate.test_ci_gate import MAIN, _four_gpus_uncommitted

pytestmark = needs_git


def _logging_git(folder: Path, log: Path) -> Path:
    real = shutil.which("git")
    assert real is not None
    folder.mkdir()
    wrapper = folder / "git"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{real}" "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    return folder


def _check_counting(cwd: Path, tmp_path: Path, *args: str) -> tuple[list[str], list[str]]:
    log = tmp_path / "git.log"
    log.write_text("", encoding="utf-8")
    bin_dir = tmp_path / "bin"
    if not bin_dir.exists():
        _logging_git(bin_dir, log)
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run(
        [sys.executable, "-m", "advisor", "check", "--format", "json", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    codes = [f["rule"] for f in json.loads(proc.stdout)["findings"]]
    calls = [line for line in log.read_text(encoding="utf-8").splitlines() if line]
    return codes, calls


def _subcommands(calls: list[str]) -> list[str]:
    """Each call's git subcommand (after the hardened `-c` settings and global options)."""
    out = []
    for call in calls:
        words = call.split()
        i = 0
        while i < len(words) and (words[i].startswith("--no-") or words[i] == "-c"):
            i += 2 if words[i] == "-c" else 1
        out.append(" ".join(words[i : i + 2]))
    return out


def test_a_check_in_a_work_tree_compares_with_head_in_five_git_calls(tmp_path: Path) -> None:
    work = _four_gpus_uncommitted(tmp_path)
    codes, calls = _check_counting(work, tmp_path, "launch.sh")
    assert "GA101" in codes  # the comparison with HEAD still happens: 1 GPU there, 4 here
    assert _subcommands(calls) == [
        "rev-parse --show-toplevel",
        "rev-list --objects",
        "ls-tree -r",
        "cat-file --batch-check",
        "cat-file --batch",
    ], calls


def test_outside_a_commit_the_one_call_says_there_is_nothing_to_compare(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    for name, text in MAIN.items():
        (fresh / name).parent.mkdir(parents=True, exist_ok=True)
        (fresh / name).write_text(text, encoding="utf-8")
    git(fresh, "init", "-q", "-b", "main")
    codes, calls = _check_counting(fresh, tmp_path, "launch.sh")
    assert "GA101" not in codes
    assert _subcommands(calls) == ["rev-parse --show-toplevel"], calls

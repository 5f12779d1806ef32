"""The real `pre-commit` tool runs our `.pre-commit-hooks.yaml` from a copy of this checkout.

The hook repository is a temporary git repository holding this checkout's files (tracked and
untracked, not ignored), committed there. pre-commit clones it and installs it the way it installs
any `language: python` hook: a virtualenv and `pip install .`. To stay offline, the virtualenv
sees the already-installed dependencies (VIRTUALENV_SYSTEM_SITE_PACKAGES) and pip neither reaches
an index (PIP_NO_INDEX) nor builds in isolation; the package itself, the wheel with its rule
catalog, is built from the copy and installed into the hook's own environment.

The project repository then gets one clean commit and one bad commit: the bad commit stages only
the TrainingArguments YAML, and the hook must find the launch script that names it (the seed
lookup) to see that the batch changed for four GPUs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, write_files
from tests.gate.conftest import git, needs_git

pytestmark = needs_git

PROJECT = {
    ".gpu-advise.toml": '[[runs]]\npath = "launch.sh"\neffective-batch = 16\n',
    "launch.sh": "#!/bin/bash\naccelerate launch --num_processes 1 train.py configs/train.yaml\n",
    "train.py": "print('train')\n",
    "configs/train.yaml": "output_dir: out\nper_device_train_batch_size: 2\ngradient_accumulation_steps: 8\n"
    "learning_rate: 2.0e-4\n",
    "README.md": "a training project\n",
}


def _hook_repo(tmp: Path) -> tuple[Path, str]:
    files = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    target = tmp / "hook-repo"
    for name in filter(None, files):
        src = REPO / name
        if not src.is_file():
            continue  # deleted in the working tree
        dst = target / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
    git(target, "init", "-q", "-b", "main")
    git(target, "add", "-A")
    git(target, "commit", "-q", "-m", "hook repo")
    return target, git(target, "rev-parse", "HEAD").strip()


def _pre_commit(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )


def test_pre_commit_hook_end_to_end(tmp_path: Path) -> None:
    pytest.importorskip("pre_commit")
    hook_repo, rev = _hook_repo(tmp_path)
    project = tmp_path / "project"
    write_files(project, PROJECT)
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_repo.as_posix()}\n    rev: {rev}\n    hooks:\n      - id: gpu-advise\n"
        "      - id: gpu-advise-project\n",
        encoding="utf-8",
    )
    git(project, "init", "-q", "-b", "main")
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "VIRTUALENV_SYSTEM_SITE_PACKAGES": "true",  # the dependencies come from this interpreter
        "PIP_NO_INDEX": "1",  # ... so no index is needed
        "PIP_NO_BUILD_ISOLATION": "0",  # pip's negated flag: "0" turns build isolation off
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "HF_HUB_OFFLINE": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    env.pop("GITHUB_ACTIONS", None)
    env.pop("VIRTUAL_ENV", None)

    # clean commit: tuned on one GPU, launched on one GPU
    git(project, "add", "-A")
    clean = _pre_commit(project, env, "run")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert clean.stdout.count("Passed") == 2, clean.stdout  # both hooks
    git(project, "commit", "-q", "-m", "tuned on one GPU")

    # the hook ran from its own environment, built from the hook repository
    envs = list((tmp_path / "pre-commit-home").glob("repo*/py_env-*/bin/python"))
    assert envs, "pre-commit created no python environment"
    where = subprocess.run(
        [str(envs[0]), "-c", "import advisor.cli; print(advisor.cli.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert str(tmp_path / "pre-commit-home") in where
    assert (Path(where.strip()).parent / "_rules").is_dir()  # the wheel carries the rule catalog

    # bad commit: the launch moves to four GPUs; only the YAML is staged (the script was already
    # committed that way by someone else): the hook must find the launch script by itself
    (project / "launch.sh").write_text(
        PROJECT["launch.sh"].replace("--num_processes 1", "--num_processes 4"), encoding="utf-8"
    )
    git(project, "add", "launch.sh")
    git(project, "commit", "-q", "--no-verify", "-m", "launch on four GPUs")
    train = project / "configs" / "train.yaml"
    train.write_text(
        PROJECT["configs/train.yaml"].replace("2.0e-4", "2.0e-4  # unchanged lr"), encoding="utf-8"
    )
    git(project, "add", "configs/train.yaml")
    bad = _pre_commit(project, env, "run")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert bad.stdout.count("Failed") == 2, bad.stdout  # the seed hook and the project hook
    assert "GA101" in bad.stdout and "configs/train.yaml" in bad.stdout

    # and pre-commit's git hook blocks the commit
    installed = _pre_commit(project, env, "install")
    assert installed.returncode == 0, installed.stderr
    commit = subprocess.run(
        ["git", "commit", "-m", "bad"], cwd=project, env=env, capture_output=True, text=True, check=False
    )
    assert commit.returncode != 0
    assert "GA101" in commit.stdout + commit.stderr

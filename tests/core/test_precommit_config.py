"""The repository's own .pre-commit-config.yaml is valid for pre-commit and runs the hooks CONTRIBUTING.md
names: ruff, mypy and gpu-advise over its example project."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
import yaml

from tests.conftest import REPO

CONFIG = REPO / ".pre-commit-config.yaml"


def test_pre_commit_validates_the_config() -> None:
    exe = shutil.which("pre-commit")
    cmd = [exe] if exe else [sys.executable, "-m", "pre_commit"]
    done = subprocess.run([*cmd, "validate-config", str(CONFIG)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_config_runs_ruff_mypy_and_gpu_advise_on_its_example() -> None:
    hooks = {h["id"]: h for repo in yaml.safe_load(CONFIG.read_text())["repos"] for h in repo["hooks"]}
    assert {"ruff-check", "ruff-format", "mypy", "gpu-advise-example"} <= set(hooks)
    assert "fixtures/example" in hooks["gpu-advise-example"]["entry"]


def test_the_example_hook_entry_exits_as_it_expects() -> None:
    """The hook passes when gpu-advise exits 1 (findings) on fixtures/example: run the same command."""
    exe = shutil.which("gpu-advise")
    if exe is None:
        pytest.skip("gpu-advise is not installed as a console script")
    done = subprocess.run(
        [exe, "check", "--base-default", "HEAD", "--format", "concise", "fixtures/example"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr

"""Helpers for the CI-gate and pre-commit tests: run the CLI in a folder, load the SARIF schema."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from functools import cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden"
SCHEMA = HERE / "data" / "sarif-schema-2.1.0.json"
UPDATE = os.environ.get("GPU_ADVISE_UPDATE_GOLDEN") == "1"


@pytest.fixture(autouse=True)
def _not_in_github_actions(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests choose --format themselves; GITHUB_ACTIONS=true would switch the default."""
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)


def cli(args: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str] | None = None):
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(app, args, env=env, catch_exceptions=False)


@cache
def sarif_validator():
    import jsonschema

    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


def assert_valid_sarif(payload: dict) -> None:
    errors = sorted(sarif_validator().iter_errors(payload), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

"""`gpu-advise check --format json` in a subprocess, on small projects written in tmp_path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import REPO, write_files

TRAIN_YAML = (
    "import sys\n"
    "from transformers import HfArgumentParser, TrainingArguments\n"
    "(args,) = HfArgumentParser((TrainingArguments,)).parse_yaml_file(sys.argv[1])\n"
)
TRAIN_FLAGS = (
    "from transformers import HfArgumentParser, TrainingArguments\n"
    "(args,) = HfArgumentParser((TrainingArguments,)).parse_args_into_dataclasses()\n"
)


def project(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / ".git").mkdir()
    write_files(tmp_path, files)
    return tmp_path


def check(cwd: Path, *args: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    env |= {"HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
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
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)

"""Issue 18 item 8: `--verify` on a machine without a GPU started 4 CPU processes, printed nothing for up
to 600 s when piped, then ended in a torch traceback its own timeout caused.

Now: without a GPU it is refused in one line, exit 2, unless `--verify-device cpu` asks for the CPU
probe; the probe says on stderr what it is doing, also when piped; a timeout ends in one line, with no
traceback anywhere and no process left; a CPU probe the machine's RAM cannot hold is skipped.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.pipeline.probe import stage
from advisor.pipeline.probe.launcher import marked_pids
from advisor.pipeline.probe.progress import HEARTBEAT_S, ProbeProgress
from tests.probe.conftest import SEQ, needs_torch, tiny_project

REPO = Path(__file__).resolve().parents[2]
TRAIN = f"model_name_or_path: ./tiny\noutput_dir: out\nper_device_train_batch_size: 2\nmax_length: {SEQ}\n"
CPU_ONLY = {
    "cpu_count": 2,
    "mem_available": 64 * 2**30,
    "cuda_available": False,
    "device_count": 0,
    "devices": [],
    "libraries": {"torch": "2.13.0+cpu", "transformers": "5.24.0", "accelerate": "1.15.0", "peft": "0.21.2"},
}


def _no_launch(*args: object, **kwargs: object) -> object:
    raise AssertionError("no probe process may start")


@pytest.fixture
def cpu_machine(monkeypatch: pytest.MonkeyPatch) -> dict:
    """This machine as device_info reports a CPU-only one (no torch import, no child process)."""
    info = json.loads(json.dumps(CPU_ONLY))
    monkeypatch.setattr(stage, "device_info", lambda python=None, timeout=120.0: info)
    monkeypatch.setattr("advisor.pipeline.probe.missing_requirements", lambda: [])
    return info


def test_no_gpu_is_refused_in_one_line_with_exit_2(tmp_path: Path, monkeypatch, cpu_machine) -> None:
    tiny_project(tmp_path, "torchrun --nproc_per_node 4 train.py train.yaml", TRAIN)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("advisor.pipeline.probe.launcher.launch", _no_launch)
    for args in (
        ["check", ".", "--verify"],
        ["verify", "."],
        ["check", ".", "--verify", "--verify-device", "cuda"],
    ):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        errors = [line for line in result.stderr.splitlines() if not line.startswith("verify: ")]
        assert errors == [
            "gpu-advise: --verify needs a CUDA GPU and this machine has none (torch 2.13.0+cpu): a CPU probe "
            "measures the batch and the weight, gradient and optimizer bytes, nothing about GPU memory or "
            "speed. No probe ran; --verify-device cpu runs the CPU probe"
        ], args
        assert "run launch.sh, torchrun, world size 4" in result.stdout  # the static check still ran
        assert "Traceback" not in result.output


def test_verify_device_alone_starts_nothing(tmp_path: Path, monkeypatch) -> None:
    tiny_project(tmp_path, "torchrun --nproc_per_node 4 train.py train.yaml", TRAIN)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["check", ".", "--verify-device", "cpu"])
    assert result.exit_code == 2
    assert "--verify-device without --verify" in result.stderr


def test_a_cpu_probe_the_ram_cannot_hold_is_skipped(tmp_path: Path, monkeypatch, cpu_machine) -> None:
    """4 CPU processes of a 7B model in fp32 hold ~100 GiB each: never started on a 64 GiB machine."""
    tiny_project(
        tmp_path,
        "torchrun --nproc_per_node 4 train.py train.yaml",
        "model_name_or_path: meta-llama/Llama-2-7b-hf\noutput_dir: out\nper_device_train_batch_size: 1\n"
        "max_length: 512\n",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("advisor.pipeline.probe.launcher.launch", _no_launch)
    result = CliRunner().invoke(app, ["check", ".", "--verify", "--verify-device", "cpu", "--format", "text"])
    assert result.exit_code == 0, result.output
    assert "verify launch.sh: skipped" in result.stdout
    assert "more than the 64.0 GiB available here" in result.stdout
    assert "verify: launch.sh: skipped: a CPU probe of this run needs about" in result.stderr


def test_progress_lines_when_piped() -> None:
    now = [100.0]
    out = io.StringIO()
    progress = ProbeProgress(True, stream=out)
    update = progress.task("launch.sh", 22, clock=lambda: now[0])
    update(0, 0)
    now[0] += HEARTBEAT_S + 1
    update(0, 0)  # nothing moved for a while: said so
    now[0] += 1
    update(1, 22)
    update(1, 22)  # no change, no line
    now[0] += 2
    update(3, 22)
    assert out.getvalue().splitlines() == [
        "verify: launch.sh: still starting (importing torch, building the model), 31 s",
        "verify: launch.sh: step 1/22 (32 s)",
        "verify: launch.sh: step 3/22 (34 s)",
    ]
    silent = io.StringIO()
    ProbeProgress(False, stream=silent).task("r", 2)(1, 2)
    assert silent.getvalue() == ""


@needs_torch
def test_a_timeout_ends_in_one_line_and_leaves_no_process(tmp_path: Path) -> None:
    """The real CLI, piped, with a real CPU probe stopped by --verify-timeout while it starts."""
    project = tmp_path / "p"
    tiny_project(project, "torchrun --nproc_per_node 2 train.py train.yaml", TRAIN)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    args = ["check", ".", "--verify", "--verify-device", "cpu", "--verify-timeout", "3"]
    proc = subprocess.run(
        [sys.executable, "-m", "advisor", *args, "--verify-report", "r.json"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr  # the static check decides; the report says timeout
    lines = proc.stderr.strip().splitlines()
    assert lines[:2] == [
        "verify: inspecting this machine (torch, CUDA)...",
        "verify: launch.sh: starting 2 processes (CPU, gloo)...",
    ], proc.stderr
    assert lines[-1].startswith("verify: launch.sh: timed out after "), proc.stderr
    assert re.search(r"\(--verify-timeout 3\) at step \d+/22", lines[-1]), lines[-1]
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    assert "log (last lines)" not in proc.stdout
    assert "verify launch.sh: timeout" in proc.stdout
    run = json.loads((project / "r.json").read_text(encoding="utf-8"))["runs"][0]
    assert run["status"] == "timeout"
    assert all(marked_pids(marker) == [] for marker in run["probe_ids"])

"""Deterministic fixes through `gpu-advise check --diff`: GA504 sets DeepSpeed's fp16/bf16 to "auto" (safe),
GA304 sets the process count to the visible GPUs (unsafe), and neither fixes what it cannot know."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import write_files

TRAIN = {"train.py": "print('train')\n"}
DS_LAUNCH = "#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --deepspeed ds.json --bf16 True\n"


def sh(cmd: str) -> str:
    return "#!/bin/bash\n" + cmd + "\n"


def check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str):
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.chdir(tmp_path)
    return CliRunner().invoke(app, ["check", ".", *args], catch_exceptions=False)


def findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hardware: str) -> list:
    monkeypatch.chdir(tmp_path)
    result = run_check([Path(".")], CheckOptions(hardware=hardware))
    assert not result.errors, result.errors
    return result.findings


# --- GA504: DeepSpeed fp16/bf16 against TrainingArguments -> "auto" (safe) ----------------------


def test_ga504_diff_sets_both_blocks_to_auto(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ds = (
        '{\n  "fp16": {"enabled": true, "loss_scale": 0},\n  "bf16": {"enabled": false},\n'
        '  "zero_optimization": {"stage": 2}\n}\n'
    )
    write_files(
        tmp_path,
        {
            "launch.sh": DS_LAUNCH,
            "ds.json": ds,
            **TRAIN,
        },
    )
    result = check(tmp_path, monkeypatch, "-H", "4xH100-NVL", "--diff", "--select", "GA504")
    assert '-  "fp16": {"enabled": true, "loss_scale": 0},' in result.output
    assert '+  "fp16": {"enabled": "auto", "loss_scale": 0},' in result.output
    assert '+  "bf16": {"enabled": "auto"},' in result.output
    assert "not fixed" not in result.output  # one fix for both findings, offered once
    assert (tmp_path / "ds.json").read_text() == ds  # --diff writes nothing

    fixed = check(tmp_path, monkeypatch, "-H", "4xH100-NVL", "--fix", "--select", "GA504")
    assert fixed.exit_code == 0, fixed.output
    data = json.loads((tmp_path / "ds.json").read_text())
    assert data["fp16"] == {"enabled": "auto", "loss_scale": 0} and data["bf16"] == {"enabled": "auto"}
    assert not [f for f in findings(tmp_path, monkeypatch, "4xH100-NVL") if f.rule == "GA504"]


def test_ga504_fix_adds_a_missing_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_files(
        tmp_path,
        {
            "launch.sh": DS_LAUNCH,
            "ds.json": '{\n  "fp16": {"enabled": true},\n  "zero_optimization": {"stage": 2}\n}\n',
            **TRAIN,
        },
    )
    result = check(tmp_path, monkeypatch, "-H", "4xH100-NVL", "--fix", "--select", "GA504")
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "ds.json").read_text())
    assert data["fp16"] == {"enabled": "auto"} and data["bf16"] == {"enabled": "auto"}


def test_ga504_accelerate_conflict_has_no_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_files(
        tmp_path,
        {
            "launch.sh": "#!/bin/bash\naccelerate launch --config_file acc.yaml train.py --bf16 True\n",
            "acc.yaml": "distributed_type: FSDP\nnum_processes: 2\nmixed_precision: fp16\n",
            **TRAIN,
        },
    )
    hits = [f for f in findings(tmp_path, monkeypatch, "4xH100-NVL") if f.rule == "GA504"]
    assert hits and all(f.fix is None for f in hits)


# --- GA304: process count -> visible GPUs (unsafe) ----------------------------------------------


def test_ga304_torchrun_word(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_files(
        tmp_path,
        {
            "launch.sh": "#!/bin/bash\nCUDA_VISIBLE_DEVICES=2,3 torchrun --nproc_per_node 4 train.py\n",
            **TRAIN,
        },
    )
    safe = check(tmp_path, monkeypatch, "-H", "4xH100-NVL", "--diff", "--select", "GA304")
    assert "+CUDA" not in safe.output  # unsafe: not offered without --unsafe-fixes
    result = check(tmp_path, monkeypatch, "-H", "4xH100-NVL", "--diff", "--unsafe-fixes", "--select", "GA304")
    assert "+CUDA_VISIBLE_DEVICES=2,3 torchrun --nproc_per_node 2 train.py" in result.output
    (hit,) = [f for f in findings(tmp_path, monkeypatch, "4xH100-NVL") if f.rule == "GA304"]
    assert hit.fix is not None and hit.fix.safety == "unsafe"


def test_ga304_accelerate_file_and_idle_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_files(
        tmp_path,
        {
            "launch.sh": sh("CUDA_VISIBLE_DEVICES=0,1,2,3 accelerate launch --config_file acc.yaml train.py"),
            "acc.yaml": "distributed_type: MULTI_GPU\nnum_processes: 2\nmixed_precision: bf16\n",
            **TRAIN,
        },
    )
    result = check(tmp_path, monkeypatch, "-H", "8xH100-SXM", "--diff", "--unsafe-fixes", "--select", "GA304")
    assert "-num_processes: 2\n+num_processes: 4" in result.output


def test_ga304_no_fix_for_a_variable_or_an_unknown_machine(tmp_path: Path, monkeypatch) -> None:
    write_files(
        tmp_path,
        {
            "launch.sh": "#!/bin/bash\nN=4\nCUDA_VISIBLE_DEVICES=2,3 torchrun --nproc_per_node $N train.py\n",
            **TRAIN,
        },
    )
    (hit,) = [f for f in findings(tmp_path, monkeypatch, "4xH100-NVL") if f.rule == "GA304"]
    assert hit.fix is None
    write_files(
        tmp_path,
        {"launch.sh": "#!/bin/bash\nCUDA_VISIBLE_DEVICES=0,7 torchrun --nproc_per_node 2 train.py\n"},
    )
    (hit,) = [f for f in findings(tmp_path, monkeypatch, "4xH100-NVL") if f.rule == "GA304"]
    assert hit.fix is None  # an index the machine does not have: no count to choose

"""ms-swift runs read as ms-swift reads them (ms-swift @3602360a examples/train/multi-gpu/ddp/train.sh,
examples/train/sequence_parallel/sequence_parallel.sh): `--tuner_type lora` is LoRA, `--lora_rank` its
rank, its TrainingArguments' own defaults (per-device batch 1, gradient checkpointing on: ms-swift 4.6.0
swift/trainers/arguments.py:130,135), and sequence parallelism is not modelled. Before, each of these
runs drew a GA401 'will run out of memory' error estimated as a full fine-tune."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import git_project

DDP = """#!/bin/bash
nproc_per_node=2
CUDA_VISIBLE_DEVICES=0,1 \\
NPROC_PER_NODE=$nproc_per_node \\
swift sft \\
    --model Qwen/Qwen2.5-7B-Instruct \\
    --tuner_type lora \\
    --torch_dtype bfloat16 \\
    --lora_rank 8 \\
    --target_modules all-linear \\
    --gradient_accumulation_steps $(expr 16 / $nproc_per_node) \\
    --max_length 2048 {extra}
"""


def _check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str = "") -> tuple[Any, list[str]]:
    git_project(tmp_path, {"train.sh": DDP.format(extra=extra)}, monkeypatch)
    result = run_check([Path(".")], CheckOptions(hardware="8xA100-SXM-80GB"))
    assert not result.errors, result.errors
    (run,) = result.runs
    return run, [f.rule for f in result.findings if f.severity == "error"]


def test_tuner_type_lora_and_swift_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run, errors = _check(tmp_path, monkeypatch)
    assert errors == []
    assert run.effective_batch == 16  # ms-swift's per-device 1 x 8 x 2
    assert "gradient_checkpointing not written: ms-swift's default: True" in " ".join(run.notes)
    # LoRA r=8 on a 7B bf16 base with checkpointing, 2048 tokens: ~21 GiB (a full fine-tune was 91 GiB)
    assert run.peak_vram_gib is not None and 15 < run.peak_vram_gib < 30


def test_sequence_parallelism_is_not_modelled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run, errors = _check(tmp_path, monkeypatch, "\\\n    --sequence_parallel_size 4")
    assert errors == [] and run.peak_vram_gib is None
    assert "sequence parallelism (sequence_parallel_size x4) is not modelled" in " ".join(run.notes)

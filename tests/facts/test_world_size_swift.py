"""ms-swift's `swift sft` starts torchrun itself: NPROC_PER_NODE processes per node when NPROC_PER_NODE
or NNODES is set, else one process (ms-swift 4.6.0 swift/cli/main.py:30-35,74-83; the forms are those
of ms-swift @3602360a examples/train/multi-gpu/ddp/train.sh)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import write_files

SFT = (
    "swift sft --model Qwen/Qwen2.5-7B-Instruct"
    " --per_device_train_batch_size 2 --gradient_accumulation_steps 4"
)


def _runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> dict[str, tuple[object, object]]:
    write_files(tmp_path, {"train.sh": "#!/bin/bash\n" + script + "\n"})
    monkeypatch.chdir(tmp_path)
    result = run_check([Path(".")], CheckOptions())
    assert not result.errors, result.errors
    return {r.name: (r.world_size, r.effective_batch) for r in result.runs}


@pytest.mark.parametrize(
    ("env", "world", "batch"),
    [
        ("CUDA_VISIBLE_DEVICES=0,1,2,3 NPROC_PER_NODE=4 ", 4, 32),
        ("NNODES=2 NODE_RANK=0 NPROC_PER_NODE=8 ", 16, 128),
        ("NNODES=2 NODE_RANK=0 ", 2, 16),  # torchrun's default: one process per node
        ("", 1, 8),  # no NPROC_PER_NODE nor NNODES: plain python, one process
    ],
)
def test_swift_sft_counts_its_torchrun_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: str, world: int, batch: int
) -> None:
    assert _runs(tmp_path, monkeypatch, env + SFT) == {"train.sh": (world, batch)}

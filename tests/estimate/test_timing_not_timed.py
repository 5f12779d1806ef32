"""What the step time leaves out says so, with its reason (issue 21 section 2, Time).

PEFT keeps LoRA adapters in fp32 on a 16-bit base (peft 0.21.2 tuners/tuners_utils.py:2705-2722,
cast_adapter_dtype) and, without autocast, runs the adapter path in fp32 (tuners/lora/layer.py:1100-1114):
the estimate does not time it, since fused or 16-bit adapter kernels pay none of it. Liger's kernels change
the step too; the class MFUs were measured without them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.core.records import replace
from advisor.estimate import TrainingSetup, estimate_time, resolve_model
from tests.conftest import git_project


def _lora(**kw: Any) -> TrainingSetup:
    base = TrainingSetup(
        model=resolve_model("meta-llama/Meta-Llama-3-8B").count(),
        method="lora",
        lora_r=16,
        lora_targets=["q_proj", "v_proj"],
        micro_batch=2,
        seq_len=2048,
        precision="bf16",
        storage_dtype="bf16",
        autocast="off",
        gradient_checkpointing=True,
        optimizer="adamw_torch",
    )
    return replace(base, **kw)


def _said(setup: TrainingSetup) -> str:
    return " | ".join(estimate_time(setup, 989, 400.0, "H100-SXM", 1).not_timed)


def test_fp32_adapters_on_a_bf16_base_without_autocast_are_named() -> None:
    said = _said(_lora())
    assert "PEFT's fp32 adapters on a bf16 base without autocast" in said
    assert "PEFT's own layer adds about" in said


@pytest.mark.parametrize(
    "change",
    [
        {"autocast": "bf16"},  # autocast runs the adapter matmuls in bf16
        {"trainable_dtype": "bf16"},  # autocast_adapter_dtype=False: adapters in the base's dtype
        {"method": "full", "lora_r": None, "lora_targets": None},
        {"torch_compile": True},
    ],
)
def test_runs_without_the_fp32_adapter_path_say_nothing_of_it(change: dict[str, Any]) -> None:
    assert "fp32 adapters" not in _said(_lora(**change))


def test_liger_kernels_are_named() -> None:
    assert "Liger" not in _said(_lora())
    assert "faster than estimated" in _said(_lora(liger_kernel=True))


SFT = """model_name_or_path: Qwen/Qwen2.5-1.5B
torch_dtype: bfloat16
use_peft: true
bf16: false
packing: true
use_liger_kernel: true
per_device_train_batch_size: 2
max_length: 1024
max_steps: 10
output_dir: out
"""


def test_the_time_line_lists_what_it_leaves_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {"launch.sh": "#!/bin/bash\npython train.py sft.yaml\n", "train.py": "pass\n", "sft.yaml": SFT}
    git_project(tmp_path, files, monkeypatch)
    result = CliRunner().invoke(app, ["estimate", ".", "-H", "1xH100"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    (i,) = [n for n, line in enumerate(lines) if line.startswith("Time:")]
    below = [line for line in lines[i + 1 : i + 4] if line.startswith("  not timed: ")]
    assert any("Liger" in line for line in below), lines[i : i + 4]
    json_run = CliRunner().invoke(app, ["estimate", ".", "-H", "1xH100", "--format", "json"])
    assert "not_timed" in json_run.stdout

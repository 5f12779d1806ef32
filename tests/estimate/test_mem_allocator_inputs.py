"""The caching allocator's growth on unpadded batches (issue 21 section 2) follows what the run tells the
allocator: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True in the launch environment (segments extended in
place: PyTorch notes/cuda.rst) removes it from the reserved and device bands; HF torch_empty_cache_steps
returns the cache every N steps, said in the assumption."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from tests.conftest import write_files

runner = CliRunner()

_RECIPE = (
    "model_name_or_path: Qwen/Qwen2.5-7B\ntorch_dtype: bfloat16\nbf16: true\nuse_peft: true\nlora_r: 16\n"
    "per_device_train_batch_size: 1\nmax_length: 4096\ngradient_checkpointing: true\npacking: false\n"
)


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, launch: str, recipe: str = _RECIPE) -> dict:
    write_files(tmp_path, {"launch.sh": launch, "sft.yaml": recipe})
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["estimate", "launch.sh", "-H", "1xA100-80GB", "--format", "json"])
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.stdout)["runs"]
    return run


def _growth(run: dict) -> float:
    reserved = run["memory"]["reserved"]
    return reserved["high_gib"] - reserved["gib"] * (
        run["memory"]["allocated"]["high_gib"] / run["memory"]["allocated"]["gib"]
    )


def test_expandable_segments_in_the_launch_environment_removes_the_growth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = _run(tmp_path / "plain", monkeypatch, "#!/bin/bash\npython train.py sft.yaml\n")
    expandable = _run(
        tmp_path / "expandable",
        monkeypatch,
        "#!/bin/bash\nexport PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\npython train.py sft.yaml\n",
    )
    assert _growth(plain) > 1.0  # one more copy of the 4096-token logits/loss blocks
    assert _growth(expandable) == pytest.approx(0.0, abs=0.02)
    assert expandable["memory"]["reserved"]["gib"] == plain["memory"]["reserved"]["gib"]  # the live set
    assert any("expandable_segments:True: a longer batch extends" in a for a in expandable["assumptions"])
    assert any("expandable_segments:True avoids it" in a for a in plain["assumptions"])


def test_torch_empty_cache_steps_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = _run(
        tmp_path,
        monkeypatch,
        "#!/bin/bash\npython train.py sft.yaml\n",
        _RECIPE + "torch_empty_cache_steps: 10\n",
    )
    assert any(
        "torch_empty_cache_steps 10 returns the cached blocks every 10 steps" in a for a in run["assumptions"]
    )

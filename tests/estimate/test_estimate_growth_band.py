"""`gpu-advise estimate PATHS --format json`: the caching allocator's growth on batches that are not padded
to one length (a TRL recipe at batch 1: the collator pads each batch to its own longest) is the upper part
of the reserved and device bands, as the text says; the allocated figure does not grow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _memory(folder: Path) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-m", "advisor", "estimate", ".", "-H", "1xH100", "--format", "json"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return json.loads(out.stdout)["runs"][0]["memory"]


def _run(tmp_path: Path, extra: str) -> dict:
    (tmp_path / "sft.yaml").write_text(
        "model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 1\nmax_length: 2048\n"
        f"bf16: true\n{extra}",
        encoding="utf-8",
    )
    (tmp_path / "launch.sh").write_text("trl sft --config sft.yaml\n", encoding="utf-8")
    return _memory(tmp_path)


def test_unpadded_batches_widen_the_reserved_band_not_the_allocated(tmp_path: Path) -> None:
    memory = _run(tmp_path, "")
    allocated, reserved, device = memory["allocated"], memory["reserved"], memory["device"]
    # the band of the model's own uncertainty is the same relative width for each figure; growth adds to it
    spread = allocated["high_gib"] / allocated["gib"]
    assert reserved["high_gib"] > reserved["gib"] * spread + 1.0
    assert device["high_gib"] > device["gib"] * spread + 1.0

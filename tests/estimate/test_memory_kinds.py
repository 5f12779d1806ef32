"""Allocated, reserved and device peaks reported apart (issue 21 section 2, "the number the user compares
with"), through the real CLI: `gpu-advise estimate` (text and JSON, a model id and run files) and
`gpu-advise check --format json`. Trainers log torch.cuda.max_memory_allocated (litgpt, Liger) or
max_memory_reserved (ms-swift, axolotl); nvidia-smi shows the device figure, which the verdict uses."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_files

ENV = {**os.environ, "GPU_ADVISE_NO_CACHE": "1", "HF_HUB_OFFLINE": "1"}
KINDS = ("allocated", "reserved", "device")
READS = {
    "allocated": "torch.cuda.max_memory_allocated()",
    "reserved": "torch.cuda.max_memory_reserved()",
    "device": "nvidia-smi memory.used of the process",
}
# the GA404 example's 7B LoRA run (rules/GA404-near-memory-limit.yaml), micro-batch 2
RUN = {
    "launch.sh": "#!/bin/bash\naccelerate launch --num_processes 1 train.py sft.yaml\n",
    "train.py": "print('train')\n",
    "sft.yaml": (
        "model_name_or_path: Qwen/Qwen2.5-7B\ndtype: bfloat16\nuse_peft: true\nlora_r: 16\n"
        "lora_target_modules: all-linear\nlora_dropout: 0.05\nbf16: true\nper_device_train_batch_size: 2\n"
        "max_length: 4096\ngradient_checkpointing: true\noptim: adamw_torch\nattn_implementation: sdpa\n"
    ),
}


def _cli(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    run = subprocess.run(
        ["gpu-advise", *args], cwd=cwd, env=ENV, capture_output=True, text=True, check=False, timeout=120
    )
    assert "Traceback" not in run.stderr, run.stderr
    return run


def _estimate_json(args: list[str], cwd: Path | None = None) -> dict[str, Any]:
    run = _cli(["estimate", *args, "--format", "json"], cwd)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def _item(data: dict[str, Any], prefix: str) -> float:
    return sum(it["gib"] for it in data["breakdown"] if it["name"].startswith(prefix))


def _assert_ordered(mem: dict[str, Any]) -> None:
    assert mem["fit_uses"] == "device"
    for kind in KINDS:
        fig = mem[kind]
        assert fig["reads"] == READS[kind]
        assert 0 < fig["low_gib"] < fig["gib"] < fig["high_gib"]
    assert mem["allocated"]["gib"] <= mem["reserved"]["gib"] <= mem["device"]["gib"]
    assert mem["allocated"]["high_gib"] <= mem["reserved"]["high_gib"] <= mem["device"]["high_gib"]


def test_estimate_json_has_the_three_figures_and_the_verdict_uses_the_device_one() -> None:
    data = _estimate_json(["meta-llama/Meta-Llama-3-8B", "--method", "lora", "--batch", "2", "--seq", "2048"])
    mem = data["memory"]
    _assert_ordered(mem)
    assert mem["allocated"]["gib"] < mem["reserved"]["gib"] < mem["device"]["gib"]
    # the device figure is the peak the verdicts and the breakdown total have always given
    assert mem["device"]["gib"] == mem["peak_gib"]
    assert (mem["device"]["low_gib"], mem["device"]["high_gib"]) == (mem["low_gib"], mem["high_gib"])
    # each figure is the one before plus what the breakdown says it adds
    reserved_minus_allocated = mem["reserved"]["gib"] - mem["allocated"]["gib"]
    assert reserved_minus_allocated == pytest.approx(
        _item(data, "allocator overhead") + _item(data, "freed logits still reserved"), abs=0.02
    )
    assert mem["device"]["gib"] - mem["reserved"]["gib"] == pytest.approx(
        _item(data, "CUDA context"), abs=0.02
    )
    assert _item(data, "CUDA context + NCCL") == 0  # one process: no communicator


def test_several_processes_add_nccl_and_a_paged_optimizer_only_to_the_device_figure() -> None:
    ddp = _estimate_json(
        ["meta-llama/Meta-Llama-3-8B", "--method", "lora", "--gpus", "2", "--strategy", "ddp"]
    )
    _assert_ordered(ddp["memory"])
    nccl = _item(ddp, "CUDA context + NCCL")
    assert nccl > 1.0  # 0.5 GiB context + 0.75 GiB NCCL buffers (advisor/estimate/constants.py)
    m = ddp["memory"]
    assert m["device"]["gib"] - m["reserved"]["gib"] == pytest.approx(nccl, abs=0.02)
    paged = _estimate_json(["meta-llama/Meta-Llama-3-8B", "--optim", "paged_adamw_8bit"])
    m = paged["memory"]
    _assert_ordered(m)
    assert m["paged_gib"] > 10  # 8-bit states of 8B parameters, in CUDA unified memory
    # torch's allocator never sees paged state: only nvidia-smi's figure holds it
    assert m["device"]["gib"] - m["reserved"]["gib"] == pytest.approx(
        _item(paged, "CUDA context") + m["paged_gib"], abs=0.03
    )


def test_estimate_text_shows_the_three_as_subtotals_and_says_which_the_verdict_uses() -> None:
    run = _cli(["estimate", "meta-llama/Meta-Llama-3-8B", "--method", "lora", "-H", "1xA100-80GB"])
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    data = _estimate_json(["meta-llama/Meta-Llama-3-8B", "--method", "lora", "-H", "1xA100-80GB"])["memory"]

    def row(label: str) -> int:
        return next(i for i, line in enumerate(lines) if line.startswith(label))

    allocated, overhead = row("peak allocated "), row("allocator overhead")
    reserved, context, device = row("peak reserved "), row("CUDA context"), row("peak on the device ")
    assert allocated < overhead < reserved < context < device  # each figure adds the rows above it
    for i, kind in zip((allocated, reserved, device), KINDS, strict=True):
        fig = data[kind]
        assert f"{fig['gib']:.1f}" in lines[i].split()
        assert f"band {fig['low_gib']:.1f} .. {fig['high_gib']:.1f}" in lines[i]
        assert READS[kind] in lines[i]
    assert "the fit verdict uses this" in lines[device]
    assert "verdict" not in lines[allocated] + lines[reserved]
    verdict = next(line for line in lines if line.startswith("Verdict per GPU"))
    assert "(peak on the device vs usable memory)" in verdict and "fits" in verdict


def test_check_json_and_estimate_of_the_run_report_the_three_apart(tmp_path: Path) -> None:
    write_files(tmp_path, RUN)
    run = _cli(["check", ".", "-H", "1xA100-80GB", "--format", "json"], tmp_path)
    assert run.returncode in (0, 1), run.stderr
    summary = json.loads(run.stdout)["runs"][0]
    mem = summary["memory"]
    _assert_ordered(mem)
    assert mem["device"]["gib"] == summary["peak_vram_gib"]
    per_run = _estimate_json([".", "-H", "1xA100-80GB"], tmp_path)["runs"][0]["memory"]
    _assert_ordered(per_run)
    for kind in KINDS:  # the same figures, at the check's 0.1 GiB precision
        assert per_run[kind]["gib"] == pytest.approx(mem[kind]["gib"], abs=0.051)


def test_a_run_without_an_estimate_has_no_memory_figures(tmp_path: Path) -> None:
    write_files(tmp_path, {"launch.sh": "torchrun --nproc_per_node 2 train.py\n", "train.py": "pass\n"})
    run = _cli(["check", ".", "-H", "4xH100-NVL", "--format", "json"], tmp_path)
    summary = json.loads(run.stdout)["runs"][0]
    assert summary["peak_vram_gib"] is None and "memory" not in summary


def _check_on_card(tmp_path: Path, usable_gib: float) -> tuple[int, list[dict[str, Any]], dict[str, Any]]:
    hw = f"name: card\ngpus: {{model: H100-NVL, count: 1, memory_gib: {usable_gib}}}\n"
    write_files(tmp_path, {"hw.yaml": hw})
    run = _cli(["check", ".", "-H", "hw.yaml", "--format", "json"], tmp_path)
    report = json.loads(run.stdout)
    return run.returncode, report["findings"], report["runs"][0]


def test_ga401_compares_the_device_figure_not_the_reserved_one(tmp_path: Path) -> None:
    write_files(tmp_path, RUN)
    mem = _estimate_json([".", "-H", "1xA100-80GB"], tmp_path)["runs"][0]["memory"]
    reserved, device = mem["reserved"]["gib"], mem["device"]["gib"]
    assert device - reserved >= 0.4  # the CUDA context lies between them
    # a card on which max_memory_reserved would fit, but the process does not
    code, findings, summary = _check_on_card(tmp_path, round((reserved + device) / 2, 2))
    assert (
        summary["memory"]["reserved"]["gib"] < summary["gpu_memory_gib"] < summary["memory"]["device"]["gib"]
    )
    ga401 = [f for f in findings if f["rule"] == "GA401"]
    assert code == 1 and len(ga401) == 1
    assert (ga401[0]["file"], ga401[0]["line"]) == ("sft.yaml", 1)
    assert f"needs about {summary['memory']['device']['gib']} GiB per GPU" in ga401[0]["message"]
    # a card with room for the device figure and its margin: no GA401 and no GA404
    code, findings, _ = _check_on_card(tmp_path, round(device * 1.3, 1))
    assert not [f for f in findings if f["rule"] in ("GA401", "GA404")]

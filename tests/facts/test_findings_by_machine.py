"""Findings that depend on the machine: GA403's PCIe wording when the GPUs are joined only by PCIe, and
GA201/GA202 counting only the processes that have a GPU when GA304 finds more processes than GPUs."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import REPO, write_files

TRAIN = {"train.py": "print('train')\n"}


def sh(cmd: str) -> str:
    return "#!/bin/bash\n" + cmd + "\n"


def findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hardware: str) -> list:
    monkeypatch.chdir(tmp_path)
    result = run_check([Path(".")], CheckOptions(hardware=hardware))
    assert not result.errors, result.errors
    return result.findings


# --- GA403: the PCIe wording whenever the GPUs are joined only by PCIe ----------------------------


def test_ga403_pcie_fixture_uses_the_pcie_wording(monkeypatch: pytest.MonkeyPatch) -> None:
    case = REPO / "fixtures" / "rules" / "GA403" / "fail-zero3-small-model-pcie"
    (hit,) = [f for f in findings(case, monkeypatch, "2xH100-PCIe") if f.rule == "GA403"]
    assert "Over PCIe this is the slow way" in hit.message
    nvswitch = REPO / "fixtures" / "rules" / "GA403" / "fail-fsdp-lora-8b-nvswitch"
    (hit,) = [f for f in findings(nvswitch, monkeypatch, "8xH100-SXM") if f.rule == "GA403"]
    assert "PCIe" not in hit.message


# --- GA201/GA202 beside GA304 --------------------------------------------------------------------


def _workers(tmp_path: Path, workers: int) -> None:
    write_files(
        tmp_path,
        {
            "launch.sh": sh("CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node 4 train.py train.yaml"),
            "train.yaml": f"per_device_train_batch_size: 4\ndataloader_num_workers: {workers}\n",
            **TRAIN,
        },
    )


def test_ga201_counts_the_processes_that_have_a_gpu(tmp_path: Path, monkeypatch) -> None:
    _workers(tmp_path, 40)  # 2 x 41 = 82 > 64 cores (4 x 41 would be 164)
    codes = {f.rule: f for f in findings(tmp_path, monkeypatch, "4xH100-NVL")}
    assert "GA304" in codes and "GA201" in codes and "GA202" not in codes  # GA202 defers to GA201
    assert "2 processes per node (the 2 of 4 that have a GPU" in codes["GA201"].message
    assert "82 busy processes" in codes["GA201"].message


def test_ga202_counts_the_processes_that_have_a_gpu(tmp_path: Path, monkeypatch) -> None:
    _workers(tmp_path, 4)
    codes = {f.rule: f for f in findings(tmp_path, monkeypatch, "4xH100-NVL")}
    assert "GA304" in codes and "GA201" not in codes and "GA202" in codes
    assert "x 2 processes" in codes["GA202"].message and "= 8 worker processes" in codes["GA202"].message


def test_ga201_without_a_mismatch_is_unchanged(tmp_path: Path, monkeypatch) -> None:
    write_files(
        tmp_path,
        {
            "launch.sh": "#!/bin/bash\ntorchrun --nproc_per_node 4 train.py train.yaml\n",
            "train.yaml": "output_dir: out\nper_device_train_batch_size: 4\ndataloader_num_workers: 16\n",
            **TRAIN,
        },
    )
    (hit,) = [f for f in findings(tmp_path, monkeypatch, "4xH100-NVL") if f.rule == "GA201"]
    assert hit.message.startswith("4 processes per node x (16 DataLoader workers")

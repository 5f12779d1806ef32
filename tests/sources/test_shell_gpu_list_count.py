"""GPU lists counted in the launch script, and the division by zero an empty one causes, via the CLI.

Upstream form, hand-copied and shortened: hkust-nlp/deita @b279f2c examples/train/sft.sh:7-15
    DEVICES=""  # e.g. 0,1,2,3
    NUMGPUS=$(echo $DEVICES | awk -F',' '{print NF}')
    GRADACC=$(($TOTALBSZ/$NUMGPUS/$BSZPERDEV))
    deepspeed --include localhost:${DEVICES} ... --gradient_accumulation_steps ${GRADACC}
As committed, bash 5 prints "512/0/1: division by 0" at the GRADACC line and leaves it unset (the command is
abandoned, as for a bad substitution), and deepspeed's runner fails on `--include localhost:` (deepspeed
0.12.2 launcher/runner.py:295-296, int('') on an empty slot list)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from advisor.sources.shell.substitution import list_count
from tests.sources.cli_json import TRAIN_FLAGS, check, project

DEITA = """#!/bin/bash
DEVICES="{devices}"  # e.g. 0,1,2,3
NUMGPUS=$(echo $DEVICES | awk -F',' '{{print NF}}')
TOTALBSZ=512
BSZPERDEV=1
GRADACC=$(($TOTALBSZ/$NUMGPUS/$BSZPERDEV))
deepspeed --include localhost:${{DEVICES}} --master_port 29501 train.py \\
    --per_device_train_batch_size ${{BSZPERDEV}} \\
    --gradient_accumulation_steps ${{GRADACC}} \\
    --deepspeed ds.json
"""
DS = (
    '{"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto", '
    '"zero_optimization": {"stage": 2}}\n'
)


def _run(tmp_path: Path, devices: str) -> dict:
    root = project(
        tmp_path, {"sft.sh": DEITA.format(devices=devices), "train.py": TRAIN_FLAGS, "ds.json": DS}
    )
    return check(root, "sft.sh", "-H", "8xH100-SXM")


def test_a_filled_gpu_list_gives_the_count_and_the_accumulation(tmp_path: Path) -> None:
    report = _run(tmp_path, "0,1,2,3")
    assert [f["rule"] for f in report["findings"] if f["severity"] == "error"] == []
    (run,) = report["runs"]
    assert run["world_size"] == 4
    assert run["effective_batch"] == 512  # 1 x (512 / 4 / 1) x 4


def test_an_empty_gpu_list_is_bashs_division_by_zero(tmp_path: Path) -> None:
    report = _run(tmp_path, "")
    errors = [(f["rule"], f["line"]) for f in report["findings"] if f["severity"] == "error"]
    assert errors == [("GA001", 6)]
    assert "division by 0" in report["findings"][0]["message"]
    # --include is written: not "takes every GPU" (GA104), but an empty slot list deepspeed cannot parse
    assert [f for f in report["findings"] if f["rule"] == "GA104"] == []


def test_a_division_under_a_branch_is_not_reported(tmp_path: Path) -> None:
    launch = DEITA.format(devices="").replace(
        "GRADACC=$(($TOTALBSZ/$NUMGPUS/$BSZPERDEV))",
        'if [ -n "$DEVICES" ]; then\n  GRADACC=$(($TOTALBSZ/$NUMGPUS/$BSZPERDEV))\nfi',
    )
    root = project(tmp_path, {"sft.sh": launch, "train.py": TRAIN_FLAGS, "ds.json": DS})
    report = check(root, "sft.sh", "-H", "8xH100-SXM")
    assert [f for f in report["findings"] if f["rule"] == "GA001"] == []


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("echo 0,1,2,3 | awk -F',' '{print NF}'", 4),
        ("echo  | awk -F',' '{print NF}'", 0),
        ("echo 0,1 | awk -F , '{ print NF }'", 2),
        ("echo a b  c | awk '{print NF}'", 3),
        ("echo \"0,1,2\" | tr ',' '\\n' | wc -l", 3),
        ("echo  | tr , '\\n' | wc -l", 1),
        ("echo -n 0,1 | tr , '\\n' | wc -l", 1),
        ("cat gpus.txt | wc -l", None),
        ("echo 0,1 | awk -F',' '{print $1}'", None),
    ],
)
def test_list_count_prints_what_the_tools_print(text: str, count: int | None) -> None:
    assert list_count(text) == count


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("awk") is None, reason="bash/awk missing")
def test_bash_itself_agrees(tmp_path: Path) -> None:
    script = tmp_path / "s.sh"
    script.write_text(
        "D=''\nN=$(echo $D | awk -F',' '{print NF}')\nG=$((512/$N/1))\necho \"[$N][$G]\"\n"
        "echo -n 0,1 | tr , '\\n' | wc -l\n",
        encoding="utf-8",
    )
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=False)
    assert proc.stdout.split() == ["[0][]", "1"]
    assert "division by 0" in proc.stderr

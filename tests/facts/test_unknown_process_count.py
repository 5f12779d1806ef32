"""Judgements when the process count is not written (issue 20 item 13), through the real CLI.

When the launcher starts one process per GPU and the files do not say how many (an unset
`$NPROC_PER_NODE`, a bare `deepspeed`, a standalone DeepSpeed JSON), the findings that depend on the
count are judged on the machine given with -H and say so; without -H nothing is assumed. An assumed
count never makes an error-level finding. The files are hand-written copies of the upstream forms
(the torchrun line of a launch.sh whose caller exports NPROC_PER_NODE; `deepspeed train.py --deepspeed
ds.json`; a ZeRO-3 JSON checked on its own).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import REPO, write_files

ZERO3 = '{"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": "auto"}\n'
# a side effect every process performs (GA601): line 4
TRAIN = "from datasets import load_dataset\n\nds = load_dataset('imdb')\nds.save_to_disk('data/imdb')\n"
UNSET = "#!/bin/bash\ntorchrun --nproc_per_node=$NPROC_PER_NODE train.py --deepspeed ds_z3.json --bf16 True\n"
BARE = "#!/bin/bash\ndeepspeed train.py --deepspeed ds.json --bf16 True\n"


def check(project: Path, *args: str) -> tuple[int, list[dict[str, Any]]]:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(REPO),
        "GPU_ADVISE_CACHE_DIR": str(project.parent / "cache"),
    }
    env.pop("GITHUB_ACTIONS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "advisor.cli", "check", "--format", "json", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)["findings"]


def by_rule(findings: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {f["rule"]: f for f in findings}


def no_error(findings: list[dict[str, Any]]) -> None:
    errors = [f for f in findings if f["severity"] == "error"]
    assert not errors, errors


def project(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "p"
    write_files(root, files)
    return root


# --- torchrun --nproc_per_node=$NPROC_PER_NODE with NPROC_PER_NODE unset -------------------------------


def test_unset_nproc_per_node_is_judged_on_the_gpus_of_the_machine(tmp_path: Path) -> None:
    root = project(tmp_path, {"launch.sh": UNSET, "ds_z3.json": ZERO3, "train.py": TRAIN})
    rc, findings = check(root, "-H", "4xL40S", ".")
    hits = by_rule(findings)
    assert rc == 1
    sharded = hits["GA302"]
    assert (sharded["file"], sharded["line"], sharded["column"]) == ("ds_z3.json", 1, 33)
    assert sharded["severity"] == "warning"
    assert sharded["message"].startswith("ZeRO-3 over 4 GPUs whose slowest link is PCIe")
    assert "judged on the 4 GPUs of 4xL40S, one process per GPU" in sharded["message"]
    assert "$NPROC_PER_NODE is not set in the script" in sharded["message"]
    side = hits["GA601"]
    assert (side["file"], side["line"], side["severity"]) == ("train.py", 4, "warning")
    assert "runs in every process (4 of them, judged on the 4 GPUs of 4xL40S" in side["message"]
    no_error(findings)


def test_unset_nproc_per_node_without_a_machine_assumes_nothing(tmp_path: Path) -> None:
    root = project(tmp_path, {"launch.sh": UNSET, "ds_z3.json": ZERO3, "train.py": TRAIN})
    rc, findings = check(root, ".")
    assert rc == 0
    assert not {"GA302", "GA601"} & set(by_rule(findings))


def test_unset_count_takes_the_gpus_the_script_selects(tmp_path: Path) -> None:
    launch = UNSET.replace("torchrun", "CUDA_VISIBLE_DEVICES=0,1 torchrun")
    root = project(tmp_path, {"launch.sh": launch, "ds_z3.json": ZERO3, "train.py": TRAIN})
    _, findings = check(root, "-H", "4xL40S", ".")
    hits = by_rule(findings)
    assert "ZeRO-3 over 2 GPUs" in hits["GA302"]["message"]
    assert "judged on the 2 GPUs CUDA_VISIBLE_DEVICES selects on 4xL40S" in hits["GA302"]["message"]
    assert "(2 of them, judged on" in hits["GA601"]["message"]


def test_an_assumed_count_makes_no_error(tmp_path: Path) -> None:
    """DeepSpeed's batch triangle holds at 8 processes only: at an assumed 4 it would fail (GA102, an
    error); the count is not written, so no error is raised on the assumption."""
    ds = '{"zero_optimization": {"stage": 3}, "train_batch_size": 64, "train_micro_batch_size_per_gpu": 8}\n'
    root = project(tmp_path, {"launch.sh": UNSET, "ds_z3.json": ds, "train.py": TRAIN})
    _, findings = check(root, "-H", "4xL40S", ".")
    no_error(findings)
    assert "GA302" in by_rule(findings)


def test_a_written_count_is_not_called_assumed(tmp_path: Path) -> None:
    launch = UNSET.replace("$NPROC_PER_NODE", "4")
    root = project(tmp_path, {"launch.sh": launch, "ds_z3.json": ZERO3, "train.py": TRAIN})
    _, findings = check(root, "-H", "4xL40S", ".")
    hits = by_rule(findings)
    assert "judged on" not in hits["GA302"]["message"]
    assert "runs in every process (4 of them):" in hits["GA601"]["message"]


# --- a bare `deepspeed train.py --deepspeed ds.json` ------------------------------------------------------


def test_bare_deepspeed_says_the_count_follows_the_machine(tmp_path: Path) -> None:
    root = project(tmp_path, {"launch.sh": BARE, "ds.json": ZERO3, "train.py": TRAIN})
    rc, findings = check(root, "-H", "4xL40S", ".")
    hits = by_rule(findings)
    assert rc == 1
    assert "judged on the 4 GPUs of 4xL40S" in hits["GA302"]["message"]
    assert (
        "the deepspeed launcher without --num_gpus or --include takes every GPU" in hits["GA302"]["message"]
    )
    assert "(4 of them, judged on the 4 GPUs of 4xL40S" in hits["GA601"]["message"]
    no_error(findings)


def test_bare_deepspeed_without_a_machine_keeps_todays_findings(tmp_path: Path) -> None:
    root = project(tmp_path, {"launch.sh": BARE, "ds.json": ZERO3, "train.py": TRAIN})
    _, findings = check(root, ".")
    hits = by_rule(findings)
    assert "GA302" not in hits
    assert hits["GA601"]["message"].startswith("ds.save_to_disk() runs in every process: ")


# --- a standalone ZeRO-3 JSON --------------------------------------------------------------------------


def test_standalone_zero3_json_is_judged_on_the_machine(tmp_path: Path) -> None:
    root = project(tmp_path, {"ds.json": ZERO3})
    rc, findings = check(root, "-H", "4xL40S", "ds.json")
    hits = by_rule(findings)
    assert rc == 1
    sharded = hits["GA302"]
    assert (sharded["file"], sharded["line"], sharded["column"], sharded["severity"]) == (
        "ds.json",
        1,
        33,
        "warning",
    )
    assert "judged on the 4 GPUs of 4xL40S, one process per GPU" in sharded["message"]
    no_error(findings)


def test_standalone_zero3_json_without_a_machine_or_over_nvlink_is_quiet(tmp_path: Path) -> None:
    root = project(tmp_path, {"ds.json": ZERO3})
    for args in ((), ("-H", "8xH100-SXM"), ("-H", "1xL4")):
        rc, findings = check(root, *args, "ds.json")
        assert rc == 0, (args, findings)
        assert "GA302" not in by_rule(findings), args


def test_standalone_zero2_json_is_not_reported(tmp_path: Path) -> None:
    root = project(tmp_path, {"ds.json": ZERO3.replace('"stage": 3', '"stage": 2')})
    _, findings = check(root, "-H", "4xL40S", "ds.json")
    assert "GA302" not in by_rule(findings)


# --- the other link rules judged on the same assumption say so too ------------------------------------


def test_tensor_parallel_json_on_its_own_says_the_count_is_assumed(tmp_path: Path) -> None:
    ds = '{"zero_optimization": {"stage": 2}, "tensor_parallel": {"autotp_size": 2}}\n'
    root = project(tmp_path, {"ds.json": ds})
    _, findings = check(root, "-H", "4xL40S", "ds.json")
    tp = by_rule(findings)["GA306"]
    assert (tp["file"], tp["line"], tp["severity"]) == ("ds.json", 1, "warning")
    assert "TP groups 0,1 and 2,3" in tp["message"]
    assert "judged on the 4 GPUs of 4xL40S, one process per GPU" in tp["message"]


def test_selected_gpus_across_nvlink_pairs_with_an_unset_count(tmp_path: Path) -> None:
    launch = "#!/bin/bash\nCUDA_VISIBLE_DEVICES=0,2 torchrun --nproc_per_node=$NPROC_PER_NODE train.py\n"
    root = project(tmp_path, {"launch.sh": launch, "train.py": "print('train')\n"})
    _, findings = check(root, "-H", "4xA100-80GB-NVL-pairs", ".")
    placed = by_rule(findings)["GA301"]
    assert (placed["file"], placed["line"], placed["severity"]) == ("launch.sh", 2, "warning")
    assert "judged on the 2 GPUs CUDA_VISIBLE_DEVICES selects on 4xA100-80GB-NVL-pairs" in placed["message"]
    no_error(findings)

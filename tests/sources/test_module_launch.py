"""`-m module` launches whose module is a file of the project (field trial B1/B2).

The form is OpenRLHF @cd7a434f (the old flags; @3c3be62 launches the same way):
examples/scripts/train_sft.sh builds `openrlhf.cli.train_sft --train_batch_size 256
--micro_train_batch_size 2 ...` in a heredoc and runs `deepspeed --module $training_commands`;
openrlhf/cli/train_sft.py parses its flags with argparse (`--micro_train_batch_size` default 8 "batch
size per GPU", `--train_batch_size` default 128 "Global training batch size"). The module's file was
never read, so TrainingArguments' defaults were applied by flag name: effective batch 64 (8 x 1 x 8).
The files below are hand-written excerpts of those forms.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from advisor.facts import run_names
from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import git_project

TRAIN_SFT = """\
import argparse


def train(args):
    pass


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--pretrain", type=str, default=None)
    parser.add_argument("--micro_train_batch_size", type=int, default=8, help="batch size per GPU")
    parser.add_argument("--train_batch_size", type=int, default=128, help="Global training batch size")
    parser.add_argument("--zero_stage", type=int, default=2, help="DeepSpeed ZeRO stage")
    parser.add_argument("--max_epochs", type=int, default=2)
    parser.add_argument("--learning_rate", type=float, default=5e-6)
    parser.add_argument("--gradient_checkpointing", action="store_true", default=False)
    parser.add_argument("--bf16", action="store_true", default=False)
    args = parser.parse_args()
    train(args)
"""

TRAIN_SFT_SH = """\
set -x

read -r -d '' training_commands <<EOF
openrlhf.cli.train_sft \\
   --max_len 2048 \\
   --train_batch_size 128 \\
   --micro_train_batch_size 2 \\
   --pretrain meta-llama/Meta-Llama-3-8B \\
   --zero_stage 2 \\
   --max_epochs 1 \\
   --bf16 \\
   --gradient_checkpointing
EOF

if [[ ${1} != "slurm" ]]; then
    deepspeed --num_gpus 8 --module $training_commands
fi
"""

PACKAGE = {
    "openrlhf/__init__.py": "",
    "openrlhf/cli/__init__.py": "",
    "openrlhf/cli/train_sft.py": TRAIN_SFT,
}


def _check(launch: str) -> tuple[Any, Any]:
    result = run_check([Path("examples/scripts")], CheckOptions())
    assert not result.errors, result.errors
    (plan,) = [p for p in result.plans if p.name.endswith(launch)]
    (summary,) = [r for r in result.runs if r.name.endswith(launch)]
    assert not [f for f in result.findings if f.rule in {"GA001", "GA004", "GA006"}], result.findings
    return plan, summary


def test_deepspeed_module_of_the_project_is_read_as_the_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git_project(tmp_path, {**PACKAGE, "examples/scripts/train_sft.sh": TRAIN_SFT_SH}, monkeypatch)
    plan, summary = _check("train_sft.sh")
    assert plan.spec.script is not None
    assert plan.spec.script.path.resolve() == (tmp_path / "openrlhf/cli/train_sft.py").resolve()
    # before: 64 (8 per device x 1 accumulation x 8 data-parallel processes), TrainingArguments' defaults
    # for a script that never builds them; now the script's own parser is known to be argparse, and
    # the batch is unknown rather than invented
    assert summary.world_size == 8
    assert summary.effective_batch is None
    names = run_names(plan)
    assert names["training"].reads_training_arguments is False
    assert "its own" in (names["batch"].value("effective_batch").unknown or "")
    # the script's own argparse default stands in the plan where its flag is not written
    assert names["training"].learning_rate == pytest.approx(5e-6)


@pytest.mark.parametrize(
    "launch",
    [
        "python -m openrlhf.cli.train_sft --micro_train_batch_size 2",
        "torchrun --nproc_per_node 8 -m openrlhf.cli.train_sft --micro_train_batch_size 2",
        "accelerate launch --num_processes 8 -m openrlhf.cli.train_sft --micro_train_batch_size 2",
    ],
)
def test_other_launchers_module_flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, launch: str) -> None:
    git_project(tmp_path, {**PACKAGE, "examples/scripts/run.sh": launch + "\n"}, monkeypatch)
    plan, summary = _check("run.sh")
    assert plan.spec.script is not None and plan.spec.script.path.name == "train_sft.py"
    assert summary.effective_batch is None  # not TrainingArguments' 8 per device


def test_a_package_runs_its_main(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {
        "trainer/__init__.py": "",
        "trainer/__main__.py": TRAIN_SFT,
        "examples/scripts/run.sh": "torchrun --nproc_per_node 2 -m trainer --micro_train_batch_size 2\n",
    }
    git_project(tmp_path, files, monkeypatch)
    plan, _ = _check("run.sh")
    assert plan.spec.script is not None and plan.spec.script.path.name == "__main__.py"


@pytest.mark.parametrize(
    "launch",
    [
        "python -m trl sft --per_device_train_batch_size 2 --output_dir out",
        "torchrun --nproc_per_node 2 -m swift.cli.sft --per_device_train_batch_size 2",
        "deepspeed --module notinproject.train --per_device_train_batch_size 2",
    ],
)
def test_an_installed_module_stays_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, launch: str
) -> None:
    git_project(tmp_path, {"examples/scripts/run.sh": launch + "\n"}, monkeypatch)
    plan, _ = _check("run.sh")  # and no GA004 "does not exist" for a module that is no file here
    assert plan.spec.script is None


def test_a_module_linked_out_of_the_project_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside, project = tmp_path / "elsewhere", tmp_path / "project"
    outside.mkdir()
    project.mkdir()
    (outside / "train_sft.py").write_text(TRAIN_SFT)
    launch = "deepspeed --module openrlhf.cli.train_sft --bf16\n"
    git_project(project, {"openrlhf/cli/__init__.py": "", "examples/scripts/run.sh": launch}, monkeypatch)
    os.symlink(outside / "train_sft.py", project / "openrlhf/cli/train_sft.py")
    result = run_check([Path("examples/scripts")], CheckOptions())
    (plan,) = result.plans
    assert plan.spec.script is None
    assert [f.rule for f in result.findings if f.rule == "GA006"] == ["GA006"]

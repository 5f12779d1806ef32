"""RunPlan: precedence launch flags > config files > defaults; the losing value is kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.facts import run_names
from advisor.pipeline.check import CheckOptions, build_plans
from advisor.sources.settings import Settings
from tests.conftest import write_files

PROJECT = {
    "launch.sh": (
        "#!/bin/bash\n"
        "export CUDA_VISIBLE_DEVICES=0,1\n"
        "accelerate launch --config_file acc.yaml --num_processes 2 \\\n"
        "    train.py args.yaml --gradient_accumulation_steps 4 --bf16 True\n"
    ),
    "acc.yaml": (
        "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\nnum_processes: 8\n"
        "deepspeed_config:\n  deepspeed_config_file: ds.json\n"
    ),
    "ds.json": '{\n  "train_micro_batch_size_per_gpu": "auto",\n  "zero_optimization": {"stage": 3}\n}\n',
    "args.yaml": "output_dir: out\nper_device_train_batch_size: 2\ngradient_accumulation_steps: 8\n",
    "train.py": "print('train')\n",
}


@pytest.fixture
def plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    write_files(tmp_path, PROJECT)
    monkeypatch.chdir(tmp_path)
    plans, _ = build_plans([Path(".")], CheckOptions(hardware="8xH100-SXM"), Settings())
    assert len(plans) == 1
    return plans[0]


def test_one_run_pulls_in_every_file_it_names(plan) -> None:
    names = sorted(d.path.name for d in plan.spec.documents)
    assert names == ["acc.yaml", "args.yaml", "ds.json", "launch.sh"]
    assert plan.spec.script is not None and plan.spec.script.path.name == "train.py"


def test_launch_flag_beats_the_file_and_keeps_the_loser(plan) -> None:
    accum = plan.training.entry("gradient_accumulation_steps")
    assert accum.value == 4
    assert (accum.origin.file.name, accum.origin.line) == ("launch.sh", 4)
    assert [(r.file.name, r.line, r.col) for r in accum.related] == [("args.yaml", 3, 30)]
    nproc = plan.accelerate.entry("num_processes")
    assert nproc.value == 2 and nproc.related[0].file.name == "acc.yaml"


def test_file_values_keep_their_positions_and_defaults_say_so(plan) -> None:
    micro = plan.training.entry("per_device_train_batch_size")
    assert (micro.value, micro.origin.line, micro.origin.col) == (2, 2, 30)
    workers = plan.training.entry("dataloader_num_workers")
    assert workers.value == 0 and workers.origin is None and workers.source == "default"
    stage = plan.deepspeed.lookup("zero_optimization.stage")
    assert (stage.value, stage.origin.file.name, stage.origin.line) == (3, "ds.json", 3)


def test_facts_follow_the_merged_plan(plan) -> None:
    names = run_names(plan)
    assert names["batch"].world_size == 2
    assert names["batch"].effective_batch == 2 * 4 * 2
    assert names["run"].strategy == "zero3"
    assert names["placement"].gpu_ids == [0, 1]
    assert names["env"].CUDA_VISIBLE_DEVICES == "0,1"


def test_unresolvable_values_are_unknown_not_guessed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_files(
        tmp_path,
        {
            "run.sh": "torchrun --nproc_per_node $(nvidia-smi -L | wc -l) train.py "
            "--per_device_train_batch_size 4\n",
            "train.py": "pass\n",
        },
    )
    monkeypatch.chdir(tmp_path)
    plans, _ = build_plans([Path(".")], CheckOptions(), Settings())
    names = run_names(plans[0])
    world = names["batch"].entry("world_size")
    assert world.value is None and "command substitution" in world.unknown
    assert names["batch"].effective_batch is None

"""A DeepSpeed config built in the training script (issue 20 item 12): read when literal enough, else said.

Upstream form: microsoft/DeepSpeedExamples applications/DeepSpeed-Chat at the release commit
e468799f19423d7a045c726ff89a53086bc379fa (Apache-2.0): training/utils/ds_utils.py get_train_ds_config()
returns a dict literal built from module constants and its parameters; step1_supervised_finetuning/main.py
calls it with the flags (`offload=args.offload, stage=args.zero_stage`, :183-184), sets the micro batch from
`--per_device_train_batch_size` (:185-186) and hands it to `deepspeed.initialize(..., config=ds_config)`
(:273-278). The later dschat/utils/ds_utils.py (commit 83757d9c) keys the precision block by a name the
`dtype` flag picks in an if/elif (`data_type: dtype_config`): a computed key, so that dict is not read.
Below are hand-written copies of those lines, the rest trimmed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, build_plans, run_check
from advisor.sources.settings import Settings
from tests.conftest import write_files

DS_UTILS = """\
# DeepSpeed Team
GLOBAL_BATCH_SIZE = 32
MICRO_BATCH_SIZE = 4


def get_train_ds_config(offload,
                        stage=2,
                        enable_hybrid_engine=False,
                        inference_tp_size=1,
                        release_inference_cache=False,
                        pin_parameters=True,
                        tp_gather_partition_size=8):

    device = "cpu" if offload else "none"
    zero_opt_dict = {
        "stage": stage,
        "offload_param": {
            "device": device
        },
        "offload_optimizer": {
            "device": device
        },
        "stage3_param_persistence_threshold": 1e4,
        "stage3_max_live_parameters": 3e7,
        "stage3_prefetch_bucket_size": 3e7,
        "memory_efficient_linear": False
    }
    return {
        "train_batch_size": GLOBAL_BATCH_SIZE,
        "train_micro_batch_size_per_gpu": MICRO_BATCH_SIZE,
        "steps_per_print": 10,
        "zero_optimization": zero_opt_dict,
        "fp16": {
            "enabled": True,
            "loss_scale_window": 100
        },
        "gradient_clipping": 1.0,
        "prescale_gradients": False,
        "wall_clock_breakdown": False,
        "hybrid_engine": {
            "enabled": enable_hybrid_engine,
            "inference_tp_size": inference_tp_size,
            "release_inference_cache": release_inference_cache,
            "pin_parameters": pin_parameters,
            "tp_gather_partition_size": tp_gather_partition_size,
        }
    }
"""

MAIN = """\
import argparse
import os
import sys

import torch
from transformers import AutoModelForCausalLM

import deepspeed

sys.path.append(
    os.path.abspath(os.path.join(os.path.dirname(__file__), os.path.pardir)))
from utils.ds_utils import get_train_ds_config


def parse_args():
    parser = argparse.ArgumentParser(
        description="Finetune a transformers model on a causal language modeling task")
    parser.add_argument("--model_name_or_path", type=str, required=True)
    parser.add_argument("--per_device_train_batch_size", type=int, default=16)
    parser.add_argument("--gradient_accumulation_steps", type=int, default=1)
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument('--offload', action='store_true', help='Enable ZeRO Offload techniques.')
    parser.add_argument('--zero_stage', type=int, default=0)
    parser = deepspeed.add_config_arguments(parser)
    args = parser.parse_args()
    return args


def main():
    args = parse_args()

    ds_config = get_train_ds_config(offload=args.offload,
                                    stage=args.zero_stage)
    ds_config[
        'train_micro_batch_size_per_gpu'] = args.per_device_train_batch_size
    ds_config[
        'train_batch_size'] = args.per_device_train_batch_size * torch.distributed.get_world_size(
        ) * args.gradient_accumulation_steps

    model = AutoModelForCausalLM.from_pretrained(args.model_name_or_path)
    model, optimizer, _, lr_scheduler = deepspeed.initialize(
        model=model,
        args=args,
        config=ds_config,
        dist_init_required=True)


if __name__ == "__main__":
    main()
"""

# training_scripts/single_node/run_1.3b.sh at the same commit, the stage written down
RUN = """\
deepspeed main.py \\
   --model_name_or_path facebook/opt-1.3b \\
   --per_device_train_batch_size 8 \\
   --gradient_accumulation_steps 1 \\
   --zero_stage 3 \\
   --deepspeed \\
   --output_dir out
"""

STEP1 = "training/step1_supervised_finetuning"


def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]) -> None:
    (tmp_path / ".git").mkdir()
    write_files(tmp_path, files)
    monkeypatch.chdir(tmp_path)


def _dschat(utils: str = DS_UTILS, run: str = RUN) -> dict[str, str]:
    return {"training/utils/ds_utils.py": utils, f"{STEP1}/main.py": MAIN, f"{STEP1}/run.sh": run}


def _plan():  # type: ignore[no-untyped-def]
    plans, _ = build_plans([Path(".")], CheckOptions(hardware="4xH100-NVL"), Settings())
    (plan,) = plans
    return plan


def test_deepspeed_chat_helper_dict_is_read_like_a_json(tmp_path, monkeypatch):
    _project(tmp_path, monkeypatch, _dschat())
    ds = _plan().deepspeed
    stage = ds.known_value("zero_optimization.stage")
    assert stage.value == 3  # stage=args.zero_stage, the launch's --zero_stage 3
    assert (Path(stage.origin.file).name, stage.origin.line) == ("main.py", 33)
    micro = ds.known_value("train_micro_batch_size_per_gpu")
    assert micro.value == 8  # set after the call from --per_device_train_batch_size, not MICRO_BATCH_SIZE
    fp16 = ds.known_value("fp16.enabled")
    assert fp16.value is True and Path(fp16.origin.file).name == "ds_utils.py" and fp16.origin.line == 34
    # --offload not given: store_true's False picks "none"
    assert ds.known_value("zero_optimization.offload_optimizer.device").value == "none"
    assert ds.known_value("steps_per_print").value == 10
    # train_batch_size multiplies by the world size at run time: kept, but not known
    assert ds.known_value("train_batch_size") is None and ds.entry("train_batch_size") is not None

    result = run_check([Path(".")], CheckOptions(hardware="4xH100-NVL"))
    assert not result.errors, result.errors
    found = {(f.rule, Path(str(f.location.file)).name, f.location.line) for f in result.findings}
    assert ("GA502", "ds_utils.py", 34) in found  # fp16 on H100, where the dict says so
    assert ("GA302", "main.py", 33) in found  # ZeRO-3 over the machine's PCIe pairs, at the stage's flag
    assert not any(rule == "GA307" for rule, _, _ in found)
    (run,) = result.runs
    assert run.strategy == "zero3"


DSCHAT_DTYPE = (
    DS_UTILS.replace(
        "def get_train_ds_config(offload,\n",
        "def get_train_ds_config(offload,\n                        dtype,\n",
    )
    .replace(
        '    device = "cpu" if offload else "none"\n',
        '    device = "cpu" if offload else "none"\n'
        '    if dtype == "fp16":\n'
        '        data_type = "fp16"\n'
        '        dtype_config = {"enabled": True, "loss_scale_window": 100}\n'
        '    elif dtype == "bf16":\n'
        '        data_type = "bfloat16"\n'
        '        dtype_config = {"enabled": True}\n',
    )
    .replace(
        '        "fp16": {\n            "enabled": True,\n            "loss_scale_window": 100\n        },\n',
        "        data_type: dtype_config,\n",
    )
)


def test_computed_key_leaves_it_unread_and_says_so(tmp_path, monkeypatch):
    main = MAIN.replace(
        "offload=args.offload,\n",
        "offload=args.offload,\n                                    dtype=args.dtype,\n",
    )
    files = _dschat(DSCHAT_DTYPE, RUN.replace("deepspeed main.py", "deepspeed --num_gpus 2 main.py"))
    files[f"{STEP1}/main.py"] = main.replace(
        "    parser.add_argument('--zero_stage', type=int, default=0)\n",
        "    parser.add_argument('--zero_stage', type=int, default=0)\n"
        "    parser.add_argument('--dtype', type=str, default='fp16', choices=['fp16', 'bf16'])\n",
    )
    _project(tmp_path, monkeypatch, files)
    plan = _plan()
    assert not plan.deepspeed.known_value("zero_optimization.stage")  # nothing of it read
    result = run_check([Path(".")], CheckOptions(hardware="4xH100-NVL"))
    assert not result.errors, result.errors
    notes = [f for f in result.findings if f.rule == "GA307"]
    assert [(Path(str(f.location.file)).name, f.location.line, f.severity) for f in notes] == [
        ("main.py", 43, "info")  # the deepspeed.initialize call
    ]
    assert "ds_utils.py" in notes[0].message  # where the computed key is
    # what the launch shows is still there: 2 processes, 8 per device, the script's --zero_stage 3
    (run,) = result.runs
    assert run.world_size == 2 and run.effective_batch == 16
    assert run.strategy == "zero3"


HF_SCRIPT = """\
from transformers import Trainer, TrainingArguments

ZERO = 2
ds_config = {
    "train_micro_batch_size_per_gpu": "auto",
    "gradient_accumulation_steps": "auto",
    "bf16": {"enabled": "auto"},
    "zero_optimization": {"stage": ZERO, "offload_optimizer": {"device": "cpu"}},
}
args = TrainingArguments(output_dir="out", per_device_train_batch_size=2, bf16=True, deepspeed=ds_config)
Trainer(model=None, args=args).train()
"""


def test_training_arguments_dict_and_path(tmp_path, monkeypatch):
    _project(
        tmp_path,
        monkeypatch,
        {"train.py": HF_SCRIPT, "run.sh": "torchrun --nproc_per_node 2 train.py\n"},
    )
    ds = _plan().deepspeed
    assert ds.known_value("zero_optimization.stage").value == 2  # a module constant bound once
    assert ds.known_value("zero_optimization.offload_optimizer.device").value == "cpu"
    # a path is the run's file, not a config built in code: nothing read, nothing said
    (tmp_path / "train.py").write_text(HF_SCRIPT.replace("deepspeed=ds_config", 'deepspeed="ds.json"'))
    assert not _plan().deepspeed
    result = run_check([Path(".")], CheckOptions())
    assert not [f for f in result.findings if f.rule == "GA307"]


def test_config_loaded_from_a_file_in_code_is_said_unread(tmp_path, monkeypatch):
    script = HF_SCRIPT.replace(
        "ds_config = {", "import json\n\nds_config = json.load(open('configs/ds.json'))\n_unused = {"
    )
    _project(tmp_path, monkeypatch, {"train.py": script, "run.sh": "torchrun --nproc_per_node 2 train.py\n"})
    assert not _plan().deepspeed
    result = run_check([Path(".")], CheckOptions())
    (note,) = [f for f in result.findings if f.rule == "GA307"]
    assert "json.load" in note.message and note.severity == "info"


def test_a_path_handed_through_a_parameter_is_not_a_code_config(tmp_path, monkeypatch):
    """databrickslabs/dolly training/trainer.py:241 passes its click option `deepspeed` (a JSON path) on as
    `TrainingArguments(..., deepspeed=deepspeed)`: a path, the run's file, nothing built in code."""
    script = (
        "import click\nfrom transformers import Trainer, TrainingArguments\n\n\n"
        "def train(*, deepspeed, local_output_dir):\n"
        "    args = TrainingArguments(output_dir=local_output_dir, deepspeed=deepspeed)\n"
        "    Trainer(model=None, args=args).train()\n\n\n"
        "@click.command()\n@click.option('--deepspeed', type=str, default=None)\n"
        "@click.option('--local-output-dir', type=str, required=True)\n"
        "def main(**kwargs):\n    train(**kwargs)\n\n\nmain()\n"
    )
    _project(tmp_path, monkeypatch, {"train.py": script, "run.sh": "deepspeed --num_gpus 2 train.py\n"})
    result = run_check([Path(".")], CheckOptions())
    assert not [f for f in result.findings if f.rule == "GA307"]

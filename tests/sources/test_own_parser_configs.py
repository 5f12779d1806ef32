"""A config written for a launcher's own parser is not judged by TrainingArguments' or TRL's key tables.
ms-swift reads `swift sft cfg.yaml` with its own argument classes (4.6.0.dev0 swift/cli/main.py, its
arguments/base_args/*.py), whose `model`, `tuner_type`, `dataset`, `system` and `model_author` no TRL class
has: a field trial on modelscope/ms-swift found 16 GA002 errors on its examples/yaml/deepspeed/sft.yaml and
sft.json, and a GA004 error on `"deepspeed": "zero2"`, a preset ms-swift ships. The files below are hand-
written cuts of the form of those examples."""

from __future__ import annotations

from pathlib import Path

from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import git_project

SWIFT_YAML = """\
model: Qwen/Qwen2.5-7B-Instruct
torch_dtype: bfloat16
tuner_type: lora
lora_rank: 8
target_modules: all-linear
dataset:
  - 'AI-ModelScope/alpaca-gpt4-data-en#500'
split_dataset_ratio: 0.0
max_length: 2048
system: 'You are a helpful assistant.'
model_author: swift
num_train_epochs: 1
per_device_train_batch_size: 1
per_device_eval_batch_size: 1
learning_rate: 1e-4
gradient_accumulation_steps: 8
eval_steps: 50
save_steps: 50
save_total_limit: 2
logging_steps: 5
output_dir: output
dataloader_num_workers: 4
dataset_num_proc: 4
deepspeed: zero2
"""
LAUNCH = "NPROC_PER_NODE=2 \\\nCUDA_VISIBLE_DEVICES=0,1 \\\nswift sft examples/sft.yaml\n"
TRL_RECIPE = """\
model_name_or_path: Qwen/Qwen2.5-0.5B
use_peft: true
lora_r: 8
learning_rate: 1.0e-5
per_device_train_batch_size: 2
gradient_accumulation_steps: 4
lora_rankk: 8
output_dir: out
"""


def _codes(result) -> list[tuple[str, str, str]]:
    return [(f.rule, f.severity, Path(f.location.file).name) for f in result.findings]


def test_a_config_swift_sft_reads_gets_no_key_findings(tmp_path, monkeypatch):
    git_project(tmp_path, {"examples/sft.yaml": SWIFT_YAML, "examples/sft.sh": LAUNCH}, monkeypatch)
    result = run_check([Path(".")], CheckOptions(hardware="8xA100-SXM-80GB"))
    assert not result.errors, result.errors
    assert not [c for c in _codes(result) if c[0] in {"GA002", "GA004", "GA005"}], _codes(result)


def test_a_swift_config_alone_is_known_by_its_own_keys(tmp_path, monkeypatch):
    git_project(tmp_path, {"examples/sft.yaml": SWIFT_YAML}, monkeypatch)
    result = run_check([Path(".")], CheckOptions(hardware="8xA100-SXM-80GB"))
    assert not result.errors, result.errors
    assert not [c for c in _codes(result) if c[1] == "error"], _codes(result)


def test_a_trl_recipe_keeps_its_key_check(tmp_path, monkeypatch):
    git_project(tmp_path, {"recipe.yaml": TRL_RECIPE}, monkeypatch)
    result = run_check([Path(".")], CheckOptions(hardware="8xA100-SXM-80GB"))
    assert ("GA002", "error", "recipe.yaml") in _codes(result)

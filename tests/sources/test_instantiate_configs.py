"""Configs that build objects from their sections (torchtune's `_component_`, Hydra's `_target_`) are not
TrainingArguments files, though they share key names: nothing here judges or estimates them. The recipe
below is a hand-written cut of the form of pytorch/torchtune recipes/configs/llama3_1/8B_lora.yaml."""

from __future__ import annotations

from pathlib import Path

from advisor.pipeline.check import CheckOptions, run_check
from advisor.sources.classify import classify_mapping
from tests.conftest import git_project

TORCHTUNE = {
    "output_dir": "/tmp/torchtune/llama3_1_8B/lora",
    "model": {"_component_": "torchtune.models.llama3_1.lora_llama3_1_8b", "lora_rank": 8},
    "optimizer": {"_component_": "torch.optim.AdamW", "lr": 3e-4},
    "batch_size": 2,
    "epochs": 1,
    "gradient_accumulation_steps": 8,
    "dtype": "bf16",
}
RECIPE = """\
output_dir: /tmp/torchtune/llama3_1_8B/lora
model:
  _component_: torchtune.models.llama3_1.lora_llama3_1_8b
  lora_rank: 8
optimizer:
  _component_: torch.optim.AdamW
  lr: 3e-4
batch_size: 2
epochs: 1
gradient_accumulation_steps: 8
optim: not_an_hf_optimizer
dtype: bf16
"""


def test_torchtune_and_hydra_sections_are_not_training_arguments():
    assert classify_mapping(TORCHTUNE, "yaml") == "unknown"
    hydra = {"output_dir": "out", "learning_rate": 1e-5, "trainer": {"_target_": "my.Trainer"}}
    assert classify_mapping(hydra, "yaml") == "unknown"


def test_a_nested_mapping_without_them_is_still_training_arguments():
    plain = {
        "output_dir": "out",
        "learning_rate": 1e-5,
        "gradient_checkpointing_kwargs": {"use_reentrant": False},
    }
    assert classify_mapping(plain, "yaml") == "training_args"


def test_a_torchtune_recipe_is_not_checked(tmp_path, monkeypatch):
    git_project(tmp_path, {"recipes/configs/8B_lora.yaml": RECIPE}, monkeypatch)
    result = run_check([Path(".")], CheckOptions(hardware="8xA100-SXM-80GB"))
    assert not result.errors, result.errors
    assert (result.runs, result.findings) == ([], [])  # before: one run, estimated as an HF file

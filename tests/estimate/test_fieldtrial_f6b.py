"""Field-trial regression (2026-12-01, C10): GA402 and GA403 gave contradicting advice for one run, and
GA403 was reported in the DeepSpeed config that several recipes share.

The project is hand-written in the form of hiyouga/LLaMA-Factory @ff6d4d12
examples/train_lora/qwen3_lora_sft_ds3.yaml (a llamafactory-cli recipe whose `deepspeed:` key names
examples/deepspeed/ds_z3_config.json, a ZeRO-3 config with "auto" batch keys), cut down, with a second
recipe sharing the same ZeRO-3 file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import write_files

DS_Z3 = """\
{
  "train_batch_size": "auto",
  "train_micro_batch_size_per_gpu": "auto",
  "gradient_accumulation_steps": "auto",
  "bf16": {
    "enabled": "auto"
  },
  "zero_optimization": {
    "stage": 3,
    "overlap_comm": false
  }
}
"""
RECIPE = """\
### model
model_name_or_path: Qwen/Qwen3-4B-Instruct-2507

### method
stage: sft
do_train: true
finetuning_type: lora
lora_rank: 8
lora_target: all
deepspeed: examples/deepspeed/ds_z3_config.json

### dataset
dataset: identity,alpaca_en_demo
template: qwen3_nothink
cutoff_len: {cutoff}
{max_samples}
### train
output_dir: saves/qwen3-4b/lora/sft
per_device_train_batch_size: 1
gradient_accumulation_steps: 2
learning_rate: 1.0e-4
num_train_epochs: 3.0
bf16: true
"""
RECIPES = ("examples/train_lora/qwen3_lora_sft_ds3.yaml", "examples/train_lora/qwen3_lora_sft_ds3_short.yaml")
DEEPSPEED_LINE = 10  # `deepspeed:` in RECIPE
STAGE_LINE = 9  # "stage": 3 in DS_Z3


def _project(tmp_path: Path, *, max_samples: str, settings: str = "") -> None:
    files = {"examples/deepspeed/ds_z3_config.json": DS_Z3}
    for path, cutoff in zip(RECIPES, (2048, 1024), strict=True):
        files[path] = RECIPE.format(cutoff=cutoff, max_samples=max_samples)
    if settings:
        files[".gpu-advise.toml"] = settings
    (tmp_path / ".git").mkdir()
    write_files(tmp_path, files)


def _findings(rule: str) -> list:
    result = run_check([Path(".")], CheckOptions(hardware="8xA100-SXM-80GB"))
    assert not result.errors
    return [f for f in result.findings if f.rule == rule]


@pytest.fixture(autouse=True)
def _cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_a_short_run_that_fits_on_one_gpu_gets_one_gpu_not_ddp(tmp_path: Path) -> None:
    # max_samples 1000 x 2 datasets x 3 epochs: well under an hour on one A100 (GA402)
    _project(tmp_path, max_samples="max_samples: 1000\n")
    assert sorted(str(f.location.file) for f in _findings("GA402")) == sorted(RECIPES)
    assert _findings("GA403") == []  # before: "use DDP on 8 GPUs" as well, at ds_z3_config.json:19


def test_sharding_unneeded_is_reported_at_each_recipes_deepspeed_key(tmp_path: Path) -> None:
    # two million samples: days on one GPU, so GA402 does not hold and GA403's advice stands
    settings = "".join(f'[[runs]]\npath = "{r}"\ndataset-samples = 2000000\n\n' for r in RECIPES)
    _project(tmp_path, max_samples="", settings=settings)
    assert _findings("GA402") == []
    found = _findings("GA403")
    assert sorted(str(f.location.file) for f in found) == sorted(RECIPES)  # before: twice in the shared file
    for f in found:
        assert (f.location.line, f.location.col) == (DEEPSPEED_LINE, 12)
        assert [(str(r.file), r.line) for r in f.related] == [
            ("examples/deepspeed/ds_z3_config.json", STAGE_LINE)
        ]
        assert f.message.startswith("ZeRO-3 on 8 GPUs, but plain DDP fits")


def test_a_deepspeed_flag_in_a_launch_script_is_where_the_run_names_its_strategy(tmp_path: Path) -> None:
    # the HF form (`--deepspeed ds.json`, transformers TrainingArguments.deepspeed), a long run
    (tmp_path / ".git").mkdir()
    write_files(
        tmp_path,
        {
            "ds.json": DS_Z3,
            "train.py": "print('train')\n",
            "run.sh": "#!/bin/bash\ntorchrun --nproc_per_node 8 train.py \\\n"
            "  --model_name_or_path Qwen/Qwen2.5-0.5B --bf16 True --per_device_train_batch_size 4 \\\n"
            "  --deepspeed ds.json --max_steps 100000 --output_dir out\n",
        },
    )
    (found,) = _findings("GA403")
    assert (str(found.location.file), found.location.line, found.location.col) == ("run.sh", 4, 15)
    assert [(str(r.file), r.line) for r in found.related] == [("ds.json", STAGE_LINE)]

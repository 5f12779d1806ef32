"""LLaVA-style runs (haotian-liu/LLaVA @c121f04 scripts/v1_5/*.sh, scripts/finetune_sqa.sh) read into the
estimator's vision inputs (advisor/facts/llava.py): hand-written launch scripts with the corpus scripts'
flags, beside DeepSpeed files of the form of LLaVA's scripts/zero2.json and zero3.json."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.facts import run_names
from advisor.facts.estimates import plan_inputs
from advisor.pipeline.check import CheckOptions, build_plans, resolve_settings
from tests.conftest import write_files

ZERO = """{{
    "bf16": {{"enabled": "auto"}},
    "train_micro_batch_size_per_gpu": "auto",
    "train_batch_size": "auto",
    "gradient_accumulation_steps": "auto",
    "zero_optimization": {{"stage": {stage}, "overlap_comm": true, "reduce_bucket_size": "auto"}}
}}
"""
# the flags every LLaVA-1.5 script writes (scripts/v1_5/finetune.sh, pretrain.sh, finetune_lora.sh)
SCRIPT = """#!/bin/bash

deepspeed llava/train/train_mem.py \\
    {head}--deepspeed ./scripts/zero{stage}.json \\
    --model_name_or_path {model} \\
    --version v1 \\
    --data_path ./playground/data/llava_v1_5_mix665k.json \\
    --image_folder ./playground/data \\
    --vision_tower {tower} \\
{extra}    --mm_vision_select_layer -2 \\
    --mm_use_im_start_end False \\
    --mm_use_im_patch_token False \\
    --bf16 True \\
    --output_dir ./checkpoints/run \\
    --num_train_epochs 1 \\
    --per_device_train_batch_size {batch} \\
    --gradient_accumulation_steps 1 \\
    --learning_rate 2e-5 \\
    --tf32 True \\
{length}    --gradient_checkpointing True \\
    --dataloader_num_workers 4 \\
    --lazy_preprocess True \\
    --report_to wandb
"""
TOWER = "openai/clip-vit-large-patch14-336"


@pytest.fixture(autouse=True)
def _cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _inputs(
    tmp_path: Path,
    *,
    stage: int = 3,
    extra: str = "    --mm_projector_type mlp2x_gelu \\\n",
    head: str = "",
    model: str = "lmsys/vicuna-13b-v1.5",
    tower: str = TOWER,
    batch: int = 16,
    length: str = "    --model_max_length 2048 \\\n",
):
    script = SCRIPT.format(
        head=head, stage=stage, model=model, tower=tower, extra=extra, batch=batch, length=length
    )
    write_files(
        tmp_path,
        {"scripts/v1_5/run.sh": script, f"scripts/zero{stage}.json": ZERO.format(stage=stage)},
    )
    options = CheckOptions(hardware="8xA100-SXM-80GB")
    plans, _ = build_plans([Path(".")], options, resolve_settings([Path(".")], options))
    (plan,) = plans
    return plan_inputs(plan, run_names(plan))


def test_v1_5_finetune_trains_the_language_model_and_the_projector(tmp_path: Path) -> None:
    inputs = _inputs(tmp_path)
    s = inputs.setup
    assert s is not None, inputs.reason
    assert (s.method, s.strategy, s.micro_batch, s.seq_len) == ("full", "zero3", 16, 2048)
    v = s.vision
    assert v.tower_params == 303_507_456 and v.tower_tokens == 577 and v.image_tokens == 576
    assert v.projector_params == 1024 * 5120 + 5120 + 5120 * 5120 + 5120 and v.projector_trained
    assert s.layer_trainable is None  # the language model trains whole
    assert s.attn_implementation == "flash_attention_2"  # train_mem.py
    assert s.fixed_length is False
    assert any("576 image tokens of the model_max_length cap" in x for x in inputs.assumptions)


def test_v1_5_pretrain_trains_only_the_projector(tmp_path: Path) -> None:
    extra = "    --mm_projector_type mlp2x_gelu \\\n    --tune_mm_mlp_adapter True \\\n"
    inputs = _inputs(tmp_path, stage=2, extra=extra, batch=32)
    s = inputs.setup
    assert s is not None, inputs.reason
    assert s.strategy == "zero2" and s.layer_trainable == [0] * 40 and s.input_requires_grad
    assert s.trainable_extra_params == 0 and s.vision.projector_trained


def test_v1_5_lora_wraps_every_linear_but_lm_head(tmp_path: Path) -> None:
    head = "--lora_enable True --lora_r 128 --lora_alpha 256 --mm_projector_lr 2e-5 \\\n    "
    inputs = _inputs(tmp_path, head=head)
    s = inputs.setup
    assert s is not None, inputs.reason
    assert (s.method, s.lora_r, s.lora_targets, s.lora_dropout) == ("lora", 128, ["all-linear"], 0.05)
    assert s.vision.projector_trained


def test_a_llava_checkpoint_counts_as_its_vicuna_base(tmp_path: Path) -> None:
    # scripts/v1_5/finetune_task.sh starts from liuhaotian/llava-v1.5-13b (MODEL_ZOO.md: base Vicuna v1.5)
    inputs = _inputs(tmp_path, model="liuhaotian/llava-v1.5-13b")
    assert inputs.setup is not None, inputs.reason
    assert inputs.setup.model.total == 13_015_864_320


def test_the_original_llava_form_uses_llavas_defaults(tmp_path: Path) -> None:
    # scripts/finetune_sqa.sh: the 224-pixel tower, no mm_projector_type (default 'linear'), and here no
    # model_max_length (default 512, train.py:86-92)
    inputs = _inputs(tmp_path, stage=2, extra="", tower="openai/clip-vit-large-patch14", length="")
    s = inputs.setup
    assert s is not None, inputs.reason
    assert s.vision.image_tokens == 256 and s.vision.projector_params == 1024 * 5120 + 5120
    assert s.seq_len == 512
    assert not any(x.startswith("sequence length not set") for x in inputs.assumptions)


@pytest.mark.parametrize(
    ("extra", "tower", "why"),
    [
        ("    --image_aspect_ratio anyres \\\n", TOWER, "several crops per image"),
        ("    --bits 4 \\\n", TOWER, "quantized base"),
        ("", "google/siglip-so400m-patch14-384", "not in the vision catalog"),
        ("    --mm_projector_type qformer \\\n", TOWER, "builder.py:51 raises"),
        ("    --num_frames 16 \\\n", TOWER, "video frames"),
        ('    --mm_tunable_parts="mm_vision_tower,mm_mlp_adapter" \\\n', TOWER, "mm_tunable_parts"),
    ],
)
def test_what_is_not_modelled_says_why(tmp_path: Path, extra: str, tower: str, why: str) -> None:
    inputs = _inputs(tmp_path, extra=extra, tower=tower)
    assert inputs.setup is None and why in str(inputs.reason) and "not modelled" in str(inputs.reason)

"""Field-trial regression (2026-12-01, F7 / trial B5): the LoRA settings a training script declares, in
its own LoraArguments dataclass (literal defaults, a `default_factory=lambda: [...]` list) or as literals
in its LoraConfig(...), are what the estimate counts, not r=16 and PEFT's default targets."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.facts import run_names
from advisor.pipeline.check import CheckOptions, build_plans, resolve_settings
from tests.conftest import write_files


@pytest.fixture(autouse=True)
def _cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


# The form of QwenLM/Qwen @2df8e8a finetune.py:55-60 (LoraArguments: lora_r 64, lora_alpha 16,
# lora_dropout 0.05, lora_target_modules by default_factory), :259-261 (HfArgumentParser over it) and
# :335-343 (LoraConfig(r=lora_args.lora_r, ..., target_modules=lora_args.lora_target_modules)), with
# finetune/finetune_lora_single_gpu.sh cut to the README's measured row (7B, 1 GPU, seq 512, batch 1);
# hand-written and cut down (modules_to_save left out: F5 counts it)
QWEN_SCRIPT = """\
from dataclasses import dataclass, field
from typing import List

import transformers
from peft import LoraConfig, get_peft_model


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="Qwen/Qwen-7B")


@dataclass
class TrainingArguments(transformers.TrainingArguments):
    model_max_length: int = field(default=8192)
    use_lora: bool = False


@dataclass
class LoraArguments:
    lora_r: int = 64
    lora_alpha: int = 16
    lora_dropout: float = 0.05
    lora_target_modules: List[str] = field(
        default_factory=lambda: ["c_attn", "c_proj", "w1", "w2"]
    )
    lora_bias: str = "none"
    q_lora: bool = False


def train():
    parser = transformers.HfArgumentParser((ModelArguments, TrainingArguments, LoraArguments))
    model_args, training_args, lora_args = parser.parse_args_into_dataclasses()
    model = transformers.AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path)
    if training_args.use_lora:
        lora_config = LoraConfig(
            r=lora_args.lora_r,
            lora_alpha=lora_args.lora_alpha,
            target_modules=lora_args.lora_target_modules,
            lora_dropout=lora_args.lora_dropout,
            bias=lora_args.lora_bias,
            task_type="CAUSAL_LM",
        )
        model = get_peft_model(model, lora_config)
    transformers.Trainer(model=model, args=training_args).train()


train()
"""
QWEN_LAUNCH = """\
python finetune.py \\
  --model_name_or_path Qwen/Qwen-7B \\
  --bf16 True \\
  --output_dir out \\
  --num_train_epochs 5 \\
  --per_device_train_batch_size 1 \\
  --gradient_accumulation_steps 8 \\
  --model_max_length 512 \\
  --gradient_checkpointing \\
  --use_lora
"""
# Qwen-7B: 32 layers, hidden 4096, attn.c_attn 4096 -> 12288, attn.c_proj 4096 -> 4096, mlp.w1/w2
# 4096 -> 11008, mlp.c_proj 11008 -> 4096 (c_proj matches both)
LAYER_IO = (4096 + 12288) + (4096 + 4096) + 2 * (4096 + 11008) + (11008 + 4096)
M = 1e6


def _plan_and_estimate(tmp_path: Path, files: dict[str, str]) -> tuple[object, object]:
    write_files(tmp_path, files)
    options = CheckOptions(hardware="1xA100-80GB")
    plans, _ = build_plans([tmp_path], options, resolve_settings([tmp_path], options))
    (plan,) = plans
    return plan, run_names(plan)["estimates"]


def test_qwen_lora_arguments_defaults_are_the_estimates_rank_and_targets(tmp_path: Path) -> None:
    plan, est = _plan_and_estimate(tmp_path, {"finetune.py": QWEN_SCRIPT, "run.sh": QWEN_LAUNCH})
    targets = plan.training.entry("lora_target_modules")
    assert targets.value == ["c_attn", "c_proj", "w1", "w2"] and targets.source == "script"
    assert targets.origin.line == 25  # the lambda's list, where the default is written
    assert plan.training.entry("lora_r").value == 64
    notes = "; ".join(est.assumptions)
    # before: "LoRA rank unknown: assumed r=16" and "LoRA adapters unknown ... no PEFT default for qwen"
    assert "LoRA rank unknown" not in notes and "LoRA adapters unknown" not in notes
    assert "lora_dropout unknown" not in notes
    # before 25.6 GiB with no adapters (with F5's modules_to_save); now r=64 on c_attn/c_proj/w1/w2
    launch_r8 = QWEN_LAUNCH.replace("--use_lora", "--use_lora --lora_r 8")
    _, r8 = _plan_and_estimate(tmp_path, {"run.sh": launch_r8})
    # the adapters' fp32 weights, fp32 gradients and two fp32 Adam states: 16 B per parameter
    adapters_64, adapters_8 = 64 * LAYER_IO * 32, 8 * LAYER_IO * 32
    assert 140 * M < adapters_64 < 146 * M
    delta = (adapters_64 - adapters_8) * 16 / 2**30
    assert abs((est.peak_vram_gib - r8.peak_vram_gib) - delta) < 0.35 * delta


def test_literal_lora_config_arguments_beat_the_dataclass_defaults(tmp_path: Path) -> None:
    literal = (
        QWEN_SCRIPT.replace("r=lora_args.lora_r", "r=8")
        .replace("target_modules=lora_args.lora_target_modules", 'target_modules=["c_attn"]')
        .replace("lora_dropout=lora_args.lora_dropout", "lora_dropout=0.0")
    )
    _, est = _plan_and_estimate(tmp_path, {"finetune.py": literal, "run.sh": QWEN_LAUNCH})
    _, defaults = _plan_and_estimate(tmp_path, {"finetune.py": QWEN_SCRIPT})
    assert "LoRA" not in "; ".join(a for a in est.assumptions if "unknown" in a)
    # r=8 on c_attn only (4.2M adapters) instead of r=64 on four names (143M): ~2.1 GiB less
    gone = (64 * LAYER_IO - 8 * (4096 + 12288)) * 32 * 16 / 2**30
    assert abs((defaults.peak_vram_gib - est.peak_vram_gib) - gone) < 0.35 * gone


def test_unresolved_lora_config_arguments_keep_the_stated_assumptions(tmp_path: Path) -> None:
    # a LoraConfig from names the run does not know: the tool says what it assumed, as before
    unknown = QWEN_SCRIPT.replace("r=lora_args.lora_r", "r=rank_for(model)").replace(
        "    lora_r: int = 64\n", ""
    )
    _, est = _plan_and_estimate(tmp_path, {"finetune.py": unknown, "run.sh": QWEN_LAUNCH})
    assert "LoRA rank unknown: assumed r=16" in "; ".join(est.assumptions)


def test_argparse_script_lora_rank_default_is_read(tmp_path: Path) -> None:
    script = """\
import argparse

import transformers
from peft import LoraConfig, get_peft_model

parser = argparse.ArgumentParser()
parser.add_argument("--model", default="Qwen/Qwen-7B")
parser.add_argument("--lora_r", type=int, default=8)
args = parser.parse_args()
model = transformers.AutoModelForCausalLM.from_pretrained(args.model)
model = get_peft_model(model, LoraConfig(r=args.lora_r, target_modules=["c_attn"]))
"""
    plan, _ = _plan_and_estimate(tmp_path, {"train.py": script, "run.sh": "python train.py\n"})
    lora_r = plan.training.entry("lora_r")
    assert lora_r.value == 8 and lora_r.source == "script" and lora_r.origin.line == 8


def test_lora_config_targets_from_a_name_the_script_assigns_once(tmp_path: Path) -> None:
    named = QWEN_SCRIPT.replace("target_modules=lora_args.lora_target_modules", "target_modules=targets")
    branch = "    if training_args.use_lora:\n"
    named = named.replace(branch, '    targets = ["c_attn"]\n' + branch)
    _, est = _plan_and_estimate(tmp_path, {"finetune.py": named, "run.sh": QWEN_LAUNCH})
    _, defaults = _plan_and_estimate(tmp_path, {"finetune.py": QWEN_SCRIPT})
    assert "LoRA adapters unknown" not in "; ".join(est.assumptions)
    gone = 64 * (LAYER_IO - (4096 + 12288)) * 32 * 16 / 2**30  # c_attn only, r=64 from the dataclass
    assert abs((defaults.peak_vram_gib - est.peak_vram_gib) - gone) < 0.35 * gone
    # assigned twice (a branch each), and no lora_target_modules in the run: not guessed
    twice = named.replace('    targets = ["c_attn"]\n', '    targets = ["c_attn"]\n    targets = ["w1"]\n')
    start = twice.index("    lora_target_modules: List[str]")
    twice = twice[:start] + twice[twice.index("    lora_bias") :]
    _, both = _plan_and_estimate(tmp_path, {"finetune.py": twice})
    assert "LoRA adapters unknown" in "; ".join(both.assumptions)

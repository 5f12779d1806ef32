"""Review findings in the LoRA readers of the training script (advisor/facts/lora_inputs.py): a deep
expression must not crash `estimate`; modules_to_save assigned on one branch is unknown unless the run
decides the branch; a LoraConfig that leaves r/lora_dropout out gets PEFT's own 8 / 0.0; several
LoraConfig calls count modules_to_save only when they agree; a literal string target_modules is a regex;
the gradients note gives the adapters and the modules_to_save copies with their own dtype sizes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.facts import run_names
from advisor.pipeline.check import CheckOptions, build_plans, resolve_settings, run_check
from tests.conftest import write_files


@pytest.fixture(autouse=True)
def _cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _estimate(tmp_path: Path, hardware: str) -> tuple[list, object]:
    options = CheckOptions(hardware=hardware)
    result = run_check([Path(".")], options)
    assert not result.errors
    plans, _ = build_plans([tmp_path], options, resolve_settings([tmp_path], options))
    (plan,) = plans
    return result.findings, run_names(plan)["estimates"]


# A plain HF Trainer script that wraps the model with PEFT whatever the flags say (the form of
# lm-sys/FastChat @a5e6ba4 fastchat/train/train_lora.py:165), hand-written and cut down; LoraArguments
# declares lora_r/lora_dropout that the LoraConfig never receives
SCRIPT = """\
from dataclasses import dataclass, field
import transformers
from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer
from peft import LoraConfig, get_peft_model
{prelude}

@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="meta-llama/Llama-2-7b-hf")


@dataclass
class LoraArguments:
    lora_r: int = 64
    lora_dropout: float = 0.05


def main():
    model_args, args, lora_args = HfArgumentParser(
        (ModelArguments, transformers.TrainingArguments, LoraArguments)
    ).parse_args_into_dataclasses()
    model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path)
    {config}
    model = get_peft_model(model, cfg)
    Trainer(model=model, args=args).train()


main()
"""
LAUNCH = (
    "torchrun --nproc_per_node=1 train.py --model_name_or_path meta-llama/Llama-2-7b-hf --bf16 True "
    "--output_dir out --per_device_train_batch_size 1 --max_steps 100\n"
)
QV = 'cfg = LoraConfig(target_modules=["q_proj", "v_proj"])'
# Llama-2-7b: 32 layers, q_proj and v_proj 4096 -> 4096; r=8 adapters A (r x 4096) and B (4096 x r)
QV_R8 = 32 * 2 * 8 * (4096 + 4096)


def _script(config: str = QV, prelude: str = "") -> str:
    return SCRIPT.format(config=config, prelude=prelude)


def test_a_deep_expression_before_main_does_not_crash_estimate(tmp_path: Path) -> None:
    # before: "gpu-advise: internal error: RecursionError" (exit 3) from the get_peft_model reader
    deep = "X = " + "+".join(["1"] * 980) + "\n"
    write_files(tmp_path, {"train.py": _script(prelude=deep), "run.sh": LAUNCH})
    env = dict(os.environ)  # as a user runs it
    proc = subprocess.run(
        [sys.executable, "-m", "advisor", "estimate"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "internal error" not in out
    # LoRA (the unconditional get_peft_model) with PEFT's r=8 on q_proj/v_proj: 4.2M adapters in fp32
    assert "LoRA 4.2M x 4 B" in out


def test_a_lora_config_without_r_or_dropout_gets_peft_defaults(tmp_path: Path) -> None:
    write_files(tmp_path, {"train.py": _script(), "run.sh": LAUNCH})
    _, est = _estimate(tmp_path, "1xA100-80GB")
    notes = "; ".join(est.assumptions)
    # before: "LoRA rank unknown: assumed r=16" and "lora_dropout unknown: assumed 0.05" (or the
    # LoraArguments' 64 / 0.05 that the script never passes)
    assert "LoRA rank unknown" not in notes and "lora_dropout unknown" not in notes
    assert est.trainable_params == QV_R8
    # LoraConfig(**kwargs): what it leaves out cannot be told, the written/dataclass flags stay
    kwargs = 'cfg = LoraConfig(**{"target_modules": ["q_proj", "v_proj"]})'
    write_files(tmp_path, {"train.py": _script(kwargs)})
    _, est = _estimate(tmp_path, "1xA100-80GB")
    assert est.trainable_params == QV_R8 * 8  # r=64 from LoraArguments


def test_a_literal_string_target_modules_is_a_regex_not_a_list(tmp_path: Path) -> None:
    # peft 0.17.1 tuners/tuners_utils.py:1255-1256: a str target_modules is full-matched as a regex
    write_files(
        tmp_path, {"train.py": _script('cfg = LoraConfig(target_modules="gate_proj")'), "run.sh": LAUNCH}
    )
    _, est = _estimate(tmp_path, "1xA100-80GB")
    assert "LoRA target modules unknown" in "; ".join(est.assumptions)
    write_files(tmp_path, {"train.py": _script('cfg = LoraConfig(target_modules=["gate_proj"])')})
    _, listed = _estimate(tmp_path, "1xA100-80GB")
    assert "LoRA target modules unknown" not in "; ".join(listed.assumptions)
    assert listed.trainable_params == 32 * 8 * (4096 + 11008)
    write_files(tmp_path, {"train.py": _script('cfg = LoraConfig(target_modules="all-linear")')})
    _, every = _estimate(tmp_path, "1xA100-80GB")
    assert "LoRA target modules unknown" not in "; ".join(every.assumptions)
    assert every.trainable_params > listed.trainable_params * 5


# The form of QwenLM/Qwen @2df8e8a finetune.py:331-342 (modules_to_save wte/lm_head unless Q-LoRA or a
# chat model) and finetune/finetune_lora_single_gpu.sh, hand-written and cut down
QWEN_SCRIPT = """\
from dataclasses import dataclass, field

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
    q_lora: bool = False


def train():
    parser = transformers.HfArgumentParser((ModelArguments, TrainingArguments, LoraArguments))
    model_args, training_args, lora_args = parser.parse_args_into_dataclasses()
    is_chat_model = "chat" in model_args.model_name_or_path.lower()
    model = transformers.AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path)
    if training_args.use_lora:
        if lora_args.q_lora or is_chat_model:
            modules_to_save = None
        else:
            modules_to_save = ["wte", "lm_head"]
        lora_config = LoraConfig(
            r=lora_args.lora_r,
            target_modules=["c_attn", "c_proj", "w1", "w2"],
            task_type="CAUSAL_LM",
            modules_to_save=modules_to_save,
        )
        model = get_peft_model(model, lora_config)
    transformers.Trainer(model=model, args=training_args).train()


train()
"""
QWEN_LAUNCH = """\
python finetune.py \\
  --model_name_or_path Qwen/Qwen-7B-Chat \\
  --bf16 True \\
  --output_dir out \\
  --per_device_train_batch_size 1 \\
  --gradient_accumulation_steps 8 \\
  --model_max_length 512 \\
  --gradient_checkpointing \\
  --lora_r 64 \\
  --use_lora
"""


def test_qwen_chat_lora_modules_to_save_on_one_branch_are_unknown_not_an_error(tmp_path: Path) -> None:
    write_files(tmp_path, {"finetune.py": QWEN_SCRIPT, "run.sh": QWEN_LAUNCH})
    findings, est = _estimate(tmp_path, "1xA10G")
    # before: GA401 "needs about 25.6 GiB per GPU ... one A10G has 22.5 GiB" from two 622M copies a chat
    # model never gets
    assert not [f for f in findings if f.rule == "GA401"]
    notes = "; ".join(est.assumptions)
    assert (
        "modules_to_save unknown: finetune.py:33 assigns modules_to_save its list only on one branch" in notes
    )
    assert "fully trained copies" not in notes
    none = QWEN_SCRIPT.replace('modules_to_save = ["wte", "lm_head"]', "modules_to_save = None")
    write_files(tmp_path, {"finetune.py": none})
    _, base = _estimate(tmp_path, "1xA10G")
    assert est.peak_vram_gib == base.peak_vram_gib


def test_qwen_q_lora_written_true_decides_no_modules_to_save(tmp_path: Path) -> None:
    launch = QWEN_LAUNCH.replace("Qwen-7B-Chat", "Qwen-7B").replace("--use_lora", "--use_lora --q_lora True")
    write_files(tmp_path, {"finetune.py": QWEN_SCRIPT, "run.sh": launch})
    _, est = _estimate(tmp_path, "1xA10G")
    notes = "; ".join(est.assumptions)
    assert "modules_to_save: none, the script's `if lora_args.q_lora or is_chat_model`" in notes
    assert "fully trained copies" not in notes


def test_several_lora_configs_count_modules_to_save_only_when_they_agree(tmp_path: Path) -> None:
    two = (
        "if args.do_train:\n"
        '        cfg = LoraConfig(target_modules=["q_proj", "v_proj"], modules_to_save=["lm_head"])\n'
        "    else:\n"
        '        cfg = LoraConfig(target_modules=["q_proj", "v_proj"]{other})'
    )
    write_files(tmp_path, {"train.py": _script(two.format(other="")), "run.sh": LAUNCH})
    _, est = _estimate(tmp_path, "1xA100-80GB")
    assert "the script's 2 LoraConfig calls disagree: not counted" in "; ".join(est.assumptions)
    assert est.trainable_params == QV_R8
    agree = two.format(other=', modules_to_save=["lm_head"]')
    write_files(tmp_path, {"train.py": _script(agree)})
    _, both = _estimate(tmp_path, "1xA100-80GB")
    assert both.trainable_params == QV_R8 + 32000 * 4096  # Llama-2's lm_head copy, fully trained


def test_gradients_note_gives_each_part_its_own_dtype(tmp_path: Path) -> None:
    saved = (
        'cfg = LoraConfig(target_modules=["q_proj", "v_proj"], modules_to_save=["embed_tokens", "lm_head"])'
    )
    # gradient accumulation keeps the gradients across micro-batches: they are in the peak's breakdown
    launch = LAUNCH.replace("--max_steps", "--gradient_accumulation_steps 4 --max_steps")
    write_files(tmp_path, {"train.py": _script(saved), "run.sh": launch})
    _, est = _estimate(tmp_path, "1xA100-80GB")
    note = next(i for i in est["items"] if i["name"] == "gradients")["note"]
    # before: "266.3M trainable x 4 B (modules_to_save 262.1M of them x 2 B)": 4 B read as the whole's size
    assert note.startswith("4.2M trainable x 4 B + modules_to_save 262.1M x 2 B"), note

"""Field-trial regressions (2026-12-01, F5): LoRA modules_to_save counted as fully trained (Qwen), and
GA401's "what fits" on a card without bf16 (FastChat on V100)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import write_files


@pytest.fixture(autouse=True)
def _cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _findings(hardware: str) -> list:
    result = run_check([Path(".")], CheckOptions(hardware=hardware))
    assert not result.errors
    return result.findings


# The form of lm-sys/FastChat scripts/test_readme_train.sh @ the field trial's commit (torchrun, --bf16 True,
# FSDP full_shard, a TrainingArguments subclass with model_max_length as fastchat/train/train.py has),
# hand-written and cut down
A10_SCRIPT = """\
from dataclasses import dataclass, field

import transformers
from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="facebook/opt-125m")


@dataclass
class TrainingArguments(transformers.TrainingArguments):
    model_max_length: int = field(default=512)


def main():
    model_args, args = HfArgumentParser((ModelArguments, TrainingArguments)).parse_args_into_dataclasses()
    model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path)
    Trainer(model=model, args=args).train()


main()
"""
A10_LAUNCH = """\
torchrun --nproc_per_node=4 train.py \\
    --model_name_or_path meta-llama/Llama-2-7b-hf \\
    --bf16 True \\
    --output_dir out \\
    --per_device_train_batch_size 2 \\
    --gradient_accumulation_steps 16 \\
    --fsdp "full_shard auto_wrap" \\
    --model_max_length 2048 \\
    --gradient_checkpointing True
"""


def test_fit_options_on_a_card_without_bf16_propose_fp16_not_bf16(tmp_path: Path) -> None:
    write_files(tmp_path, {"train.py": A10_SCRIPT, "run.sh": A10_LAUNCH})
    findings = _findings("8xV100-32GB")
    assert [f for f in findings if f.rule == "GA501"]  # the card has no bf16
    (oom,) = [f for f in findings if f.rule == "GA401"]
    fits = oom.message.split("Fits on", 1)[1]
    assert "LoRA r=16 (fp16 base, no bf16 on this card" in fits
    assert "bf16 base" not in fits


def test_fit_options_on_a_bf16_card_keep_bf16(tmp_path: Path) -> None:
    launch = A10_LAUNCH.replace("--per_device_train_batch_size 2", "--per_device_train_batch_size 16")
    write_files(tmp_path, {"train.py": A10_SCRIPT, "run.sh": launch})
    (oom,) = [f for f in _findings("4xL40S") if f.rule == "GA401"]
    assert "bf16 base" in oom.message
    assert "no bf16 on this card" not in oom.message


# The form of QwenLM/Qwen @2df8e8a finetune.py:331-342 (modules_to_save wte/lm_head on the non-chat,
# non-Q-LoRA branch) and finetune/finetune_lora_single_gpu.sh, hand-written and cut down
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
            target_modules=lora_args.lora_target_modules,  # a field this copy does not declare
            task_type="CAUSAL_LM",
            modules_to_save=modules_to_save,
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
  --per_device_train_batch_size 1 \\
  --gradient_accumulation_steps 8 \\
  --model_max_length 512 \\
  --gradient_checkpointing \\
  --lora_r 64 \\
  --use_lora
"""
GIB = 2**30


def _estimate(tmp_path: Path, hardware: str = "1xRTX4090") -> tuple[list, object]:
    from advisor.facts import run_names
    from advisor.pipeline.check import build_plans, resolve_settings

    options = CheckOptions(hardware=hardware)
    plans, _ = build_plans([tmp_path], options, resolve_settings([tmp_path], options))
    (plan,) = plans
    return _findings(hardware), run_names(plan)["estimates"]


def test_qwen_lora_modules_to_save_are_counted_and_do_not_fit_a_24gb_card(tmp_path: Path) -> None:
    # the branch decided by the run's flags alone (--q_lora False written); Qwen's own
    # `... or is_chat_model` leaves it unknown (tests/estimate/test_lora_review.py)
    decided = QWEN_SCRIPT.replace("if lora_args.q_lora or is_chat_model:", "if lora_args.q_lora:")
    launch = QWEN_LAUNCH.replace("--use_lora", "--use_lora --q_lora False")
    write_files(tmp_path, {"finetune.py": decided, "run.sh": launch})
    findings, est = _estimate(tmp_path)
    # Qwen's README measures 34.1 GB for 7B LoRA (emb), seq 512, batch 1; before: 17.3 GiB and no finding
    assert [f for f in findings if f.rule == "GA401"]
    notes = "; ".join(est.assumptions)
    assert "modules_to_save wte 622.3M, lm_head 622.3M: fully trained copies" in notes
    # two 151936 x 4096 copies (1.24B) in bf16, their bf16 gradients and two bf16 Adam states: ~9.3 GiB
    without = decided.replace('modules_to_save = ["wte", "lm_head"]', "modules_to_save = None")
    write_files(tmp_path, {"finetune.py": without})
    _, base = _estimate(tmp_path)
    assert "modules_to_save" not in "; ".join(base.assumptions)
    assert 8.8 < est.peak_vram_gib - base.peak_vram_gib < 10.2


def test_unknown_lora_targets_say_the_adapters_are_unknown(tmp_path: Path) -> None:
    write_files(tmp_path, {"finetune.py": QWEN_SCRIPT, "run.sh": QWEN_LAUNCH})
    _, est = _estimate(tmp_path)
    notes = "; ".join(est.assumptions)
    assert "LoRA adapters unknown" in notes and "knows no PEFT default for qwen" in notes
    # peft 0.17.1 utils/constants.py:100 has no "qwen" (Qwen-7B's remote code): no invented q_proj default
    assert "q_proj" not in notes


AXOLOTL_LORA = (
    "base_model: meta-llama/Llama-2-7b-hf\n"
    "adapter: lora\nlora_r: 16\nlora_target_linear: true\n"
    "datasets:\n  - path: mhenrichsen/alpaca_2k_test\n    type: alpaca\n"
    "sequence_len: 1024\nmicro_batch_size: 1\ngradient_accumulation_steps: 1\nmax_steps: 50\n"
    "bf16: true\ngradient_checkpointing: true\n"
)


def test_axolotl_lora_modules_to_save_counts_embeddings_and_states_unknown_names(tmp_path: Path) -> None:
    write_files(tmp_path, {"a.yaml": AXOLOTL_LORA})
    _, base = _estimate(tmp_path, "1xA100-80GB")
    saved = AXOLOTL_LORA + "lora_modules_to_save:\n  - embed_tokens\n  - lm_head\n  - my_adapter_head\n"
    write_files(tmp_path, {"a.yaml": saved})
    _, est = _estimate(tmp_path, "1xA100-80GB")
    notes = "; ".join(est.assumptions)
    assert "modules_to_save embed_tokens 131.1M, lm_head 131.1M" in notes
    assert "modules_to_save my_adapter_head: size unknown, because" in notes
    # two 32000 x 4096 copies trained beside the adapters; at the peak (end of backward) their bf16 copy,
    # gradients and Adam states: 262M x 8 B, less the activations no longer live then
    assert est.trainable_params - base.trainable_params == 2 * 32000 * 4096
    assert 1.2 < est.peak_vram_gib - base.peak_vram_gib < 2.2


# LLaMA-Factory's additional_target (a comma-separated string, split into LoraConfig(modules_to_save=...)
# by hiyouga/LLaMA-Factory @ff6d4d12 src/llamafactory/model/adapter.py), which also upcasts every trainable
# parameter to fp32 (adapter.py:325): the copies are fp32 there
LLAMAFACTORY_LORA = """\
model_name_or_path: meta-llama/Llama-2-7b-hf
stage: sft
do_train: true
finetuning_type: lora
lora_target: all
dataset: alpaca_en_demo
template: llama2
cutoff_len: 1024
per_device_train_batch_size: 1
gradient_accumulation_steps: 8
bf16: true
output_dir: out
"""


def test_llamafactory_additional_target_is_trained_in_fp32(tmp_path: Path) -> None:
    write_files(tmp_path, {"sft.yaml": LLAMAFACTORY_LORA})
    _, base = _estimate(tmp_path, "1xA100-80GB")
    write_files(tmp_path, {"sft.yaml": LLAMAFACTORY_LORA + "additional_target: embed_tokens,lm_head\n"})
    _, est = _estimate(tmp_path, "1xA100-80GB")
    assert est.trainable_params - base.trainable_params == 2 * 32000 * 4096
    weights = next(i for i in est["items"] if i["name"] == "weights")
    assert "modules_to_save copies 262.1M x 4 B" in weights["note"]

"""A quantized base loaded with from_pretrained's own keyword, and the gradient checkpointing PEFT's kbit
preparation turns on, via the CLI.

Upstream form, hand-copied and shortened: tloen/alpaca-lora @8bb8579 finetune.py:112-117, 174 (the README's
command, README.md:83-91):
    model = LlamaForCausalLM.from_pretrained(base_model, load_in_8bit=True, torch_dtype=torch.float16, ...)
    model = prepare_model_for_int8_training(model)
transformers < 5 takes `load_in_8bit=True` on from_pretrained itself; peft 0.3.0 utils/other.py:35, 56-68
(prepare_model_for_int8_training) and peft 0.21.2 utils/other.py:158-159, 221-258
(prepare_model_for_kbit_training) call model.gradient_checkpointing_enable() on a quantized base unless
use_gradient_checkpointing=False. Read as an fp16 base without checkpointing, the README's run drew a false
GA401 error (38.3 GiB of the RTX 4090's 24); it ran on that card."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sources.cli_json import check, project

SCRIPT = """import fire
import torch
import transformers
from peft import LoraConfig, get_peft_model, {prepare}
from transformers import LlamaForCausalLM


def train(base_model: str = "", cutoff_len: int = 256, micro_batch_size: int = 4, lora_r: int = 8):
    model = LlamaForCausalLM.from_pretrained(
        base_model,
        {quant}=True,
        torch_dtype=torch.float16,
        device_map="auto",
    )
    model = {prepare}(model{gc})
    model = get_peft_model(model, LoraConfig(r=lora_r, target_modules=["q_proj", "v_proj"]))
    trainer = transformers.Trainer(
        model=model,
        args=transformers.TrainingArguments(per_device_train_batch_size=micro_batch_size, fp16=True),
    )
    trainer.train()


if __name__ == "__main__":
    fire.Fire(train)
"""
LAUNCH = (
    "#!/bin/bash\n"
    "python finetune.py --base_model='decapoda-research/llama-7b-hf' --output_dir='./lora-alpaca' "
    "--cutoff_len=512 --lora_r=16 --micro_batch_size=8\n"
)


def _run(
    tmp_path: Path,
    quant: str = "load_in_8bit",
    prepare: str = "prepare_model_for_int8_training",
    gc: str = "",
):
    script = SCRIPT.format(quant=quant, prepare=prepare, gc=gc)
    tmp_path.mkdir(parents=True, exist_ok=True)
    root = project(tmp_path, {"run.sh": LAUNCH, "finetune.py": script})
    report = check(root, "run.sh", "-H", "1xRTX4090")
    (run,) = report["runs"]
    return report, run


def test_the_8bit_keyword_and_the_preparation_fit_the_card(tmp_path: Path) -> None:
    report, run = _run(tmp_path)
    assert [f["rule"] for f in report["findings"] if f["rule"] == "GA401"] == []  # was: 38.3 of 24 GiB
    assert run["peak_vram_gib"] < 24
    notes = " ".join(run["notes"])
    assert "prepare_model_for_int8_training turns gradient checkpointing on" in notes


@pytest.mark.parametrize("prepare", ["prepare_model_for_kbit_training", "prepare_model_for_int8_training"])
def test_use_gradient_checkpointing_false_keeps_it_off(tmp_path: Path, prepare: str) -> None:
    on = _run(tmp_path / "on", prepare=prepare)[1]["peak_vram_gib"]
    off = _run(tmp_path / "off", prepare=prepare, gc=", use_gradient_checkpointing=False")[1]["peak_vram_gib"]
    assert off > on * 1.5  # without checkpointing the activations of every layer are kept


def test_the_4bit_keyword_is_a_4bit_base(tmp_path: Path) -> None:
    eight = _run(tmp_path / "8", prepare="prepare_model_for_kbit_training")[1]["peak_vram_gib"]
    four = _run(tmp_path / "4", quant="load_in_4bit", prepare="prepare_model_for_kbit_training")[1]
    assert four["peak_vram_gib"] < eight  # 4-bit weights: about half the 8-bit ones

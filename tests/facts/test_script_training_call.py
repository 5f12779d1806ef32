"""TrainingArguments the training script builds itself, read as the run's settings, via the CLI.

Upstream form, hand-copied and shortened: tloen/alpaca-lora @8bb8579 finetune.py:28-59, 89, 236-256, 283
(fire.Fire(train) maps `--micro_batch_size=8` onto train()'s parameter; the script passes it on as
TrainingArguments(per_device_train_batch_size=micro_batch_size, ..., fp16=True)). Before, the run's batch
was TrainingArguments' default and fp16=True was not seen (no GA502 on an RTX 4090)."""

from __future__ import annotations

from pathlib import Path

from tests.sources.cli_json import check, project

SCRIPT = """import os

import fire
import transformers
from transformers import AutoModelForCausalLM


def train(base_model: str = "", batch_size: int = 128, micro_batch_size: int = 4, num_epochs: int = 3):
    gradient_accumulation_steps = batch_size // micro_batch_size
    model = AutoModelForCausalLM.from_pretrained(base_model)
    trainer = transformers.Trainer(
        model=model,
        args=transformers.TrainingArguments(
            per_device_train_batch_size=micro_batch_size,
            gradient_accumulation_steps=gradient_accumulation_steps,
            num_train_epochs=num_epochs,
            learning_rate=3e-4,
            fp16=True,
            output_dir="out",
        ),
    )
    trainer.train()


if __name__ == "__main__":
    fire.Fire(train)
"""


def _run(tmp_path: Path, launch: str, script: str = SCRIPT) -> dict:
    root = project(tmp_path, {"run.sh": "#!/bin/bash\n" + launch + "\n", "finetune.py": script})
    return check(root, "run.sh", "-H", "1xRTX4090")


def test_the_scripts_own_training_arguments_are_the_runs(tmp_path: Path) -> None:
    report = _run(tmp_path, "python finetune.py --base_model=Qwen/Qwen2.5-0.5B --micro_batch_size=8")
    (run,) = report["runs"]
    assert run["effective_batch"] == 128  # 8 x (128 // 8) x 1; was the default 8 x 1
    ga502 = [(f["file"], f["line"]) for f in report["findings"] if f["rule"] == "GA502"]
    fp16_line = SCRIPT.splitlines().index("            fp16=True,") + 1
    assert ga502 == [("finetune.py", fp16_line)]  # fp16=True on a card with bf16 tensor cores


def test_a_keyword_the_script_computes_at_run_time_is_unknown(tmp_path: Path) -> None:
    script = SCRIPT.replace(
        "    gradient_accumulation_steps = batch_size // micro_batch_size\n",
        "    gradient_accumulation_steps = batch_size // micro_batch_size\n"
        "    if os.environ.get('WORLD_SIZE'):\n"
        "        gradient_accumulation_steps = gradient_accumulation_steps // 2\n",
    )
    report = _run(tmp_path, "python finetune.py --base_model=Qwen/Qwen2.5-0.5B", script)
    (run,) = report["runs"]
    assert run["effective_batch"] is None  # assigned twice: not the default 1


def test_a_script_that_parses_training_arguments_is_read_as_before(tmp_path: Path) -> None:
    script = (
        "from transformers import HfArgumentParser, TrainingArguments\n"
        "(args,) = HfArgumentParser((TrainingArguments,)).parse_args_into_dataclasses()\n"
        "other = TrainingArguments(output_dir='x', per_device_train_batch_size=1)\n"
    )
    report = _run(tmp_path, "python finetune.py --output_dir o --per_device_train_batch_size 4", script)
    (run,) = report["runs"]
    assert run["effective_batch"] == 4  # the flags, not the second object the script builds


def test_an_argparse_flag_reaches_the_keyword(tmp_path: Path) -> None:
    script = (
        "import argparse\n\nfrom transformers import Trainer, TrainingArguments\n\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--batch-size', type=int, default=2)\n"
        "parser.add_argument('--accum', type=int, default=4)\n"
        "args = parser.parse_args()\n"
        "Trainer(model=None, args=TrainingArguments(output_dir='o',"
        " per_device_train_batch_size=args.batch_size, gradient_accumulation_steps=args.accum))\n"
    )
    (run,) = _run(tmp_path, "python finetune.py --batch-size 8", script)["runs"]
    assert run["effective_batch"] == 8 * 4  # the flag, then the parser's default

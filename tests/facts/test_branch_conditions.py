"""Branches the run's flags decide (issue 20, corpus3 false alarms GA603 simplescaling/s1 and GA601
FreedomIntelligence/LLMZoo), through the real CLI.

Hand-written copies of the upstream forms: s1's train/sft.py builds `kwargs = {"device_map": "auto", ...}`
only `if "70B" in config.model_name:` while its launch names a 32B model; LLMZoo's train.py saves the LoRA
adapter only `if model_args.lora:`, a dataclass field whose default False the launch leaves alone."""

from __future__ import annotations

from pathlib import Path

from tests.sources.cli_json import check, project

S1_SCRIPT = (
    "from dataclasses import dataclass, field\n"
    "import transformers\n"
    "import trl\n"
    "@dataclass\n"
    "class TrainingConfig:\n"
    '    model_name: str = field(default="Qwen/Qwen2.5-7B-Instruct")\n'
    "    block_size: int = field(default=4096)\n"
    "def train():\n"
    "    parser = transformers.HfArgumentParser((TrainingConfig, trl.SFTConfig))\n"
    "    config, args = parser.parse_args_into_dataclasses()\n"
    "    kwargs = {}\n"
    '    if "70B" in config.model_name:\n'
    '        kwargs = {"device_map": "auto", "torch_dtype": "auto"}\n'
    "        model = transformers.AutoModelForCausalLM.from_pretrained(config.model_name, **kwargs)\n"
    "    else:\n"
    "        model = transformers.AutoModelForCausalLM.from_pretrained(config.model_name)\n"
    "    trainer = trl.SFTTrainer(model, args=args)\n"
    "    trainer.train()\n"
    'if __name__ == "__main__":\n'
    "    train()\n"
)


def s1_launch(model: str) -> str:
    return (
        "#!/bin/bash\n"
        f'base_model="{model}"\n'
        "torchrun --nproc-per-node 8 --master_port 12345 train/sft.py --block_size=4096 \\\n"
        "    --per_device_train_batch_size=1 --model_name=${base_model} --output_dir=ckpts/s1\n"
    )


def ga603(report: dict) -> list[tuple[str, int, str]]:
    return [(f["file"], f["line"], f["severity"]) for f in report["findings"] if f["rule"] == "GA603"]


def test_device_map_under_a_substring_test_the_named_model_fails_is_not_the_runs(tmp_path: Path) -> None:
    root = project(
        tmp_path, {"train/sft.sh": s1_launch("Qwen/Qwen2.5-32B-Instruct"), "train/sft.py": S1_SCRIPT}
    )
    report = check(root, "train/sft.sh")
    assert ga603(report) == []  # an error before: the branch was not decided
    # nor is it GA602's one-process device_map="auto" (an info once GA603 had gone)
    assert [f for f in report["findings"] if f["rule"] == "GA602"] == []
    # the same script with a 70B model takes the branch: accelerate refuses the spread model
    (root / "train/sft.sh").write_text(s1_launch("meta-llama/Llama-3.1-70B-Instruct"), encoding="utf-8")
    assert ga603(check(root, "train/sft.sh")) == [("train/sft.py", 13, "error")]


def test_device_map_under_a_condition_the_flags_do_not_decide_is_a_warning_naming_it(tmp_path: Path) -> None:
    script = S1_SCRIPT.replace('if "70B" in config.model_name:', "if is_large(config.model_name):")
    root = project(tmp_path, {"train/sft.sh": s1_launch("Qwen/Qwen2.5-32B-Instruct"), "train/sft.py": script})
    report = check(root, "train/sft.sh")
    assert ga603(report) == [("train/sft.py", 13, "warning")]
    (message,) = [f["message"] for f in report["findings"] if f["rule"] == "GA603"]
    assert "is_large(config.model_name)" in message and "do not decide" in message


def test_comparisons_and_boolean_parts_are_decided_when_every_operand_is_known(tmp_path: Path) -> None:
    script = S1_SCRIPT.replace(
        'if "70B" in config.model_name:',
        'if not (config.block_size < 8192) or ("32B" in config.model_name and config.block_size == 4096):',
    )
    root = project(tmp_path, {"train/sft.sh": s1_launch("Qwen/Qwen2.5-32B-Instruct"), "train/sft.py": script})
    assert ga603(check(root, "train/sft.sh")) == [("train/sft.py", 13, "error")]  # 32B and 4096: taken
    (root / "train/sft.sh").write_text(s1_launch("Qwen/Qwen2.5-7B-Instruct"), encoding="utf-8")
    assert ga603(check(root, "train/sft.sh")) == []  # 4096 < 8192 and no "32B": not taken


LLMZOO_SCRIPT = (
    "import os\n"
    "from dataclasses import dataclass, field\n"
    "from typing import Optional\n"
    "import transformers\n"
    "from transformers import Trainer\n"
    "@dataclass\n"
    "class ModelArguments:\n"
    '    model_name_or_path: Optional[str] = field(default="facebook/opt-125m")\n'
    "    lora: Optional[bool] = field(default=False)\n"
    "    world_size: int = field(default=1)\n"
    "def train():\n"
    "    parser = transformers.HfArgumentParser((ModelArguments, transformers.TrainingArguments))\n"
    "    model_args, training_args = parser.parse_args_into_dataclasses()\n"
    "    model = transformers.AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path)\n"
    "    tokenizer = transformers.AutoTokenizer.from_pretrained(model_args.model_name_or_path)\n"
    "    trainer = Trainer(model=model, args=training_args)\n"
    "    trainer.train()\n"
    "    trainer.save_state()\n"
    "    if model_args.lora:\n"
    '        model.save_pretrained(os.path.join(training_args.output_dir, "lora"))\n'
    '        tokenizer.save_pretrained(os.path.join(training_args.output_dir, "lora"))\n'
    "    if model_args.world_size > 1:\n"
    '        tokenizer.save_pretrained(os.path.join(training_args.output_dir, "tok"))\n'
    'if __name__ == "__main__":\n'
    "    train()\n"
)


def llmzoo_launch(extra: str = "") -> str:
    return (
        "#!/bin/bash\n"
        "torchrun --nproc_per_node=8 --master_port=20001 train.py \\\n"
        f"    --model_name_or_path bigscience/bloomz-7b1-mt --output_dir out{extra} \\\n"
        "    --per_device_train_batch_size 2 --fsdp 'full_shard auto_wrap'\n"
    )


def ga601_lines(report: dict) -> list[int]:
    return sorted(f["line"] for f in report["findings"] if f["rule"] == "GA601")


def test_a_save_under_a_flag_whose_default_the_launch_keeps_is_not_the_runs(tmp_path: Path) -> None:
    root = project(tmp_path, {"scripts/train.sh": llmzoo_launch(), "train.py": LLMZOO_SCRIPT})
    # 20, 21: under `if model_args.lora:` (default False, not written); warnings before
    # 23: under `world_size > 1`, a count the launcher sets per process (its default 1 is not its value)
    assert ga601_lines(check(root, "scripts/train.sh")) == [23]
    (root / "scripts/train.sh").write_text(llmzoo_launch(" --lora True"), encoding="utf-8")
    assert ga601_lines(check(root, "scripts/train.sh")) == [20, 21, 23]


def test_a_flag_named_like_a_rank_but_set_by_the_user_is_decided(tmp_path: Path) -> None:
    script = LLMZOO_SCRIPT.replace(
        "lora: Optional[bool] = field(default=False)", "lora_rank: int = field(default=0)"
    ).replace("if model_args.lora:", "if model_args.lora_rank > 0:")
    root = project(tmp_path, {"scripts/train.sh": llmzoo_launch(), "train.py": script})
    assert ga601_lines(check(root, "scripts/train.sh")) == [23]  # 0 > 0: not taken
    (root / "scripts/train.sh").write_text(llmzoo_launch(" --lora_rank 8"), encoding="utf-8")
    assert ga601_lines(check(root, "scripts/train.sh")) == [20, 21, 23]

"""What the training script's own arguments mean (field trial 2026-12-01, items A2/B1, B4, C6, A3/B11).

A script with its own argparse.ArgumentParser gets no TrainingArguments defaults because a flag name
matches one; the literal defaults of its own add_argument calls, and of the dataclasses it hands to
HfArgumentParser, stand in the plan with the script line as provenance. llamafactory-cli flags are read
in LLaMA-Factory's dialect; an unknown flag of an HfArgumentParser script is a ValueError at start.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import write_files

# The form of DeepSpeedExamples applications/DeepSpeed-Chat/training/step1_supervised_finetuning/main.py
# (microsoft/DeepSpeedExamples @83757d9c, lines 32-36 and 69-83): its own argparse parser, defaults
# per-device batch 16 and max_seq_len 512; training_scripts/opt/single_gpu/run_1.3b.sh:18-22 passes
# --gradient_accumulation_steps 8 and no batch size.
DS_CHAT_MAIN = """\
import argparse

import deepspeed


def parse_args():
    parser = argparse.ArgumentParser(description="Finetune a transformers model")
    parser.add_argument("--model_name_or_path", type=str, required=True)
    parser.add_argument(
        "--per_device_train_batch_size",
        type=int,
        default=16,
        help="Batch size (per device) for the training dataloader.",
    )
    parser.add_argument("--max_seq_len", type=int, default=512)
    parser.add_argument("--gradient_accumulation_steps", type=int, default=1)
    parser.add_argument("--gradient_checkpointing", action="store_true")
    parser.add_argument("--zero_stage", type=int, default=0)
    parser = deepspeed.add_config_arguments(parser)
    return parser.parse_args()


def main():
    args = parse_args()
    print(args.per_device_train_batch_size * args.gradient_accumulation_steps)


if __name__ == "__main__":
    main()
"""
DS_CHAT_RUN = """\
#!/bin/bash
OUTPUT=./output
deepspeed --num_gpus 1 main.py --model_name_or_path facebook/opt-1.3b \\
   --gradient_accumulation_steps 8 --zero_stage 0 \\
   --deepspeed --output_dir $OUTPUT
"""

# The form of OpenRLHF's old openrlhf/cli/train_sft.py (OpenRLHF/OpenRLHF @3c3be62 history, lines
# 149-165): argparse with --micro_train_batch_size / --train_batch_size, no per_device_train_batch_size.
OPENRLHF_SFT = """\
import argparse

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--micro_train_batch_size", type=int, default=8, help="batch size per GPU")
    parser.add_argument("--train_batch_size", type=int, default=128, help="Global training batch size")
    parser.add_argument("--learning_rate", type=float, default=5e-6)
    parser.add_argument("--gradient_checkpointing", action="store_true", default=False)
    args = parser.parse_args()
"""

# The form of tatsu-lab/stanford_alpaca train.py (@761dc5b, lines 45-65 and 196-198): its own
# TrainingArguments subclass with optim and model_max_length defaults, read by HfArgumentParser.
ALPACA_TRAIN = """\
from dataclasses import dataclass, field
from typing import Optional

import transformers


@dataclass
class ModelArguments:
    model_name_or_path: Optional[str] = field(default="facebook/opt-125m")


@dataclass
class DataArguments:
    data_path: str = field(default=None, metadata={"help": "Path to the training data."})


@dataclass
class TrainingArguments(transformers.TrainingArguments):
    cache_dir: Optional[str] = field(default=None)
    optim: str = field(default="adamw_torch")
    model_max_length: int = field(
        default=512,
        metadata={"help": "Maximum sequence length."},
    )


def train():
    parser = transformers.HfArgumentParser((ModelArguments, DataArguments, TrainingArguments))
    model_args, data_args, training_args = parser.parse_args_into_dataclasses()
"""
ALPACA_RUN = """\
#!/bin/bash
torchrun --nproc_per_node=4 --master_port=29502 train.py \\
    --model_name_or_path "facebook/opt-6.7b" \\
    --data_path ./alpaca_data.json \\
    --bf16 True \\
    --output_dir ./output \\
    --per_device_train_batch_size 4 \\
    --gradient_accumulation_steps 8
"""


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_argparse_script_keeps_its_own_batch_default_not_trainingarguments_8(run_facts_of) -> None:
    names = run_facts_of({"run.sh": DS_CHAT_RUN, "main.py": DS_CHAT_MAIN}, hardware="1xA100-80GB")
    t, batch = names["training"], names["batch"]
    assert t.reads_training_arguments is False
    micro = t.value("per_device_train_batch_size")
    assert micro is not None and micro.value == 16  # not TrainingArguments' 8
    assert micro.origin.file.name == "main.py"
    assert micro.origin.line == _line_of(DS_CHAT_MAIN, "default=16")
    assert batch.per_device == 16 and batch.accumulation == 8  # the written flag keeps its value
    assert batch.effective_batch == 16 * 8  # the tool said 64 (8 x 8) before
    seq = t.value("max_seq_len")
    assert seq is not None and seq.value == 512 and seq.origin.line == _line_of(DS_CHAT_MAIN, "max_seq_len")
    assert t.gradient_checkpointing is False  # store_true without a default
    # no TrainingArguments default stands in for a term the script does not declare
    assert "dataloader_pin_memory" not in t and "num_train_epochs" not in t
    assert names["estimates"].seq_len == 512  # not the assumed 2048


def test_argparse_script_without_the_term_leaves_it_unknown(run_facts_of) -> None:
    run = (
        "#!/bin/bash\ndeepspeed train_sft.py --micro_train_batch_size 2 --train_batch_size 256 "
        "--learning_rate 5e-6\n"
    )
    names = run_facts_of({"run.sh": run, "train_sft.py": OPENRLHF_SFT})
    t, batch = names["training"], names["batch"]
    assert t.reads_training_arguments is False
    assert t.learning_rate == 5e-6  # written
    micro = t.value("per_device_train_batch_size")
    assert micro is not None and not micro.known
    assert "the script's parser is its own" in (micro.unknown or "")
    assert batch.effective_batch is None  # the tool said 64 from TrainingArguments' defaults before
    assert "its own" in (names["batch"].value("effective_batch").unknown or "")


def test_argparse_script_that_builds_trainingarguments_keeps_their_defaults(run_facts_of) -> None:
    script = (
        "import argparse\nfrom transformers import TrainingArguments\n\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--lr', type=float, default=1e-4)\n"
        "args = parser.parse_args()\n"
        "targs = TrainingArguments(output_dir='out', learning_rate=args.lr)\n"
    )
    names = run_facts_of(
        {"run.sh": "#!/bin/bash\ntorchrun train.py --per_device_train_batch_size 4\n", "train.py": script}
    )
    assert names["training"].reads_training_arguments is True
    assert names["batch"].effective_batch == 4


def test_hfargumentparser_dataclass_defaults_replace_the_library_defaults(run_facts_of) -> None:
    names = run_facts_of({"run.sh": ALPACA_RUN, "train.py": ALPACA_TRAIN}, hardware="4xA100-80GB-NVL-pairs")
    t = names["training"]
    assert t.reads_training_arguments is True
    seq = t.value("model_max_length")
    assert seq is not None and seq.value == 512
    assert (seq.origin.file.name, seq.origin.line) == ("train.py", _line_of(ALPACA_TRAIN, "default=512"))
    optim = t.value("optim")
    assert optim is not None and optim.value == "adamw_torch"  # not adamw_torch_fused
    assert optim.origin.line == _line_of(ALPACA_TRAIN, 'default="adamw_torch"')
    assert t.per_device_train_batch_size == 4 and t.gradient_accumulation_steps == 8  # flags win
    assert t.dataloader_pin_memory is True  # the library's defaults still stand for the rest
    est = names["estimates"]
    assert est.seq_len == 512  # the estimator assumed 2048 tokens before
    assert "max_length 512" in " ".join(est.assumptions or [])


def test_a_flag_overrides_the_dataclass_default_and_keeps_it_related(run_facts_of) -> None:
    run = ALPACA_RUN.rstrip() + " \\\n    --model_max_length 1024\n"
    t = run_facts_of({"run.sh": run, "train.py": ALPACA_TRAIN})["training"]
    seq = t.value("model_max_length")
    assert seq is not None and seq.value == 1024 and seq.origin.file.name == "run.sh"
    assert [r.line for r in seq.related] == [_line_of(ALPACA_TRAIN, "default=512")]


def test_only_literal_dataclass_defaults_are_taken(run_facts_of) -> None:
    script = ALPACA_TRAIN.replace('field(default="adamw_torch")', "field(default=OPTIM)")
    script = script.replace("import transformers\n", "import transformers\n\nOPTIM = 'adafactor'\n")
    t = run_facts_of({"run.sh": ALPACA_RUN, "train.py": script})["training"]
    assert t.value("optim") is None  # not a literal: the library default (the estimator's) stays
    assert t.model_max_length == 512


def test_llamafactory_cli_flags_use_the_llamafactory_dialect(run_facts_of) -> None:
    # hiyouga/LLaMA-Factory @ff6d4d12: flags on llamafactory-cli's command line, no YAML
    run = (
        "#!/bin/bash\nllamafactory-cli train --stage sft --do_train --model_name_or_path Qwen/Qwen2.5-7B "
        "--finetuning_type lora --cutoff_len 1024 --per_device_train_batch_size 2\n"
    )
    t = run_facts_of({"run.sh": run})["training"]
    assert t.dialect == "llamafactory"  # gradient checkpointing on by default, as for its YAML
    assert t.max_seq_length == 1024  # cutoff_len read under its LLaMA-Factory name


def test_swift_gets_no_trainingarguments_defaults(run_facts_of) -> None:
    pytest.importorskip("advisor.sources.launchers.swift")  # the launcher spec comes with its own change
    # modelscope/ms-swift @3602360a examples: `swift sft` with HF-named flags; its own defaults
    # (per_device_train_batch_size 1, ms-swift 4.6.0 swift/trainers/arguments.py:130) replace
    # TrainingArguments'
    run = (
        "#!/bin/bash\nswift sft --model Qwen/Qwen2.5-7B-Instruct --gradient_accumulation_steps 4 "
        "--max_length 2048\n"
    )
    names = run_facts_of({"run.sh": run})
    t = names["training"]
    assert t.reads_training_arguments is False
    assert t.gradient_accumulation_steps == 4  # its written flags, ms-swift's names read as the plan's
    assert t.max_seq_length == 2048 and t.model_name_or_path == "Qwen/Qwen2.5-7B-Instruct"
    assert "dataloader_pin_memory" not in t  # none of TrainingArguments' defaults
    per_device = t.value("per_device_train_batch_size")
    assert (
        per_device is not None and per_device.value == 1 and "ms-swift's default" in (per_device.note or "")
    )


def test_unknown_flag_of_an_hfargumentparser_script_says_valueerror(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # transformers 5.24 hf_argparser.py:338-354: parse_known_args, then ValueError on what is left
    write_files(
        tmp_path,
        {
            "run.sh": ALPACA_RUN.rstrip() + " \\\n    --evaluation_strategy no\n",
            "train.py": ALPACA_TRAIN,
            "requirements.txt": "transformers==5.24.0\n",
        },
    )
    monkeypatch.chdir(tmp_path)
    result = run_check([Path(".")], CheckOptions())
    hits = [f for f in result.findings if f.rule in ("GA002", "GA005") and "evaluation_strategy" in f.message]
    assert hits, [f.message for f in result.findings]
    assert all("ValueError" in f.message and "unrecognized arguments" not in f.message for f in hits)


def test_flag_words_are_typed_by_the_field_not_as_yaml_11(run_facts_of) -> None:
    # stanford_alpaca README.md:133-153 passes `--evaluation_strategy "no"`; HfArgumentParser hands the
    # field the string "no" (a str field), and string_to_bool only converts bool fields
    # (transformers 5.24 hf_argparser.py:36-46, 204-234)
    run = ALPACA_RUN.rstrip() + (
        ' \\\n    --evaluation_strategy "no" --eval_strategy no --report_to "none" --tf32 y'
        " --save_steps 2000 --warmup_ratio 0.03 --lora_dim 128 --own_switch no\n"
    )
    t = run_facts_of({"run.sh": run, "train.py": ALPACA_TRAIN})["training"]
    assert t.evaluation_strategy == "no"  # a removed key: typed as the str field it was
    assert t.eval_strategy == "no" and t.report_to == "none"  # were False and None
    assert t.tf32 is True and t.bf16 is True  # bool fields: string_to_bool's words
    assert t.save_steps == 2000 and t.warmup_ratio == 0.03
    assert t.lora_dim == 128 and t.own_switch is False  # no known field: typed as before

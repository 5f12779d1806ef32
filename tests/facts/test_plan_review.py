"""Review findings in the plan's reading of a script's arguments (review rev-b, items 1-4).

1. A script that pre-parses with argparse `parse_known_args()` and hands the rest to an HfArgumentParser
   (in the script, or in a project function it calls) is not a plain-argparse script: the run keeps
   the TrainingArguments defaults.
2. `import trl` (an ast.Import, not only `from trl import ...`) makes a script's parser a library's.
3. ms-swift's route files started directly (`torchrun swift/cli/sft.py`, `-m swift.cli.sft`) get no
   TrainingArguments defaults, as `swift sft` does, and ms-swift's `--model` / `--max_length` name the
   model and the sequence length.
4. GA107: an `--lr_scheduler_type linear` that is written is overridden by the DeepSpeed scheduler
   block just the same.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import write_files

# The reviewer's repro (review rev-b p1), hand-written: Python's argparse parse_known_args returns
# (namespace, the words it does not know) (Python 3.11 argparse.py parse_known_args), and the script
# hands those on to a project function whose HfArgumentParser reads them as TrainingArguments.
PRE_PARSER_TRAIN = """\
import argparse

from mypkg.runner import main

pre = argparse.ArgumentParser()
pre.add_argument("--local_rank", type=int, default=-1)
args, rest = pre.parse_known_args()
main(rest)
"""
RUNNER = """\
from dataclasses import dataclass

import transformers


@dataclass
class ModelArguments:
    model_name_or_path: str = "facebook/opt-125m"


def main(argv):
    parser = transformers.HfArgumentParser((ModelArguments, transformers.TrainingArguments))
    model_args, training_args = parser.parse_args_into_dataclasses(argv)
"""
PRE_PARSER_RUN = (
    "#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --model_name_or_path facebook/opt-125m "
    "--output_dir out --bf16 True --gradient_accumulation_steps 4\n"
)


def test_a_parse_known_args_pre_parser_keeps_the_trainingarguments_defaults(run_facts_of) -> None:
    names = run_facts_of({"run.sh": PRE_PARSER_RUN, "train.py": PRE_PARSER_TRAIN, "mypkg/runner.py": RUNNER})
    t, batch = names["training"], names["batch"]
    assert t.reads_training_arguments is True  # was False: "the script's parser is its own"
    assert t.per_device_train_batch_size == 8  # TrainingArguments' default
    assert batch.effective_batch == 8 * 4 * 2  # was ? (unknown)


def test_a_pre_parser_before_the_scripts_own_hfargumentparser_keeps_its_defaults(run_facts_of) -> None:
    # review rev-b p5: the pre-parser takes --use_my_loss, the script's HfArgumentParser the rest
    script = (
        "import argparse\nfrom dataclasses import dataclass, field\n"
        "from transformers import HfArgumentParser, TrainingArguments\n\n"
        "@dataclass\nclass ModelArguments:\n"
        "    model_name_or_path: str = field(default='facebook/opt-125m')\n\n"
        "pre = argparse.ArgumentParser()\npre.add_argument('--use_my_loss', action='store_true')\n"
        "known, rest = pre.parse_known_args()\n"
        "model_args, args = HfArgumentParser((ModelArguments, TrainingArguments))"
        ".parse_args_into_dataclasses(args=rest)\n"
    )
    run = "#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --output_dir out --use_my_loss --bf16 True\n"
    names = run_facts_of({"run.sh": run, "train.py": script})
    assert names["training"].reads_training_arguments is True
    assert names["batch"].effective_batch == 8 * 1 * 2


@pytest.mark.parametrize("spelling", ["import trl", "import trl as t", "import trl.trainer"])
def test_import_trl_makes_the_parser_a_librarys(run_facts_of, spelling: str) -> None:
    # an argparse script that builds its config from trl (trl.SFTConfig is TrainingArguments' subclass)
    script = (
        f"import argparse\n{spelling}\n\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--lr', type=float, default=1e-4)\n"
        "args = parser.parse_args()\n"
    )
    run = "#!/bin/bash\ntorchrun train.py --per_device_train_batch_size 4\n"
    names = run_facts_of({"run.sh": run, "train.py": script})
    assert names["training"].reads_training_arguments is True  # was False: "its own" argparse parser
    assert names["batch"].effective_batch == 4


# modelscope/ms-swift 4.6.0: swift/cli/sft.py is `from swift.llm import sft_main; sft_main()` (ROUTE_MAPPING,
# swift/cli/main.py:14-27); scripts start it under torchrun themselves (review rev-b p6 b.sh, c.sh)
SWIFT_FLAGS = "--model Qwen/Qwen2.5-7B-Instruct --train_type lora --dataset d.jsonl --max_length 2048"


@pytest.mark.parametrize(
    ("launch", "effective"),
    [
        # accumulation not written: ms-swift derives it from the world size (trainers/arguments.py:289-291)
        (f"torchrun --nproc_per_node 2 -m swift.cli.sft {SWIFT_FLAGS}", None),
        (f"torchrun --nproc_per_node 2 swift/cli/sft.py {SWIFT_FLAGS} --gradient_accumulation_steps 2", 4),
    ],
)
def test_swift_route_files_get_no_trainingarguments_defaults(
    facts_of, launch: str, effective: int | None
) -> None:
    files = {
        "run.sh": f"#!/bin/bash\n{launch}\n",
        "swift/cli/sft.py": 'from swift.llm import sft_main\nif __name__ == "__main__":\n    sft_main()\n',
    }
    names = facts_of(files)
    t = names["training"]
    assert t.reads_training_arguments is False
    per_device = t.value("per_device_train_batch_size")  # ms-swift's default 1, not TrainingArguments' 8
    assert per_device is not None and per_device.value == 1 and "ms-swift" in (per_device.note or "")
    assert names["batch"].effective_batch == effective  # 1 x 2 x 2 processes; was 16/32 from HF's 8
    assert t.model_name_or_path == "Qwen/Qwen2.5-7B-Instruct"  # ms-swift's --model
    assert t.max_seq_length == 2048  # ms-swift's --max_length
    assert names["model"].name == "Qwen/Qwen2.5-7B-Instruct"  # "no model is named" before


DS_WITH_SCHEDULER = (
    '{"scheduler": {"type": "WarmupLR"}, "zero_optimization": {"stage": 2}, '
    '"train_micro_batch_size_per_gpu": "auto"}\n'
)


@pytest.mark.parametrize(("flag", "flagged"), [(" --lr_scheduler_type linear", True), ("", False)])
def test_ga107_flags_a_written_linear_scheduler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: str, flagged: bool
) -> None:
    # QwenLM/Qwen @2df8e8a finetune/finetune_ds.sh form, with "linear" written instead of "cosine"
    run = f"#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --model_name_or_path m{flag}"
    run += " --deepspeed ds.json\n"
    write_files(
        tmp_path,
        {"launch.sh": run, "train.py": "from transformers import Trainer\n", "ds.json": DS_WITH_SCHEDULER},
    )
    monkeypatch.chdir(tmp_path)
    hits = [f for f in run_check([Path(".")], CheckOptions()).findings if f.rule == "GA107"]
    assert bool(hits) is flagged
    if flagged:
        assert "lr_scheduler_type=linear is never used" in hits[0].message

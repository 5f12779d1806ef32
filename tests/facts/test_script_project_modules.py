"""Argument dataclasses and parsers that live in the project's own modules (field trial A3).

The forms are lm-sys/FastChat @0e6d3e4b: fastchat/train/train_mem.py is only
``from fastchat.train.train import train`` and ``train()`` (the HfArgumentParser is in train(),
fastchat/train/train.py:259), fastchat/train/train_lora.py imports ModelArguments and DataArguments from
fastchat.train.train, and scripts/train_vicuna_7b.sh / train_lora.sh pass --evaluation_strategy, which
transformers 4.51 removed. The files below are hand-written excerpts of those forms.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import git_project

TRAIN = """\
from dataclasses import dataclass, field
from typing import Optional

import transformers
from transformers import Trainer


@dataclass
class ModelArguments:
    model_name_or_path: Optional[str] = field(default="facebook/opt-125m")
    trust_remote_code: bool = False


@dataclass
class DataArguments:
    data_path: str = field(default=None)
    lazy_preprocess: bool = False


@dataclass
class TrainingArguments(transformers.TrainingArguments):
    cache_dir: Optional[str] = field(default=None)
    model_max_length: int = field(default=512)


def train():
    parser = transformers.HfArgumentParser(
        (ModelArguments, DataArguments, TrainingArguments)
    )
    model_args, data_args, training_args = parser.parse_args_into_dataclasses()


if __name__ == "__main__":
    train()
"""

TRAIN_MEM = """\
from fastchat.train.llama2_flash_attn_monkey_patch import (
    replace_llama_attn_with_flash_attn,
)

replace_llama_attn_with_flash_attn()

from fastchat.train.train import train

if __name__ == "__main__":
    train()
"""

PATCH = "def replace_llama_attn_with_flash_attn():\n    pass\n"

TRAIN_LORA = """\
from dataclasses import dataclass, field

import transformers

from fastchat.train.train import (
    DataArguments,
    ModelArguments,
)


@dataclass
class TrainingArguments(transformers.TrainingArguments):
    model_max_length: int = field(default=512)
    flash_attn: bool = False


@dataclass
class LoraArguments:
    lora_r: int = 8
    q_lora: bool = False


def train():
    parser = transformers.HfArgumentParser(
        (ModelArguments, DataArguments, TrainingArguments, LoraArguments)
    )
    model_args, data_args, training_args, lora_args = parser.parse_args_into_dataclasses()


if __name__ == "__main__":
    train()
"""

FLAGS = (
    "    --model_name_or_path lmsys/vicuna-7b-v1.5 \\\n"
    "    --data_path data.json \\\n"
    "    --output_dir out \\\n"
    "    --per_device_train_batch_size 2 \\\n"
    "    --evaluation_strategy steps \\\n"
    "    --model_max_length 2048 \\\n"
    "    --lazy_preprocess True\n"
)
VICUNA_SH = "torchrun --nproc_per_node=4 fastchat/train/train_mem.py \\\n" + FLAGS
LORA_SH = (
    "torchrun --nproc_per_node=2 fastchat/train/train_lora.py \\\n    --lora_r 8 \\\n    --q_lora False \\\n"
    + FLAGS
)


def _findings() -> list[tuple[str, str, int, str]]:
    result = run_check([Path("scripts")], CheckOptions())
    assert not result.errors, result.errors
    return sorted(
        (f.rule, str(f.location.file), f.location.line, f.message)
        for f in result.findings
        if f.rule in {"GA002", "GA005", "GA007", "GA008"}
    )


def _fastchat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **extra: str) -> None:
    files = {
        # FastChat's root holds its pyproject.toml: that makes the folder the project outside git
        "pyproject.toml": "[project]\nname = 'fschat'\n",
        "fastchat/__init__.py": "",
        "fastchat/train/__init__.py": "",
        "fastchat/train/train.py": TRAIN,
        "fastchat/train/train_mem.py": TRAIN_MEM,
        "fastchat/train/train_lora.py": TRAIN_LORA,
        "fastchat/train/llama2_flash_attn_monkey_patch.py": PATCH,
        "scripts/train_vicuna_7b.sh": VICUNA_SH,
        "scripts/train_lora.sh": LORA_SH,
    }
    files.update(extra)
    git_project(tmp_path, files, monkeypatch)


def test_script_that_calls_train_of_a_project_module_is_judged_by_its_parser(tmp_path, monkeypatch):
    _fastchat(tmp_path, monkeypatch)
    found = [f for f in _findings() if f[1] == "scripts/train_vicuna_7b.sh"]
    # only --evaluation_strategy: --lazy_preprocess, --model_max_length are train.py's own fields
    assert [f[:3] for f in found] == [("GA005", "scripts/train_vicuna_7b.sh", 6)]
    assert "--evaluation_strategy was removed in transformers 4.51" in found[0][3]
    assert "fastchat/train/train.py's HfArgumentParser raises ValueError" in found[0][3]


def test_dataclasses_imported_from_a_project_module_are_resolved(tmp_path, monkeypatch):
    _fastchat(tmp_path, monkeypatch)
    found = [f for f in _findings() if f[1] == "scripts/train_lora.sh"]
    # --data_path, --lazy_preprocess (train.py's DataArguments), --lora_r, --q_lora (its own): known
    assert [f[:3] for f in found] == [("GA005", "scripts/train_lora.sh", 8)]
    assert "fastchat/train/train_lora.py's HfArgumentParser" in found[0][3]


def test_a_misspelt_field_of_an_imported_dataclass_is_unknown(tmp_path, monkeypatch):
    _fastchat(tmp_path, monkeypatch)
    (tmp_path / "scripts/train_lora.sh").write_text(
        LORA_SH.replace("--lazy_preprocess", "--lazy_preprocessing"), encoding="utf-8"
    )
    rules = [(f[0], f[2]) for f in _findings() if f[1] == "scripts/train_lora.sh"]
    assert rules == [("GA002", 10), ("GA005", 8)]


def test_unresolvable_imports_leave_the_flags_unjudged(tmp_path, monkeypatch):
    # the module is not in the project (an installed package): nothing is said about the flags
    _fastchat(tmp_path, monkeypatch)
    (tmp_path / "fastchat/train/train.py").unlink()
    assert _findings() == []


def test_a_base_outside_the_project_in_the_followed_module_leaves_the_flags_unjudged(tmp_path, monkeypatch):
    train = TRAIN.replace("class DataArguments:", "class DataArguments(BaseData):").replace(
        "import transformers\n", "import transformers\nfrom somelib.args import BaseData\n", 1
    )
    _fastchat(tmp_path, monkeypatch, **{"fastchat/train/train.py": train})
    assert _findings() == []


def test_a_script_that_reads_argv_itself_is_not_judged_by_the_called_module(tmp_path, monkeypatch):
    mem = TRAIN_MEM.replace("    train()", "    import sys\n    sys.argv = sys.argv[:1]\n    train()")
    _fastchat(tmp_path, monkeypatch, **{"fastchat/train/train_mem.py": mem})
    assert [f for f in _findings() if f[1] == "scripts/train_vicuna_7b.sh"] == []


def test_a_relative_re_export_is_followed(tmp_path, monkeypatch):
    # fastchat/train/args.py re-exports the dataclasses of train.py with a relative import
    lora = TRAIN_LORA.replace("from fastchat.train.train import", "from fastchat.train.args import")
    _fastchat(
        tmp_path,
        monkeypatch,
        **{
            "fastchat/train/train_lora.py": lora,
            "fastchat/train/args.py": "from .train import DataArguments, ModelArguments\n",
        },
    )
    found = [f[:3] for f in _findings() if f[1] == "scripts/train_lora.sh"]
    assert found == [("GA005", "scripts/train_lora.sh", 8)]


# ------------------------------------------------------------------------------------------------
# the literal defaults of those dataclasses stand in the plan (as a script's own ones do)
# ------------------------------------------------------------------------------------------------


def _fastchat_files(**extra: str) -> dict[str, str]:
    files = {
        # FastChat's root holds its pyproject.toml: that makes the folder the project outside git
        "pyproject.toml": "[project]\nname = 'fschat'\n",
        "fastchat/__init__.py": "",
        "fastchat/train/__init__.py": "",
        "fastchat/train/train.py": TRAIN,
        "fastchat/train/train_mem.py": TRAIN_MEM,
        "fastchat/train/llama2_flash_attn_monkey_patch.py": PATCH,
    }
    files.update(extra)
    return files


def test_the_called_modules_dataclass_default_sets_the_sequence_length(facts_of) -> None:
    # train_vicuna_7b.sh without --model_max_length: train.py's TrainingArguments default (512) holds
    run = VICUNA_SH.replace("    --model_max_length 2048 \\\n", "")
    names = facts_of({**_fastchat_files(), "scripts/train_vicuna_7b.sh": run})
    seq = names["training"].value("model_max_length")
    assert seq is not None and seq.value == 512
    assert (seq.origin.file.as_posix().endswith("fastchat/train/train.py"), seq.origin.line) == (True, 23)
    assert names["estimates"].seq_len == 512


def test_an_imported_dataclass_default_sets_the_sequence_length(facts_of) -> None:
    # train_lora.py's TrainingArguments here extends the one of fastchat.train.train (imported under
    # another name), which declares model_max_length = 512
    lora = TRAIN_LORA.replace("    model_max_length: int = field(default=512)\n", "").replace(
        "class TrainingArguments(transformers.TrainingArguments):",
        "class TrainingArguments(BaseTrainingArguments):",
    )
    lora = lora.replace(
        "    ModelArguments,\n", "    ModelArguments,\n    TrainingArguments as BaseTrainingArguments,\n"
    )
    run = LORA_SH.replace("    --model_max_length 2048 \\\n", "")
    names = facts_of(
        {**_fastchat_files(), "fastchat/train/train_lora.py": lora, "scripts/train_lora.sh": run}
    )
    seq = names["training"].value("model_max_length")
    assert seq is not None and seq.value == 512
    assert seq.origin.file.as_posix().endswith("fastchat/train/train.py")

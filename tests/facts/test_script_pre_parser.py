"""A flag an argparse pre-parser declares (`known, rest = pre.parse_known_args()`, the rest handed to
HfArgumentParser(...).parse_args_into_dataclasses(args=rest)) is not judged against the dataclasses:
neither parser refuses it. A flag neither declares is still GA002 (the HF parser raises)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import git_project

TRAIN = """\
import argparse
from dataclasses import dataclass, field

from transformers import HfArgumentParser, TrainingArguments


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="facebook/opt-125m")


pre = argparse.ArgumentParser()
pre.add_argument("--use_my_loss", action="store_true")
known, rest = pre.parse_known_args()
hf = HfArgumentParser((ModelArguments, TrainingArguments))
model_args, args = hf.parse_args_into_dataclasses(args=rest)
"""


@pytest.mark.parametrize(
    ("flags", "flagged"), [("--use_my_loss", []), ("--use_my_loss --no_such 1", ["no_such"])]
)
def test_pre_parsed_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: str, flagged: list[str]
) -> None:
    run = f"#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --output_dir out {flags}\n"
    git_project(tmp_path, {"train.py": TRAIN, "run.sh": run}, monkeypatch)
    result = run_check([Path(".")], CheckOptions())
    assert [f.message.split()[0].lstrip("-") for f in result.findings if f.rule == "GA002"] == flagged

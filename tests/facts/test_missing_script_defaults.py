"""A launch script whose training script is named but not there gets no TrainingArguments defaults:
whose parser reads its flags is unknown, so nothing is judged against a default it may not have
(DeepSpeedExamples @83757d9c training/BingBertSquad/run_squad_deepspeed.sh with its argparse script
absent drew a GA103 error against HF's per-device default of 8)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import write_files

DS = '{"train_micro_batch_size_per_gpu": 3, "gradient_accumulation_steps": 1}\n'


def _rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_script: bool) -> set[str]:
    files = {
        "run.sh": "#!/bin/bash\ndeepspeed train.py --deepspeed ds.json --learning_rate 3e-5\n",
        "ds.json": DS,
    }
    if with_script:
        files["train.py"] = (
            "from transformers import HfArgumentParser, TrainingArguments\n"
            "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"
        )
    write_files(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    result = run_check([Path(".")], CheckOptions())
    return {f.rule for f in result.findings}


def test_a_missing_script_is_reported_and_nothing_is_judged_against_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules = _rules(tmp_path, monkeypatch, with_script=False)
    assert "GA004" in rules and "GA103" not in rules


def test_an_hf_script_gets_the_defaults_and_the_mismatch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # per_device_train_batch_size left at TrainingArguments' 8 against the config's 3: HF raises at train()
    assert "GA103" in _rules(tmp_path, monkeypatch, with_script=True)

"""GA401 on a run padded to its longest sample (issue 21 "data lengths", the LLaVA pretraining case): the
peak at max_length needs a batch holding a sample that long, which the config does not say. The estimate
finds the longest sample length that fits (advisor.facts.peak_memory.longest_fitting_length); GA401 names it
and is a warning when it is at least a quarter of max_length."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.core.records import replace
from advisor.estimate import TrainingSetup, resolve_model
from advisor.facts.peak_memory import longest_fitting_length, peak_of
from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import write_files

LAUNCH = "#!/bin/bash\naccelerate launch --num_processes 1 train.py sft.yaml\n"
LORA_8B = (
    "model_name_or_path: meta-llama/Meta-Llama-3-8B\nbf16: true\nuse_peft: true\n"
    "per_device_train_batch_size: 1\n"
)


def _ga401(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sft: str) -> list[tuple[str, str]]:
    write_files(tmp_path, {"launch.sh": LAUNCH, "train.py": "print('train')\n", "sft.yaml": sft})
    monkeypatch.chdir(tmp_path)
    result = run_check([Path(".")], CheckOptions(hardware="1xRTX4090"))
    assert not result.errors, result.errors
    return [
        (str(getattr(f.severity, "value", f.severity)), f.message)
        for f in result.findings
        if f.rule == "GA401"
    ]


def test_padded_to_the_longest_it_is_a_warning_that_says_the_length(tmp_path, monkeypatch) -> None:
    [(severity, message)] = _ga401(tmp_path, monkeypatch, LORA_8B + "max_length: 4096\n")
    assert severity == "warning"
    assert "with no sample over about 1152 tokens it fits" in message


def test_packed_every_batch_is_at_max_length_it_stays_an_error(tmp_path, monkeypatch) -> None:
    [(severity, message)] = _ga401(tmp_path, monkeypatch, LORA_8B + "max_length: 4096\npacking: true\n")
    assert severity == "error"
    assert "no sample over" not in message


def test_fitting_only_far_below_the_cap_stays_an_error(tmp_path, monkeypatch) -> None:
    # fits under ~1152 tokens: a quarter of 4096, not of 16384
    [(severity, message)] = _ga401(tmp_path, monkeypatch, LORA_8B + "max_length: 16384\n")
    assert severity == "error"
    assert "with no sample over about 1152 tokens it fits" in message


def _setup(**kw: object) -> TrainingSetup:
    model = resolve_model("meta-llama/Meta-Llama-3-8B").count()
    base = {"model": model, "method": "lora", "micro_batch": 1, "seq_len": 4096, "precision": "bf16"}
    return TrainingSetup(**{**base, **kw})


def test_the_length_is_the_longest_multiple_of_64_that_fits() -> None:
    setup = _setup(fixed_length=False)
    usable = 24.0
    n = longest_fitting_length(setup, usable)
    assert n is not None and n % 64 == 0 and n < 4096
    assert peak_of(replace(setup, seq_len=n)) <= usable < peak_of(replace(setup, seq_len=n + 64))


def test_no_length_when_the_batches_are_one_shape_or_nothing_fits() -> None:
    assert longest_fitting_length(_setup(fixed_length=True), 24.0) is None
    assert (
        longest_fitting_length(_setup(fixed_length=False), 4.0) is None
    )  # 15 GiB of weights: over at any length

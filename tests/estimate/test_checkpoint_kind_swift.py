"""ms-swift sets use_reentrant itself (ms-swift 4.6 swift/trainers/mixin.py:900-919
_fix_gradient_checkpointing, @3602360a): the written gradient_checkpointing_kwargs, else non-reentrant
under plain DDP and reentrant otherwise (one process, DeepSpeed, FSDP). Read where the estimator's setup is
built (advisor.facts.checkpoint_kind.checkpoint_reentrant)."""

from __future__ import annotations

from pathlib import Path

import pytest

import advisor.facts.estimate_inputs as E
from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import git_project

SWIFT = """#!/bin/bash
{env}swift sft \\
    --model Qwen/Qwen2.5-7B-Instruct \\
    --tuner_type lora \\
    --torch_dtype bfloat16 \\
    --max_length 2048 {extra}
"""


def _reentrant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: str, extra: str = "") -> list[object]:
    seen: list[object] = []
    real = E.checkpoint_reentrant

    def spy(*args: object) -> bool | None:
        seen.append(real(*args))  # type: ignore[arg-type]
        return seen[-1]  # type: ignore[return-value]

    monkeypatch.setattr(E, "checkpoint_reentrant", spy)
    tmp_path.mkdir(parents=True, exist_ok=True)
    git_project(tmp_path, {"train.sh": SWIFT.format(env=env, extra=extra)}, monkeypatch)
    result = run_check([Path(".")], CheckOptions(hardware="8xA100-SXM-80GB"))
    assert not result.errors, result.errors
    return seen


def test_one_process_is_reentrant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert set(_reentrant(tmp_path, monkeypatch, "")) == {True}


def test_plain_ddp_is_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert set(_reentrant(tmp_path, monkeypatch, "NPROC_PER_NODE=2 \\\n")) == {False}


def test_the_written_kwargs_win(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kw = "--gradient_checkpointing_kwargs '{\"use_reentrant\": false}'"
    assert set(_reentrant(tmp_path, monkeypatch, "", kw)) == {False}

"""`$(expr ...)` over known integers is read as its output (ms-swift @3602360a
examples/train/multi-gpu/ddp/train.sh writes `--gradient_accumulation_steps $(expr 16 / $nproc_per_node)`),
as GNU expr computes it; anything else in `$(...)` stays unknown with its reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, run_check
from advisor.sources.shell.substitution import expr_value
from tests.conftest import write_files

SWIFT = """#!/bin/bash
nproc_per_node=2

CUDA_VISIBLE_DEVICES=0,1 \\
NPROC_PER_NODE=$nproc_per_node \\
swift sft \\
    --model Qwen/Qwen2.5-7B-Instruct \\
    --per_device_train_batch_size 1 \\
    --gradient_accumulation_steps {gas}
"""


def _batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gas: str) -> tuple[object, object]:
    write_files(tmp_path, {"train.sh": SWIFT.format(gas=gas)})
    monkeypatch.chdir(tmp_path)
    result = run_check([Path(".")], CheckOptions())
    assert not result.errors, result.errors
    (run,) = result.runs
    return run.world_size, run.effective_batch


def test_ms_swift_accumulation_from_expr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _batch(tmp_path, monkeypatch, "$(expr 16 / $nproc_per_node)") == (2, 16)


def test_quoted_operands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _batch(tmp_path, monkeypatch, '$(expr 16 / "$nproc_per_node")') == (2, 16)


def test_other_substitutions_stay_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    world, batch = _batch(tmp_path, monkeypatch, "$(python -c 'print(8)')")
    assert world == 2 and batch is None


@pytest.mark.parametrize(
    ("words", "value"),
    [
        ("16 / 4", 4),
        ("16 / 3", 5),  # truncated
        ("-7 / 2", -3),  # toward zero, as C
        ("-7 % 3", -1),
        ("2 + 3 \\* 4", 14),  # * binds tighter; quoted as the shell must pass it
        ("10 - 2 - 3", 5),  # left to right
        ("2 * 3", None),  # a bare * is a glob the shell expands first
        ("8 / 0", None),  # expr: division by zero
        ("1 = 1", None),  # comparisons and string operations are not read
        ("3 -", None),
    ],
)
def test_expr_arithmetic(words: str, value: int | None) -> None:
    assert expr_value(words.split()) == value

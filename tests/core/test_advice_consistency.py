"""Advice that agrees with itself, over every fixture project and every corpus file (both corpora):

- after `--fix --unsafe-fixes` on a copy, a second check raises no finding that the fixes caused (a
  rule code on a file where the first check did not have it: GA201's fix once wrote a worker count
  that GA202 then flagged; the V100 fix switched TrainingArguments to fp16 and left accelerate's
  `--mixed_precision bf16`, which GA504 then reported);
- every suggestion names only what the given machine has: no "ZeRO-3 across 8 GPUs" on one GPU.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
import yaml

from advisor.engine.fix import fix_until_stable
from advisor.pipeline.check import CheckOptions, run_check
from advisor.sources.boundary import project_boundary
from advisor.sources.hardware import load_hardware
from tests.conftest import CORPUS, REPO

FIXTURES = sorted(p.parent for p in (REPO / "fixtures" / "rules").glob("*/*/expect.yaml"))
CORPUS2 = sorted(p for p in (REPO / "tests" / "corpus2").glob("*/*") if p.is_file())
CORPUS1 = (
    sorted(p for p in CORPUS.glob("*/*") if p.is_file() and p.name != "SOURCES.md") if CORPUS.is_dir() else []
)
# corpus files on a machine where most rules have something to say, and on one small GPU (GA401's advice)
CORPUS_MACHINES = ("8xH100-SXM", "1xRTX4090")
# "ZeRO-3 across 8 GPUs", "shard across the machine's 4 GPUs", "over 2 GPUs"
GPU_COUNT_SUGGESTION = re.compile(r"\b(?:across|over)\s+(?:the machine's\s+|all\s+)?(\d+)\s+GPUs\b")


def _machine_gpus(hardware: str | None) -> int | None:
    if hardware is None:
        return None
    hw = load_hardware(hardware)
    return int(hw.gpus.count) * int(hw.nodes or 1)


def _codes(result) -> set[tuple[str, str]]:
    return {(f.rule, f.location.file.as_posix()) for f in result.findings}


def _fix_and_recheck(folder: Path, hardware: str | None, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(folder)
    options = CheckOptions(hardware=hardware)
    first = run_check([Path(".")], options)
    assert not first.errors, first.errors
    fix_until_stable(
        first,
        lambda: run_check([Path(".")], options),
        unsafe=True,
        write=True,
        boundary=project_boundary(first.settings, [Path(".")]),
    )
    second = run_check([Path(".")], options)
    return first, second


def _judge(first, second, hardware: str | None) -> list[str]:
    problems = [f"caused by a fix: {rule} in {file}" for rule, file in sorted(_codes(second) - _codes(first))]
    gpus = _machine_gpus(hardware)
    if gpus is not None:
        for f in first.findings:
            text = " ".join([f.message, f.fix.description if f.fix is not None else ""])
            for n in GPU_COUNT_SUGGESTION.findall(text):
                if int(n) > gpus:
                    problems.append(f"{f.rule} suggests {n} GPUs on a {gpus}-GPU machine: {text[:200]}")
    return problems


@pytest.mark.parametrize("case", FIXTURES, ids=[f"{c.parent.name}/{c.name}" for c in FIXTURES])
def test_fixture_fixes_cause_nothing(case: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hardware = yaml.safe_load((case / "expect.yaml").read_text()).get("hardware")
    work = tmp_path / case.name
    shutil.copytree(case, work)
    first, second = _fix_and_recheck(work, hardware, monkeypatch)
    assert not _judge(first, second, hardware)


def _corpus_case(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hardware: str) -> list[str]:
    work = tmp_path / "project"
    work.mkdir(parents=True)
    shutil.copy(path, work / path.name)
    first, second = _fix_and_recheck(work, hardware, monkeypatch)
    return _judge(first, second, hardware)


@pytest.mark.parametrize("hardware", CORPUS_MACHINES)
def test_corpus_fixes_cause_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hardware: str) -> None:
    if not CORPUS1:
        pytest.skip("../shared/corpus is absent")
    problems: list[str] = []
    for i, path in enumerate([*CORPUS1, *CORPUS2]):
        found = _corpus_case(path, tmp_path / str(i), monkeypatch, hardware)
        problems += [f"{path.parent.name}/{path.name}: {p}" for p in found]
    assert not problems, problems


def test_one_gpu_advice_is_what_fits_on_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An 8B full fine-tune on one RTX 4090: GA401 names QLoRA (what fits) and no multi-GPU sharding."""
    (tmp_path / "sft.yaml").write_text(
        "model_name_or_path: meta-llama/Llama-3.1-8B\nbf16: true\n"
        "per_device_train_batch_size: 4\nmax_length: 4096\n"
    )
    monkeypatch.chdir(tmp_path)
    result = run_check([Path(".")], CheckOptions(hardware="1xRTX4090", select=["GA401"]))
    (finding,) = result.findings
    assert "QLoRA" in finding.message and "ZeRO-3" not in finding.message
    assert not GPU_COUNT_SUGGESTION.search(finding.message)


@pytest.fixture(autouse=True)
def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

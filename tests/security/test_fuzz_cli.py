"""A small profile of benchmarks/fuzz_cli.py (issue 9): the whole CLI (check, plan, estimate, --fix,
--diff) in this process over mutated corpus files, whole mutated runs and random bytes, with zero
tracebacks and no internal error. The benchmark runs 10,000 examples; this runs a few hundred with
fixed seeds.

It replaces tests/core/test_fuzz.py, which fed mutated corpus files to run_check alone.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import CORPUS, REPO


def _fuzzer() -> ModuleType:
    path = REPO / "benchmarks" / "fuzz_cli.py"
    spec = importlib.util.spec_from_file_location("fuzz_cli", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_cli"] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


fuzz = _fuzzer()


def _assert_clean(report: object) -> None:
    failures = report.failures  # type: ignore[attr-defined]
    assert not failures, "\n\n".join(f"{e.origin}: {' '.join(e.command)}\n{f}" for e, f in failures[:3])


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is absent")
def test_mutated_corpus_files_through_the_whole_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPU_ADVISE_DEBUG", "1")  # run_fuzz sets it too; monkeypatch restores it
    report = fuzz.run_fuzz(150, seed=20261201, files=fuzz.corpus_files(CORPUS))
    assert report.examples == 150
    _assert_clean(report)
    # every command ran, and at least one produced findings
    assert {command for command, _ in report.exits} == {" ".join(c[:2]) for c in fuzz.COMMANDS}
    assert any(code == 1 for _, code in report.exits)


def test_random_bytes_through_the_whole_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPU_ADVISE_DEBUG", "1")
    report = fuzz.run_fuzz(30, seed=7, files=[])
    assert report.examples == 30
    _assert_clean(report)


def test_mutations_change_the_text() -> None:
    rng = random.Random(3)
    text = "a: 1\nb: [1, 2]\nc: x\n"
    assert sum(fuzz.mutate(rng, text) != text.encode() for _ in range(50)) >= 45


def test_a_crash_is_reported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The harness itself must see an escaped exception: a fuzzer that cannot fail proves nothing."""

    def boom(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("planted")

    monkeypatch.setattr("advisor.pipeline.check.run_check", boom)
    monkeypatch.setenv("GPU_ADVISE_DEBUG", "1")
    report = fuzz.run_fuzz(6, seed=1, files=[], save=tmp_path)
    # an extensionless file of random bytes ("config") is no file gpu-advise reads: skipped, said, exit 0
    # before any check runs; every other check must surface the planted exception
    checks = sum(n for (command, code), n in report.exits.items() if command.startswith("check") and code)
    assert report.tracebacks == checks > 0
    assert "ZeroDivisionError: planted" in report.failures[0][1]
    assert (tmp_path / "failure-0001" / "command.txt").is_file()

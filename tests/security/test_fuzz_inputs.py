"""A small profile of benchmarks/fuzz_inputs.py (issue 17's property-based campaign): a few dozen drawn
projects through the real CLI, and the harness itself seeing each property broken (a crash, a hang, a
write or a read beside the project, an unescaped control character), so the campaign cannot pass by
not looking. The benchmark runs 10,000 examples; this runs about fifty.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import REPO


def _load(name: str) -> ModuleType:
    path = REPO / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


fuzz = _load("fuzz_inputs")
strategies = sys.modules["fuzz_strategies"]


def _one(files: dict[str, bytes], command: list[str] | None = None) -> Any:
    """An examples() function that always draws this project."""

    def draw(seed: int, index: int, kinds: tuple[str, ...]) -> Any:
        return strategies.Example("scripts", dict(files), command or ["check", "."], "planted")

    return draw


BASE = {"args.yaml": b"output_dir: out\nper_device_train_batch_size: 2\n"}


def test_drawn_projects_of_every_kind_through_the_cli() -> None:
    started = time.perf_counter()
    report = fuzz.run_campaign(48, seed=20260517, hard_limit=20, shrink_budget=0)
    assert report.examples == 48
    kinds = {kind for kind, _, _ in report.exits}
    assert kinds == set(strategies.KINDS)
    codes = {code for _, _, code in report.exits}
    assert {0, 1, 2} <= codes, report.exits  # drawn projects pass, fail and are refused: all three reached
    assert {command for _, command, _ in report.exits} >= {"check", "plan", "estimate"}
    assert not report.failures, "\n\n".join(
        f"example {r.index} [{e.kind}] gpu-advise {' '.join(e.command)}\n{r.category}: {r.signature}\n"
        f"{(r.failure or '')[-1500:]}"
        for e, r in report.failures[:3]
    )
    assert time.perf_counter() - started < 60


def test_the_same_seed_draws_the_same_projects() -> None:
    a = [strategies.make_example(5, i) for i in range(16)]
    b = [strategies.make_example(5, i) for i in range(16)]
    assert [(e.files, e.command, e.links) for e in a] == [(e.files, e.command, e.links) for e in b]
    assert len({e.kind for e in a}) == len(strategies.KINDS)
    assert a[0].files != strategies.make_example(6, 0).files


def test_a_crash_is_caught_shrunk_and_saved(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        if b"BOOM" in Path("train.py").read_bytes():
            raise ZeroDivisionError("planted")

    monkeypatch.setattr("advisor.pipeline.check.run_check", boom)
    files = {**BASE, "launch.sh": b"torchrun train.py\n", "train.py": b"import os\nx = 1\nBOOM = 2\ny = 3\n"}
    report = fuzz.run_campaign(1, seed=1, save=tmp_path, examples=_one(files), shrink_budget=40)
    assert [r.category for _, r in report.failures] == ["crash"]
    assert report.failures[0][1].signature.startswith("ZeroDivisionError")
    (folder,) = report.saved
    assert folder.parent == tmp_path / "scripts"
    # the reproducer keeps only what the crash needs: one file, one line
    kept = sorted(p.name for p in (folder / "proj").iterdir() if p.name != ".git")
    assert kept == ["train.py"]
    assert (folder / "proj" / "train.py").read_bytes() == b"BOOM = 2\n"
    assert "ZeroDivisionError: planted" in (folder / "failure.txt").read_text()
    assert (folder / "command.txt").read_text().startswith("cd proj && GPU_ADVISE_DEBUG=1 gpu-advise check .")
    assert (folder / "original" / "proj" / "launch.sh").is_file()


def test_a_hang_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("advisor.pipeline.check.run_check", lambda *a, **k: time.sleep(60))
    started = time.perf_counter()
    report = fuzz.run_campaign(2, seed=1, examples=_one(BASE), hard_limit=1, shrink_budget=0)
    assert [r.category for _, r in report.failures] == ["hang", "hang"]
    assert "run_check" in report.failures[0][1].failure or "sleep" in report.failures[0][1].failure
    assert time.perf_counter() - started < 20


def test_a_write_beside_the_project_is_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    def write(*args: object, **kwargs: object) -> None:
        Path("../outside/victim.txt").write_text("overwritten")
        raise SystemExit(0)

    monkeypatch.setattr("advisor.pipeline.check.run_check", write)
    report = fuzz.run_campaign(1, seed=1, examples=_one(BASE), shrink_budget=0)
    assert [r.category for _, r in report.failures] == ["write-outside"]
    assert "victim.txt" in report.failures[0][1].signature


@pytest.mark.parametrize(
    ("printed", "category"),
    [
        (lambda: Path("../outside/secret.yaml").read_text(), "read-outside"),
        (lambda: Path("args.yaml").read_text(encoding="utf-8"), "unescaped"),
    ],
)
def test_what_reaches_the_output_is_judged(
    monkeypatch: pytest.MonkeyPatch, printed: Any, category: str
) -> None:
    def echo(*args: object, **kwargs: object) -> None:
        print(printed())
        raise SystemExit(0)

    monkeypatch.setattr("advisor.pipeline.check.run_check", echo)
    files = {"args.yaml": 'output_dir: "\x1b[2J\u202e"\n'.encode()}
    report = fuzz.run_campaign(1, seed=1, examples=_one(files), shrink_budget=0)
    assert [r.category for _, r in report.failures] == [category]

"""A descriptor with several problems: each is said on a line of its own, `file:line:col: problem`, by
every command that loads it (`hardware show`, `check -H`, `estimate -H`), instead of one line with a
literal `\\n` between them. A newline that the file's own text carries stays escaped inside its line."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app

TWO_PROBLEMS = """\
name: lab
gpus:
  - model: H100
    count: -1
interconnect: banana
"""


def _stderr(args: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, list[str]]:
    monkeypatch.chdir(cwd)
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    return result.exit_code, result.stderr.splitlines()


@pytest.mark.parametrize(
    "args",
    [
        ["hardware", "show", "hw.yaml"],
        ["check", ".", "-H", "hw.yaml"],
        ["estimate", "Qwen/Qwen2.5-0.5B", "-H", "hw.yaml"],
    ],
    ids=["hardware-show", "check", "estimate"],
)
def test_each_problem_on_its_own_line(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (tmp_path / "hw.yaml").write_text(TWO_PROBLEMS, encoding="utf-8")
    code, lines = _stderr(args, tmp_path, monkeypatch)
    assert code == 2
    assert len(lines) == 2, lines
    assert lines[0].startswith("gpu-advise: hw.yaml:3:3: gpus"), lines
    assert lines[1].startswith("gpu-advise: hw.yaml:5:1: unknown key 'interconnect'"), lines
    assert not any("\\n" in line for line in lines), lines


def test_a_newline_in_the_file_stays_inside_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "hw.yaml").write_text(
        'name: lab\ngpus: {model: H100, count: 1}\n"x\\n::error file=a,line=1::pwned": 1\nbanana: 2\n',
        encoding="utf-8",
    )
    code, lines = _stderr(["hardware", "show", "hw.yaml"], tmp_path, monkeypatch)
    assert code == 2
    assert all(line.startswith("gpu-advise: hw.yaml:") for line in lines), lines
    assert not any(line.lstrip().startswith("::") for line in lines), lines

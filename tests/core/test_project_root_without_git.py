"""Outside git and without a settings file, a launch script checked from the project's folder names its
files from there (ms-swift @3602360a examples/train/multi-gpu/fsdp2_lora/train.sh starts
`accelerate launch ... swift/cli/sft.py`, run from the repository root): the project is the current
folder when the checked path is inside it, not the script's own folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import write_files

FILES = {
    "examples/train/fsdp/train.sh": "#!/bin/bash\ntorchrun --nproc_per_node 2 src/train.py --output_dir o\n",
    "src/train.py": "print('train')\n",
    "setup.py": "from setuptools import setup\nsetup()\n",  # what makes the folder a project's root
}


def _missing(result: object) -> list[str]:
    return [f.message for f in result.findings if f.rule in ("GA004", "GA006")]  # type: ignore[attr-defined]


def test_a_script_checked_from_the_project_folder_finds_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_files(tmp_path, FILES)
    monkeypatch.chdir(tmp_path)
    result = run_check([Path("examples/train/fsdp/train.sh")], CheckOptions())
    assert not result.errors and not _missing(result)
    assert [r.world_size for r in result.runs] == [2]


def test_from_inside_the_scripts_folder_the_project_is_that_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The current folder is only taken when the checked path is inside it: run from the script's own
    folder, src/train.py (relative to the project root the script assumes) is not there."""
    write_files(tmp_path, FILES)
    monkeypatch.chdir(tmp_path / "examples/train/fsdp")
    result = run_check([Path("train.sh")], CheckOptions())
    assert any("train.py" in m for m in _missing(result))


def test_the_current_folder_needs_a_project_marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Checked from a folder that is no project's root (no setup.py, pyproject.toml, ...), the project
    is the script's own folder: files above it are outside (GA006), not read."""
    write_files(tmp_path, {k: v for k, v in FILES.items() if k != "setup.py"})
    monkeypatch.chdir(tmp_path)
    result = run_check([Path("examples/train/fsdp/train.sh")], CheckOptions())
    assert any("train.py" in m for m in _missing(result))


def test_never_the_home_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A downloaded repository checked from the home folder does not make the home folder the project
    (its references could then read ~/.netrc), even when the home folder holds a marker."""
    write_files(tmp_path, FILES)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    result = run_check([Path("examples/train/fsdp/train.sh")], CheckOptions())
    assert any("train.py" in m for m in _missing(result))

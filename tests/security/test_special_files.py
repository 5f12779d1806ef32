"""Defect 4 of issue 9: only regular files are read, and reading always ends.

A FIFO (as an argument, beside the checked file, inside a checked folder) used to hang `check`
forever; a symlink to /dev/zero was read without limit; `hardware detect --topo /dev/zero` never
returned; a symlink loop and an unreadable sub-folder gave tracebacks. Each case runs the real CLI in
a subprocess with a timeout, so a regression fails the test instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.sources.read import ReadRefused, read_bytes

TIMEOUT = 60  # generous for a loaded machine; a hang is what fails


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("GITHUB_ACTIONS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "advisor.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    return proc


def _findings(proc: subprocess.CompletedProcess[str]) -> set[tuple[str, str, int, int]]:
    report = json.loads(proc.stdout)
    return {(f["rule"], f["file"], f["line"], f["column"]) for f in report["findings"]}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / "args.yaml").write_text("per_device_train_batch_size: 4\nlearning_rate: 0.0001\n")
    return root


def test_fifo_as_argument(project: Path) -> None:
    os.mkfifo(project / "pipe.yaml")
    proc = _run(["check", "--format", "json", "pipe.yaml"], project)
    assert proc.returncode == 1
    assert _findings(proc) == {("GA001", "pipe.yaml", 1, 1)}


@pytest.mark.parametrize("name", ["pipe.yaml", "launch.sh", "notes.json"])
def test_fifo_beside_the_checked_file(project: Path, name: str) -> None:
    """A config given alone makes discovery read its project's files, looking for what names it."""
    os.mkfifo(project / name)
    proc = _run(["check", "--format", "json", "args.yaml"], project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _findings(proc) == set()


def test_fifo_inside_a_checked_folder(project: Path) -> None:
    (project / "configs").mkdir()
    os.mkfifo(project / "configs" / "ds.json")
    proc = _run(["check", "--format", "json", "."], project)
    assert proc.returncode == 1
    assert _findings(proc) == {("GA001", "configs/ds.json", 1, 1)}


def test_fifo_named_by_a_config(project: Path) -> None:
    os.mkfifo(project / "ds.json")
    (project / "args.yaml").write_text("per_device_train_batch_size: 4\ndeepspeed: ds.json\n")
    proc = _run(["check", "--format", "json", "args.yaml"], project)
    assert proc.returncode == 1
    assert ("GA001", "ds.json", 1, 1) in _findings(proc)


def test_fifo_for_plan_baseline_and_rules(project: Path) -> None:
    os.mkfifo(project / "pipe.yaml")
    proc = _run(["plan", "pipe.yaml"], project)
    assert proc.returncode == 0  # no run: a FIFO is not a config
    proc = _run(["check", "args.yaml", "--baseline", "pipe.yaml"], project)
    assert proc.returncode == 2 and "pipe.yaml" in proc.stderr
    (project / "policies").mkdir()
    os.mkfifo(project / "policies" / "XS001.yaml")
    proc = _run(["check", "args.yaml", "--rules", "policies"], project)
    assert proc.returncode == 2 and "XS001.yaml" in proc.stderr


def test_symlink_to_dev_zero_as_argument(project: Path) -> None:
    (project / "zero.yaml").symlink_to("/dev/zero")
    proc = _run(["check", "--format", "json", "zero.yaml"], project)
    assert proc.returncode == 1
    assert _findings(proc) == {("GA001", "zero.yaml", 1, 1)}


def test_symlink_to_dev_zero_in_a_folder_and_named_by_a_config(project: Path) -> None:
    (project / "zero.yaml").symlink_to("/dev/zero")
    (project / "ds.json").symlink_to("/dev/zero")
    (project / "args.yaml").write_text("per_device_train_batch_size: 4\ndeepspeed: ds.json\n")
    proc = _run(["check", "--format", "json", "."], project)
    assert proc.returncode == 1
    found = _findings(proc)
    assert {("GA001", "zero.yaml", 1, 1), ("GA001", "ds.json", 1, 1), ("GA006", "args.yaml", 2, 12)} <= found


@pytest.mark.parametrize("option", ["--topo", "--query"])
@pytest.mark.parametrize("special", ["/dev/zero", "FIFO"])
def test_hardware_detect_refuses_special_files(project: Path, option: str, special: str) -> None:
    if special == "FIFO":
        os.mkfifo(project / "topo.txt")
        special = "topo.txt"
    proc = _run(["hardware", "detect", option, special], project)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and special in lines[0]
    assert proc.stdout == ""


def test_symlink_loop_as_argument(project: Path) -> None:
    (project / "a.yaml").symlink_to("b.yaml")
    (project / "b.yaml").symlink_to("a.yaml")
    proc = _run(["check", "a.yaml"], project)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "a.yaml" in lines[0]


def test_symlink_loop_inside_a_checked_folder(project: Path) -> None:
    (project / "configs").mkdir()
    (project / "configs" / "a.yaml").symlink_to("b.yaml")
    (project / "configs" / "b.yaml").symlink_to("a.yaml")
    (project / "configs" / "up").symlink_to("..")  # a folder loop: folders are walked without following links
    proc = _run(["check", "--format", "json", "."], project)
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    loops = [f for f in report["findings"] if f["rule"] == "GA001"]
    assert {(f["file"], f["line"], f["column"]) for f in loops} == {("configs", 1, 1)}
    assert len(loops) == 2 and all("a.yaml" in f["message"] or "b.yaml" in f["message"] for f in loops)


def test_unreadable_sub_folder(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Root ignores permission bits, so the walk's PermissionError is made by refusing to list the folder."""
    locked = project / "locked"
    locked.mkdir()
    (locked / "ds.json").write_text("{}")
    real_scandir = os.scandir

    def scandir(path: Any = ".") -> Any:
        if Path(path).resolve() == locked.resolve():
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.chdir(project)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    result = CliRunner().invoke(app, ["check", "--format", "json", "."], catch_exceptions=False)
    assert "Traceback" not in result.output
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert {(f["rule"], f["file"], f["line"], f["column"]) for f in report["findings"]} == {
        ("GA001", "locked", 1, 1)
    }


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a chmod 000 folder anyway")
def test_unreadable_sub_folder_by_permissions(project: Path) -> None:
    locked = project / "locked"
    locked.mkdir()
    (locked / "ds.json").write_text("{}")
    locked.chmod(0)
    try:
        proc = _run(["check", "--format", "json", "."], project)
    finally:
        locked.chmod(0o755)
    assert proc.returncode == 1
    assert ("GA001", "locked", 1, 1) in _findings(proc)


def test_reader_reads_at_most_the_limit(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a: 1\n" * 100)
    assert read_bytes(big, limit=500) == b"a: 1\n" * 100
    with pytest.raises(ReadRefused):
        read_bytes(big, limit=499)
    with pytest.raises(ReadRefused):
        read_bytes(Path("/dev/zero"))


def test_reader_limit_applies_to_bytes_read_not_the_reported_size(tmp_path: Path) -> None:
    """/proc files report size 0 and still have content: the limit is on what is read."""
    status = Path("/proc/self/status")
    if not status.is_file() or status.stat().st_size != 0:
        pytest.skip("needs Linux /proc")
    assert read_bytes(status, limit=1 << 20)
    with pytest.raises(ReadRefused):
        read_bytes(status, limit=8)

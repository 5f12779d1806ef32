"""Issue 17 items 1 and 6, issue 18 item 1: every write goes through advisor/core/safe_write.py.

Before: `--output`, `baseline --output`, `--verify-report`, the cache and the probe wrote to a
predictable temporary (`.NAME.<pid>.tmp`, `.NAME.tmp`) and followed a link planted there, so the
report overwrote any writable file; `-o` renamed over whatever the name was (a link, a FIFO, a device:
as root `-o /dev/stdout` replaced the system's link); `gpu-advise baseline` wrote the settings'
`baseline = "../x"` outside the project. Each case runs the real CLI.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from tests.conftest import REPO

TIMEOUT = 120
ARGS = "per_device_train_batch_size: 4\nwarmup_ratio: 0.1\n"  # one finding (warmup_ratio deprecated)


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
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


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / "args.yaml").write_text(ARGS, encoding="utf-8")
    return root


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file outside the project that nothing may write."""
    path = tmp_path / "outside" / "victim.sh"
    path.parent.mkdir()
    path.write_text("echo precious\n", encoding="utf-8")
    return path


def _report(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


# ---- item 1: nothing planted at a temporary name is followed ----------------------------------------


@pytest.mark.parametrize("command", ["check", "baseline", "hardware"])
def test_a_link_planted_at_the_old_temporary_names_is_not_followed(
    command: str, project: Path, victim: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In-process, so the pid in the temporary's old name is known: links at `.NAME.<pid>.tmp` and
    `.NAME.tmp` (the --verify-report writer's) point at a file outside; the write must not reach it."""
    monkeypatch.chdir(project)
    for planted in (f".out.json.{os.getpid()}.tmp", ".out.json.tmp"):
        (project / planted).symlink_to(victim)
    args = {
        "check": ["check", "--format", "json", "-o", "out.json", "args.yaml"],
        "baseline": ["baseline", "-o", "out.json", "args.yaml"],
        "hardware": ["hardware", "detect", "--query", "smi.csv", "-o", "out.json"],
    }[command]
    (project / "smi.csv").write_text("name, memory.total [MiB]\nNVIDIA H100 80GB HBM3, 81559 MiB\n")
    result = CliRunner().invoke(app, args)
    assert result.exit_code in (0, 1), result.output
    assert victim.read_text(encoding="utf-8") == "echo precious\n"
    out = project / "out.json"
    assert stat.S_ISREG(os.lstat(out).st_mode) and out.read_text(encoding="utf-8").strip()
    leftovers = [p.name for p in project.iterdir() if p.name.endswith(".gpu-advise.tmp")]
    assert leftovers == []


def test_the_verify_report_writer_does_not_follow_a_planted_link(tmp_path: Path, victim: Path) -> None:
    """--verify-report needs a probe run; its writer (Verification.write) is called as check calls it."""
    from advisor.pipeline.probe.stage import Verification

    target = tmp_path / "measured.json"
    (tmp_path / ".measured.json.tmp").symlink_to(victim)
    Verification(source="probe").write(target)
    assert victim.read_text(encoding="utf-8") == "echo precious\n"
    assert _report(target)["tool"] == "gpu-advise verify"


def test_the_cache_does_not_follow_a_link_at_an_entry(tmp_path: Path, project: Path, victim: Path) -> None:
    """A link where an entry goes (a shared cache folder) is replaced by the entry, never written through."""
    cache_home = tmp_path / "cache-home"
    env_run = _cached_run(project, cache_home)
    assert env_run.returncode == 1
    entries = sorted((cache_home / "gpu-advise").glob("*.json"))
    assert entries
    for entry in entries:
        entry.unlink()
        entry.symlink_to(victim)
    assert _cached_run(project, cache_home).returncode == 1
    assert victim.read_text(encoding="utf-8") == "echo precious\n"
    assert all(stat.S_ISREG(os.lstat(e).st_mode) for e in entries)


def _cached_run(project: Path, cache_home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(REPO),
        "GPU_ADVISE_CACHE_DIR": str(cache_home),
    }
    env.pop("GPU_ADVISE_NO_CACHE", None)
    return subprocess.run(
        [sys.executable, "-m", "advisor.cli", "check", "args.yaml"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


# ---- issue 18 item 1: write through what is not a regular file, replace only a regular file ----------


def test_output_through_a_symlink_writes_its_target_and_keeps_the_link(project: Path, tmp_path: Path) -> None:
    target = tmp_path / "reports" / "real.json"
    target.parent.mkdir()
    target.write_text("old\n", encoding="utf-8")
    (project / "report.json").symlink_to(target)
    proc = _run(["check", "--format", "json", "-o", "report.json", "args.yaml"], project)
    assert proc.returncode == 1, proc.stderr
    assert (project / "report.json").is_symlink()
    assert _report(target)["findings"][0]["file"] == "args.yaml"


def test_output_to_a_fifo_is_written_through(project: Path) -> None:
    fifo = project / "report.pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text(encoding="utf-8")), daemon=True)
    reader.start()
    proc = _run(["check", "--format", "json", "-o", "report.pipe", "args.yaml"], project)
    reader.join(TIMEOUT)
    assert proc.returncode == 1, proc.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert json.loads(got[0])["findings"][0]["rule"]


def test_output_to_a_link_to_dev_null_keeps_both(project: Path) -> None:
    (project / "null").symlink_to("/dev/null")
    proc = _run(["check", "-o", "null", "args.yaml"], project)
    assert proc.returncode == 1, proc.stderr
    assert (project / "null").is_symlink()
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)


@pytest.mark.parametrize("name", ["/dev/fd/1", "/proc/self/fd/1", "stdout-link"])
def test_output_to_stdout_by_name_writes_to_stdout(name: str, project: Path) -> None:
    """`stdout-link` -> /proc/self/fd/1 is what /dev/stdout is; a rename over it was the bug (as root it
    replaced the system's /dev/stdout), so the test uses a link of its own."""
    (project / "stdout-link").symlink_to("/proc/self/fd/1")
    proc = _run(["check", "--format", "json", "-o", name, "args.yaml"], project)
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["findings"][0]["file"] == "args.yaml"
    assert (project / "stdout-link").is_symlink()


def test_output_replaces_a_regular_file_keeping_its_mode(project: Path) -> None:
    out = project / "report.json"
    out.write_text("old\n", encoding="utf-8")
    out.chmod(0o640)
    proc = _run(["check", "--format", "json", "-o", "report.json", "args.yaml"], project)
    assert proc.returncode == 1, proc.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert _report(out)["version"] == 1


def test_a_new_output_file_gets_the_usual_mode(project: Path) -> None:
    """mkstemp makes 0600 files; the report is made as `open(name, "w")` would make it."""
    proc = _run(["check", "--format", "json", "-o", "new/report.json", "args.yaml"], project)
    assert proc.returncode == 1, proc.stderr
    mask = os.umask(0o022)
    os.umask(mask)
    assert stat.S_IMODE((project / "new" / "report.json").stat().st_mode) == 0o666 & ~mask


@pytest.mark.parametrize(("kind", "message"), [("folder", "is a folder"), ("loop", "symlink loop")])
def test_what_cannot_be_written_safely_is_refused(kind: str, message: str, project: Path) -> None:
    out = project / "out"
    if kind == "folder":
        out.mkdir()
    else:
        out.symlink_to(project / "loop")
        (project / "loop").symlink_to(out)
    proc = _run(["check", "-o", "out", "args.yaml"], project)
    assert proc.returncode == 2
    assert proc.stderr.startswith("gpu-advise: cannot write out: ") and message in proc.stderr
    assert proc.stderr.count("\n") == 1


# ---- item 6: the baseline the settings name stays inside the project -------------------------------


def test_baseline_from_the_settings_outside_the_project_is_refused(project: Path, victim: Path) -> None:
    rel = os.path.relpath(victim, project)
    (project / ".gpu-advise.toml").write_text(f'baseline = "{rel}"\n', encoding="utf-8")
    proc = _run(["baseline"], project)
    assert proc.returncode == 2
    assert ".gpu-advise.toml:1:12: baseline:" in proc.stderr and "outside the project" in proc.stderr
    assert victim.read_text(encoding="utf-8") == "echo precious\n"


def test_a_committed_link_at_the_default_baseline_name_is_refused(project: Path, victim: Path) -> None:
    (project / ".gpu-advise-baseline.json").symlink_to(victim)
    proc = _run(["baseline"], project)
    assert proc.returncode == 2
    assert ".gpu-advise-baseline.json" in proc.stderr and "outside the project" in proc.stderr
    assert victim.read_text(encoding="utf-8") == "echo precious\n"


def test_a_baseline_named_on_the_command_line_may_be_anywhere(project: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "baseline.json"
    proc = _run(["baseline", "-o", str(target)], project)
    assert proc.returncode == 0, proc.stderr
    assert _report(target)["entries"]


def test_baseline_from_the_settings_inside_the_project_is_written(project: Path) -> None:
    (project / ".gpu-advise.toml").write_text('baseline = "ci/baseline.json"\n', encoding="utf-8")
    proc = _run(["baseline"], project)
    assert proc.returncode == 0, proc.stderr
    assert _report(project / "ci" / "baseline.json")["entries"]
    assert _run(["check", "args.yaml"], project).returncode == 0  # the check reads it back


def test_the_temporary_is_made_as_mkstemp_makes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """safe_write makes its temporary without tempfile (off the check path): a new 0600 file at a random
    name; a name that exists, a link planted there included, is never opened: the next name is tried."""
    from advisor.core import safe_write

    target = tmp_path / "elsewhere"
    planted = tmp_path / f".out.{'00' * 8}.tmp"
    planted.symlink_to(target)
    draws = iter([b"\0" * 8, b"\1" * 8])
    monkeypatch.setattr(safe_write.os, "urandom", lambda n: next(draws))
    fd, name = safe_write.make_temporary(tmp_path, ".out.", ".tmp")
    os.close(fd)
    assert name == str(tmp_path / f".out.{'01' * 8}.tmp")
    assert stat.S_IMODE(os.lstat(name).st_mode) == 0o600
    assert not target.exists() and planted.is_symlink()


def test_no_temporary_name_left_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from advisor.core import safe_write

    (tmp_path / f"a{'00' * 8}b").write_text("taken", encoding="utf-8")
    monkeypatch.setattr(safe_write.os, "urandom", lambda n: b"\0" * n)
    monkeypatch.setattr(safe_write, "_TEMPORARY_TRIES", 3)
    with pytest.raises(FileExistsError):
        safe_write.make_temporary(tmp_path, "a", "b")
    assert [p.name for p in tmp_path.iterdir()] == [f"a{'00' * 8}b"]

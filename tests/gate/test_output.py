"""The text and concise output a user reads (issue 18 item 10), through the real CLI: code frames and
wrapped lines, --quiet, a compact run list, colour in the concise format, what an empty folder says,
the bundled example's own pins, and the card behind a machine's name."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, write_files
from tests.gate.conftest import cli

ANSI = re.compile(r"\x1b\[[0-9;]*m")
ARGS = "learning_rate: 2.0e-5\nper_device_train_batch_size: 4\ndataloader_num_workers: 0\n"
PREFETCH = ARGS + "dataloader_prefetch_factor: 2\n"  # GA203 at 4:29


def gpu_advise(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """The console script's own path (the fast parser in advisor/cli.py), output piped: no terminal."""
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "GITHUB_ACTIONS")}
    return subprocess.run(
        [sys.executable, "-m", "advisor", *args],
        cwd=cwd,
        env={**environ, "HF_HUB_OFFLINE": "1", **env},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    write_files(tmp_path, {"args.yaml": PREFETCH})
    return tmp_path


def test_a_finding_shows_its_source_line_with_a_caret_under_the_column(project: Path) -> None:
    result = gpu_advise(["check", "--select", "GA203", "args.yaml"], project)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  4:29") and "GA203" in line)
    frame = next(i for i in range(at, len(lines)) if lines[i].endswith("| dataloader_prefetch_factor: 2"))
    source, caret = lines[frame], lines[frame + 1]
    assert caret.endswith("^") and caret.index("^") == source.index("| ") + 2 + 28  # column 29
    assert all(len(line) <= 100 for line in lines), max(lines, key=len)  # piped: 100 columns


def test_long_messages_wrap_at_the_terminal_width_and_long_source_lines_are_cut(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    long_value = "x" * 400
    write_files(tmp_path, {"args.yaml": f"run_name: {long_value}\n" + PREFETCH})
    result = gpu_advise(["check", "--select", "GA203", "--color", "never", "args.yaml"], tmp_path)
    assert result.returncode == 1
    assert max(len(line) for line in result.stdout.splitlines()) <= 100
    from advisor.report.text import _frame

    shown, caret = _frame("key: " + long_value + " end", 300, 80)
    assert len(shown) <= 80 and shown.startswith("...") and shown[caret.index("^")] == "x"


def test_quiet_prints_the_findings_only(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loud = gpu_advise(["check", "args.yaml"], project)
    for flag in ("-q", "--quiet"):
        quiet = gpu_advise(["check", flag, "args.yaml"], project)
        assert quiet.returncode == loud.returncode == 1
        assert "GA203" in quiet.stdout
        assert not re.search(r"(?m)^(run |Found |No findings)", quiet.stdout), quiet.stdout
        assert re.search(r"(?m)^run args.yaml", loud.stdout) and "Found " in loud.stdout
    concise = gpu_advise(["check", "-q", "--format", "concise", "args.yaml"], project)
    assert concise.stdout.splitlines()[-1].startswith("args.yaml:4:29: GA203")
    typer_path = cli(
        ["check", "--quiet", "--exit-zero", "--select", "GA203", "args.yaml"], project, monkeypatch
    )
    assert typer_path.exit_code == 0 and "GA203" in typer_path.stdout and "Found" not in typer_path.stdout
    clean = gpu_advise(["check", "-q", "--ignore", "ALL", "args.yaml"], project)
    assert clean.returncode == 0 and clean.stdout == ""


def test_many_runs_list_only_those_with_findings_and_count_the_rest(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    files = {f"exp{i:02}/args.yaml": ARGS for i in range(14)}
    files["exp07/args.yaml"] = PREFETCH
    write_files(tmp_path, files)
    result = gpu_advise(["check", "."], tmp_path)
    assert result.returncode == 1
    runs = [line for line in result.stdout.splitlines() if line.startswith("run ")]
    assert runs and all("exp07" in line for line in runs), runs
    assert "13 other runs without findings not listed" in result.stdout
    assert "in 14 runs." in result.stdout
    listed = json.loads(gpu_advise(["check", ".", "--format", "json"], tmp_path).stdout)["runs"]
    assert len(listed) == 14


def test_the_concise_format_is_coloured_as_asked(project: Path) -> None:
    args = ["check", "--format", "concise", "--select", "GA203", "args.yaml"]
    always = gpu_advise([*args, "--color", "always"], project)
    assert "\x1b[" in always.stdout
    assert ANSI.sub("", always.stdout).startswith("args.yaml:4:29: GA203 ")
    assert "\x1b[" not in gpu_advise([*args, "--color", "never"], project, FORCE_COLOR="1").stdout
    assert "\x1b[" not in gpu_advise(args, project, NO_COLOR="1", FORCE_COLOR="1").stdout
    assert "\x1b[" in gpu_advise(args, project, FORCE_COLOR="1").stdout
    assert "\x1b[" not in gpu_advise(args, project).stdout  # piped, auto: plain


def test_an_empty_folder_says_what_was_looked_for(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = gpu_advise(["check", "empty"], tmp_path)
    assert result.returncode == 0
    assert "No findings in 0 runs." in result.stdout
    assert "no training runs found under empty (looked for launch scripts" in result.stderr
    assert gpu_advise(["check", "-q", "empty"], tmp_path).stderr == ""


def test_the_bundled_example_is_judged_against_its_own_pins() -> None:
    result = gpu_advise(["check", "--format", "json", "fixtures/example"], REPO)
    assert result.returncode == 1, result.stderr
    removed = [f for f in json.loads(result.stdout)["findings"] if f["rule"] == "GA005"]
    assert removed and "requirements.txt" in removed[0]["message"], removed
    assert "pyproject.toml" not in removed[0]["message"]


@pytest.mark.parametrize(
    ("machine", "card"), [("1xH100", "1x H100-NVL 94 GB"), ("1xH100-SXM", "1x H100-SXM 80 GB")]
)
def test_every_output_that_names_the_machine_shows_its_card(project: Path, machine: str, card: str) -> None:
    text = gpu_advise(["check", "-H", machine, "--exit-zero", "args.yaml"], project)
    assert f"on {machine} ({card})" in " ".join(text.stdout.split()), text.stdout
    report = json.loads(gpu_advise(["check", "-H", machine, "--format", "json", "args.yaml"], project).stdout)
    assert report["runs"][0]["hardware"] == machine and report["runs"][0]["hardware_card"] == card
    estimate = gpu_advise(["estimate", "Qwen/Qwen2.5-0.5B", "-H", machine], project)
    assert f"on {machine} (" in estimate.stdout, estimate.stdout + estimate.stderr


def test_the_seed_1xh100_points_to_the_sxm_card() -> None:
    shown = gpu_advise(["hardware", "show", "1xH100"], REPO)
    assert shown.returncode == 0 and "H100 NVL 94" in shown.stdout and "1xH100-SXM" in shown.stdout
    listed = gpu_advise(["hardware", "list"], REPO).stdout
    assert re.search(r"(?m)^1xH100-SXM\s+1 x NVIDIA H100 SXM5 80GB", listed), listed

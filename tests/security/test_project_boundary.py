"""Defect 3 of issue 9: files outside the project are neither read, echoed nor written.

A config in a pull request names a file outside the checkout (an absolute path, `../`, `~`, a
symlink that points out). gpu-advise must not open it: GA006 names the reference (the file, line
and column of the value that names it) and the path, never the file's content. `allowed-roots` in
the settings lets a named folder in; paths given on the command line are the user's own choice.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.sources.boundary import project_boundary
from advisor.sources.settings import Settings

SECRET = "OUTSIDE_SECRET_7f3a9c"  # a key only the outside file holds: GA002 would name it if it were read
OUTSIDE_DS = json.dumps(
    {
        "train_micro_batch_size_per_gpu": 4,
        "gradient_accumulation_steps": 1,
        SECRET: 1,
        "zero_optimization": {"stage": 2, f"{SECRET}_nested": 1},
    },
    indent=2,
)


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """tmp/project (a git work tree: it has a .git folder) and tmp/outside/ds.json beside it."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "ds.json").write_text(OUTSIDE_DS, encoding="utf-8")
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.chdir(project)
    return project, outside


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def _check(*args: str) -> tuple[int, dict[str, Any] | None, str]:
    result = CliRunner().invoke(app, ["check", "--format", "json", *args], catch_exceptions=False)
    output = result.stdout + (result.stderr or "")
    assert "Traceback" not in output
    try:
        report = json.loads(result.stdout)
    except ValueError:
        report = None
    return result.exit_code, report, output


def _at(report: dict[str, Any], rule: str) -> set[tuple[str, int, int]]:
    return {(f["file"], f["line"], f["column"]) for f in report["findings"] if f["rule"] == rule}


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path gpu-advise opens through the safe reader (the one way it reads a file it did not write)."""
    paths: list[str] = []
    real_open = os.open

    def spy(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        paths.append(os.path.realpath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr("advisor.sources.read.os.open", spy)
    return paths


@pytest.mark.parametrize(
    "written",
    ["ABSOLUTE", "../outside/ds.json", "./../outside/ds.json", "sub/../../outside/ds.json"],
    ids=["absolute", "dotdot", "dot-dotdot", "down-then-up"],
)
def test_deepspeed_path_leaving_the_project_is_ga006_and_not_opened(
    layout: tuple[Path, Path], opened: list[str], written: str
) -> None:
    project, outside = layout
    value = str(outside / "ds.json") if written == "ABSOLUTE" else written
    (project / "sub").mkdir()
    _write(project, {"args.yaml": f"per_device_train_batch_size: 4\ndeepspeed: {value}\n"})
    code, report, output = _check("args.yaml")
    assert code == 1  # GA006 is a warning; the default --fail-on is warning
    assert report is not None
    assert _at(report, "GA006") == {("args.yaml", 2, 12)}
    assert not _at(report, "GA004")  # it is not "missing": it is outside
    assert SECRET not in output
    assert str(outside / "ds.json") not in opened


def test_home_folder_reference_is_outside(
    layout: tuple[Path, Path], opened: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    project, outside = layout
    monkeypatch.setenv("HOME", str(outside))
    _write(project, {"args.yaml": "per_device_train_batch_size: 4\ndeepspeed: ~/ds.json\n"})
    code, report, output = _check("args.yaml")
    assert code == 1 and report is not None
    assert _at(report, "GA006") == {("args.yaml", 2, 12)}
    assert SECRET not in output
    assert str(outside / "ds.json") not in opened


def test_symlink_in_the_project_pointing_out_is_outside(layout: tuple[Path, Path], opened: list[str]) -> None:
    project, outside = layout
    (project / "configs").mkdir()
    (project / "configs" / "ds.json").symlink_to(outside / "ds.json")
    _write(project, {"args.yaml": "per_device_train_batch_size: 4\ndeepspeed: configs/ds.json\n"})
    code, report, output = _check("args.yaml")
    assert code == 1 and report is not None
    assert _at(report, "GA006") == {("args.yaml", 2, 12)}
    assert SECRET not in output
    assert str(outside / "ds.json") not in opened


def test_symlink_pointing_out_inside_a_checked_folder_is_not_read(
    layout: tuple[Path, Path], opened: list[str]
) -> None:
    project, outside = layout
    (project / "ds.json").symlink_to(outside / "ds.json")
    code, report, output = _check(".")
    assert report is not None
    assert _at(report, "GA001") == {("ds.json", 1, 1)}
    assert SECRET not in output
    assert str(outside / "ds.json") not in opened
    assert code == 1


def test_launch_script_references_leaving_the_project(layout: tuple[Path, Path], opened: list[str]) -> None:
    project, outside = layout
    (outside / "acc.yaml").write_text(f"distributed_type: MULTI_GPU\nnum_processes: 2\n{SECRET}: 1\n")
    _write(
        project,
        {
            "launch.sh": (
                "#!/bin/bash\n"
                f"accelerate launch --config_file {outside / 'acc.yaml'} train.py"
                " --deepspeed ../outside/ds.json\n"
                "torchrun --nproc_per_node 2 ../outside/train.py\n"
            ),
            "train.py": "print('train')\n",
        },
    )
    code, report, output = _check("launch.sh")
    assert code == 1 and report is not None
    col_ds = len(f"accelerate launch --config_file {outside / 'acc.yaml'} train.py --deepspeed ") + 1
    assert _at(report, "GA006") == {("launch.sh", 2, 33), ("launch.sh", 2, col_ds), ("launch.sh", 3, 29)}
    assert SECRET not in output
    assert not {str(outside / n) for n in ("acc.yaml", "ds.json", "train.py")} & set(opened)


def test_accelerate_deepspeed_config_file_leaving_the_project(
    layout: tuple[Path, Path], opened: list[str]
) -> None:
    project, outside = layout
    _write(
        project,
        {
            "acc.yaml": (
                "distributed_type: DEEPSPEED\nnum_processes: 2\n"
                "deepspeed_config:\n  deepspeed_config_file: ../outside/ds.json\n"
            )
        },
    )
    code, report, output = _check("acc.yaml")
    assert code == 1 and report is not None
    assert _at(report, "GA006") == {("acc.yaml", 4, 26)}
    assert SECRET not in output
    assert str(outside / "ds.json") not in opened


def test_allowed_roots_let_a_named_folder_in(layout: tuple[Path, Path], opened: list[str]) -> None:
    project, outside = layout
    _write(
        project,
        {
            ".gpu-advise.toml": 'allowed-roots = ["../outside"]\n',
            "args.yaml": "per_device_train_batch_size: 4\ndeepspeed: ../outside/ds.json\n",
        },
    )
    code, report, _ = _check("args.yaml")
    assert code == 1 and report is not None
    assert not _at(report, "GA006")
    # read now: its unknown keys are judged (GA002 names them, as for any DeepSpeed file of the project)
    assert ("../outside/ds.json", 4, 3) in _at(report, "GA002")
    assert str(outside / "ds.json") in opened


def test_absolute_allowed_root(layout: tuple[Path, Path]) -> None:
    project, outside = layout
    _write(
        project,
        {
            "pyproject.toml": f'[tool.gpu-advise]\nallowed-roots = ["{outside}"]\n',
            "args.yaml": f"per_device_train_batch_size: 4\ndeepspeed: {outside / 'ds.json'}\n",
        },
    )
    _, report, _ = _check("args.yaml")
    assert report is not None
    assert not _at(report, "GA006") and _at(report, "GA002")


def test_a_path_given_on_the_command_line_is_read(layout: tuple[Path, Path]) -> None:
    """The user asked for it: an outside seed is checked like any other file."""
    _, outside = layout
    _, report, _ = _check(str(outside / "ds.json"))
    assert report is not None
    assert any(f["rule"] == "GA002" and f["line"] == 4 for f in report["findings"])


def test_text_file_named_as_deepspeed_config_is_not_quoted(layout: tuple[Path, Path]) -> None:
    """Inside the project but not a DeepSpeed config (here shaped like /etc/shadow): GA001, no line of it."""
    project, _ = layout
    shadow = f"root:$6${SECRET}:19000:0:99999:7:::\n{SECRET}_user: hunter2\n"
    _write(
        project, {"notes.txt": shadow, "args.yaml": "per_device_train_batch_size: 4\ndeepspeed: notes.txt\n"}
    )
    code, report, output = _check("args.yaml")
    assert report is not None
    assert _at(report, "GA001") == {("notes.txt", 1, 1)}
    assert not _at(report, "GA002")
    assert SECRET not in output and "hunter2" not in output
    assert code == 1


def test_unparsable_file_named_as_deepspeed_config_is_not_quoted(layout: tuple[Path, Path]) -> None:
    project, _ = layout
    _write(
        project,
        {
            "notes.json": f'{{"{SECRET}" 1}}',
            "args.yaml": "per_device_train_batch_size: 4\ndeepspeed: notes.json\n",
        },
    )
    _, report, output = _check("args.yaml")
    assert report is not None
    assert _at(report, "GA001") == {("notes.json", 1, len(SECRET) + 5)}
    assert SECRET not in output


@pytest.mark.parametrize(
    ("setting", "value"),
    [("extend-rules", "../outside"), ("hardware", "OUTSIDE/hw.yaml"), ("baseline", "../outside/base.json")],
)
def test_files_named_in_settings_must_lie_inside(layout: tuple[Path, Path], setting: str, value: str) -> None:
    """A pull request may edit the settings too: what they name is bounded like any other reference."""
    project, outside = layout
    (outside / "hw.yaml").write_text(f"name: {SECRET}\ngpus: {{model: H100-SXM, count: 8}}\n")
    (outside / "base.json").write_text(json.dumps({"version": 1, "entries": []}))
    (outside / "XS001.yaml").write_text(f"code: XS001\nname: {SECRET}\n")
    value = value.replace("OUTSIDE", str(outside))
    written = json.dumps([value] if setting == "extend-rules" else value)
    _write(
        project,
        {
            ".gpu-advise.toml": f"# settings\n{setting} = {written}\n",
            "args.yaml": "per_device_train_batch_size: 4\n",
        },
    )
    code, _, output = _check("args.yaml")
    assert code == 2
    assert ".gpu-advise.toml:2:" in output
    assert SECRET not in output


def test_hardware_file_given_with_h_is_the_users_choice(layout: tuple[Path, Path]) -> None:
    project, outside = layout
    (outside / "hw.yaml").write_text("name: outside-box\ngpus: {model: H100-SXM, count: 8}\n")
    _write(project, {"args.yaml": "per_device_train_batch_size: 4\n"})
    code, report, _ = _check("args.yaml", "-H", str(outside / "hw.yaml"))
    assert code == 0 and report is not None
    assert report["runs"][0]["hardware"] == "outside-box"


def test_fix_never_writes_outside_the_project(layout: tuple[Path, Path]) -> None:
    """--fix --unsafe-fixes with `deepspeed: ../outside/ds.json`: the outside file stays as it was.

    With the folder allowed, the same command does rewrite it (GA103), so the first half is a real check."""
    project, outside = layout
    args = "per_device_train_batch_size: 4\ngradient_accumulation_steps: 8\ndeepspeed: ../outside/ds.json\n"
    _write(project, {"args.yaml": args})
    before = (outside / "ds.json").read_bytes()
    code, report, output = _check("args.yaml", "--fix", "--unsafe-fixes")
    assert code == 1
    assert (outside / "ds.json").read_bytes() == before
    assert report is not None and _at(report, "GA006") == {("args.yaml", 3, 12)}
    assert SECRET not in output

    _write(project, {".gpu-advise.toml": 'allowed-roots = ["../outside"]\n'})
    _check("args.yaml", "--fix", "--unsafe-fixes")
    assert (outside / "ds.json").read_bytes() != before


def test_project_root_is_the_git_work_tree(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    (project / "configs" / "deep").mkdir(parents=True)
    (project / ".git").write_text("gitdir: ../elsewhere\n")  # a worktree or submodule: .git is a file
    boundary = project_boundary(Settings(), [project / "configs" / "deep"])
    assert boundary.roots == (project.resolve(),)
    assert boundary.contains(project / "configs" / "x.json")
    assert not boundary.contains(tmp_path / "x.json")
    assert boundary.outside_reason(tmp_path / "x.json") is not None
    assert boundary.outside_reason(project / "a" / ".." / "b.json") is None


def test_project_root_without_git_is_the_settings_folder_then_the_checked_folder(tmp_path: Path) -> None:
    (tmp_path / "proj" / "sub").mkdir(parents=True)
    settings = Settings(
        source=tmp_path / "proj" / ".gpu-advise.toml", allowed_roots=["/shared/configs", "../lib"]
    )
    boundary = project_boundary(settings, [tmp_path / "proj" / "sub" / "args.yaml"])
    assert boundary.roots == (
        (tmp_path / "proj").resolve(),
        Path("/shared/configs"),
        (tmp_path / "lib").resolve(),
    )
    assert project_boundary(Settings(), [tmp_path / "proj" / "sub"]).roots == (
        (tmp_path / "proj" / "sub").resolve(),
    )


@pytest.mark.skipif(shutil.which("git") is None, reason="--base needs git")
def test_base_revision_files_are_inside_their_own_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--base` rebuilds the runs from a temporary copy of the revision: its boundary is that copy, so
    the base run still reads its DeepSpeed file (GA101 needs the base batch) even with settings present."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _write(
        repo,
        {
            ".gpu-advise.toml": "ignore = []\n",
            "launch.sh": "#!/bin/bash\ndeepspeed --num_gpus 2 train.py --deepspeed_config ds.json\n",
            "train.py": "print('train')\n",
            "ds.json": '{"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2}\n',
        },
    )
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=repo, check=True)
    (repo / "ds.json").write_text('{"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 2}\n')
    monkeypatch.chdir(repo)
    code, report, _ = _check("launch.sh", "--base", "HEAD")
    assert code == 1 and report is not None
    assert _at(report, "GA101") == {("ds.json", 1, 36)}


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        ("configs/ds.json", True),
        ("../x.json", False),
        ("a/../../x.json", False),
        ("/etc/x.json", False),
        (".git/config.json", False),
        ("a//b.json", False),
        ("./a.json", False),
    ],
)
def test_base_revision_names_that_would_leave_the_temporary_folder(name: str, safe: bool) -> None:
    from advisor.plan.revision import _safe_name

    assert _safe_name(name) is safe


def test_walked_file_named_as_deepspeed_config_is_judged_as_one(layout: tuple[Path, Path]) -> None:
    """Found by the folder walk as an unknown JSON file, then named as the DeepSpeed config: neither
    `check` nor `plan` may show its values (`plan` used to print them as deepspeed.* values)."""
    project, _ = layout
    _write(
        project,
        {
            "secret.json": json.dumps({"api_key": SECRET}),
            "args.yaml": "per_device_train_batch_size: 4\ndeepspeed: secret.json\n",
        },
    )
    code, report, output = _check(".")
    assert code == 1 and report is not None
    assert _at(report, "GA001") == {("secret.json", 1, 1)}
    assert SECRET not in output
    result = CliRunner().invoke(app, ["plan", "."], catch_exceptions=False)
    assert result.exit_code == 0 and "Traceback" not in result.output
    assert SECRET not in result.output


def test_recorded_measurements_linking_out_are_refused(layout: tuple[Path, Path]) -> None:
    """.gpu-advise-verify.json is found by its name at the project root; a link there that points out
    of the project is not read."""
    project, outside = layout
    (outside / "measured.json").write_text(json.dumps({"device": {"name": SECRET}, "runs": []}))
    (project / ".gpu-advise-verify.json").symlink_to(outside / "measured.json")
    _write(project, {"args.yaml": "per_device_train_batch_size: 4\n"})
    code, _, output = _check("args.yaml")
    assert code == 2
    assert ".gpu-advise-verify.json" in output and SECRET not in output


def test_project_scan_for_referrers_skips_links_that_leave(
    layout: tuple[Path, Path], opened: list[str]
) -> None:
    """A config given alone makes discovery scan its project for launch scripts naming it; a script
    that is a link out of the project is not read, however well it matches."""
    project, outside = layout
    (outside / "launch.sh").write_text(
        "#!/bin/bash\ntorchrun --nproc_per_node 8 train.py --config args.yaml\n"
    )
    (project / "launch.sh").symlink_to(outside / "launch.sh")
    _write(project, {"args.yaml": "per_device_train_batch_size: 4\n", "train.py": "print('train')\n"})
    code, report, _ = _check("args.yaml")
    assert code == 0 and report is not None
    assert [r["world_size"] for r in report["runs"]] == [None]  # not the linked script's 8 processes
    assert str(outside / "launch.sh") not in opened


@pytest.mark.parametrize("name", ["requirements.txt", "install.sh"])
def test_a_pin_file_linked_out_of_the_project_is_not_read(
    layout: tuple[Path, Path], opened: list[str], name: str
) -> None:
    """The pin walk reads each folder's requirements, pyproject and install scripts; one that is a link
    out of the project is not opened (a fork's planted `install.sh -> ../outside/x`)."""
    project, outside = layout
    (outside / name).write_text("pip install transformers==4.30.0\ntransformers==4.30.0\n", encoding="utf-8")
    (project / name).symlink_to(outside / name)
    _write(project, {"args.yaml": "per_device_train_batch_size: 4\nevaluation_strategy: steps\n"})
    _, report, _ = _check("args.yaml")
    assert report is not None
    assert str(outside / name) not in opened
    # the linked pin (4.30, which still has evaluation_strategy) is not used: judged at the current release
    assert [f["rule"] for f in report["findings"]] == ["GA005"]


def test_pins_above_a_project_without_git_are_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, opened: list[str]
) -> None:
    """A project marked by its settings file, not a git work tree: the pin walk stops at its root, so a
    requirements.txt or shell script of the folder above (a shared /tmp, a home folder) is not opened."""
    parent = tmp_path / "parent"
    project = parent / "proj"
    project.mkdir(parents=True)
    (parent / "requirements.txt").write_text("transformers==4.30.0\n", encoding="utf-8")
    (parent / "setup_env.sh").write_text("pip install transformers==4.30.0\n", encoding="utf-8")
    _write(project, {".gpu-advise.toml": "", "args.yaml": "evaluation_strategy: steps\noutput_dir: o\n"})
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.chdir(project)
    _, report, _ = _check("args.yaml")
    assert report is not None
    assert not [p for p in opened if p.startswith(str(parent)) and not p.startswith(str(project))]
    assert [f["rule"] for f in report["findings"]] == ["GA005"]  # judged at the current release


def test_pyyaml_pin_above_a_project_without_git_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, opened: list[str]
) -> None:
    """A YAML merge key asks which PyYAML release reads the file (advisor.sources.pins.pinned_pyyaml): that
    walk stops at the project's root too, so the folder above's requirements.txt is neither opened nor
    believed (the message names no pin)."""
    parent = tmp_path / "parent"
    project = parent / "proj"
    project.mkdir(parents=True)
    (parent / "requirements.txt").write_text("PyYAML==6.0.3\n", encoding="utf-8")
    merged = "base: &b\n  learning_rate: 1.0e-5\nrun:\n  <<: *b\n  learning_rate: 2.0e-5\n"
    _write(project, {".gpu-advise.toml": "", "args.yaml": "output_dir: o\n" + merged})
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.chdir(project)
    _, report, _ = _check("args.yaml")
    assert report is not None
    assert not [p for p in opened if p.startswith(str(parent)) and not p.startswith(str(project))]
    assert not any("pinned in" in f["message"] for f in report["findings"])


TINY_LLAMA = {
    "model_type": "llama",
    "hidden_size": 256,
    "intermediate_size": 688,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "vocab_size": 1000,
    "max_position_embeddings": 512,
}


def test_model_folder_outside_the_project_is_not_read(layout: tuple[Path, Path]) -> None:
    """`model_name_or_path: ../outside/model` names a folder the estimator would read config.json
    and safetensors headers from: outside the project it is not read, allowed it is."""
    project, outside = layout
    (outside / "model").mkdir()
    (outside / "model" / "config.json").write_text(json.dumps(TINY_LLAMA))
    _write(project, {"args.yaml": "model_name_or_path: ../outside/model\nper_device_train_batch_size: 4\n"})
    _, report, _ = _check("args.yaml", "-H", "1xH100")
    assert report is not None and report["runs"][0]["peak_vram_gib"] is None

    _write(project, {".gpu-advise.toml": 'allowed-roots = ["../outside"]\n'})
    _, report, _ = _check("args.yaml", "-H", "1xH100")
    assert report is not None and report["runs"][0]["peak_vram_gib"] is not None


def test_submodule_checked_from_its_superproject(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A seed in a submodule (its own .git) belongs to the superproject the check runs from."""
    sup = tmp_path / "super"
    (sup / ".git").mkdir(parents=True)
    (sup / "sub").mkdir()
    (sup / "sub" / ".git").write_text("gitdir: ../.git/modules/sub\n")
    _write(
        sup,
        {
            "configs/ds.json": '{"train_micro_batch_size_per_gpu": 4}\n',
            "sub/args.yaml": "per_device_train_batch_size: 4\ndeepspeed: ../configs/ds.json\n",
        },
    )
    monkeypatch.chdir(sup)
    _, report, _ = _check("sub/args.yaml")
    assert report is not None and not _at(report, "GA006")
    monkeypatch.chdir(sup / "sub")
    _, report, _ = _check("args.yaml")
    assert report is not None and _at(report, "GA006") == {("args.yaml", 2, 12)}


def test_linked_folder_pointing_out_named_from_the_current_folder(
    layout: tuple[Path, Path], opened: list[str]
) -> None:
    """`configs/` is a link to a folder outside; the launch script in scripts/ names configs/ds.json
    relative to the folder it is started from: outside, not missing."""
    project, outside = layout
    (project / "configs").symlink_to(outside, target_is_directory=True)
    _write(
        project,
        {
            "scripts/launch.sh": (
                "#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --deepspeed configs/ds.json\n"
            ),
            "train.py": "print('train')\n",
        },
    )
    code, report, output = _check("scripts/launch.sh")
    assert code == 1 and report is not None
    assert _at(report, "GA006") == {("scripts/launch.sh", 2, 50)}
    assert not _at(report, "GA004")
    assert SECRET not in output
    assert str(outside / "ds.json") not in opened


def test_link_out_given_on_the_command_line_is_read_even_inside_a_checked_folder(
    layout: tuple[Path, Path],
) -> None:
    project, outside = layout
    (project / "ds.json").symlink_to(outside / "ds.json")
    code, report, _ = _check(".", "ds.json")
    assert code == 1 and report is not None
    assert not _at(report, "GA001")  # the walk would refuse it, but the user named it
    assert ("ds.json", 4, 3) in _at(report, "GA002")

"""Defect 8 of issue 9: `--fix` on the file system.

`--diff` is exactly what `--fix` writes (all fix rounds); a symlinked file is edited through the
link (the link stays); hard links stay one file; mode and owner are kept; a read-only file or
folder is refused with one line (judged from the mode bits: the tests run as root, where chmod does
not stop a write); an edit made between the read and the rename is not lost; YAML merge keys
converge; nothing is written outside the project.
"""

from __future__ import annotations

import difflib
import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

import advisor.engine.fix as fixmod
from advisor.cli import app
from advisor.core.document import Location
from advisor.core.findings import Edit, Finding, Fix
from advisor.engine.fix import apply_fixes
from advisor.sources.boundary import ProjectBoundary
from tests.conftest import write_files

ARGS = "dataloader_num_workers: 0\ndataloader_prefetch_factor: 2  # prefetch\noutput_dir: out\n"
FIXED = "dataloader_num_workers: 0\noutput_dir: out\n"
GA203_FIX = ["check", ".", "--select", "GA203", "--fix"]


def _cli(args: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    return CliRunner().invoke(app, args, catch_exceptions=False)


def _project(root: Path, files: dict[str, str]) -> Path:
    write_files(root, {".gpu-advise.toml": "# the project root\n", **files})
    return root


def _refused_once(result, name: str) -> None:
    lines = [line for line in result.stderr.splitlines() if "not written" in line]
    assert len(lines) == 1 and name in lines[0], result.stderr
    assert "Traceback" not in result.output


def _chain_rule(code: str, old: int, new: int) -> str:
    return (
        f"code: {code}\nname: workers-{old}-to-{new}\nseverity: warning\nsummary: s\n"
        f"when: training.dataloader_num_workers == {old}\nat: training.dataloader_num_workers\n"
        f"message: m\nfix: {{set: {{training.dataloader_num_workers: {new}}}, safety: safe}}\ndocs: d\n"
    )


def test_diff_is_exactly_what_fix_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # three rules where each fix uncovers the next: one --fix goes 0 -> 1 -> 2 -> 3 in three rounds
    text = "output_dir: out\ndataloader_num_workers: 0\nlearning_rate: 1.0e-4\n"
    _project(
        tmp_path,
        {
            "args.yaml": text,
            "policy/ORG001.yaml": _chain_rule("ORG001", 0, 1),
            "policy/ORG002.yaml": _chain_rule("ORG002", 1, 2),
            "policy/ORG003.yaml": _chain_rule("ORG003", 2, 3),
        },
    )
    args = ["check", "args.yaml", "--rules", "policy", "--select", "ORG"]
    shown = _cli([*args, "--diff"], tmp_path, monkeypatch)
    assert shown.exit_code == 1, shown.output  # the files on disk still have the finding
    assert (tmp_path / "args.yaml").read_text(encoding="utf-8") == text  # --diff writes nothing
    fixed = _cli([*args, "--fix"], tmp_path, monkeypatch)
    assert fixed.exit_code == 0, fixed.output
    after = (tmp_path / "args.yaml").read_text(encoding="utf-8")
    assert after == text.replace("workers: 0", "workers: 3")
    expected = "".join(
        difflib.unified_diff(
            text.splitlines(keepends=True), after.splitlines(keepends=True), "a/args.yaml", "b/args.yaml"
        )
    )
    assert shown.stdout == expected
    again = _cli([*args, "--fix"], tmp_path, monkeypatch)
    assert again.exit_code == 0 and (tmp_path / "args.yaml").read_text(encoding="utf-8") == after


def test_symlinked_file_is_edited_through_the_link(tmp_path: Path, monkeypatch) -> None:
    _project(tmp_path, {"real/args.yaml": ARGS})
    link = tmp_path / "args.yaml"
    link.symlink_to("real/args.yaml")
    result = _cli(["check", "args.yaml", "--select", "GA203", "--fix"], tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and os.readlink(link) == "real/args.yaml"
    assert (tmp_path / "real/args.yaml").read_text(encoding="utf-8") == FIXED


def test_hard_links_stay_one_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path, {"args.yaml": ARGS})
    other = tmp_path / "elsewhere" / "same.yaml.bak"
    other.parent.mkdir()
    os.link(tmp_path / "args.yaml", other)
    inode = (tmp_path / "args.yaml").stat().st_ino
    result = _cli(["check", "args.yaml", "--select", "GA203", "--fix"], tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "args.yaml").stat().st_ino == inode and other.stat().st_nlink == 2
    assert other.read_text(encoding="utf-8") == FIXED


def test_mode_and_owner_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path, {"args.yaml": ARGS})
    path = tmp_path / "args.yaml"
    path.chmod(0o640)
    owner = (path.stat().st_uid, path.stat().st_gid)
    if os.geteuid() == 0:
        owner = (4321, 4321)
        os.chown(path, *owner)
    assert _cli(GA203_FIX, tmp_path, monkeypatch).exit_code == 0
    st = path.stat()
    assert path.read_text(encoding="utf-8") == FIXED
    assert stat.S_IMODE(st.st_mode) == 0o640 and (st.st_uid, st.st_gid) == owner
    assert sorted(p.name for p in tmp_path.iterdir()) == [".gpu-advise.toml", "args.yaml"]


def test_read_only_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path, {"args.yaml": ARGS})
    (tmp_path / "args.yaml").chmod(0o444)
    result = _cli(GA203_FIX, tmp_path, monkeypatch)
    assert result.exit_code == 1  # the finding stays
    _refused_once(result, "args.yaml")
    assert (tmp_path / "args.yaml").read_text(encoding="utf-8") == ARGS


def test_read_only_folder_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path, {"conf/args.yaml": ARGS})
    folder = tmp_path / "conf"
    folder.chmod(0o555)
    try:
        result = _cli(["check", "conf/args.yaml", "--select", "GA203", "--fix"], tmp_path, monkeypatch)
        assert result.exit_code == 1
        _refused_once(result, "conf/args.yaml")
        assert (folder / "args.yaml").read_text(encoding="utf-8") == ARGS
        assert sorted(p.name for p in folder.iterdir()) == ["args.yaml"]
    finally:
        folder.chmod(0o755)


def test_edit_between_read_and_rename_is_not_lost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path, {"args.yaml": ARGS})
    theirs = ARGS.replace("prefetch_factor: 2", "prefetch_factor: 4")

    def someone_edits(target: fixmod.WriteTarget) -> None:
        target.real.write_text(theirs, encoding="utf-8")

    monkeypatch.setattr(fixmod, "before_replace", someone_edits)
    result = _cli(GA203_FIX, tmp_path, monkeypatch)
    assert result.exit_code == 1
    _refused_once(result, "args.yaml")
    assert (tmp_path / "args.yaml").read_text(encoding="utf-8") == theirs
    assert sorted(p.name for p in tmp_path.iterdir()) == [".gpu-advise.toml", "args.yaml"]


def test_fix_through_a_yaml_merge_key_converges(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # fp16 and bf16 come only through `<<: *defaults`: the fix sets both, inserting two overrides
    text = (
        "x-defaults: &defaults\n  fp16: true\n  bf16: false\n<<: *defaults\n"
        "output_dir: out\nmodel_name_or_path: gpt2\n"
    )
    _project(tmp_path, {"args.yaml": text})
    args = ["check", "args.yaml", "-H", "1xH100", "--select", "GA502", "--fix", "--unsafe-fixes"]
    first = _cli(args, tmp_path, monkeypatch)
    assert first.exit_code == 0, first.output
    assert "not fixed" not in first.stderr
    after = (tmp_path / "args.yaml").read_text(encoding="utf-8")
    assert after == text + "fp16: false\nbf16: true\n"
    again = _cli(args, tmp_path, monkeypatch)
    assert again.exit_code == 0 and (tmp_path / "args.yaml").read_text(encoding="utf-8") == after


def _finding(path: Path) -> Finding:
    edit = Edit(path, "/dataloader_prefetch_factor", 4)
    return Finding("T001", "t", "warning", "m", Location(path, 2, 1), fix=Fix("d", "safe", (edit,)))


def test_nothing_is_written_outside_the_project(tmp_path: Path) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    write_files(outside, {"args.yaml": ARGS})
    project.mkdir()
    (project / "link.yaml").symlink_to(outside / "args.yaml")
    boundary = ProjectBoundary((project.resolve(),))
    for path in (outside / "args.yaml", project / "link.yaml"):
        outcome = apply_fixes([_finding(path)], boundary=boundary)
        assert not outcome.written and [p for p, _ in outcome.refused] == [path]
        assert not outcome.applied
    assert (outside / "args.yaml").read_text(encoding="utf-8") == ARGS

"""Issue 17, the settings: read safely (item 7), per file (item 12), directives only in comments (item 11),
bounded globs (item 5) and clear errors for numbers, encodings and long values (item 9).

Everything here may be written by a fork's pull request; each test goes through the CLI and asserts
what a maintainer cares about: the exit code, the file and line named, nothing outside leaked.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from advisor.sources.settings import SettingsError, load_settings
from tests.conftest import write_files
from tests.gate.conftest import cli

BAD = "dataloader_num_workers: 0\ndataloader_prefetch_factor: 2\n"  # GA203 (error) at line 2
SECRET = "OUTSIDE_SECRET_KEY_4b1d"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)  # a git work tree: the project's root
    return root


def _findings(result) -> list[tuple[str, str, int]]:
    return sorted((f["rule"], f["file"], f["line"]) for f in json.loads(result.stdout)["findings"])


def _clean_exit_2(result, *names: str) -> str:
    """Exit 2 with one message naming the file (and line), never an internal error or a traceback."""
    err = result.stderr
    assert result.exit_code == 2, (result.exit_code, err)
    assert "internal error" not in err and "Traceback" not in err
    for name in names:
        assert name in err, err
    return err


# item 7: the settings file is read by the safe reader, inside the project ----------------------------


def test_settings_link_out_of_the_project_is_refused_unread(project: Path, monkeypatch) -> None:
    outside = project.parent / "outside.toml"
    outside.write_text(f"{SECRET} = 1\n", encoding="utf-8")
    write_files(project, {"args.yaml": BAD})
    (project / ".gpu-advise.toml").symlink_to(outside)
    result = cli(["check", "."], project, monkeypatch)
    err = _clean_exit_2(result, ".gpu-advise.toml", "outside")
    assert SECRET not in err + result.stdout  # its key names are not printed: it was not read


def test_settings_link_inside_the_project_is_read(project: Path, monkeypatch) -> None:
    write_files(project, {"args.yaml": BAD, "shared/gpu-advise.toml": 'ignore = ["GA203"]\n'})
    (project / ".gpu-advise.toml").symlink_to(project / "shared" / "gpu-advise.toml")
    assert cli(["check", "."], project, monkeypatch).exit_code == 0


def test_a_fifo_named_like_the_settings_is_not_opened(project: Path, monkeypatch) -> None:
    write_files(project, {"args.yaml": BAD})
    os.mkfifo(project / ".gpu-advise.toml")  # opening it for reading would block the check forever
    result = cli(["check", ".", "--select", "GA203"], project, monkeypatch)
    assert result.exit_code == 1  # not a settings file: the defaults, and the finding


# item 12: each file is governed by the closest settings file above it ----------------------------------


@pytest.mark.parametrize("order", [("configs/x.yaml", "train.yaml"), ("train.yaml", "configs/x.yaml")])
def test_sub_folder_settings_govern_only_their_folder(project: Path, monkeypatch, order) -> None:
    write_files(
        project,
        {"train.yaml": BAD, "configs/x.yaml": BAD, "configs/.gpu-advise.toml": 'ignore = ["ALL"]\n'},
    )
    result = cli(["check", "--format", "json", "--", *order], project, monkeypatch)
    assert result.exit_code == 1
    assert _findings(result) == [("GA203", "train.yaml", 2)]  # the root's file, in either order


def test_sub_folder_settings_apply_when_the_root_is_checked(project: Path, monkeypatch) -> None:
    write_files(
        project,
        {
            "train.yaml": BAD,
            "configs/x.yaml": BAD,
            "configs/.gpu-advise.toml": '[severity]\nGA203 = "info"\n',
            ".gpu-advise.toml": '[per-file-ignores]\n"train.yaml" = ["GA203"]\n',
        },
    )
    result = cli(["check", ".", "--format", "json", "--select", "GA203"], project, monkeypatch)
    found = json.loads(result.stdout)["findings"]
    assert [(f["file"], f["severity"]) for f in found] == [("configs/x.yaml", "info")]
    assert result.exit_code == 0  # info is below the default fail-on
    # checked from inside the folder, the same answer
    inside = cli(
        ["check", "x.yaml", "--format", "json", "--select", "GA203"], project / "configs", monkeypatch
    )
    assert [f["severity"] for f in json.loads(inside.stdout)["findings"]] == ["info"]


def test_load_settings_of_a_folder_of_another_tree(tmp_path: Path) -> None:
    """The entry point for the base revision's tree (no .git in it): never above its root."""
    (tmp_path / ".gpu-advise.toml").write_text('ignore = ["ALL"]\n', encoding="utf-8")  # above the tree
    tree = tmp_path / "base"
    write_files(tree, {"pyproject.toml": '[tool.gpu-advise]\nselect = ["GA2"]\n', "a/b/args.yaml": BAD})
    assert load_settings(tree / "a" / "b", tree).select == ["GA2"]
    assert load_settings(tree / "a" / "b", tree).source == tree / "pyproject.toml"
    (tree / "pyproject.toml").unlink()
    assert load_settings(tree / "a", tree).ignore == []  # the file above the tree is not read
    (tree / "a" / ".gpu-advise.toml").symlink_to(tmp_path / ".gpu-advise.toml")
    with pytest.raises(SettingsError, match="outside"):
        load_settings(tree / "a" / "b", tree)


# item 11: only comments carry directives ------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        'run_name: "x # gpu-advise: ignore-file[ALL]"\n' + BAD,
        "run_name: 'x # gpu-advise: ignore-file[ALL]'\n" + BAD,
        BAD + "run_name: |\n  # gpu-advise: ignore-file[ALL]\n",
        BAD + 'note: "a\n  # gpu-advise: ignore[GA203]"\n',
        "dataloader_num_workers: 0\nrun_name: >\n  # gpu-advise: ignore[GA203]\n"
        "dataloader_prefetch_factor: 2\n",
    ],
)
def test_directive_in_a_yaml_value_does_not_suppress(project: Path, monkeypatch, text: str) -> None:
    write_files(project, {"args.yaml": text})
    result = cli(["check", ".", "--format", "json", "--select", "GA203"], project, monkeypatch)
    assert [r for r, _, _ in _findings(result)] == ["GA203"], text
    assert result.exit_code == 1


LAUNCH = (
    "torchrun --nproc_per_node 2 train.py --dataloader_num_workers 0 --dataloader_prefetch_factor 2 "
    "--output_dir o\n"
)


@pytest.mark.parametrize(
    "before",
    [
        'echo " # gpu-advise: ignore-file[ALL]"\n',
        "echo ' # gpu-advise: ignore-file[ALL]'\n",
        "cat <<EOF\n# gpu-advise: ignore-file[ALL]\nEOF\n",
        'NOTE=" \n# gpu-advise: ignore[GA203]"\n',
        # bash cannot read past an open quote: nothing after it is a comment
        'echo "never closed # gpu-advise: ignore-file[ALL]\n',
    ],
)
def test_directive_in_a_shell_string_does_not_suppress(project: Path, monkeypatch, before: str) -> None:
    write_files(project, {"run.sh": "#!/bin/bash\n" + before + LAUNCH, "train.py": "import transformers\n"})
    result = cli(["check", ".", "--format", "json", "--select", "GA203"], project, monkeypatch)
    assert "GA203" in [r for r, _, _ in _findings(result)], before


def test_directives_in_comments_still_suppress(project: Path, monkeypatch) -> None:
    write_files(
        project,
        {
            "args.yaml": 'run_name: "a # b"  # gpu-advise: ignore[GA203]\n'
            "dataloader_num_workers: 0\n# gpu-advise: ignore[GA203]\ndataloader_prefetch_factor: 2\n",
            "run.sh": "#!/bin/bash\necho 'x' # gpu-advise: ignore-file[GA203]\n" + LAUNCH,
            "train.py": "import transformers\n",
        },
    )
    result = cli(["check", ".", "--format", "json", "--select", "GA203"], project, monkeypatch)
    assert _findings(result) == []
    assert result.exit_code == 0


# item 5: a per-file-ignores glob is matched in linear time ------------------------------------------------


def test_backtracking_glob_is_fast(project: Path, monkeypatch) -> None:
    glob = "*a" * 40 + "X"  # a backtracking regex took minutes per finding with this one
    write_files(
        project,
        {
            "a" * 60 + ".yaml": BAD,
            "sub/" + "a" * 60 + "X": BAD,
            ".gpu-advise.toml": f'[per-file-ignores]\n"{glob}" = ["GA203"]\n"sub/**/*X" = ["GA2"]\n',
        },
    )
    start = time.monotonic()
    result = cli(["check", ".", "--format", "json", "--select", "GA203"], project, monkeypatch)
    assert time.monotonic() - start < 20
    assert _findings(result) == [("GA203", "a" * 60 + ".yaml", 2)]  # not matched: still reported


def test_overlong_glob_is_a_settings_error(project: Path, monkeypatch) -> None:
    glob = "*a" * 600
    write_files(project, {"args.yaml": BAD, ".gpu-advise.toml": f'[per-file-ignores]\n"{glob}" = ["GA2"]\n'})
    err = _clean_exit_2(cli(["check", "."], project, monkeypatch), ".gpu-advise.toml:1:", "per-file-ignores")
    assert glob not in err


# item 9: numbers, encodings and long values ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "where"),
    [
        (b"dataset-samples = " + b"9" * 5000 + b"\n", ":1:"),
        (b"ignore = []\n\n[thresholds]\nsingle-gpu-hours = " + b"9" * 5000 + b"\n", ":4:"),
        (b'ignore = ["GA2"]\nselect = ["\xff"]\n', ":2:"),
        ('ignore = ["GA203"]\n'.encode("utf-16"), ":1:"),
        ('ignore = ["GA203"]\n'.encode("utf-16-le"), ":1:"),
        (b'select = ["GA2"\n', ":1:"),
    ],
    ids=["5000-digits", "5000-digits-in-a-table", "latin-1", "utf-16", "utf-16-no-bom", "bad-toml"],
)
def test_unreadable_settings_exit_2_with_file_and_line(
    project: Path, monkeypatch, data: bytes, where
) -> None:
    write_files(project, {"args.yaml": BAD})
    (project / ".gpu-advise.toml").write_bytes(data)
    _clean_exit_2(cli(["check", "."], project, monkeypatch), f".gpu-advise.toml{where}")


def test_unreadable_pyproject_settings_exit_2(project: Path, monkeypatch) -> None:
    write_files(project, {"args.yaml": BAD})
    (project / "pyproject.toml").write_bytes('[tool.gpu-advise]\nignore = ["GA203"]\n'.encode("utf-16"))
    _clean_exit_2(cli(["check", "."], project, monkeypatch), "pyproject.toml:1:", "UTF-16")


@pytest.mark.parametrize(
    "text",
    [
        'hardware = "{long}"\n',
        'baseline = "{long}"\n',
        'extend-rules = ["{long}"]\n',
        'allowed-roots = ["{long}"]\n',
        '[[runs]]\npath = "{long}"\n',
        '[[runs]]\npath = "args.yaml"\nhardware = "{long}"\n',
        'hardware = "a\\u0000b"\n',
    ],
)
def test_long_path_values_exit_2(project: Path, monkeypatch, text: str) -> None:
    write_files(project, {"args.yaml": BAD, ".gpu-advise.toml": text.format(long="x" * 300)})
    err = _clean_exit_2(cli(["check", "."], project, monkeypatch), ".gpu-advise.toml:")
    assert "x" * 300 not in err  # named by its key, not echoed

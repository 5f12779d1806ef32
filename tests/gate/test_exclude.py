"""Issue 18 items 3 and 4 through the CLI: what git ignores is skipped (decided as git decides it: the
matcher is compared with `git ls-files --ignored` itself), `exclude` / `extend-exclude` in the settings
and on the command line (ruff's names and meaning), `--force-exclude`, training outputs never taken for
configs, and a named file gpu-advise does not read said so in one line."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.sources.gitignore import WorkTree
from tests.conftest import write_files
from tests.gate.conftest import git, needs_git

pytestmark = needs_git

BAD = "dataloader_num_workers: 0\ndataloader_prefetch_factor: 2\n"  # GA203 at 2:29
STATE = '{"global_step": 500, "train_batch_size": 8, "log_history": [], "best_metric": null, "epoch": 1.0}\n'


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    env.pop("GITHUB_ACTIONS", None)
    return subprocess.run(
        [sys.executable, "-m", "advisor", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _files(proc: subprocess.CompletedProcess[str]) -> set[str]:
    return {f["file"] for f in json.loads(proc.stdout)["findings"]}


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    project = tmp_path / "project"
    write_files(project, files)
    git(project, "init", "-q", "-b", "main")
    return project


def test_untracked_files_git_ignores_are_skipped_and_tracked_ones_checked(tmp_path: Path) -> None:
    project = _repo(
        tmp_path,
        {
            ".gitignore": "outputs/\n*.local.yaml\n!keep.local.yaml\n",
            "sub/.gitignore": "/gen/\n",
            "args.yaml": BAD,
            "outputs/args.yaml": BAD,
            "conf/a.local.yaml": BAD,
            "conf/keep.local.yaml": BAD,
            "sub/gen/x.yaml": BAD,
            "gen/x.yaml": BAD,  # `/gen/` is anchored at sub/: this one is not ignored
            "excluded/y.yaml": BAD,
        },
    )
    (project / ".git" / "info" / "exclude").write_text("excluded/\n", encoding="utf-8")
    proc = _run(project, "check", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    assert _files(proc) == {"args.yaml", "conf/keep.local.yaml", "gen/x.yaml"}

    # git ignores only untracked files: one added by force is checked (a pull request cannot hide a
    # tracked launch script by listing it in .gitignore)
    git(project, "add", "-f", "outputs/args.yaml")
    assert "outputs/args.yaml" in _files(_run(project, "check", "--format", "json"))

    # respect-gitignore = false: everything is read
    (project / ".gpu-advise.toml").write_text("respect-gitignore = false\n", encoding="utf-8")
    assert len(_files(_run(project, "check", "--format", "json"))) == 7


def test_training_outputs_are_never_configs(tmp_path: Path) -> None:
    """Not ignored by git at all: HF's checkpoint folders and trainer state, wandb's run copies."""
    project = _repo(
        tmp_path,
        {
            "args.yaml": "output_dir: out\nper_device_train_batch_size: 2\n",
            "out/checkpoint-500/trainer_state.json": STATE,
            "out/checkpoint-500/args.yaml": BAD,
            "out/trainer_state.json": STATE,
            "wandb/run-20240101_000000-abc/files/config.yaml": BAD,
            "mlruns/0/abc/meta.yaml": BAD,
            "renamed_state.json": STATE,  # HF's state by its content, whatever its name
        },
    )
    proc = _run(project, "check", "--format", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _files(proc) == set()
    plan = _run(project, "plan", ".")
    assert "wandb" not in plan.stdout and "checkpoint-500" not in plan.stdout, plan.stdout
    assert "args.yaml" in plan.stdout


def test_exclude_replaces_the_defaults_and_extend_exclude_adds(tmp_path: Path) -> None:
    project = _repo(
        tmp_path,
        {
            "a.yaml": BAD,
            "legacy/b.yaml": BAD,
            "configs/old/c.yaml": BAD,
            "wandb/run-1/files/config.yaml": BAD,
        },
    )
    every = {"a.yaml", "legacy/b.yaml", "configs/old/c.yaml", "wandb/run-1/files/config.yaml"}
    assert _files(_run(project, "check", "--format", "json")) == every - {"wandb/run-1/files/config.yaml"}

    settings = project / ".gpu-advise.toml"
    settings.write_text('extend-exclude = ["legacy", "configs/old/"]\n', encoding="utf-8")
    assert _files(_run(project, "check", "--format", "json")) == {"a.yaml"}

    settings.write_text("exclude = []\n", encoding="utf-8")  # replaces the built-in list: wandb/ is read
    assert _files(_run(project, "check", "--format", "json")) == every

    # the command line: --exclude replaces the settings' list, --extend-exclude adds (comma-separated)
    proc = _run(
        project, "check", "--format", "json", "--exclude", "wandb,legacy", "--extend-exclude", "a.yaml"
    )
    assert _files(proc) == {"configs/old/c.yaml"}
    proc = _run(project, "check", "--format", "json", "--extend-exclude=configs/**/c.yaml")
    assert _files(proc) == every - {"configs/old/c.yaml"}


def test_a_named_file_is_checked_unless_force_exclude(tmp_path: Path) -> None:
    project = _repo(tmp_path, {".gitignore": "outputs/\n", "outputs/args.yaml": BAD, "legacy/b.yaml": BAD})
    (project / ".gpu-advise.toml").write_text('extend-exclude = ["legacy"]\n', encoding="utf-8")
    for path in ("outputs/args.yaml", "legacy/b.yaml"):
        named = _run(project, "check", "--format", "json", "--", path)
        assert named.returncode == 1 and _files(named) == {path}  # the user asked for it, as with ruff
        forced = _run(project, "check", "--force-exclude", "--", path)
        assert forced.returncode == 0 and "GA203" not in forced.stdout, forced.stdout + forced.stderr


def test_a_named_file_gpu_advise_does_not_read_is_said_so(tmp_path: Path) -> None:
    project = _repo(tmp_path, {"README.md": "# a project\n", "args.yaml": BAD, "notes.toml": "a = 1\n"})
    proc = _run(project, "check", "README.md")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stderr.strip() == "gpu-advise: README.md: not a file gpu-advise reads; skipped"
    assert "YAML" not in proc.stdout + proc.stderr and "GA001" not in proc.stdout

    both = _run(project, "check", "--format", "concise", "README.md", "notes.toml", "args.yaml")
    assert both.returncode == 1 and "args.yaml:2:29: GA203" in both.stdout
    assert "notes.toml: not a file gpu-advise reads" in both.stderr

    quiet = _run(project, "check", "--force-exclude", "--", "README.md")  # the hook: no word about it
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    as_json = _run(project, "check", "--format", "json", "--force-exclude", "--", "README.md")
    assert json.loads(as_json.stdout)["findings"] == []


def test_extensionless_and_batch_launchers_are_read(tmp_path: Path) -> None:
    project = _repo(
        tmp_path,
        {
            "job": "#SBATCH --gpus=1\nsrun python train.py --output_dir o --dataloader_num_workers 0 "
            "--dataloader_prefetch_factor 2\n",
            "train.py": "print('t')\n",
        },
    )
    proc = _run(project, "check", "--format", "json", "--force-exclude", "--", "job")
    assert proc.returncode == 1 and _files(proc) == {"job"}, proc.stdout + proc.stderr


def test_bad_exclude_settings_are_one_line_with_the_file(tmp_path: Path) -> None:
    project = _repo(tmp_path, {"a.yaml": BAD, ".gpu-advise.toml": 'exclude = "legacy"\n'})
    proc = _run(project, "check")
    assert proc.returncode == 2 and ".gpu-advise.toml:1" in proc.stderr and "exclude" in proc.stderr
    assert "Traceback" not in proc.stderr


# The matcher against git itself: patterns chosen for the corners of gitignore(5) and wildmatch
_NAMES = ["a", "b", "foo", "foo.yaml", "x.json", "wandb", "#h", "!b", " s", "[x]", "d.sh", "**", "a b"]
_PATTERNS = [
    "a", "/a", "a/", "foo*", "*.yaml", "**/b", "a/**", "a/**/b", "!foo.yaml", "!a", "b/*.json", "*",
    "[ab]", "[!a]*", "[a-c]", "\\#h", "\\!b", "?", "foo/", "/b/", "**", "a*b", "*/x.json", "\\ s",
    "a b", "[[:alpha:]]*", "[x]", "\\[x]", "d.*", "*.sh ", "*.sh\\ ", "[", "!*/", "a/b", "!/a/b",
    "**/foo/**", "[]x]", "[^a]", "*.y?ml", "a/*/b", "# comment", "", "a\\", "[[:nope:]]",
]  # fmt: skip


def _git_ignored(root: Path) -> set[str]:
    out = git(root, "ls-files", "-z", "--others", "--ignored", "--exclude-standard")
    return {p for p in out.split("\0") if p}


@pytest.mark.parametrize("seed", range(40))
def test_the_gitignore_matcher_agrees_with_git(tmp_path: Path, seed: int) -> None:
    rnd = random.Random(seed)
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    made: list[str] = []
    for _ in range(30):
        rel = "/".join(rnd.choice(_NAMES) for _ in range(rnd.randint(1, 4)))
        path = root / rel
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists():
                path.write_text("x", encoding="utf-8")
                made.append(rel)
        except (FileExistsError, NotADirectoryError):
            continue
    made = [m for m in made if (root / m).is_file()]
    folders = sorted({""} | {str(Path(m).parent) for m in made if "/" in m})
    for folder in rnd.sample(folders, min(3, len(folders))):
        lines = [rnd.choice(_PATTERNS) for _ in range(rnd.randint(1, 6))]
        (root / folder / ".gitignore").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if rnd.random() < 0.4:
        (root / ".git" / "info" / "exclude").write_text(rnd.choice(_PATTERNS) + "\n", encoding="utf-8")
    tracked = rnd.sample(made, min(2, len(made)))
    if tracked:
        git(root, "add", "-f", "--", *tracked)
    tree = WorkTree(root)
    expected = _git_ignored(root) & set(made)
    assert {m for m in made if tree.ignored(m, False)} == expected

"""The real `pre-commit` tool runs our `.pre-commit-hooks.yaml` from a copy of this checkout.

The hook repository is a temporary git repository holding this checkout's files (tracked and
untracked, not ignored), committed there. pre-commit clones it and installs it the way it installs
any `language: python` hook: a fresh virtualenv and `pip install .`, so the package, the wheel with
its rule catalog, is built from the copy. Offline, and from any interpreter (a fresh venv made by
the README's commands or a bare one):

- the build backend (setuptools) comes from the wheels that virtualenv itself embeds (pre-commit depends
  on virtualenv), through PIP_FIND_LINKS + PIP_NO_INDEX; the build is not isolated
  (PIP_NO_BUILD_ISOLATION), since its other requirements (PyYAML, pydantic) have no index to come from;
- the runtime dependencies are the ones this interpreter has installed: a folder of links to its
  site-packages entries, minus gpu-advise itself, is put on PYTHONPATH, so pip finds them satisfied
  and the hook imports them. PYTHONPATH (not VIRTUALENV_SYSTEM_SITE_PACKAGES, which exposes the
  *base* interpreter's packages, not a venv's) works the same from a venv and from a bare
  interpreter; `.pth` files are not processed on PYTHONPATH, so the editable install of this
  checkout is not seen and `advisor` is imported from the hook's own environment (asserted).

The scenario of issue 12 runs with no settings at all: train.yaml (per_device 2, accumulation 8) and
launch.sh (`--num_processes 1`) committed, then the launch moved to four GPUs: the shipped hook,
`pre-commit try-repo <hook repo> gpu-advise --files launch.sh`, must block it with GA101 and its fix.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, write_files
from tests.gate.conftest import git, needs_git

pytestmark = needs_git

TRAIN = (
    "output_dir: out\nper_device_train_batch_size: 2\ngradient_accumulation_steps: 8\nlearning_rate: 2.0e-4\n"
)
LAUNCH = "#!/bin/bash\naccelerate launch --num_processes 1 train.py configs/train.yaml\n"
PROJECT = {
    ".gpu-advise.toml": '[[runs]]\npath = "launch.sh"\neffective-batch = 16\n',
    "launch.sh": LAUNCH,
    "train.py": "print('train')\n",
    "configs/train.yaml": TRAIN,
    "README.md": "a training project\n",
}


def _hook_repo(tmp: Path) -> tuple[Path, str]:
    files = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    target = tmp / "hook-repo"
    for name in filter(None, files):
        src = REPO / name
        if not src.is_file():
            continue  # deleted in the working tree
        dst = target / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
    git(target, "init", "-q", "-b", "main")
    git(target, "add", "-A")
    git(target, "commit", "-q", "-m", "hook repo")
    return target, git(target, "rev-parse", "HEAD").strip()


def _dependency_path(tmp: Path) -> str:
    """A folder of links to this interpreter's installed packages, without gpu-advise itself."""
    deps = tmp / "deps"
    deps.mkdir()
    sites = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    for site in sorted(sites):
        for entry in sorted(Path(site).iterdir()):
            name = entry.name.lower()
            if name.startswith(("advisor", "gpu_advise", "gpu-advise", "__editable__")) or name.endswith(
                ".pth"
            ):
                continue
            link = deps / entry.name
            if not link.exists():
                link.symlink_to(entry)
    return str(deps)


def _embedded_wheels() -> str:
    import virtualenv  # a dependency of pre-commit

    folder = Path(virtualenv.__file__).parent / "seed" / "wheels" / "embed"
    assert list(folder.glob("setuptools-*.whl")), f"virtualenv embeds no setuptools wheel in {folder}"
    return str(folder)


@pytest.fixture(scope="module")
def hook(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, str]]:
    pytest.importorskip("pre_commit")
    tmp = tmp_path_factory.mktemp("precommit")
    hook_repo, rev = _hook_repo(tmp)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "VIRTUALENV_", "PYTHON"))}
    env.pop("GITHUB_ACTIONS", None)
    env.pop("VIRTUAL_ENV", None)
    env |= {
        "PRE_COMMIT_HOME": str(tmp / "pre-commit-home"),
        "PYTHONPATH": _dependency_path(tmp),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": _embedded_wheels(),
        # offline there is no index to bring the build's own requirements (PyYAML and pydantic decode the
        # prebuilt catalog, pyproject.toml [build-system]) into an isolated build environment: the build
        # runs in the hook's environment instead, where PYTHONPATH already provides them
        "PIP_NO_BUILD_ISOLATION": "0",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "VIRTUALENV_NO_PERIODIC_UPDATE": "1",
        "HF_HUB_OFFLINE": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    return hook_repo, rev, env


def _pre_commit(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )


def _config(hook_repo: Path, rev: str, *hook_ids: str) -> str:
    hooks = "".join(f"      - id: {h}\n" for h in hook_ids)
    return f"repos:\n  - repo: {hook_repo.as_posix()}\n    rev: {rev}\n    hooks:\n{hooks}"


def test_shipped_hook_blocks_the_launch_moved_to_four_gpus(tmp_path: Path, hook) -> None:
    hook_repo, rev, env = hook
    project = tmp_path / "project"
    write_files(
        project,
        {
            "launch.sh": LAUNCH,
            "train.py": "print('train')\n",
            "configs/train.yaml": TRAIN,
            ".pre-commit-config.yaml": _config(hook_repo, rev, "gpu-advise"),
        },
    )
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")

    # before the first commit there is no HEAD: the hook checks as a plain `check` would, no error
    first = _pre_commit(project, env, "run")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "Passed" in first.stdout
    git(project, "commit", "-q", "-m", "tuned on one GPU")

    # the hook ran from its own environment, built from the hook repository
    home = Path(env["PRE_COMMIT_HOME"])
    envs = list(home.glob("repo*/py_env-*/bin/python"))
    assert envs, "pre-commit created no python environment"
    where = subprocess.run(
        [str(envs[0]), "-c", "import advisor.cli; print(advisor.cli.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert str(home) in where
    assert (Path(where.strip()).parent / "_rules").is_dir()  # the wheel carries the rule catalog
    assert (Path(where.strip()).parent / "_prebuilt.json").is_file()  # decoded at build time

    # the command, with no settings: the launch moves to four GPUs, accumulation unchanged
    (project / "launch.sh").write_text(
        LAUNCH.replace("--num_processes 1", "--num_processes 4"), encoding="utf-8"
    )
    git(project, "add", "launch.sh")
    tried = _pre_commit(project, env, "try-repo", str(hook_repo), "gpu-advise", "--files", "launch.sh")
    assert tried.returncode == 1, tried.stdout + tried.stderr
    assert "Failed" in tried.stdout
    assert "GA101" in tried.stdout and "configs/train.yaml" in tried.stdout
    assert "gradient_accumulation_steps" in tried.stdout  # the fix names the key to change

    # the same through the installed git hook: `git commit` is blocked
    assert _pre_commit(project, env, "install").returncode == 0
    commit = subprocess.run(
        ["git", "commit", "-m", "four GPUs"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert commit.returncode != 0
    assert "GA101" in commit.stdout + commit.stderr

    # the user applies the fix: accumulation 8 -> 2 keeps the effective batch of 16, and commits
    (project / "configs" / "train.yaml").write_text(
        TRAIN.replace("accumulation_steps: 8", "accumulation_steps: 2"), encoding="utf-8"
    )
    git(project, "add", "-A")
    commit = subprocess.run(
        ["git", "commit", "-m", "four GPUs"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert commit.returncode == 0, commit.stdout + commit.stderr


def test_a_commit_that_only_changes_the_training_script_is_checked(tmp_path: Path, hook) -> None:
    hook_repo, rev, env = hook
    project = tmp_path / "project"
    write_files(
        project,
        {
            "launch.sh": LAUNCH.replace("--num_processes 1", "--num_processes 4"),
            "train.py": "print('x')\n",
            "configs/train.yaml": TRAIN,
            ".pre-commit-config.yaml": _config(hook_repo, rev, "gpu-advise"),
        },
    )
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "four GPUs")
    (project / "train.py").write_text("open('metrics.json', 'w').write('{}')\n", encoding="utf-8")
    git(project, "add", "train.py")
    proc = _pre_commit(project, env, "run")
    assert "Skipped" not in proc.stdout, proc.stdout
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "GA601" in proc.stdout and "train.py" in proc.stdout


def test_declared_baseline_blocks_the_commit_through_the_git_hook(tmp_path: Path, hook) -> None:
    """With `effective-batch` in the settings, only the YAML staged (the launch script was already
    committed on four GPUs by someone else): both hooks find the launch script and fail, and
    pre-commit's installed git hook blocks `git commit`."""
    hook_repo, rev, env = hook
    project = tmp_path / "project"
    write_files(project, PROJECT)
    (project / ".pre-commit-config.yaml").write_text(
        _config(hook_repo, rev, "gpu-advise", "gpu-advise-project"), encoding="utf-8"
    )
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    clean = _pre_commit(project, env, "run")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert clean.stdout.count("Passed") == 2, clean.stdout  # both hooks
    git(project, "commit", "-q", "-m", "tuned on one GPU")

    (project / "launch.sh").write_text(
        LAUNCH.replace("--num_processes 1", "--num_processes 4"), encoding="utf-8"
    )
    git(project, "add", "launch.sh")
    git(project, "commit", "-q", "--no-verify", "-m", "launch on four GPUs")
    train = project / "configs" / "train.yaml"
    train.write_text(TRAIN.replace("2.0e-4", "2.0e-4  # unchanged lr"), encoding="utf-8")
    git(project, "add", "configs/train.yaml")
    bad = _pre_commit(project, env, "run")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert bad.stdout.count("Failed") == 2, bad.stdout  # the seed hook and the project hook
    assert "GA101" in bad.stdout and "configs/train.yaml" in bad.stdout

    installed = _pre_commit(project, env, "install")
    assert installed.returncode == 0, installed.stderr
    commit = subprocess.run(
        ["git", "commit", "-m", "bad"], cwd=project, env=env, capture_output=True, text=True, check=False
    )
    assert commit.returncode != 0
    assert "GA101" in commit.stdout + commit.stderr


def test_documented_pre_commit_config_and_the_manifest_are_valid(tmp_path: Path) -> None:
    """docs/examples/pre-commit-config.yaml is the snippet in README.md and docs/ci.md
    (tests/gate/test_action.py checks that they are the same text)."""
    pytest.importorskip("pre_commit")
    example = REPO / "docs" / "examples" / "pre-commit-config.yaml"
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path)}
    config = _pre_commit(REPO, env, "validate-config", str(example))
    assert config.returncode == 0, config.stdout + config.stderr
    manifest = _pre_commit(REPO, env, "validate-manifest", str(REPO / ".pre-commit-hooks.yaml"))
    assert manifest.returncode == 0, manifest.stdout + manifest.stderr
    hooks = {
        h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    }
    assert "gpu-advise" in hooks
    for hook in hooks.values():
        # every text file: gpu-advise tells itself what it reads (issue 18 item 3)
        assert hook["types"] == ["text"] and "types_or" not in hook and "--force-exclude" in hook["entry"]
        # HEAD is the default base: the entry is a plain check (issue 18 item 5)
        assert hook["entry"].startswith("gpu-advise check ") and "--base" not in hook["entry"]
        # pre-commit appends the file names after the args: they must follow `--` (issue 17 item 3)
        assert "--require-separator" in hook["entry"] and hook["args"] == ["--"]


def test_a_file_named_like_an_option_is_checked_as_a_file(tmp_path: Path, hook) -> None:
    """Issue 17 item 3: pre-commit appends the file names after the hook's args. Root-level files
    named `--ignore=ALL,x.yaml` and `--verify-report=p.json` must be read as files (after the hook's
    `--`), so `pre-commit run --all-files` still fails on the bad config and no probe runs."""
    hook_repo, rev, env = hook
    project = tmp_path / "project"
    write_files(
        project,
        {
            "--ignore=ALL,x.yaml": "output_dir: out\n",
            "--verify-report=p.json": "{}\n",
            "args.yaml": "dataloader_num_workers: 0\ndataloader_prefetch_factor: 2\n",
            ".pre-commit-config.yaml": _config(hook_repo, rev, "gpu-advise"),
        },
    )
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    proc = _pre_commit(project, env, "run", "--all-files")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Failed" in proc.stdout
    assert re.search(r"^args\.yaml\n\s+2:29\s+GA203 error", proc.stdout, re.M), proc.stdout
    assert "verify" not in proc.stdout.lower()  # no training probe was started
    assert not (project / "p.json").exists()


def test_args_of_ones_own_must_end_with_the_separator(tmp_path: Path, hook) -> None:
    """A user's `args:` replace the hook's `[--]`: without their own `--` the hook stops (exit 2,
    saying what to write) instead of reading a file name as an option; with it, it checks."""
    hook_repo, rev, env = hook
    project = tmp_path / "project"
    write_files(
        project,
        {
            "--ignore=ALL,x.yaml": "output_dir: out\n",
            "args.yaml": "dataloader_num_workers: 0\ndataloader_prefetch_factor: 2\n",
        },
    )
    config = project / ".pre-commit-config.yaml"
    config.write_text(_config(hook_repo, rev, "gpu-advise") + "        args: [--fail-on, error]\n", "utf-8")
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    refused = _pre_commit(project, env, "run", "--all-files")
    assert refused.returncode == 1, refused.stdout + refused.stderr  # pre-commit's "hook failed"
    assert "exit code: 2" in refused.stdout, refused.stdout
    assert "the paths must follow `--`" in refused.stdout and "GA203" not in refused.stdout

    config.write_text(
        _config(hook_repo, rev, "gpu-advise") + "        args: [--fail-on, error, --]\n", "utf-8"
    )
    git(project, "add", "-A")
    checked = _pre_commit(project, env, "run", "--all-files")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert re.search(r"^args\.yaml\n\s+2:29\s+GA203 error", checked.stdout, re.M), checked.stdout

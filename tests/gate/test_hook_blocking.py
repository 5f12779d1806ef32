"""Issue 18 item 6: findings in files the commit did not touch no longer block it.

The `gpu-advise` hook (`check --fail-only-on-changed`) shows every finding of the runs the staged
files belong to, but fails only on those located in, or caused by, a staged file
(advisor/pipeline/blocking.py):
a GA101 at the config's per-device batch line caused by a staged launch change blocks; an old
`warmup_ratio` warning (GA007, raised to a warning in the settings) in a config the commit did not touch
is shown with "(not in the changed files: not blocking)" and the commit goes through. Real pre-commit
on a real git repository, and the option through the command line.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import write_files
from tests.gate.conftest import git, needs_git
from tests.gate.test_precommit import _config, _pre_commit, hook  # noqa: F401  (hook: a fixture)
from tests.gate.test_reproducible_hook import _gpu_advise, finding_texts

pytestmark = needs_git

LABEL = "(not in the changed files: not blocking)"
TRAIN = (
    "output_dir: out\nper_device_train_batch_size: 2\ngradient_accumulation_steps: 8\nwarmup_ratio: 0.03\n"
)
LAUNCH = "#!/bin/bash\naccelerate launch --num_processes 1 train.py configs/train.yaml\n"
FILES = {
    "launch.sh": LAUNCH,
    "train.py": "print('train')\n",
    "configs/train.yaml": TRAIN,
    # warmup_ratio is deprecated in transformers 5.6 (GA007, info): a warning here, so that it fails
    "requirements.txt": "transformers==5.6.2\n",
    ".gpu-advise.toml": 'severity = {GA007 = "warning"}\n',
}


def _project(tmp_path: Path, extra: dict[str, str] | None = None) -> Path:
    project = tmp_path / "project"
    write_files(project, {**FILES, **(extra or {})})
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "tuned on one GPU")
    return project


def _commit(project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "commit", "-m", "change"], cwd=project, env=env, capture_output=True, text=True, check=False
    )


def test_a_staged_launch_change_blocks_and_an_old_warning_elsewhere_does_not(tmp_path: Path, hook) -> None:  # noqa: F811
    hook_repo, rev, env = hook
    project = _project(tmp_path)
    (project / ".pre-commit-config.yaml").write_text(_config(hook_repo, rev, "gpu-advise"), encoding="utf-8")
    git(project, "add", ".pre-commit-config.yaml")
    git(project, "commit", "-q", "-m", "hook")
    assert _pre_commit(project, env, "install").returncode == 0

    # a comment in the launch script: the run is checked whole, its old warning shown, nothing blocks
    (project / "launch.sh").write_text(LAUNCH + "# tuned on one GPU\n", encoding="utf-8")
    git(project, "add", "launch.sh")
    shown = _pre_commit(project, env, "run", "--verbose")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "Passed" in shown.stdout
    warning = finding_texts(shown.stdout, "GA007")
    assert len(warning) == 1 and "warmup_ratio" in warning[0] and LABEL in warning[0], shown.stdout
    assert "configs/train.yaml" in shown.stdout
    assert "1 of 1 finding not in the changed files" in shown.stdout
    assert _commit(project, env).returncode == 0

    # the launch moves to four GPUs: GA101, at the config's batch line, is caused by the staged launch
    (project / "launch.sh").write_text(LAUNCH.replace("processes 1", "processes 4"), encoding="utf-8")
    git(project, "add", "launch.sh")
    blocked = _pre_commit(project, env, "run")
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    assert "Failed" in blocked.stdout
    ga101 = finding_texts(blocked.stdout, "GA101")
    assert len(ga101) == 1 and ga101[0].startswith("2:30 GA101") and LABEL not in ga101[0], blocked.stdout
    assert LABEL in finding_texts(blocked.stdout, "GA007")[0]
    commit = _commit(project, env)
    assert commit.returncode != 0 and "GA101" in commit.stdout + commit.stderr

    # `pre-commit run --all-files` passes every file: the old warning is in a passed file and blocks
    git(project, "checkout", "--", "launch.sh")
    git(project, "reset", "-q")
    (project / "launch.sh").write_text(LAUNCH + "# tuned on one GPU\n", encoding="utf-8")
    everything = _pre_commit(project, env, "run", "--all-files")
    assert everything.returncode == 1, everything.stdout + everything.stderr
    assert "GA007" in everything.stdout and LABEL not in everything.stdout


def test_what_blocks_is_what_the_changed_files_cause(tmp_path: Path) -> None:
    """The option through the command line, each case of the definition (exit code and labels)."""
    project = _project(tmp_path, {"other.yaml": "output_dir: out\nwarmup_ratio: 0.1\n"})

    def run(*paths: str) -> tuple[int, dict[str, bool]]:
        proc = _gpu_advise(project, "check", "--format", "json", "--fail-only-on-changed", "--", *paths)
        assert proc.returncode in (0, 1), proc.stdout + proc.stderr
        found = json.loads(proc.stdout)["findings"]
        return proc.returncode, {f"{f['rule']} {f['file']}": not f["message"].endswith(LABEL) for f in found}

    # a document-level finding is caused by its own file only
    assert run("launch.sh") == (0, {"GA007 configs/train.yaml": False})
    assert run("configs/train.yaml") == (1, {"GA007 configs/train.yaml": True})
    assert run("other.yaml") == (1, {"GA007 other.yaml": True})
    (project / "launch.sh").write_text(LAUNCH.replace("processes 1", "processes 4"), encoding="utf-8")
    # a run's finding is caused by any file of its run: the launch script, or the config it is at
    code, found = run("launch.sh")
    assert code == 1 and found == {"GA007 configs/train.yaml": False, "GA101 configs/train.yaml": True}
    assert run("train.py")[1]["GA101 configs/train.yaml"] is True  # the training script is the run's too
    # a folder stands for every file under it; without the option every finding fails, unlabelled
    assert run(".")[0] == 1 and all(run(".")[1].values())
    plain = _gpu_advise(project, "check", "--", "launch.sh")
    assert plain.returncode == 1 and LABEL not in plain.stdout
    # --exit-zero still wins
    quiet = _gpu_advise(project, "check", "--fail-only-on-changed", "--exit-zero", "--", "launch.sh")
    assert quiet.returncode == 0


def test_a_runs_entry_in_the_settings_is_a_file_of_its_run(tmp_path: Path) -> None:
    """Staging only the settings whose `[[runs]]` entry declares the batch the run was tuned for: the
    GA101 it brings blocks (caused by a file of the run); the old GA007 elsewhere does not."""
    settings = 'severity = {GA007 = "warning"}\n\n[[runs]]\npath = "launch.sh"\neffective-batch = 16\n'
    project = _project(tmp_path, {".gpu-advise.toml": settings})
    (project / ".gpu-advise.toml").write_text(settings.replace("= 16", "= 32"), encoding="utf-8")
    proc = _gpu_advise(
        project, "check", "--format", "json", "--fail-only-on-changed", "--", ".gpu-advise.toml"
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    found = {f["rule"]: f["message"].endswith(LABEL) for f in json.loads(proc.stdout)["findings"]}
    assert found == {"GA101": False, "GA007": True}

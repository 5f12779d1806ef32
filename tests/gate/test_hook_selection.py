"""Issue 18 items 3 and 4 through the real `pre-commit` on a real git repository: the hook sees every
launcher (identify's tags named none of `train.slurm`, `job.sbatch`, `ds_config.conf`, a hostfile, a
launch script without a suffix, so pre-commit said "(no files to check) Skipped"), skips what
gpu-advise does not read, and leaves what git ignores alone.

The hook repository and its environment are tests/gate/test_precommit.py's (`hook`: pre-commit
installs this checkout's package as it installs any `language: python` hook)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import write_files
from tests.gate.conftest import git, needs_git
from tests.gate.test_precommit import _config, _pre_commit, hook  # noqa: F401  (hook: the fixture)

pytestmark = needs_git

SLURM = (
    "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gpus-per-node=1\n"
    "torchrun --nproc_per_node 1 train.py --output_dir out --per_device_train_batch_size 2 "
    "--gradient_accumulation_steps 8\n"
)
TRAIN_PY = "print('train')\n"


def _commit(project: Path, env: dict[str, str], message: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "commit", "-m", message], cwd=project, env=env, capture_output=True, text=True, check=False
    )


def test_a_slurm_launch_moved_to_four_gpus_is_blocked(tmp_path: Path, hook) -> None:  # noqa: F811
    hook_repo, rev, env = hook
    project = tmp_path / "project"
    write_files(
        project,
        {
            "train.slurm": SLURM,
            "train.py": TRAIN_PY,
            ".pre-commit-config.yaml": _config(hook_repo, rev, "gpu-advise"),
        },
    )
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "one GPU")
    assert _pre_commit(project, env, "install").returncode == 0

    (project / "train.slurm").write_text(
        SLURM.replace("gpus-per-node=1", "gpus-per-node=4").replace("nproc_per_node 1", "nproc_per_node 4"),
        encoding="utf-8",
    )
    git(project, "add", "train.slurm")
    blocked = _commit(project, env, "four GPUs")
    out = blocked.stdout + blocked.stderr
    assert blocked.returncode != 0, out
    assert "no files to check" not in out and "Skipped" not in out
    assert "GA101" in out and "train.slurm" in out
    assert git(project, "rev-list", "--count", "HEAD").strip() == "1"  # nothing was committed


def test_launchers_identify_has_no_tag_for_are_passed_and_other_files_skipped_quietly(
    tmp_path: Path,
    hook,  # noqa: F811
) -> None:
    """`job.sbatch` without a shebang, an extensionless non-executable launch script, a `.conf`
    DeepSpeed config and a hostfile each reach the hook; a README.md staged alone passes silently."""
    hook_repo, rev, env = hook
    project = tmp_path / "project"
    write_files(
        project,
        {
            "job.sbatch": "#SBATCH --gpus=1\nsrun python train.py --output_dir out "
            "--dataloader_num_workers 0 --dataloader_prefetch_factor 2\n",
            "launch": "deepspeed --hostfile hostfile train.py --deepspeed ds_config.conf\n",
            "hostfile": "node1 slots=4\nnode2 slots=4\n",
            "ds_config.conf": '{"train_micro_batch_size_per_gpu": 8, "zero_optimisation": {}}\n',
            "train.py": TRAIN_PY,
            "README.md": "# project\n",
            ".pre-commit-config.yaml": _config(hook_repo, rev, "gpu-advise"),
        },
    )
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")

    def run(name: str) -> subprocess.CompletedProcess[str]:
        proc = _pre_commit(project, env, "run", "--verbose", "--files", name)
        assert "no files to check" not in proc.stdout and "Skipped" not in proc.stdout, proc.stdout
        return proc

    sbatch = run("job.sbatch")  # no shebang, no launcher word: its #SBATCH lines
    assert sbatch.returncode == 1 and "GA203" in sbatch.stdout and "job.sbatch" in sbatch.stdout
    conf = run("ds_config.conf")
    assert conf.returncode == 1, conf.stdout
    assert "GA002" in conf.stdout and "zero_optimisation" in conf.stdout and "ds_config.conf" in conf.stdout
    for name in ("hostfile", "launch"):  # the run of `launch` is found and checked; the hostfile is no YAML
        proc = run(name)
        assert "ds_config.conf" in proc.stdout and "GA002" in proc.stdout, proc.stdout
        assert "GA001" not in proc.stdout, proc.stdout

    readme = _pre_commit(project, env, "run", "--verbose", "--files", "README.md")
    assert readme.returncode == 0, readme.stdout + readme.stderr
    assert "Passed" in readme.stdout and "README.md" not in readme.stdout  # skipped without a word


def test_an_ignored_checkpoint_does_not_block_the_commit(tmp_path: Path, hook) -> None:  # noqa: F811
    """The issue's case: a training output's `checkpoint-500/trainer_state.json` (and an ignored
    output folder's bad config) were read by the project hook, which blocked the commit."""
    hook_repo, rev, env = hook
    project = tmp_path / "project"
    write_files(
        project,
        {
            "train.slurm": SLURM,
            "train.py": TRAIN_PY,
            ".gitignore": "outputs/\n",
            "outputs/checkpoint-500/trainer_state.json": '{"global_step": 500, "train_batch_size": 8, '
            '"log_history": [], "best_metric": null}\n',
            "outputs/args.yaml": "dataloader_num_workers: 0\ndataloader_prefetch_factor: 2\n",
            ".pre-commit-config.yaml": _config(hook_repo, rev, "gpu-advise", "gpu-advise-project"),
        },
    )
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    assert "outputs/" not in git(project, "status", "--porcelain")  # ignored, untracked
    assert _pre_commit(project, env, "install").returncode == 0
    commit = _commit(project, env, "a project with training outputs lying around")
    out = commit.stdout + commit.stderr
    assert commit.returncode == 0, out
    assert "trainer_state.json" not in out and "GA203" not in out and "GA002" not in out

    # the same file committed by force is tracked: git no longer ignores it, and it is checked
    git(project, "add", "-f", "outputs/args.yaml")
    forced = _commit(project, env, "track the output config")
    assert forced.returncode != 0
    assert "GA203" in forced.stdout + forced.stderr and "outputs/args.yaml" in forced.stdout + forced.stderr

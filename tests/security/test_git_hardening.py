"""Item 2 of issue 17: the scanned repository's git config never makes gpu-advise's git run a program.

`check --base REV` (the CI gate) and `--base-default HEAD` (the pre-commit hook) run git inside a
repository that may come from anywhere. Each test here plants one way of running a program: a
partial clone whose promisor remote's `uploadpack`, `core.sshCommand` or `ext::` URL would run a script
when git lazily fetches a missing object; hooks, fsmonitor, pager, credential helpers, an inherited
GIT_DIR, replace refs, a `git` in the checked folder. The script writes a marker file; the marker must
never appear, and the check must still answer clearly (GA101, or a one-line error naming what is
missing). Where a knob guards a git command gpu-advise does not run today, the test runs that command
twice: plain git runs the program (the plant works), the hardened command of advisor/plan/revision/git.py
does not.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from advisor.plan.revision.git import RevisionError, git_command, git_env, run_git
from tests.conftest import write_files
from tests.gate.conftest import git, needs_git

pytestmark = needs_git

MAIN = {
    "launch.sh": "#!/bin/bash\naccelerate launch --num_processes 1 train.py configs/sft.yaml\n",
    "train.py": "print('train')\n",
    "configs/sft.yaml": (
        "output_dir: out\nper_device_train_batch_size: 2\n"
        "gradient_accumulation_steps: 8\nlearning_rate: 2.0e-4\n"
    ),
}
FOUR_GPUS = MAIN["launch.sh"].replace("--num_processes 1", "--num_processes 4")

# the identity and config isolation the test's own git commands use (never the hardened runner's)
PLAIN_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


@pytest.fixture
def evil(tmp_path: Path) -> tuple[Path, Path]:
    """(the script a planted config names, the marker file it writes)."""
    marker = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> "{marker}"\nexit 1\n', encoding="utf-8")
    script.chmod(0o755)
    return script, marker


def _check(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base_env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"} | {"HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "advisor", "check", "--format", "json", *args],
        cwd=cwd,
        env=base_env | (env or {}),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _codes(proc: subprocess.CompletedProcess[str]) -> list[str]:
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return [f["rule"] for f in json.loads(proc.stdout)["findings"]]


def _plain(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Plain git, as a user would type it: the control that shows a plant runs its program."""
    full = os.environ | PLAIN_ENV | (env or {})
    return subprocess.run(["git", *args], cwd=cwd, env=full, capture_output=True, text=True, check=False)


def _hardened(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The hardened command and environment gpu-advise uses, for a git command it does not run today."""
    full = git_env(os.environ | PLAIN_ENV | (env or {})) | {
        k: v for k, v in PLAIN_ENV.items() if k.startswith(("GIT_AUTHOR", "GIT_COMMITTER"))
    }
    return subprocess.run(
        git_command(list(args)), cwd=cwd, env=full, capture_output=True, text=True, check=False
    )


def _upstream(tmp_path: Path) -> Path:
    up = tmp_path / "up"
    write_files(up, MAIN)
    git(up, "init", "-q", "-b", "main")
    git(up, "add", "-A")
    git(up, "commit", "-q", "-m", "tuned on one GPU")
    git(up, "config", "uploadpack.allowFilter", "true")
    return up


def _partial_clone(tmp_path: Path, kind: str) -> Path:
    """A clone of upstream filtered by `kind` (blob:none, tree:0), with upstream's next commit fetched
    without its objects: origin/main's config (and with tree:0 its folders) are not in the clone."""
    up = _upstream(tmp_path)
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", "--no-local", f"--filter={kind}", f"file://{up}", str(work))
    (up / "configs" / "sft.yaml").write_text(MAIN["configs/sft.yaml"] + "seed: 1\n", encoding="utf-8")
    git(up, "commit", "-q", "-am", "a seed")
    git(work, "fetch", "-q", "origin")
    (work / "launch.sh").write_text(FOUR_GPUS, encoding="utf-8")
    missing = git(work, "rev-list", "--objects", "--missing=print", "--no-walk", "origin/main")
    assert "\n?" in "\n" + missing  # the plant is real: origin/main has objects that are not here
    return work


def _full_clone(tmp_path: Path) -> Path:
    up = _upstream(tmp_path)
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(up), str(work))
    (work / "launch.sh").write_text(FOUR_GPUS, encoding="utf-8")
    return work


# ---- a partial clone's lazy fetch: the promisor remote would run a program --------------------------
def _uploadpack(work: Path, tmp_path: Path, script: Path) -> None:
    git(work, "config", "remote.origin.url", str(tmp_path / "up"))  # a local path: git runs upload-pack
    git(work, "config", "remote.origin.uploadpack", str(script))


def _uploadpack_file_allowed(work: Path, tmp_path: Path, script: Path) -> None:
    _uploadpack(work, tmp_path, script)
    git(work, "config", "protocol.file.allow", "always")  # tries to beat `-c protocol.allow=never`


def _ssh_command(work: Path, tmp_path: Path, script: Path) -> None:
    git(work, "config", "remote.origin.url", "ssh://example.invalid/up")
    git(work, "config", "core.sshCommand", str(script))


def _ext_url(work: Path, tmp_path: Path, script: Path) -> None:
    git(work, "config", "remote.origin.url", f"ext::{script} %S")
    git(work, "config", "protocol.ext.allow", "always")


def _credentials(work: Path, tmp_path: Path, script: Path) -> None:
    git(work, "config", "remote.origin.url", "http://127.0.0.1:9/up")
    git(work, "config", "credential.helper", f"!{script}")
    git(work, "config", "core.askPass", str(script))


PROMISOR_PLANTS: dict[str, Callable[[Path, Path, Path], None]] = {
    "uploadpack": _uploadpack,
    "uploadpack-with-file-protocol-allowed": _uploadpack_file_allowed,
    "core.sshCommand": _ssh_command,
    "ext-url-with-ext-allowed": _ext_url,
    "credential-helper-and-askpass": _credentials,
}


@pytest.mark.parametrize("kind", ["blob:none", "tree:0"])
@pytest.mark.parametrize("plant", sorted(PROMISOR_PLANTS))
def test_partial_clone_never_fetches(tmp_path: Path, evil: tuple[Path, Path], plant: str, kind: str) -> None:
    script, marker = evil
    work = _partial_clone(tmp_path, kind)
    PROMISOR_PLANTS[plant](work, tmp_path, script)
    for args in (["--base", "origin/main"], ["--base-default", "origin/main"]):
        proc = _check(work, *args, "launch.sh")
        assert not marker.exists(), marker.read_text(encoding="utf-8")
        # a clear one-line answer: the base's files are not here, and gpu-advise does not fetch them
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "not in this clone" in proc.stderr and "never fetches" in proc.stderr, proc.stderr
        assert "configs/sft.yaml" in proc.stderr or kind == "tree:0", proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_partial_clone_plants_do_run_under_plain_git(tmp_path: Path, evil: tuple[Path, Path]) -> None:
    """The control: the same plant, and plain `git cat-file` asked for the missing config, runs it."""
    script, marker = evil
    work = _partial_clone(tmp_path, "blob:none")
    _uploadpack(work, tmp_path, script)
    _plain(work, "cat-file", "-p", "origin/main:configs/sft.yaml")
    assert marker.exists()


@pytest.mark.parametrize("plant", ["uploadpack", "core.sshCommand", "ext-url-with-ext-allowed"])
def test_hardened_git_never_fetches_a_missing_object(
    tmp_path: Path, evil: tuple[Path, Path], plant: str
) -> None:
    """Below materialise's own check for missing objects: asked straight for a missing object, the
    hardened runner's git refuses every transport (GIT_ALLOW_PROTOCOL beats the repository's
    protocol.<name>.allow) and fails with git's message instead of running the program."""
    script, marker = evil
    work = _partial_clone(tmp_path, "blob:none")
    PROMISOR_PLANTS[plant](work, tmp_path, script)
    with pytest.raises(RevisionError):
        run_git(["cat-file", "-p", "origin/main:configs/sft.yaml"], work)
    assert not marker.exists(), marker.read_text(encoding="utf-8")


# ---- a full clone: programs the config names, for git commands gpu-advise does not run today ---------
def _hooks(folder: Path, script: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("pre-commit", "commit-msg", "post-commit", "reference-transaction", "post-checkout"):
        (folder / name).write_text(f'#!/bin/sh\nexec "{script}" {name}\n', encoding="utf-8")
        (folder / name).chmod(0o755)


def test_hooks_never_run(tmp_path: Path, evil: tuple[Path, Path]) -> None:
    script, marker = evil
    work = _full_clone(tmp_path)
    _hooks(work / ".git" / "hooks", script)
    _hooks(tmp_path / "hooks", script)
    for hooks_path in (None, str(tmp_path / "hooks")):  # .git/hooks, then core.hooksPath
        if hooks_path:
            git(work, "config", "core.hooksPath", hooks_path)
        assert _hardened(work, "commit", "-q", "--allow-empty", "-m", "x").returncode == 0
        assert not marker.exists(), marker.read_text(encoding="utf-8")
        _plain(work, "commit", "-q", "--allow-empty", "-m", "x")
        assert marker.exists()
        marker.unlink()
    assert "GA101" in _codes(_check(work, "--base", "HEAD", "launch.sh"))
    assert not marker.exists()


def test_fsmonitor_never_runs(tmp_path: Path, evil: tuple[Path, Path]) -> None:
    script, marker = evil
    work = _full_clone(tmp_path)
    git(work, "config", "core.fsmonitor", str(script))
    assert _hardened(work, "status", "--porcelain").returncode == 0
    assert not marker.exists(), marker.read_text(encoding="utf-8")
    _plain(work, "status", "--porcelain")
    assert marker.exists()
    marker.unlink()
    assert "GA101" in _codes(_check(work, "--base-default", "HEAD", "launch.sh"))
    assert not marker.exists()


def _on_a_terminal(command: list[str], cwd: Path, env: dict[str, str]) -> None:
    """Run with stdout on a pseudo-terminal: git starts its pager only there."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=follower, stderr=follower, stdin=subprocess.DEVNULL
        )
        os.close(follower)
        while True:
            try:
                if not os.read(leader, 65536):
                    break
            except OSError:
                break
        proc.wait(timeout=60)
    finally:
        os.close(leader)


@pytest.mark.parametrize("key", ["core.pager", "pager.log", "pager.cat-file"])
def test_pager_never_runs(tmp_path: Path, evil: tuple[Path, Path], key: str) -> None:
    script, marker = evil
    work = _full_clone(tmp_path)
    git(work, "config", key, str(script))
    env = os.environ | PLAIN_ENV | {"GIT_PAGER": "", "PAGER": ""}
    command = "cat-file" if key == "pager.cat-file" else "log"
    args = [command, "-p", "HEAD"] if command == "cat-file" else [command]
    _on_a_terminal(git_command(args), work, git_env(env))
    assert not marker.exists(), marker.read_text(encoding="utf-8")
    _on_a_terminal(["git", *args], work, {k: v for k, v in env.items() if k not in ("GIT_PAGER", "PAGER")})
    assert marker.exists()


def test_ssh_command_and_credential_helpers_never_run(tmp_path: Path, evil: tuple[Path, Path]) -> None:
    """Transports are refused before any of the programs a transport would start: ssh (config and
    inherited GIT_SSH_COMMAND/GIT_SSH), upload-pack of a local remote, ext::, askpass."""
    script, marker = evil
    work = _full_clone(tmp_path)
    git(work, "config", "core.sshCommand", str(script))
    git(work, "config", "remote.origin.uploadpack", str(script))
    git(work, "config", "protocol.ext.allow", "always")
    git(work, "config", "protocol.file.allow", "always")
    inherited = {"GIT_SSH_COMMAND": str(script), "GIT_SSH": str(script), "GIT_ASKPASS": str(script)}
    for remote in ("ssh://example.invalid/up", "origin", f"ext::{script} %S"):
        assert _hardened(work, "ls-remote", remote, env=inherited).returncode != 0
        assert not marker.exists(), (remote, marker.read_text(encoding="utf-8"))
        _plain(work, "ls-remote", remote)
        assert marker.exists(), remote
        marker.unlink()


def test_filters_and_textconv_never_run_and_the_base_is_read_raw(
    tmp_path: Path, evil: tuple[Path, Path]
) -> None:
    """A smudge filter that would rewrite the base's accumulation (8 -> 2, hiding GA101) and textconv /
    external diff drivers: the base is read as committed, and the runner refuses commands that apply
    them (cat-file --filters / --textconv, checkout, diff)."""
    script, marker = evil
    work = _full_clone(tmp_path)
    rewrite = tmp_path / "rewrite.sh"
    rewrite.write_text(f'#!/bin/sh\necho "$0" >> "{marker}"\nsed "s/: 8/: 2/"\n', encoding="utf-8")
    rewrite.chmod(0o755)
    for key, value in (
        ("filter.evil.smudge", rewrite),
        ("filter.evil.clean", rewrite),
        ("filter.evil.process", script),
        ("diff.evil.textconv", rewrite),
        ("diff.external", script),
    ):
        git(work, "config", key, str(value))
    (work / ".gitattributes").write_text("*.yaml filter=evil diff=evil\n", encoding="utf-8")
    marker.unlink(missing_ok=True)
    assert "GA101" in _codes(_check(work, "--base", "HEAD", "launch.sh"))
    assert not marker.exists(), marker.read_text(encoding="utf-8")
    for args in (
        ["cat-file", "--filters", "HEAD:configs/sft.yaml"],
        ["cat-file", "--textconv", "HEAD:configs/sft.yaml"],
        ["checkout", "HEAD", "--", "configs/sft.yaml"],
        ["diff", "HEAD"],
    ):
        with pytest.raises(RevisionError, match="not run"):
            run_git(args, work)
    assert not marker.exists()
    _plain(work, "cat-file", "--filters", "HEAD:configs/sft.yaml")
    assert marker.exists()


# ---- the caller's environment and the folder -------------------------------------------------------
def test_inherited_git_dir_work_tree_and_config_are_ignored(tmp_path: Path, evil: tuple[Path, Path]) -> None:
    """A pre-commit hook runs with GIT_DIR / GIT_INDEX_FILE set, a CI step may export GIT_CONFIG_*: the
    base is still the checked repository's HEAD, and no inherited config runs a program."""
    script, marker = evil
    work = _full_clone(tmp_path)
    other = tmp_path / "other"
    write_files(other, MAIN | {"launch.sh": FOUR_GPUS})  # its HEAD already launches on four GPUs
    git(other, "init", "-q", "-b", "main")
    git(other, "add", "-A")
    git(other, "commit", "-q", "-m", "four")
    config = tmp_path / "evil.cfg"
    config.write_text(f"[core]\n\tfsmonitor = {script}\n\tsshCommand = {script}\n", encoding="utf-8")
    inherited = {
        "GIT_DIR": str(other / ".git"),
        "GIT_WORK_TREE": str(other),
        "GIT_INDEX_FILE": str(other / ".git" / "index"),
        "GIT_CONFIG_GLOBAL": str(config),
        "GIT_CONFIG_SYSTEM": str(config),
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "core.fsmonitor",
        "GIT_CONFIG_VALUE_0": str(script),
        "GIT_CONFIG_PARAMETERS": f"'core.fsmonitor'='{script}'",
    }
    assert "GA101" in _codes(_check(work, "--base", "HEAD", "launch.sh", env=inherited))
    assert "GA101" in _codes(_check(work, "--base-default", "HEAD", "launch.sh", env=inherited))
    assert _hardened(work, "status", "--porcelain", env=inherited).returncode == 0
    assert not marker.exists(), marker.read_text(encoding="utf-8")
    env = git_env(os.environ | inherited)
    assert not [k for k in env if k.startswith("GIT_") and k not in git_env({})]
    assert env["GIT_CONFIG_NOSYSTEM"] == "1"


def test_replace_refs_do_not_rewrite_the_base(tmp_path: Path) -> None:
    """`git replace` makes the base's config read as one tuned for four GPUs (accumulation 2); the
    comparison reads the real objects, so GA101 still fires."""
    work = _full_clone(tmp_path)
    real = git(work, "rev-parse", "HEAD:configs/sft.yaml").strip()
    forged_text = MAIN["configs/sft.yaml"].replace("accumulation_steps: 8", "accumulation_steps: 2")
    forged = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=work,
        input=forged_text,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    git(work, "replace", real, forged)
    assert "accumulation_steps: 2" in git(work, "show", "HEAD:configs/sft.yaml")  # the plant works
    assert "GA101" in _codes(_check(work, "--base", "HEAD", "launch.sh"))


def test_a_git_in_the_checked_folder_is_never_run(tmp_path: Path, evil: tuple[Path, Path]) -> None:
    """PATH with an empty entry (the current folder): the `git` a pull request commits is not run."""
    script, marker = evil
    work = _full_clone(tmp_path)
    fake = work / "git"
    fake.write_text(f'#!/bin/sh\nexec "{script}" "$@"\n', encoding="utf-8")
    fake.chmod(0o755)
    path = ":" + os.environ.get("PATH", "")
    assert "GA101" in _codes(_check(work, "--base", "HEAD", "launch.sh", env={"PATH": path}))
    assert not marker.exists(), marker.read_text(encoding="utf-8")


def test_a_bare_repository_inside_the_checkout_is_not_used(tmp_path: Path, evil: tuple[Path, Path]) -> None:
    """A pull request can commit a folder laid out as a bare repository (HEAD, objects/, refs/, config)
    whose config names a program; git run from inside it would take it for the repository."""
    script, marker = evil
    work = _full_clone(tmp_path)
    embedded = work / "configs" / "embedded"
    git(tmp_path, "init", "-q", "--bare", str(embedded))
    git(embedded, "config", "core.fsmonitor", str(script))
    assert _plain(embedded, "rev-parse", "--absolute-git-dir").stdout.strip() == str(embedded)
    hardened = _hardened(embedded, "rev-parse", "--absolute-git-dir")
    assert hardened.returncode != 0 and "bare" in hardened.stderr
    proc = _check(embedded, "--base", "HEAD")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert not marker.exists()

"""The one way gpu-advise runs git: every call goes through `run_git`, hardened against the repository.

The repository may come from anywhere (a fork's pull request in CI, a clone handed over), and its own
`.git/config` is read by every git command. Nothing in it may make git run a program or reach out:

- transports: `GIT_ALLOW_PROTOCOL=""` allows no protocol at all and beats every `protocol.<name>.allow`
  of the repository's config (git transport.c, `protocol_allow_list`: the environment list replaces the
  config); `-c protocol.allow=never` and the per-protocol `-c` settings say the same for a git that
  ignores the variable. So a lazy fetch of a partial clone (`remote.<name>.uploadpack`, `core.sshCommand`,
  `ext::` URLs) cannot start; `GIT_NO_LAZY_FETCH=1` (git >= 2.44) stops it earlier, and
  `missing_objects` lets the caller refuse before any object that is not local is asked for.
- programs the config can name: fsmonitor, hooks, pager, ssh, askpass, credential helpers, external
  diff are each turned off on the command line (`-c` beats the repository's config). The plumbing used
  (rev-parse, rev-list, ls-tree, cat-file --batch) never applies filters or textconv.
- the caller's environment: every inherited `GIT_*` variable is dropped (GIT_DIR, GIT_WORK_TREE,
  GIT_CONFIG_*, GIT_SSH*, GIT_ASKPASS, ...: a pre-commit hook runs with some of them set), the
  system config is not read, replace refs are ignored (the base shows its real objects), and `git`
  is looked up on the absolute entries of PATH only (never in the checked folder).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


class RevisionError(Exception):
    pass


# every protocol git knows by name (transport.c, remote helpers shipped with git); GIT_ALLOW_PROTOCOL
# covers the rest
_PROTOCOLS = ("file", "git", "ssh", "http", "https", "ftp", "ftps", "ext", "fd")

HARDENED_CONFIG: tuple[str, ...] = (
    "protocol.allow=never",
    *(f"protocol.{name}.allow=never" for name in _PROTOCOLS),
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.askPass=",
    "credential.helper=",  # an empty value empties the list of helpers
    "diff.external=",
    "safe.bareRepository=explicit",  # a bare repository committed inside the checkout is not used
    "gc.auto=0",
    "maintenance.auto=false",
    "submodule.recurse=false",
)

HARDENED_ENV: dict[str, str] = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_ALLOW_PROTOCOL": "",
    "GIT_PROTOCOL_FROM_USER": "0",
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "",  # an empty GIT_ASKPASS stops git looking further (core.askPass, SSH_ASKPASS)
    "GIT_SSH_COMMAND": "false",  # beats core.sshCommand and GIT_SSH
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_OPTIONAL_LOCKS": "0",
}

# not GIT_* but read by git to run a program
_DROPPED = frozenset({"SSH_ASKPASS", "DISPLAY"})


def git_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment every git call gets: the caller's, without any GIT_* variable, plus HARDENED_ENV."""
    source = os.environ if environ is None else environ
    kept = {k: v for k, v in source.items() if not k.startswith("GIT_") and k not in _DROPPED}
    return kept | HARDENED_ENV


def git_command(args: list[str]) -> list[str]:
    exe = _git_executable()
    hardened = [part for setting in HARDENED_CONFIG for part in ("-c", setting)]
    return [exe, "--no-pager", "--no-replace-objects", *hardened, *args]


def _git_executable() -> str:
    """git from the absolute entries of PATH: an empty or relative entry would find the checked folder's."""
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if os.path.isabs(p))
    exe = shutil.which("git", path=path)
    if exe is None:
        raise RevisionError("--base needs git, and git is not installed")
    return exe


# plumbing that reads objects and never applies filters, textconv or hooks, and never refreshes the index
ALLOWED_COMMANDS = frozenset({"rev-parse", "rev-list", "ls-tree", "cat-file"})
_REFUSED_OPTIONS = frozenset({"--filters", "--textconv", "--ext-diff", "--exec"})


def run_git(args: list[str], cwd: Path, data: bytes | None = None, timeout: float = 120) -> bytes:
    """Run one hardened git command in `cwd` and return its stdout; RevisionError names what failed.
    Only ALLOWED_COMMANDS run, and none with an option that starts a program of the repository's."""
    refused = [a for a in args if a.split("=")[0] in _REFUSED_OPTIONS]
    if not args or args[0] not in ALLOWED_COMMANDS or refused:
        shown = " ".join([args[0] if args else "", *refused]).strip()
        raise RevisionError(
            f"git {shown}: not run (gpu-advise runs only {', '.join(sorted(ALLOWED_COMMANDS))})"
        )
    try:
        proc = subprocess.run(
            git_command(args),
            cwd=cwd,
            input=data,
            capture_output=True,
            timeout=timeout,
            check=False,
            env=git_env(),
            stdin=None if data is not None else subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise RevisionError("--base needs git, and git is not installed") from None
    except subprocess.TimeoutExpired:
        raise RevisionError(f"git {' '.join(args[:2])} timed out") from None
    if proc.returncode != 0:
        message = proc.stderr.decode(errors="replace").strip().splitlines()
        raise RevisionError(f"git {' '.join(args[:2])}: {message[-1] if message else 'failed'}")
    return proc.stdout


def missing_objects(commit: str, cwd: Path) -> set[str]:
    """Ids of the objects of `commit`'s tree that are not in this clone (a partial clone's), found
    without fetching them: `rev-list --missing=print` turns lazy fetching off (builtin/rev-list.c)."""
    out = run_git(["rev-list", "--objects", "--no-object-names", "--missing=print", "--no-walk", commit], cwd)
    return {line[1:] for line in out.decode(errors="replace").splitlines() if line.startswith("?")}

"""The project as it was at a git revision: its config files written to a temporary folder.

`check --base REV` builds the same runs from these files and compares each run with its twin.
Only files a run can name are materialised (configs, launch scripts, training scripts), read with
one `git cat-file --batch` process, so this stays fast on large repositories.

The repository may come from a fork (the CI gate) and git runs inside it, so only plumbing that reads
objects is used (rev-parse, ls-tree, cat-file without --filters/--textconv): none of them reads the
index, so the repository's own config cannot make git run a program (core.fsmonitor runs only when
the index is refreshed; filters and textconv only on checkout, diff or `cat-file --filters`). Those
settings are still turned off on the command line, and no pager or prompt can start.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from advisor.sources.read import CONFIG_SUFFIXES, PY_SUFFIXES

MATERIALISED = CONFIG_SUFFIXES | PY_SUFFIXES | {".toml"}


class RevisionError(Exception):
    pass


# `-c` beats the repository's own config; the pager and prompts are off for every command
_SAFE_CONFIG = ("-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false", "-c", "core.pager=cat")
_SAFE_ENV = {"GIT_PAGER": "cat", "PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}


def _git(args: list[str], cwd: Path, data: bytes | None = None) -> bytes:
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_EXTERNAL_DIFF", "GIT_ASKPASS")} | _SAFE_ENV
    try:
        proc = subprocess.run(
            ["git", "--no-pager", *_SAFE_CONFIG, *args],
            cwd=cwd,
            input=data,
            capture_output=True,
            timeout=120,
            check=False,
            env=env,
        )
    except FileNotFoundError:
        raise RevisionError("--base needs git, and git is not installed") from None
    except subprocess.TimeoutExpired:
        raise RevisionError(f"git {' '.join(args)} timed out") from None
    if proc.returncode != 0:
        message = proc.stderr.decode(errors="replace").strip().splitlines()
        raise RevisionError(f"git {' '.join(args[:2])}: {message[-1] if message else 'failed'}")
    return proc.stdout


def repo_root(start: Path) -> Path:
    out = _git(["rev-parse", "--show-toplevel"], start)
    return Path(out.decode().strip())


def has_commit(rev: str, start: Path) -> bool:
    """Whether `start` is inside a git work tree where `rev` names a commit (False outside git, without
    git, or before the first commit when rev is HEAD): the hook's default base is then skipped."""
    if rev.startswith("-"):
        return False
    try:
        root = repo_root(start)
        _git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], root)
    except (RevisionError, OSError):
        return False
    return True


def _safe_name(name: str) -> bool:
    """A tree path that stays inside the temporary folder: git refuses `..`, `.git` and absolute
    names when it checks out, but a crafted tree object can still list them."""
    parts = name.split("/")
    return bool(name) and not name.startswith("/") and all(p not in ("", ".", "..", ".git") for p in parts)


def materialise(rev: str, start: Path) -> tuple[Path, Path, tempfile.TemporaryDirectory[str]]:
    """Write the revision's config-like files to a temporary folder.

    Returns (repo root, the folder standing for the root at REV, the TemporaryDirectory to clean up).
    """
    if rev.startswith("-"):  # would be read as an option by git
        raise RevisionError(f"--base: '{rev}' is not a revision")
    root = repo_root(start)
    # every later command names the commit by its id, so a branch that moves meanwhile cannot mix trees
    rev = _git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], root).decode().strip()
    listing = _git(["ls-tree", "-r", "-z", "--name-only", rev], root).decode(errors="surrogateescape")
    names = [n for n in listing.split("\0") if _safe_name(n) and Path(n).suffix.lower() in MATERIALISED]
    tmp = tempfile.TemporaryDirectory(prefix="gpu-advise-base-")
    base = Path(tmp.name)
    if names:
        request = "".join(f"{rev}:{n}\n" for n in names).encode(errors="surrogateescape")
        blob = _git(["cat-file", "--batch"], root, request)
        pos = 0
        for name in names:
            header_end = blob.index(b"\n", pos)
            header = blob[pos:header_end].split()
            pos = header_end + 1
            if len(header) < 3 or header[1] != b"blob":
                continue
            size = int(header[2])
            target = base / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(blob[pos : pos + size])
            pos += size + 1
    return root, base, tmp

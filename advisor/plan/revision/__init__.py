"""The project as it was at a git revision: its config files written to a temporary folder.

`check --base REV` builds the same runs from these files and compares each run with its twin
(advisor/plan/revision/twins.py). Only files a run can name are materialised (configs, launch scripts,
training scripts), read with one `git cat-file --batch` process, so this stays fast on large
repositories.

The repository may come from a fork (the CI gate) and git runs inside it: every call goes through the
hardened runner of advisor/plan/revision/git.py, and only plumbing that reads objects is used (rev-parse,
rev-list, ls-tree, cat-file without --filters/--textconv). Objects are asked for by id, and only once
`rev-list --missing=print` has said they are all local: a partial clone's missing objects are a clear
error, never a fetch.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from advisor.plan.revision.git import RevisionError, missing_objects, run_git
from advisor.sources.read import CONFIG_SUFFIXES, PY_SUFFIXES

__all__ = ["MATERIALISED", "RevisionError", "find_commit", "has_commit", "materialise", "repo_root"]

MATERIALISED = CONFIG_SUFFIXES | PY_SUFFIXES | {".toml"}


def _git(args: list[str], cwd: Path, data: bytes | None = None) -> bytes:
    return run_git(args, cwd, data)


def repo_root(start: Path) -> Path:
    out = _git(["rev-parse", "--show-toplevel"], start)
    return Path(out.decode().strip())


def has_commit(rev: str, start: Path) -> bool:
    """Whether `start` is inside a git work tree where `rev` names a commit (False outside git, without
    git, or before the first commit when rev is HEAD): the hook's default base is then skipped."""
    return find_commit(rev, start) is not None


def find_commit(rev: str, start: Path) -> tuple[Path, str] | None:
    """(the work tree's root, the id of the commit `rev` names) for `start`, or None where has_commit is
    False. One git process (rev-parse prints the root, then the id): the hook's default base asks this
    on every commit, and materialise takes the answer instead of asking the same two things again."""
    if rev.startswith("-"):
        return None
    try:
        out = _git(["rev-parse", "--show-toplevel", "--verify", "--quiet", f"{rev}^{{commit}}"], start)
    except (RevisionError, OSError):
        return None
    root, _, commit = out.decode().strip().rpartition("\n")
    if not root or not commit or not all(c in "0123456789abcdef" for c in commit):
        return None
    return Path(root), commit


def _safe_name(name: str) -> bool:
    """A tree path that stays inside the temporary folder: git refuses `..`, `.git` and absolute
    names when it checks out, but a crafted tree object can still list them."""
    parts = name.split("/")
    return bool(name) and not name.startswith("/") and all(p not in ("", ".", "..", ".git") for p in parts)


def materialise(
    rev: str, start: Path, found: tuple[Path, str] | None = None
) -> tuple[Path, Path, tempfile.TemporaryDirectory[str]]:
    """Write the revision's config-like files to a temporary folder.

    Returns (repo root, the folder standing for the root at REV, the TemporaryDirectory to clean up).
    `found`: what find_commit(rev, start) answered just before (the root and the commit's id).
    """
    if rev.startswith("-"):  # would be read as an option by git
        raise RevisionError(f"--base: '{rev}' is not a revision")
    if found is not None:
        root, commit = found
    else:
        root = repo_root(start)
        # every later command names the commit by its id, so a branch that moves meanwhile cannot mix trees
        commit = _git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], root).decode().strip()
    missing = missing_objects(commit, root)
    try:
        entries = _blobs(_git(["ls-tree", "-r", "-z", "--full-tree", commit], root))
    except RevisionError:
        if missing:  # a tree of the revision is not here either (rev-list cannot tell trees from blobs)
            raise RevisionError(_not_local(rev, ["some of its folders"])) from None
        raise
    wanted = [(n, oid) for n, oid in entries if _safe_name(n) and Path(n).suffix.lower() in MATERIALISED]
    absent = [n for n, oid in wanted if oid in missing]
    if absent:
        raise RevisionError(_not_local(rev, absent))
    tmp = tempfile.TemporaryDirectory(prefix="gpu-advise-base-")
    base = Path(tmp.name)
    contents = _read_blobs(sorted({oid for _, oid in wanted}), root)
    for name, oid in wanted:
        data = contents.get(oid)
        if data is None:
            continue
        target = base / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return root, base, tmp


def _blobs(listing: bytes) -> list[tuple[str, str]]:
    """(path, object id) of each blob in `ls-tree -r -z` output: `<mode> SP <type> SP <id> TAB <path>`."""
    out = []
    for entry in listing.split(b"\0"):
        meta, tab, name = entry.partition(b"\t")
        parts = meta.split()
        if tab and len(parts) == 3 and parts[1] == b"blob":
            out.append((name.decode(errors="surrogateescape"), parts[2].decode()))
    return out


def _read_blobs(oids: list[str], root: Path) -> dict[str, bytes]:
    """Each object's content, by id, from one `cat-file --batch` (ids only: a path in the request could
    hold a newline and shift every answer after it)."""
    if not oids:
        return {}
    blob = _git(["cat-file", "--batch"], root, "".join(f"{oid}\n" for oid in oids).encode())
    out: dict[str, bytes] = {}
    pos = 0
    for oid in oids:
        header_end = blob.index(b"\n", pos)
        header = blob[pos:header_end].split()
        pos = header_end + 1
        if len(header) < 3:  # `<id> missing`
            continue
        size = int(header[2])
        if header[1] == b"blob":
            out[oid] = blob[pos : pos + size]
        pos += size + 1
    return out


def _not_local(rev: str, what: list[str]) -> str:
    shown = ", ".join(what[:3]) + (f" and {len(what) - 3} more" if len(what) > 3 else "")
    verb = "is" if len(what) == 1 and not what[0].startswith("some ") else "are"
    return (
        f"--base {rev}: {shown} {verb} not in this clone (a partial clone), and gpu-advise never fetches: "
        f"make the objects local first (`git show {rev}:PATH` fetches one file), or clone without --filter"
    )

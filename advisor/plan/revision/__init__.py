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

import errno
import os
import tempfile
from pathlib import Path

from advisor.core.safe_write import write_all
from advisor.plan.revision.git import RevisionError, missing_objects, run_git
from advisor.sources.read import CONFIG_SUFFIXES, MAX_BYTES, PY_SUFFIXES

__all__ = ["MATERIALISED", "RevisionError", "find_commit", "has_commit", "materialise", "repo_root"]

MATERIALISED = CONFIG_SUFFIXES | PY_SUFFIXES | {".toml"}
# blob bytes asked of one `cat-file --batch`: a revision's blobs may compress a thousandfold (a 10 MB run of
# spaces is 10 KB in a clone), so they are read and written a slice at a time, never all held at once
BATCH_BYTES = 32 * 1024 * 1024
# a tree entry no checkout could hold on this system (a name over NAME_MAX, a blob and a folder of one
# name, a path over PATH_MAX): git's checkout fails on it too, so it is not materialised
_UNPLACEABLE = frozenset({errno.ENAMETOOLONG, errno.EEXIST, errno.ENOTDIR, errno.EISDIR, errno.EILSEQ})


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
    names: dict[str, list[str]] = {}
    for name, oid in wanted:
        names.setdefault(oid, []).append(name)
    sizes = _sizes(sorted(names), root)
    tmp = tempfile.TemporaryDirectory(prefix="gpu-advise-base-")
    base = Path(tmp.name)
    try:
        _write_tree(rev, root, base, names, sizes)
    except BaseException:
        tmp.cleanup()
        raise
    return root, base, tmp


def _write_tree(rev: str, root: Path, base: Path, names: dict[str, list[str]], sizes: dict[str, int]) -> None:
    for oid in sorted(o for o, size in sizes.items() if size > MAX_BYTES):
        # never read: a file of the blob's size with no data, which the reader refuses as it refuses the
        # checkout's copy ("over the 10 MB limit"), so the base and the checkout are judged alike
        for name in names[oid]:
            _place(rev, base, name, None, sizes[oid])
    for batch in _batches(sorted(o for o, size in sizes.items() if size <= MAX_BYTES), sizes):
        for oid, data in _read_blobs(batch, root).items():
            for name in names[oid]:
                _place(rev, base, name, data, len(data))


def _blobs(listing: bytes) -> list[tuple[str, str]]:
    """(path, object id) of each blob in `ls-tree -r -z` output: `<mode> SP <type> SP <id> TAB <path>`."""
    out = []
    for entry in listing.split(b"\0"):
        meta, tab, name = entry.partition(b"\t")
        parts = meta.split()
        if tab and len(parts) == 3 and parts[1] == b"blob":
            out.append((name.decode(errors="surrogateescape"), parts[2].decode()))
    return out


def _sizes(oids: list[str], root: Path) -> dict[str, int]:
    """Each local blob's size from `cat-file --batch-check` (`<id> blob <size>`), read before any content.
    Not `ls-tree -l`: it needs the blobs of a partial clone that are not here."""
    if not oids:
        return {}
    out: dict[str, int] = {}
    for line in _git(
        ["cat-file", "--batch-check"], root, "".join(f"{o}\n" for o in oids).encode()
    ).splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == b"blob" and parts[2].isdigit():
            out[parts[0].decode()] = int(parts[2])
    return out


def _batches(oids: list[str], sizes: dict[str, int]) -> list[list[str]]:
    """`oids` in runs of at most BATCH_BYTES of content (a blob larger than that alone)."""
    out: list[list[str]] = []
    total = BATCH_BYTES
    for oid in oids:
        if total + sizes[oid] > BATCH_BYTES:
            out.append([])
            total = 0
        out[-1].append(oid)
        total += sizes[oid]
    return out


def _place(rev: str, base: Path, name: str, data: bytes | None, size: int) -> None:
    """Write one tree entry under `base` (fresh files only: O_EXCL, never through a link), or with `data`
    None an empty file of `size` bytes; an entry no checkout could hold is skipped, any other failure is
    one line."""
    target = base / name
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            if data is None:
                os.ftruncate(fd, size)
            else:
                write_all(fd, data)
        finally:
            os.close(fd)
    except OSError as exc:
        if exc.errno in _UNPLACEABLE:
            return
        raise RevisionError(
            f"--base {rev}: cannot write the revision's files: {exc.strerror or exc}"
        ) from None


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

"""Third campaign (H6): the revision `--base` reads is attacker-written too.

A plain `gpu-advise check` in a git work tree compares each run with HEAD, and the pre-commit hook does
the same, so cloning someone's repository and checking it materialises a tree they wrote
(advisor/plan/revision). Git's objects are zlib-compressed: a blob of 30 MB of spaces is 30 KB in the
clone, so the bound has to hold on what the tree says, not on what the clone weighs. And a tree object
is not checked out, so it may list entries no checkout could hold: a name over NAME_MAX, a blob and a
folder of the same name.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import advisor.plan.revision as revision
from advisor.sources.read import MAX_BYTES, ReadRefused, read_bytes
from tests.gate.conftest import git, needs_git

pytestmark = needs_git

RUN = {
    "launch.sh": "#!/bin/bash\naccelerate launch --num_processes 1 train.py configs/sft.yaml\n",
    "train.py": "print('train')\n",
    "configs/sft.yaml": "output_dir: out\nper_device_train_batch_size: 2\ngradient_accumulation_steps: 8\n",
}


def _blob(repo: Path, data: bytes) -> str:
    proc = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"], cwd=repo, input=data, capture_output=True, check=True
    )
    return proc.stdout.decode().strip()


def _tree(repo: Path, entries: list[tuple[str, str, str]]) -> str:
    """A tree object written as given, unchecked (`git mktree` keeps duplicate names)."""
    listing = "".join(
        f"{mode} {'tree' if mode == '040000' else 'blob'} {oid}\t{name}\n" for mode, oid, name in entries
    )
    proc = subprocess.run(
        ["git", "mktree"], cwd=repo, input=listing.encode(), capture_output=True, check=True
    )
    return proc.stdout.decode().strip()


def _commit_tree(repo: Path, files: dict[str, bytes], extra: list[tuple[str, str, str]] | None = None) -> str:
    """HEAD: a commit of `files` (one level of folders) plus the raw root entries `extra`."""
    folders: dict[str, list[tuple[str, str, str]]] = {}
    root: list[tuple[str, str, str]] = list(extra or [])
    for name, data in files.items():
        head, _, tail = name.rpartition("/")
        (folders.setdefault(head, []) if head else root).append(("100644", _blob(repo, data), tail or name))
    root += [("040000", _tree(repo, entries), folder) for folder, entries in folders.items()]
    commit = git(repo, "commit-tree", _tree(repo, root), "-m", "crafted").strip()
    git(repo, "update-ref", "HEAD", commit)
    return commit


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for name, text in RUN.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    return repo


def _check(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "GPU_ADVISE_NO_CACHE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "advisor", "check", *args, "--", "."],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("plant", ["long-name", "blob-and-folder", "deep-path"])
def test_a_tree_entry_no_checkout_could_hold_is_skipped(tmp_path: Path, plant: str) -> None:
    """Before: `check` exited 3 ("internal error: OSError: File name too long" / "File exists"), so a
    repository could make every check of it fail as a bug of gpu-advise's."""
    repo = _repo(tmp_path)
    planted = _blob(repo, b"a: 1\n")
    files = {name: text.replace("1 train", "4 train").encode() for name, text in RUN.items()}
    if plant == "long-name":
        extra = [("100644", planted, "x" * 300 + ".yaml")]
    elif plant == "blob-and-folder":
        extra = [
            ("100644", planted, "a.yaml"),
            ("040000", _tree(repo, [("100644", planted, "b.yaml")]), "a.yaml"),
        ]
    else:
        inner = _tree(repo, [("100644", planted, "deep.yaml")])
        for _ in range(40):
            inner = _tree(repo, [("040000", inner, "d" * 200)])
        extra = [("040000", inner, "d" * 200)]
    _commit_tree(repo, files, extra)
    proc = _check(repo, "--base", "HEAD")
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert "internal error" not in proc.stderr
    assert "GA101" in proc.stdout  # the base (4 processes) is still compared with the checkout (1)

    _root, base, tmp = revision.materialise("HEAD", repo)
    try:
        assert (base / "configs" / "sft.yaml").read_bytes() == files["configs/sft.yaml"]
    finally:
        tmp.cleanup()


def test_an_oversized_base_blob_is_never_read_and_is_refused_like_the_checkouts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: every blob was read into memory whatever its size (30 MB blobs of spaces, 30 KB each in
    the clone: 120 MB of them took the process to 267 MB); now a blob over the reader's limit is not
    asked of git, and the materialised file is refused with the same reason as the checkout's copy."""
    repo = _repo(tmp_path)
    big = b"# " + b" " * (MAX_BYTES + 1000) + b"\n"
    (repo / "big.yaml").write_bytes(big)
    _commit_tree(repo, {**{n: t.encode() for n, t in RUN.items()}, "big.yaml": big})
    big_oid = _blob(repo, big)
    asked: list[bytes] = []
    real = revision.run_git

    def recording(args: list[str], cwd: Path, data: bytes | None = None) -> bytes:
        if args == ["cat-file", "--batch"] and data is not None:  # content, not --batch-check's sizes
            asked.append(data)
        return real(args, cwd, data)

    monkeypatch.setattr(revision, "run_git", recording)
    _root, base, tmp = revision.materialise("HEAD", repo)
    try:
        assert asked and not any(big_oid.encode() in request for request in asked)
        with pytest.raises(ReadRefused) as at_base:
            read_bytes(base / "big.yaml")
        with pytest.raises(ReadRefused) as at_checkout:
            read_bytes(repo / "big.yaml")
        assert at_base.value.reason == at_checkout.value.reason
        assert (base / "configs" / "sft.yaml").read_text(encoding="utf-8") == RUN["configs/sft.yaml"]
    finally:
        tmp.cleanup()


def test_blobs_are_read_a_batch_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: one `cat-file --batch` answered every blob at once, so memory grew with the sum of the
    tree's config files (a thousand 10 MB blobs, 10 MB in the clone, are 10 GB); now no answer holds
    more than BATCH_BYTES of content beyond one blob."""
    repo = _repo(tmp_path)
    chunk = 3 * 1024 * 1024
    blobs = {f"data/part{i}.json": b'{"a": "' + bytes([97 + i]) * chunk + b'"}\n' for i in range(5)}
    _commit_tree(repo, {**{n: t.encode() for n, t in RUN.items()}, **blobs})
    monkeypatch.setattr(revision, "BATCH_BYTES", 4 * 1024 * 1024)
    answers: list[int] = []
    real = revision.run_git

    def recording(args: list[str], cwd: Path, data: bytes | None = None) -> bytes:
        out = real(args, cwd, data)
        if args[0] == "cat-file":
            answers.append(len(out))
        return out

    monkeypatch.setattr(revision, "run_git", recording)
    _root, base, tmp = revision.materialise("HEAD", repo)
    try:
        assert len(answers) >= 5
        assert max(answers) < revision.BATCH_BYTES + chunk
        for name, data in blobs.items():
            assert (base / name).read_bytes() == data
    finally:
        tmp.cleanup()

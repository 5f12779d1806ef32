"""Bad input gives a located GA001 within a second, never a traceback."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, run_check
from advisor.sources.read import read_document

ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
    for i in range(9)
)

CASES = {
    "malformed.yaml": ("per_device_train_batch_size: [4\nlearning_rate: 1\n", 2),
    "tabs.yaml": ("a: 1\n\tb: 2\n", 2),
    "malformed.json": ('{"train_batch_size": 8,\n "x": }', 2),
    "bomb.yaml": (ALIAS_BOMB, 5),  # the first alias whose expansion passes the node limit
    "deep.json": ("[" * 5000 + "]" * 5000, 1),
    "deep.yaml": ("a:\n" + "".join("  " * i + "- \n" for i in range(1, 200)), 66),  # the 65th level
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_malformed_files_give_ga001_at_a_line(name: str, tmp_path: Path) -> None:
    text, line = CASES[name]
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    start = time.perf_counter()
    doc = read_document(p)
    assert time.perf_counter() - start < 1.0
    errors = [x for x in doc.problems if x.kind != "yaml11-scalar"]
    assert errors, doc
    if line is not None:
        assert errors[0].span.line == line


def test_binary_non_utf8_empty_and_huge_files(tmp_path: Path) -> None:
    (tmp_path / "bin.json").write_bytes(b"\x00\x01\x02{}")
    (tmp_path / "latin1.yaml").write_bytes(b"a: 1\nname: caf\xe9\n")
    (tmp_path / "empty.yaml").write_text("")
    (tmp_path / "huge.json").write_bytes(b"{" + b" " * (11 * 1024 * 1024) + b"}")
    got = {p.name: read_document(p).problems[0] for p in tmp_path.iterdir()}
    assert "binary" in got["bin.json"].message
    assert got["latin1.yaml"].span.line == 2 and "UTF-8" in got["latin1.yaml"].message
    assert "empty" in got["empty.yaml"].message
    assert "10 MB" in got["huge.json"].message


def test_check_reports_bad_files_as_findings_not_crashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, (text, _) in CASES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = run_check([Path(".")], CheckOptions())
    assert not result.errors
    flagged = {f.location.file.name for f in result.findings if f.rule == "GA001"}
    assert flagged == set(CASES)


@pytest.mark.parametrize(
    ("written", "why"),
    [
        ("a" * 300 + ".json", "a name longer than the file system allows"),
        ("/".join(["b" * 200] * 30), "a path longer than PATH_MAX"),
        ('"a\\0b.json"', "a NUL byte"),
    ],
    ids=["long-name", "long-path", "nul"],
)
def test_unusable_paths_named_by_a_config_are_missing_references(
    written: str, why: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 9, defect 5: a 300-character `--deepspeed` path gave a traceback (ENAMETOOLONG)."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text("print('train')\n")
    (tmp_path / "launch.sh").write_text(
        f"#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --deepspeed {written.strip(chr(34))}\n"
    )
    (tmp_path / "args.yaml").write_text(f"per_device_train_batch_size: 4\ndeepspeed: {written}\n")
    monkeypatch.chdir(tmp_path)
    result = run_check([Path(".")], CheckOptions())
    assert not result.errors, why
    got = {(f.rule, f.location.file.as_posix(), f.location.line, f.location.col) for f in result.findings}
    assert ("GA004", "args.yaml", 2, 12) in got, why
    if written.startswith('"'):
        return  # a shell word cannot hold a NUL byte
    assert ("GA004", "launch.sh", 2, 50) in got, why

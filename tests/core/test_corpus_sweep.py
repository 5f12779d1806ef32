"""Every real public config in ../shared/corpus is read and checked without an exception."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, run_check
from advisor.sources.read import read_document


def test_every_corpus_file_reads_without_exception(corpus: Path) -> None:
    files = [p for p in corpus.rglob("*") if p.is_file() and p.name != "SOURCES.md"]
    assert len(files) > 150
    for p in files:
        doc = read_document(p)
        assert doc.path == p


@pytest.mark.parametrize("kind", ["accelerate", "axolotl", "deepspeed", "launch", "training_args"])
def test_checking_each_corpus_folder_gives_located_findings_and_no_internal_error(
    corpus: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(corpus)
    result = run_check([Path(kind)], CheckOptions(hardware="8xH100-SXM"))
    assert not result.errors, result.errors[:5]
    assert result.runs
    for f in result.findings:
        assert f.location.line >= 1 and f.location.col >= 1
        assert (corpus / f.location.file).exists() or f.location.file.exists()


def test_corpus_files_are_classified_by_content(corpus: Path) -> None:
    expected = {
        "accelerate": "accelerate",
        "deepspeed": "deepspeed",
        "axolotl": "axolotl",
        "training_args": "training_args",
    }
    for folder, kind in expected.items():
        for p in sorted((corpus / folder).iterdir()):
            assert read_document(p).kind == kind, p.name

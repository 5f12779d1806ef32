from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# the on-disk cache of compiled rules and catalogs goes to a folder of this test session, not ~/.cache
os.environ.setdefault("GPU_ADVISE_CACHE_DIR", tempfile.mkdtemp(prefix="gpu-advise-test-cache-"))
# a builder that sets a fact not declared in advisor/facts/catalogue.py fails the test: strict mode
# (advisor/facts/strict.py) installs its check into Namespace.set when advisor.facts is imported, so
# import it here for tests that build namespaces without it
os.environ.setdefault("GPU_ADVISE_STRICT_FACTS", "1")
import advisor.facts  # noqa: F401

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is absent")
    return CORPUS


def write_files(root: Path, files: dict[str, str]) -> None:
    for name, content in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content, encoding="utf-8")


def git_project(tmp_path: Path, files: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Path:
    """`files` written as a project with a `.git` folder (its root for the boundary), entered as the
    current folder."""
    (tmp_path / ".git").mkdir()
    write_files(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    return tmp_path

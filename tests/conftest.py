from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# the on-disk cache of compiled rules and catalogs goes to a folder of this test session, not ~/.cache
os.environ.setdefault("GPU_ADVISE_CACHE_DIR", tempfile.mkdtemp(prefix="gpu-advise-test-cache-"))
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


def estimate_json_run(hardware: str = "1xH100", target: str = ".") -> dict[str, Any]:
    """`gpu-advise estimate TARGET -H HARDWARE --format json` in the current folder, through the CLI as a
    user runs it; its one run."""
    import json

    from typer.testing import CliRunner

    from advisor.cli import app

    result = CliRunner().invoke(app, ["estimate", target, "-H", hardware, "--format", "json"])
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.stdout)["runs"]
    return run


def breakdown_item(run: dict[str, Any], name: str) -> dict[str, Any]:
    """The memory breakdown's item `name` of an estimate's JSON run."""
    item: dict[str, Any] = next(b for b in run["breakdown"] if b["name"] == name)
    return item


# skip reasons that mean "the real-config corpus beside the checkout is not there" (../shared/corpus)
_CORPUS_SKIP = re.compile(r"shared/corpus|corpus\S* is (?:absent|not here)|no corpus file")


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: Any) -> None:
    """Say in the run's summary how many tests skipped because ../shared/corpus is absent (issue 18 item
    12): 123 of them used to skip silently, and a green run looked like a full one."""
    skipped = terminalreporter.stats.get("skipped", [])
    reasons = [str(r.longrepr[2]) if isinstance(r.longrepr, tuple) else str(r.longrepr) for r in skipped]
    corpus = sum(1 for reason in reasons if _CORPUS_SKIP.search(reason))
    if corpus:
        terminalreporter.write_sep(
            "-",
            f"{corpus} test{'s' if corpus != 1 else ''} skipped because the real-config corpus is absent "
            f"({CORPUS}): place it there to run them",
            yellow=True,
        )

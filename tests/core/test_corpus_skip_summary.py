"""Tests that skip for want of ../shared/corpus are counted in the run's summary (issue 18 item 12)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def test_the_summary_says_how_many_tests_skipped_for_the_corpus(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import pytest_terminal_summary  # noqa: F401\n"
    )
    (tmp_path / "test_sample.py").write_text(
        "import pytest\n"
        "def test_a():\n    pytest.skip('../shared/corpus is absent')\n"
        "def test_b():\n    pytest.skip('../shared/corpus/topo is not here')\n"
        "def test_c():\n    pytest.skip('needs a GPU')\n"
        "def test_d():\n    pass\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 tests skipped because the real-config corpus is absent" in result.stdout, result.stdout
    assert "3 skipped" in result.stdout


def test_nothing_is_said_when_no_test_skipped_for_it(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import pytest_terminal_summary  # noqa: F401\n"
    )
    (tmp_path / "test_sample.py").write_text("import pytest\ndef test_c():\n    pytest.skip('needs a GPU')\n")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0 and "corpus" not in result.stdout, result.stdout

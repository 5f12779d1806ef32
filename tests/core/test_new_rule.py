"""tools/new_rule.py writes a rule that loads under the engine, whose examples and fixture projects run
(the failing one flagged at its line and column, the passing one not), and refuses a code or name in use."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from advisor.engine.rule_engine import load_rule_file
from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import REPO, write_files

TOOL = REPO / "tools" / "new_rule.py"


def _scaffold(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(TOOL), *args, "--root", str(root)], capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    """A temp copy of the catalogue layout: rules/ and fixtures/rules/."""
    shutil.copytree(REPO / "rules", tmp_path / "rules")
    (tmp_path / "fixtures" / "rules").mkdir(parents=True)
    return tmp_path


def _findings(
    folder: Path, rules_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> set[tuple[str, str, int, int]]:
    monkeypatch.chdir(folder)
    result = run_check([Path(".")], CheckOptions(rules_dirs=[rules_dir]))
    assert not result.errors, result.errors
    return {(f.rule, f.location.file.as_posix(), f.location.line, f.location.col) for f in result.findings}


def test_scaffolded_rule_loads_and_its_examples_and_fixtures_run(
    layout: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = _scaffold(layout, "GA799", "logging-steps-zero", "--severity", "error")
    assert done.returncode == 0, done.stderr
    rule_file = layout / "rules" / "GA799-logging-steps-zero.yaml"
    rule = load_rule_file(rule_file)
    assert (rule.spec.code, rule.spec.name, rule.spec.severity) == ("GA799", "logging-steps-zero", "error")
    assert {ex.expect for ex in rule.spec.examples} == {"fail", "pass"}

    # only the new rule in an extra rules folder: the built-in catalogue is loaded beside it
    extra = tmp_path_factory.mktemp("extra")
    shutil.copy(rule_file, extra)
    for example in rule.spec.examples:
        project = tmp_path_factory.mktemp(example.expect)
        write_files(project, example.files)
        hits = {
            f"{file}:{line}:{col}"
            for code, file, line, col in _findings(project, extra, monkeypatch)
            if code == "GA799"
        }
        if example.expect == "fail":
            assert example.at in hits
        else:
            assert not hits

    cases = sorted((layout / "fixtures" / "rules" / "GA799").glob("*/expect.yaml"))
    assert [c.parent.name for c in cases] == ["fail-logging-steps-zero", "pass-logging-steps-zero"]
    for case in cases:
        expect = yaml.safe_load(case.read_text())
        got = _findings(case.parent, extra, monkeypatch)
        for item in expect["findings"]:
            assert (item["rule"], item["file"], item["line"], item["col"]) in got
        assert not {code for code, *_ in got} & set(expect.get("absent", []))
    fail_expect = yaml.safe_load(cases[0].read_text())
    assert [i["rule"] for i in fail_expect["findings"]] == ["GA799"]


@pytest.mark.parametrize(
    ("code", "name"),
    [
        ("GA203", "brand-new-name"),
        ("GA799", "prefetch-without-workers"),
        ("ga799", "x-y"),
        ("GA799", "Bad_Name"),
    ],
)
def test_a_code_or_name_in_use_or_malformed_is_refused(layout: Path, code: str, name: str) -> None:
    before = sorted(p.name for p in (layout / "rules").iterdir())
    done = _scaffold(layout, code, name)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in (layout / "rules").iterdir()) == before
    assert not any((layout / "fixtures" / "rules").iterdir())

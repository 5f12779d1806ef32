"""Fixture projects: each folder under fixtures/rules/<CODE>/<case>/ is a small project with an
expect.yaml naming the hardware and the exact findings (rule, file, line, column) it must give."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from advisor.check import CheckOptions, run_check
from tests.conftest import REPO

FIXTURES = REPO / "fixtures" / "rules"
CASES = sorted(p.parent for p in FIXTURES.glob("*/*/expect.yaml"))


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}/{c.name}" for c in CASES])
def test_fixture_project(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expect = yaml.safe_load((case / "expect.yaml").read_text())
    monkeypatch.chdir(case)
    result = run_check(
        [Path(".")], CheckOptions(hardware=expect.get("hardware"), select=expect.get("select"))
    )
    assert not result.errors, result.errors
    got = {(f.rule, f.location.file.as_posix(), f.location.line, f.location.col) for f in result.findings}
    for item in expect.get("findings", []):
        key = (item["rule"], item["file"], item["line"], item["col"])
        assert key in got, f"missing {key}; got {sorted(got)}"
    codes = {f.rule for f in result.findings}
    for code in expect.get("absent", []):
        assert code not in codes, [f"{f.location}: {f.message}" for f in result.findings if f.rule == code]


def test_every_rule_has_a_failing_and_a_passing_fixture_project() -> None:
    from advisor.engine import load_catalog

    for rule in load_catalog():
        folder = FIXTURES / rule.code
        kinds = {
            yaml.safe_load((c / "expect.yaml").read_text()).get("findings") is not None
            and any(
                i["rule"] == rule.code for i in yaml.safe_load((c / "expect.yaml").read_text())["findings"]
            )
            for c in sorted(p.parent for p in folder.glob("*/expect.yaml"))
        }
        assert kinds == {True, False}, f"fixtures/rules/{rule.code} needs a failing and a passing project"

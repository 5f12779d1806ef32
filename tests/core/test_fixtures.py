"""Fixture projects: each folder under fixtures/rules/<CODE>/<case>/ is a small project with an
expect.yaml naming the hardware and the exact findings (rule, file, line, column) it must give."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import REPO

FIXTURES = REPO / "fixtures" / "rules"
CASES = sorted(p.parent for p in FIXTURES.glob("*/*/expect.yaml"))


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}/{c.name}" for c in CASES])
def test_fixture_project(case: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    expect = yaml.safe_load((case / "expect.yaml").read_text())
    base = None
    if expect.get("base"):  # the project is a change on a commit of `base/`: copied to a git repo
        case, base = _change_on_base(case, expect["base"], tmp_path), "HEAD"
    monkeypatch.chdir(case)
    result = run_check(
        [Path(".")], CheckOptions(hardware=expect.get("hardware"), select=expect.get("select"), base=base)
    )
    assert not result.errors, result.errors
    got = {(f.rule, f.location.file.as_posix(), f.location.line, f.location.col) for f in result.findings}
    for item in expect.get("findings", []):
        key = (item["rule"], item["file"], item["line"], item["col"])
        assert key in got, f"missing {key}; got {sorted(got)}"
    codes = {f.rule for f in result.findings}
    for code in expect.get("absent", []):
        assert code not in codes, [f"{f.location}: {f.message}" for f in result.findings if f.rule == code]


def _change_on_base(case: Path, base: str, tmp_path: Path) -> Path:
    """A git repository whose commit holds the case's `base` folder and whose work tree is the case (the
    files beside expect.yaml): what `check --base HEAD` compares."""
    import shutil

    from tests.gate.conftest import git

    work = tmp_path / "project"
    shutil.copytree(case / base, work)
    git(work, "init", "-q")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "base")
    for path in case.rglob("*"):
        rel = path.relative_to(case)
        if rel.parts[0] in (base, "expect.yaml") or not path.is_file():
            continue
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, work / rel)
    return work


def test_every_rule_has_a_failing_and_a_passing_fixture_project() -> None:
    from advisor.engine.rule_engine import load_catalog

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

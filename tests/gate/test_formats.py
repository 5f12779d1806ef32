"""Every output format against a golden file, SARIF against the official 2.1.0 schema, and the
exit code in every mode.

The golden project (tests/gate/golden/project) selects only its own test rules (golden/rules) and
GA900, so the golden files change when a reporter changes, not when the rule catalog grows.
Regenerate them with GPU_ADVISE_UPDATE_GOLDEN=1 python -m pytest tests/gate/test_formats.py.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from advisor.report.github import annotation, escape_data, escape_property
from tests.gate.conftest import GOLDEN, UPDATE, assert_valid_sarif, cli

PROJECT = GOLDEN / "project"
EXPECTED = GOLDEN / "expected"


def _normalize(text: str, root: Path) -> str:
    from advisor.report.sarif import tool_version

    text = text.replace(root.resolve().as_uri(), "file:///<project>")
    text = re.sub(r'("version": )"' + re.escape(tool_version()) + '"', r'\1"<version>"', text)
    return text


def _golden(name: str, actual: str) -> None:
    path = EXPECTED / name
    if UPDATE or not path.exists():
        path.write_text(actual, encoding="utf-8")
        if not UPDATE:
            pytest.fail(f"{path} did not exist and was written; check it and run again")
    assert actual == path.read_text(encoding="utf-8"), f"{name} differs from its golden file"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    target = tmp_path / "project"
    shutil.copytree(PROJECT, target)
    shutil.copytree(GOLDEN / "rules", tmp_path / "rules")
    return target


FORMATS = [
    ("text", "check.txt"),
    ("json", "check.json"),
    ("sarif", "check.sarif"),
    ("github", "check.github"),
]


@pytest.mark.parametrize(("fmt", "golden"), FORMATS, ids=[f for f, _ in FORMATS])
def test_format_matches_golden_file(fmt: str, golden: str, project: Path, monkeypatch) -> None:
    result = cli(["check", ".", "--format", fmt], project, monkeypatch)
    assert result.exit_code == 1, result.output
    _golden(golden, _normalize(result.stdout, project))
    if fmt == "sarif":
        assert_valid_sarif(json.loads(result.stdout))


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_statistics_golden(fmt: str, project: Path, monkeypatch) -> None:
    result = cli(["check", ".", "--statistics", "--format", fmt], project, monkeypatch)
    assert result.exit_code == 1
    _golden(f"statistics.{'txt' if fmt == 'text' else 'json'}", result.stdout)


def test_diff_golden_and_nothing_written(project: Path, monkeypatch) -> None:
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    result = cli(["check", ".", "--diff", "--unsafe-fixes"], project, monkeypatch)
    assert result.exit_code == 1  # findings remain: nothing was written
    _golden("fixes.diff", result.stdout)
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == before


def test_sarif_content(project: Path, monkeypatch) -> None:
    result = cli(["check", ".", "--format", "sarif"], project, monkeypatch)
    sarif = json.loads(result.stdout)
    run = sarif["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert set(rules) == {"GA900", "TST001", "TST002", "TST003"}
    assert rules["GA900"]["helpUri"].endswith("/docs/rules/GA900.md")
    assert "helpUri" not in rules["TST001"]  # an organisation's own rule has no page of ours
    assert rules["GA900"]["help"]["markdown"].startswith("## What it does")
    assert rules["TST003"]["defaultConfiguration"]["level"] == "error"
    assert run["invocations"][0]["exitCode"] == 1 and run["invocations"][0]["executionSuccessful"]
    by_rule = {r["ruleId"]: r for r in run["results"]}
    for res in run["results"]:
        assert run["tool"]["driver"]["rules"][res["ruleIndex"]]["id"] == res["ruleId"]
        assert re.fullmatch(r"[0-9a-f]{16}", res["partialFingerprints"]["gpuAdvise/v1"])
    lr = by_rule["TST001"]
    loc = lr["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "configs/train.yaml", "uriBaseId": "%SRCROOT%"}
    assert loc["region"] == {"startLine": 5, "startColumn": 16}
    rep = lr["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert rep["deletedRegion"] == {"startLine": 5, "startColumn": 16, "endLine": 5, "endColumn": 20}
    assert rep["insertedContent"]["text"] == "0.0001"
    procs = by_rule["TST002"]
    assert procs["level"] == "note"
    assert procs["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "launch.sh"
    assert procs["properties"]["key"] == "/commands/0/launcher_args/num_processes"
    assert procs["relatedLocations"][0]["physicalLocation"]["region"]["startLine"] == 3


def test_sarif_fingerprint_ignores_line_moves(project: Path, monkeypatch) -> None:
    def fingerprints() -> dict[str, str]:
        out = cli(["check", ".", "--format", "sarif"], project, monkeypatch).stdout
        return {
            r["ruleId"]: r["partialFingerprints"]["gpuAdvise/v1"]
            for r in json.loads(out)["runs"][0]["results"]
        }

    before = fingerprints()
    train = project / "configs" / "train.yaml"
    train.write_text("# a new first line\n\n" + train.read_text(encoding="utf-8"), encoding="utf-8")
    after = fingerprints()
    assert before["TST001"] == after["TST001"]


def test_sarif_with_no_findings_is_valid_and_exits_0(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "args.yaml").write_text("output_dir: out\nper_device_train_batch_size: 4\n", encoding="utf-8")
    result = cli(["check", ".", "--format", "sarif", "--select", "GA203"], tmp_path, monkeypatch)
    assert result.exit_code == 0
    sarif = json.loads(result.stdout)
    assert_valid_sarif(sarif)
    assert sarif["runs"][0]["results"] == [] and sarif["runs"][0]["invocations"][0]["exitCode"] == 0


def test_sarif_on_the_bundled_example_validates(monkeypatch) -> None:
    from tests.conftest import REPO

    result = cli(["check", ".", "--format", "sarif"], REPO / "fixtures" / "example", monkeypatch)
    assert result.exit_code == 1
    sarif = json.loads(result.stdout)
    assert_valid_sarif(sarif)
    for rule in sarif["runs"][0]["tool"]["driver"]["rules"]:
        assert (
            rule["helpUri"]
            == f"https://github.com/gpu-advise/gpu-advise/blob/main/docs/rules/{rule['id']}.md"
        )
        assert rule["shortDescription"]["text"] and rule["help"]["markdown"]


def test_output_file_is_written_atomically_and_stdout_stays_empty(project: Path, monkeypatch) -> None:
    result = cli(["check", ".", "--format", "sarif", "--output", "out/report.sarif"], project, monkeypatch)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert_valid_sarif(json.loads((project / "out" / "report.sarif").read_text(encoding="utf-8")))
    assert not list((project / "out").glob("*.tmp"))


def test_github_format_is_chosen_in_github_actions(project: Path, monkeypatch) -> None:
    result = cli(["check", "."], project, monkeypatch, env={"GITHUB_ACTIONS": "true"})
    assert result.stdout.startswith("::error file=configs/ds.json,line=2,col=23,")
    explicit = cli(["check", ".", "--format", "text"], project, monkeypatch, env={"GITHUB_ACTIONS": "true"})
    assert not explicit.stdout.startswith("::")


def test_github_escaping() -> None:
    assert escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert escape_property("a,b:c%\n") == "a%2Cb%3Ac%25%0A"
    line = annotation("warning", "x: 1, y%\nz", file="dir,1/a:b.yaml", line=3, col=4, title="t, t: t")
    assert line == "::warning file=dir%2C1/a%3Ab.yaml,line=3,col=4,title=t%2C t%3A t::x: 1, y%25%0Az"


def test_statistics_refuses_sarif(project: Path, monkeypatch) -> None:
    result = cli(["check", ".", "--statistics", "--format", "sarif"], project, monkeypatch)
    assert result.exit_code == 2


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_exit_codes_in_every_format(fmt: str, project: Path, monkeypatch) -> None:
    assert cli(["check", ".", "--format", fmt], project, monkeypatch).exit_code == 1
    assert cli(["check", ".", "--format", fmt, "--exit-zero"], project, monkeypatch).exit_code == 0
    assert (
        cli(
            ["check", ".", "--format", fmt, "--fail-on", "error", "--ignore", "TST003"], project, monkeypatch
        ).exit_code
        == 0
    )
    assert cli(["check", ".", "--format", fmt, "--fail-on", "error"], project, monkeypatch).exit_code == 1
    assert cli(["check", "missing", "--format", fmt], project, monkeypatch).exit_code == 2
    assert (
        cli(["check", ".", "--format", fmt, "--baseline", "nope.json"], project, monkeypatch).exit_code == 2
    )
    if fmt != "text":
        assert cli(["check", ".", "--format", fmt, "--statistics"], project, monkeypatch).exit_code in (1, 2)


def test_rule_command_prints_its_documentation_url(monkeypatch, tmp_path: Path) -> None:
    result = cli(["rule", "GA900"], tmp_path, monkeypatch)
    assert result.exit_code == 0
    url = "https://github.com/gpu-advise/gpu-advise/blob/main/docs/rules/GA900.md"
    assert f"Documentation: {url}" in result.stdout


def test_statistics_in_github_actions_stay_text(project: Path, monkeypatch) -> None:
    result = cli(["check", ".", "--statistics"], project, monkeypatch, env={"GITHUB_ACTIONS": "true"})
    assert result.exit_code == 1
    _golden("statistics.txt", result.stdout)


def test_json_carries_the_rule_errors_that_make_the_check_exit_2(tmp_path: Path, monkeypatch) -> None:
    # a project's own rule that fails to evaluate: exit 2, and --format json must say why (before, the
    # JSON held no trace of it and stderr was empty)
    (tmp_path / "rules").mkdir()
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "args.yaml").write_text("dataloader_num_workers: 0\n", encoding="utf-8")
    (tmp_path / "rules" / "GA990-div.yaml").write_text(
        'code: GA990\nname: div\nseverity: warning\nsummary: s\nwhen: "1 / 0 > 1"\n'
        "at: training.dataloader_num_workers\nmessage: m\ndocs: d\n",
        encoding="utf-8",
    )
    result = cli(["check", "args.yaml", "--rules", "rules", "--format", "json"], tmp_path, monkeypatch)
    assert result.exit_code == 2
    payload = json.loads(result.stdout)
    assert [e["kind"] for e in payload["errors"]] == ["rule error"]
    message = payload["errors"][0]["message"]
    assert "GA990" in message and "division by zero" in message

"""Rule files are validated from advisor.engine.rulespec's own declaration (advisor.core.datacodec.validate,
no
pydantic): through the real CLI each problem of a rule file names the file, the line of its key and
the key path, and the severity/message mappings are stored flat as before."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from advisor.core.datacodec import Invalid
from advisor.engine.rule_schema import validate_rule

RULE = (
    "code: XT001\nname: probe-rule\nseverity: warning\nsummary: x\nwhen: 'True'\n"
    "at: training.output_dir\nmessage: probe\ndocs: x\n"
)


def _check(tmp_path: Path, rule: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "rules").mkdir(exist_ok=True)
    (tmp_path / "rules" / "XT001.yaml").write_text(rule, encoding="utf-8")
    (tmp_path / "args.yaml").write_text("output_dir: o\n", encoding="utf-8")
    env = {**os.environ, "GPU_ADVISE_NO_CACHE": "1", "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        ["gpu-advise", "check", "args.yaml", "--rules", "rules"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize(
    ("change", "line", "detail"),
    [
        (
            ("code: XT001", "code: xt1"),
            1,
            "code: rule code 'xt1' must be letters then three digits, like GA203",
        ),
        (
            ("severity: warning", "severity: fatal"),
            3,
            "severity: Input should be 'error', 'warning' or 'info'",
        ),
        (
            ("severity: warning", "severity: {default: warning}"),
            3,
            "severity: a severity mapping needs a condition for error, warning or info, besides default",
        ),
        (("message: probe", "message: {by: item, cases: {}}"), 7, "message.cases: a message mapping needs"),
        (("docs: x", "docs: x\nscope: global"), 9, "scope: Input should be 'run', 'document', 'suppression'"),
        (("docs: x", "docs: x\nmessage_by: item"), 9, "message_by: write `message: {by, cases}`"),
        (("docs: x", "docs: x\nlet: {BadName: '1'}"), 9, "let name 'BadName' must be snake_case"),
        (("docs: x", "docs: x\nfix: {safety: sure}"), 9, "fix.safety: Input should be 'safe', 'unsafe' or"),
    ],
)
def test_a_bad_rule_file_names_file_line_and_key(
    tmp_path: Path, change: tuple, line: int, detail: str
) -> None:
    run = _check(tmp_path, RULE.replace(*change))
    assert run.returncode == 2, run.stdout + run.stderr
    assert f"XT001.yaml:{line}: invalid rule file: " in run.stderr and detail in run.stderr, run.stderr
    assert "Traceback" not in run.stderr


def test_mappings_are_stored_flat() -> None:
    import yaml

    raw = yaml.safe_load(RULE)
    raw["severity"] = {"error": "True", "default": "info"}
    raw["message"] = {"by": "'a'", "cases": {"a": "A"}}
    spec = validate_rule(raw)
    assert (spec.severity, spec.severity_when) == ("info", {"error": "True"})
    assert (spec.message, spec.message_by, spec.message_cases) == ("", "'a'", {"a": "A"})
    with pytest.raises(Invalid) as info:
        validate_rule({**raw, "severity": {"default": "error", "error": "x"}, "docs": 3})
    assert [p.path for p in info.value.problems] == [("severity",), ("docs",)]

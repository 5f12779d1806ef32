"""Project settings: per-rule severity, fail-on, extend-rules, thresholds, unknown keys, `schema`."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import write_files
from tests.gate.conftest import cli

BAD = {"args.yaml": "dataloader_num_workers: 0\ndataloader_prefetch_factor: 2\n"}  # GA203, an error


def _settings(root: Path, text: str, name: str = ".gpu-advise.toml") -> None:
    (root / name).write_text(text, encoding="utf-8")


def test_per_rule_severity_and_fail_on(tmp_path: Path, monkeypatch) -> None:
    write_files(tmp_path, BAD)
    assert cli(["check", ".", "--select", "GA203"], tmp_path, monkeypatch).exit_code == 1
    _settings(tmp_path, '[severity]\nGA203 = "info"\n')
    result = cli(["check", ".", "--select", "GA203", "--format", "json"], tmp_path, monkeypatch)
    assert json.loads(result.stdout)["findings"][0]["severity"] == "info"
    assert result.exit_code == 0  # info is below the default fail-on (warning)
    _settings(tmp_path, 'fail-on = "info"\n[severity]\nGA203 = "info"\n')
    assert cli(["check", ".", "--select", "GA203"], tmp_path, monkeypatch).exit_code == 1
    # the command line wins over the settings
    assert (
        cli(["check", ".", "--select", "GA203", "--fail-on", "error"], tmp_path, monkeypatch).exit_code == 0
    )


def test_settings_in_pyproject_found_by_walking_up(tmp_path: Path, monkeypatch) -> None:
    write_files(tmp_path, {"sub/dir/" + k: v for k, v in BAD.items()})
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.gpu-advise]\nignore = ["GA203"]\n', encoding="utf-8"
    )
    assert cli(["check", "sub/dir/args.yaml", "--select", "GA2"], tmp_path, monkeypatch).exit_code == 0
    assert (
        cli(["check", "args.yaml", "--select", "GA2"], tmp_path / "sub" / "dir", monkeypatch).exit_code == 0
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('selct = ["GA2"]\n', "unknown setting 'selct' (did you mean 'select'?)"),
        ("[thresholds]\nsingle-gpu-hour = 3\n", "did you mean 'single-gpu-hours'?"),
        ('[severity]\nGA2O3 = "info"\n', "no rule 'GA2O3' (did you mean 'GA203'?)"),
        ('[severity]\nGA203 = "fatal"\n', "severity.GA203"),
        ('fail-on = "never"\n', "fail-on"),
        ('extend-rules = ["nowhere"]\n', "nowhere"),
    ],
)
def test_bad_settings_exit_2_with_a_message(text: str, expected: str, tmp_path: Path, monkeypatch) -> None:
    write_files(tmp_path, BAD)
    _settings(tmp_path, text)
    result = cli(["check", "."], tmp_path, monkeypatch)
    assert result.exit_code == 2
    assert expected in result.stderr, result.stderr


def test_extend_rules_and_thresholds(tmp_path: Path, monkeypatch) -> None:
    rule = (
        "code: ORG010\nname: too-many-workers\nseverity: error\nsummary: policy\n"
        "when: training.dataloader_num_workers is not None and training.dataloader_num_workers > "
        "thresholds.workers_per_process\n"
        "at: training.dataloader_num_workers\nmessage: 'more than {thresholds.workers_per_process} workers'\n"
        "docs: '## What it does\n\n  A policy.'\n"
    )
    write_files(
        tmp_path, {"args.yaml": "output_dir: o\ndataloader_num_workers: 4\n", "policy/ORG010.yaml": rule}
    )
    _settings(
        tmp_path, 'extend-rules = ["policy"]\nselect = ["ORG"]\n[thresholds]\nworkers-per-process = 2\n'
    )
    result = cli(["check", ".", "--format", "json"], tmp_path, monkeypatch)
    assert [f["rule"] for f in json.loads(result.stdout)["findings"]] == ["ORG010"]
    _settings(
        tmp_path, 'extend-rules = ["policy"]\nselect = ["ORG"]\n[thresholds]\nworkers-per-process = 8\n'
    )
    assert cli(["check", "."], tmp_path, monkeypatch).exit_code == 0


def test_schema_command(tmp_path: Path, monkeypatch) -> None:
    settings = cli(["schema"], tmp_path, monkeypatch)
    assert settings.exit_code == 0
    schema = json.loads(settings.stdout)
    for key in (
        "select",
        "extend-select",
        "ignore",
        "severity",
        "fail-on",
        "per-file-ignores",
        "key-ignores",
        "hardware",
        "runs",
        "extend-rules",
        "thresholds",
        "baseline",
    ):
        assert key in schema["properties"], key
    jsonschema.Draft202012Validator.check_schema(schema)
    good = {
        "select": ["GA2"],
        "severity": {"GA203": "info"},
        "per-file-ignores": {"*.json": ["GA3"]},
        "thresholds": {"single-gpu-hours": 4},
    }
    jsonschema.validate(good, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"selct": ["GA2"]}, schema)

    hardware = cli(["schema", "hardware"], tmp_path, monkeypatch)
    assert hardware.exit_code == 0
    hw = json.loads(hardware.stdout)
    assert "gpus" in hw["properties"]
    assert cli(["schema", "nope"], tmp_path, monkeypatch).exit_code == 2

"""`gpu-advise baseline` and `check --baseline`: keyed by rule, file and key path, never by line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.gate.conftest import GOLDEN, cli


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(GOLDEN / "project", tmp_path / "project")
    shutil.copytree(GOLDEN / "rules", tmp_path / "rules")
    return tmp_path / "project"


def test_write_then_check_reports_nothing_old(project: Path, monkeypatch) -> None:
    written = cli(["baseline", ".", "--output", "base.json"], project, monkeypatch)
    assert written.exit_code == 0, written.output
    data = json.loads((project / "base.json").read_text(encoding="utf-8"))
    assert data["version"] == 1
    entries = {(e["rule"], e["file"], e["key"]) for e in data["entries"]}
    assert ("TST001", "configs/train.yaml", "/learning_rate") in entries
    assert ("TST002", "launch.sh", "/commands/0/launcher_args/num_processes") in entries
    assert all("line" not in e for e in data["entries"])

    result = cli(["check", ".", "--baseline", "base.json"], project, monkeypatch)
    assert result.exit_code == 0, result.output
    assert "4 findings hidden" in result.stdout

    # moving lines around does not make old findings new
    train = project / "configs" / "train.yaml"
    train.write_text("# moved\n# down\n" + train.read_text(encoding="utf-8"), encoding="utf-8")
    assert cli(["check", ".", "--baseline", "base.json"], project, monkeypatch).exit_code == 0


def test_new_finding_is_reported_and_stale_entries_counted(project: Path, monkeypatch) -> None:
    assert cli(["baseline", ".", "-o", "base.json"], project, monkeypatch).exit_code == 0
    ds = project / "configs" / "ds.json"
    ds.write_text(ds.read_text(encoding="utf-8").replace('  "train_batch_size": 32,\n', ""), encoding="utf-8")
    launch = project / "launch.sh"
    launch.write_text(
        launch.read_text(encoding="utf-8").replace("--num_processes 2", "--num_processes 4"), encoding="utf-8"
    )
    train = project / "configs" / "train.yaml"
    train.write_text(
        train.read_text(encoding="utf-8").replace(
            "learning_rate: 0.01", "learning_rate: 0.01\nwarmup_steps: 10"
        ),
        encoding="utf-8",
    )
    result = cli(["check", ".", "--baseline", "base.json", "--format", "json"], project, monkeypatch)
    payload = json.loads(result.stdout)
    # TST002's message changed (4 processes) but its key did not: still in the baseline
    assert payload["findings"] == []
    assert result.exit_code == 0
    text = cli(["check", ".", "--baseline", "base.json"], project, monkeypatch).stdout
    assert "1 entry no longer match" in text

    # a second learning-rate finding in another file is new
    other = project / "configs" / "other.yaml"
    other.write_text("output_dir: o\nlearning_rate: 0.5\n", encoding="utf-8")
    result = cli(["check", ".", "--baseline", "base.json", "--format", "json"], project, monkeypatch)
    found = json.loads(result.stdout)["findings"]
    assert [(f["rule"], f["file"]) for f in found] == [("TST001", "configs/other.yaml")]
    assert result.exit_code == 1


def test_baseline_from_settings_and_from_another_folder(project: Path, monkeypatch) -> None:
    settings = project / ".gpu-advise.toml"
    settings.write_text(
        settings.read_text(encoding="utf-8") + 'baseline = "ci/baseline.json"\n', encoding="utf-8"
    )
    assert cli(["baseline"], project, monkeypatch).exit_code == 0
    assert (project / "ci" / "baseline.json").is_file()
    assert cli(["check"], project, monkeypatch).exit_code == 0
    # run from the configs folder: files are relative to the baseline's folder, not the cwd
    assert (
        cli(["check", "..", "--baseline", "../ci/baseline.json"], project / "configs", monkeypatch).exit_code
        == 0
    )


def test_bad_baseline_files_exit_2(project: Path, monkeypatch) -> None:
    (project / "bad.json").write_text("{not json", encoding="utf-8")
    (project / "wrong.json").write_text('{"version": 7, "entries": []}', encoding="utf-8")
    for name in ("bad.json", "wrong.json", "missing.json"):
        result = cli(["check", ".", "--baseline", name], project, monkeypatch)
        assert result.exit_code == 2, name
        assert "gpu-advise:" in result.stderr


COUNT = '{"version": 1,\n "entries": [{"fingerprint": "f", "count": '  # a count's value is at 2:44
BAD_BASELINES = {
    # issue 17 item 9: a 5,000-digit integer made json.loads raise a bare ValueError (exit 3)
    "5000-digits": (COUNT + "9" * 5000 + "}]}", ":2:44:", "5000 digits"),
    "count-over-64-bits": (COUNT + "9" * 30 + "}]}", ":2:44:", "count"),
    "bool-count": (COUNT + "true}]}", ":2:44:", "invalid count True"),
    "no-fingerprint": (
        '{"version": 1,\n "entries": [\n  {"fingerprint": 7}]}',
        ":3:3:",
        "entry 0 has no fingerprint",
    ),
    "duplicate": ('{"version": 1, "version": 1, "entries": []}', ":1:16:", "duplicate key 'version'"),
    "nan": ('{"version": 1, "entries": [NaN]}', ":1:28:", "not valid"),
    "deep": ('{"version": 1, "entries": ' + "[" * 5000 + "]" * 5000 + "}", ":1:", "nested"),
    "list": ('["entries"]', ":1:1:", "expected an object with 'entries'"),
}


@pytest.mark.parametrize(("text", "where", "says"), list(BAD_BASELINES.values()), ids=list(BAD_BASELINES))
def test_a_malformed_baseline_names_the_file_and_line(project: Path, monkeypatch, text, where, says) -> None:
    (project / "base.json").write_text(text, encoding="utf-8")
    result = cli(["check", ".", "--baseline", "base.json"], project, monkeypatch)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("gpu-advise: base.json" + where), result.stderr
    assert says in result.stderr and result.stderr.count("\n") == 1

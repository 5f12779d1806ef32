"""The CLI contract of docs/design.md: exit codes, JSON report shape, --rules, plan/rules/rule/hardware."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from tests.conftest import REPO, write_files

runner = CliRunner()


def _in(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(path)


def test_exit_codes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_files(
        tmp_path,
        {
            "clean.yaml": "output_dir: out\nper_device_train_batch_size: 4\n",
            "bad/args.yaml": "dataloader_num_workers: 0\ndataloader_prefetch_factor: 2\n",
        },
    )
    _in(tmp_path, monkeypatch)
    assert runner.invoke(app, ["check", "clean.yaml"]).exit_code == 0
    assert runner.invoke(app, ["check", "bad"]).exit_code == 1
    assert runner.invoke(app, ["check", "bad", "--exit-zero"]).exit_code == 0
    assert runner.invoke(app, ["check", "bad", "--ignore", "GA203"]).exit_code == 0
    assert runner.invoke(app, ["check", "missing-folder"]).exit_code == 2
    assert runner.invoke(app, ["check", "bad", "-H", "9xNope"]).exit_code == 2
    assert runner.invoke(app, ["check", "--format", "yaml"]).exit_code == 2


def test_fail_on_threshold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_files(tmp_path, {"args.yaml": "output_dir: out\nlearning_rate: 1e-5\n"})  # GA003 is a warning
    _in(tmp_path, monkeypatch)
    assert runner.invoke(app, ["check", "--select", "GA003"]).exit_code == 1
    assert runner.invoke(app, ["check", "--select", "GA003", "--fail-on", "error"]).exit_code == 0


def test_json_report_shape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_files(tmp_path, {"sub/args.yaml": "dataloader_num_workers: 0\ndataloader_prefetch_factor: 2\n"})
    _in(tmp_path, monkeypatch)
    result = runner.invoke(app, ["check", "--format", "json"])
    report = json.loads(result.stdout)
    assert report["version"] == 1
    finding = next(f for f in report["findings"] if f["rule"] == "GA203")
    assert {k: finding[k] for k in ("rule", "name", "severity", "file", "line", "column")} == {
        "rule": "GA203",
        "name": "prefetch-without-workers",
        "severity": "error",
        "file": "sub/args.yaml",
        "line": 2,
        "column": 29,
    }
    assert isinstance(finding["related"], list) and finding["fix"]["safety"] == "safe"
    run = report["runs"][0]
    for key in (
        "name",
        "world_size",
        "effective_batch",
        "peak_vram_gib",
        "gpu_memory_gib",
        "est_hours_single_gpu",
    ):
        assert key in run


def test_extra_rules_folder_and_selection_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_files(
        tmp_path,
        {
            "policy/ORG001-max-four-gpus.yaml": (
                "code: ORG001\nname: max-four-gpus\nseverity: error\nsummary: At most 4 GPUs per job\n"
                "requires: [batch.world_size]\nwhen: batch.world_size > 4\nat: batch.world_size\n"
                "message: 'this job starts {batch.world_size} processes; the shared cluster allows 4'\n"
                "docs: Organisation policy.\n"
            ),
            "launch.sh": "torchrun --nproc_per_node 8 train.py\n",
            "train.py": "pass\n",
        },
    )
    _in(tmp_path, monkeypatch)
    result = runner.invoke(app, ["check", "launch.sh", "--rules", "policy", "--format", "json"])
    findings = json.loads(result.stdout)["findings"]
    assert [(f["rule"], f["file"], f["line"], f["column"]) for f in findings if f["rule"] == "ORG001"] == [
        ("ORG001", "launch.sh", 1, 27)
    ]
    result = runner.invoke(app, ["check", "launch.sh", "--rules", "policy", "--select", "max-four-gpus"])
    assert result.exit_code == 1 and "ORG001" in result.stdout


def test_broken_rule_file_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_files(tmp_path, {"policy/bad.yaml": "code: X1\nname: Bad Name\n", "a.yaml": "output_dir: o\n"})
    _in(tmp_path, monkeypatch)
    result = runner.invoke(app, ["check", "a.yaml", "--rules", "policy"])
    assert result.exit_code == 2
    assert "bad.yaml" in result.output and "Traceback" not in result.output


def test_plan_rules_rule_and_hardware_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    _in(REPO / "fixtures" / "example", monkeypatch)
    plan = runner.invoke(app, ["plan"])
    assert (
        plan.exit_code == 0
        and "batch.effective_batch" in plan.stdout
        and "configs/sft.yaml:11:30" in plan.stdout
    )
    rules = runner.invoke(app, ["rules"])
    assert "GA203" in rules.stdout and "prefetch-without-workers" in rules.stdout
    doc = runner.invoke(app, ["rule", "GA203"])
    assert doc.exit_code == 0 and "## Why it matters" in doc.stdout
    assert runner.invoke(app, ["rule", "GA999"]).exit_code == 2
    listed = runner.invoke(app, ["hardware", "list"])
    assert "4xH100-NVL" in listed.stdout
    shown = runner.invoke(app, ["hardware", "show", "4xh100-nvl"])
    assert shown.exit_code == 0 and "nvlink" in shown.stdout


def test_hardware_detect_from_saved_output(tmp_path: Path, corpus: Path) -> None:
    query = tmp_path / "q.csv"
    query.write_text("name, memory.total [MiB]\n" + "NVIDIA H100 80GB HBM3, 81559 MiB\n" * 8)
    topo = corpus / "topo" / "NVIDIA__nccl__issues__1264_hgx_h100x8_nv18_nics_tabs.txt"
    result = runner.invoke(
        app, ["hardware", "detect", "--query", str(query), "--topo", str(topo), "--name", "box"]
    )
    assert result.exit_code == 0, result.output
    assert "count: 8" in result.stdout and "nvlink: all" in result.stdout


def test_generated_rule_pages_match_the_rule_files() -> None:
    """docs/rules/CODE.md is generated from rules/*.yaml: regenerate with tools/gen_rule_docs.py."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, str(REPO / "tools" / "gen_rule_docs.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_sarif_help_uri_is_the_rule_page_in_the_repository() -> None:
    from advisor.cli import ISSUES_URL
    from advisor.engine.rule_engine import load_catalog
    from advisor.report.sarif import REPOSITORY_URL, help_uri

    catalog = load_catalog()
    assert catalog
    for rule in catalog:
        uri = help_uri(rule)
        assert uri is not None and uri.startswith(REPOSITORY_URL + "/blob/main/")
        assert (REPO / uri.removeprefix(REPOSITORY_URL + "/blob/main/")).is_file(), uri
    assert ISSUES_URL.startswith(REPOSITORY_URL)

"""A strict DeepSpeed section whose key tables are of one release (0.19.8) judges an unknown key an error only
for that release: under a pin of another release what it refuses is unknown (FlagEmbedding's ds_stage1.json
puts fp16's loss-scaling keys in its bf16 block, which pydantic's extra='forbid' refuses in deepspeed
0.19.8 runtime/config_utils.py:110, while deepspeed 0.10.0 reads bf16 with get_scalar_param,
runtime/config.py:159-163, and ignores the rest)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import git_project

DS = (
    '{\n  "bf16": {\n    "enabled": true,\n    "loss_scale": 0\n  },\n'
    '  "zero_optimization": {"stage": 1}\n}\n'
)


def _ga002(folder: Path) -> list[tuple[str, int, str, str]]:
    result = run_check([Path(".")], CheckOptions())
    assert not result.errors, result.errors
    return [
        (str(f.location.file), f.location.line, f.severity, f.message)
        for f in result.findings
        if f.rule == "GA002"
    ]


@pytest.mark.parametrize(
    ("requirements", "severity"),
    [
        (None, "error"),  # nothing pinned: the current release, the tables' own, judges
        ("deepspeed==0.19.8\n", "error"),  # the tables' release
        ("deepspeed==0.10.0\n", "warning"),  # older than any release we ship data for
        ("deepspeed==0.16.9\n", "warning"),  # a release with data for zero_optimization only
    ],
)
def test_unknown_bf16_key_is_an_error_only_for_the_tables_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, requirements: str | None, severity: str
) -> None:
    files = {"ds.json": DS}
    if requirements:
        files["requirements.txt"] = requirements
    git_project(tmp_path, files, monkeypatch)
    found = _ga002(tmp_path)
    assert [(f, line, sev) for f, line, sev, _ in found] == [("ds.json", 4, severity)]
    if severity == "warning":
        assert "whether the pinned release does is unknown" in found[0][3]
        assert "deepspeed 0.19.8 refuses unknown keys" in found[0][3]


@pytest.mark.parametrize(("requirements", "severity"), [(None, "error"), ("deepspeed==0.10.0\n", "warning")])
def test_a_type_of_a_strict_section_is_checked_for_the_tables_release_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, requirements: str | None, severity: str
) -> None:
    # DeepSpeedFP16Config.min_loss_scale is an int in 0.19.8 (runtime/precision_config.py), pydantic v2
    # refuses 1e-10; deepspeed 0.10.0 reads it with get_scalar_param, untyped (ymcui/Chinese-LLaMA-Alpaca-2)
    files = {"ds.json": '{\n  "fp16": {\n    "enabled": true,\n    "min_loss_scale": 1e-10\n  }\n}\n'}
    if requirements:
        files["requirements.txt"] = requirements
    git_project(tmp_path, files, monkeypatch)
    result = run_check([Path(".")], CheckOptions())
    found = [(f.location.line, f.severity) for f in result.findings if f.rule == "GA001"]
    assert found == [(4, severity)]

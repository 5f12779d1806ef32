"""A hardware descriptor is validated from Machine's own declaration (advisor.core.datacodec.validate, no
pydantic): through the real CLI every problem names its file:line:col, and `gpu-advise schema hardware`
carries the declaration's keys, bounds and descriptions."""

from __future__ import annotations

import json
import subprocess

BAD = 'name: x\ngpus:\n  model: H100-SXM\n  count: 0\n  colour: red\nnvlink: [[0, 1]]\nram_gib: "lots"\n'


def test_every_problem_of_a_descriptor_names_its_line(tmp_path) -> None:
    (tmp_path / "m.yaml").write_text(BAD, encoding="utf-8")
    run = subprocess.run(
        ["gpu-advise", "hardware", "show", "m.yaml"], cwd=tmp_path, capture_output=True, text=True
    )
    assert run.returncode == 2
    assert "m.yaml:4:10: gpus.count: Input should be greater than or equal to 1 (got 0)" in run.stderr
    assert "m.yaml:5:3: unknown key 'colour' in gpus; allowed keys: count, memory_gib, model" in run.stderr
    assert "m.yaml:7:10: ram_gib: Input should be a valid number (got 'lots')" in run.stderr
    assert "Traceback" not in run.stderr


def test_the_machines_own_checks_point_at_the_entry(tmp_path) -> None:
    text = "gpus: {model: H100-SXM, count: 2}\nnvlink: [[0, 1], [1, 5]]\n"
    (tmp_path / "m.yaml").write_text(text, encoding="utf-8")
    run = subprocess.run(
        ["gpu-advise", "hardware", "show", "m.yaml"], cwd=tmp_path, capture_output=True, text=True
    )
    assert run.returncode == 2
    assert "m.yaml:2:19: nvlink[1][0]: GPU 1 is also in nvlink[0]" in run.stderr


def test_the_hardware_schema_comes_from_the_declaration() -> None:
    run = subprocess.run(["gpu-advise", "schema", "hardware"], capture_output=True, text=True, check=True)
    schema = json.loads(run.stdout)
    assert schema["required"] == ["gpus"] and schema["additionalProperties"] is False
    count = schema["$defs"]["GpuGroup"]["properties"]["count"]
    assert count == {
        "description": "GPUs per node",
        "maximum": 1024,
        "minimum": 1,
        "title": "Count",
        "type": "integer",
    }
    assert schema["properties"]["nodes"]["maximum"] == 2**19

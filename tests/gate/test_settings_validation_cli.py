"""Project settings are validated from advisor.core.settings_types' own declaration
(advisor.core.datacodec.validate,
no pydantic): through the real CLI a bad value names the file, the line and the key, the lax number
parsing pydantic did is kept, and `gpu-advise schema` is written from the same records."""

from __future__ import annotations

import json
import os
import subprocess


def _check(tmp_path, settings: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GPU_ADVISE_NO_CACHE": "1", "HF_HUB_OFFLINE": "1"}
    (tmp_path / ".gpu-advise.toml").write_text(settings, encoding="utf-8")
    (tmp_path / "train.sh").write_text("python train.py\n", encoding="utf-8")
    return subprocess.run(
        ["gpu-advise", "check", "."], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )


def test_a_value_out_of_bounds_names_file_line_and_key(tmp_path) -> None:
    run = _check(tmp_path, "[thresholds]\nworkers-per-process = 3\nsingle-gpu-hours = -1\n")
    assert run.returncode == 2
    expected = "setting 'thresholds.single-gpu-hours': Input should be greater than or equal to 0"
    assert f".gpu-advise.toml:3: {expected}\n" in run.stderr
    assert "Traceback" not in run.stderr


def test_a_wrong_type_in_a_run_and_an_unknown_key(tmp_path) -> None:
    run = _check(tmp_path, '[[runs]]\npath = "train.sh"\neffective-batch = true\n')
    assert run.returncode == 2
    assert (
        ".gpu-advise.toml:3: setting 'runs.0.effective-batch': Input should be a valid integer" in run.stderr
    )
    run = _check(tmp_path, 'source = "elsewhere"\n')  # where the settings came from is not a key
    assert run.returncode == 2 and ".gpu-advise.toml:1: unknown setting 'source'" in run.stderr


def test_numbers_written_as_text_are_read_as_pydantic_read_them(tmp_path) -> None:
    run = _check(tmp_path, '[thresholds]\nworkers-per-process = "3"\nsingle-gpu-hours = "6.5"\n')
    assert run.returncode in (0, 1), run.stderr


def test_the_settings_schema_comes_from_the_declaration() -> None:
    run = subprocess.run(["gpu-advise", "schema"], capture_output=True, text=True, check=True)
    schema = json.loads(run.stdout)
    assert "source" not in schema["properties"] and "extend-select" in schema["properties"]
    assert schema["properties"]["fail-on"]["anyOf"][0] == {
        "enum": ["error", "warning", "info"],
        "type": "string",
    }
    hours = schema["$defs"]["Thresholds"]["properties"]["single-gpu-hours"]
    assert hours["minimum"] == 0.0 and hours["maximum"] == 1e6 and hours["default"] == 12.0
    assert schema["properties"]["target-versions"]["propertyNames"] == {
        "enum": ["transformers", "trl", "accelerate", "peft", "deepspeed"]
    }

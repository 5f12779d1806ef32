"""advisor/sources/settings_quick.py accepts only what the schema accepts, and builds the same Settings.

It keeps pydantic off a cold check (issue 18 item 11); these tests keep its table in step with
advisor/core/settings_types.py, so a field added or constrained there falls back to the schema until it is
added here too, and never means something else on the quick path.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from advisor.core import records, settings_types
from advisor.sources.schema import settings as schema
from advisor.sources.settings_quick import FIELDS, RUN_FIELDS, THRESHOLD_FIELDS, quick_settings
from tests.conftest import REPO

TABLES = [
    (settings_types.Settings, FIELDS),
    (settings_types.RunSettings, RUN_FIELDS),
    (settings_types.Thresholds, THRESHOLD_FIELDS),
]
_CHECKS = ("ge", "gt", "le", "lt", "min_length", "pattern", "before", "after")


@pytest.mark.parametrize(("model", "table"), TABLES, ids=[m.__name__ for m, _ in TABLES])
def test_every_quick_key_is_the_schemas_alias_with_its_constraints(model: Any, table: dict) -> None:
    fields = {f.metadata.get("key", f.name): (f.name, f) for f in records.fields(model) if f.name != "source"}
    for key, (name, kind) in table.items():
        assert key in fields and fields[key][0] == name, f"{model.__name__}.{key} is not a schema field"
        meta = fields[key][1].metadata
        constraints = {f"{k}={meta[k]}" for k in _CHECKS if k in meta}
        bounds = (
            {f"ge={kind[1]}", f"le={kind[2]}"}
            if isinstance(kind, tuple) and kind[0] in ("int", "float")
            else set()
        )
        assert constraints == bounds, f"{model.__name__}.{key}: the schema constrains it {constraints}"


GOOD = [
    {},
    {
        "hardware": "4xH100-NVL",
        "runs": [{"path": "launch.sh", "effective-batch": 16, "dataset-samples": 52000}],
    },
    {
        "select": ["GA1", "GA203"],
        "extend-select": ["GA9"],
        "ignore": ["GA405"],
        "severity": {"GA101": "error"},
        "fail-on": "info",
        "per-file-ignores": {"configs/*.yaml": ["GA005"]},
        "key-ignores": {"configs/a.yaml": {"GA002": ["foo"]}},
        "extend-rules": ["policies"],
        "allowed-roots": ["../shared"],
        "thresholds": {"single-gpu-hours": 6, "workers-per-process": 4, "near-memory-fraction": 0.2},
        "baseline": ".gpu-advise-baseline.json",
        "dataset-tokens": 10**9,
        "target-versions": {"transformers": "4.57.1", "trl": ">=0.19"},
        "runs": [
            {"path": "a.sh", "name": "a", "hardware": "1xH100", "learning-rate": 2, "dataset-tokens": 5}
        ],
    },
]
REFUSED = [
    {"hardwre": "1xH100"},  # a typo: the schema's did-you-mean
    {"extend_select": ["GA1"]},  # the snake_case alias the schema also accepts
    {"runs": [{"effective-batch": 16}]},  # no path
    {"runs": [{"path": "a.sh", "effective-batch": "16"}]},
    {"runs": [{"path": "a.sh", "effective-batch": True}]},
    {"dataset-samples": 0},
    {"dataset-samples": 1 << 63},
    {"fail-on": "fatal"},
    {"severity": {"GA101": "critical"}},
    {"target-versions": {"torch": "2.4"}},
    {"thresholds": {"workers-per-process": 2.5}},
    {"thresholds": []},
    {"select": "GA1"},
    {"runs": {"path": "a.sh"}},
]


@pytest.mark.parametrize("data", GOOD)
def test_quick_settings_equal_the_schemas(data: dict) -> None:
    source = Path("/project/.gpu-advise.toml")
    assert quick_settings(data, source) == schema.validate_settings(data, source)


@pytest.mark.parametrize("data", REFUSED)
def test_anything_else_is_left_to_the_schema(data: dict) -> None:
    assert quick_settings(data, Path("/project/.gpu-advise.toml")) is None


def test_the_example_is_checked_without_pydantic(tmp_path: Path) -> None:
    """The bundled example's settings through the real CLI path: no pydantic import (a cold start pays
    ~100 ms for it), the same findings as always."""
    code = (
        "import sys\n"
        "from advisor.cli import main\n"
        "sys.argv = ['gpu-advise', 'check', '--format', 'json', 'fixtures/example']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    print('exit', exc.code, 'pydantic' in sys.modules, file=sys.stderr)\n"
    )
    env = {**os.environ, "GPU_ADVISE_CACHE_DIR": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    env.pop("GPU_ADVISE_NO_CACHE", None)

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=False
        )

    run()  # a source checkout compiles the rule catalog once (a wheel ships it prebuilt)
    entries = list((tmp_path / "gpu-advise").glob("settings-*.json"))
    assert entries
    for entry in entries:  # the settings as a fresh runner meets them
        entry.unlink()
    result = run()
    assert result.stderr.strip().splitlines()[-1] == "exit 1 False", result.stderr[-2000:]
    assert '"rule": "GA101"' in result.stdout

"""Project settings (`[tool.gpu-advise]` / `.gpu-advise.toml`): validated into
advisor.core.settings_types.Settings, whose declaration holds the keys, bounds and descriptions
(advisor.core.datacodec.validate, pydantic's lax number and boolean parsing); the JSON schema printed by
`gpu-advise schema` is written from the same records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.core.datacodec import input_keys, validate
from advisor.core.records import replace
from advisor.core.settings_types import RunSettings, Settings, Thresholds
from advisor.sources.schema.jsonschema import json_schema as record_schema


def validate_settings(data: Any, source: Path) -> Settings:
    """The settings table as Settings read from `source`; raises advisor.core.datacodec.Invalid."""
    return replace(validate(Settings, data, lax=True), source=source)


def known_keys(section: str) -> list[str]:
    """The keys a settings section ("", "thresholds" or "runs") accepts, as written in the file."""
    sections: dict[str, type] = {"thresholds": Thresholds, "runs": RunSettings}
    return input_keys(sections.get(section, Settings))


def json_schema() -> dict[str, Any]:
    return record_schema(Settings)

"""Project settings: `[tool.gpu-advise]` in pyproject.toml or `.gpu-advise.toml`, found by walking up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# The types live in a leaf that advisor.schema.settings builds without importing this module;
# re-exported here, where most callers name them.
from advisor.settings_types import RunSettings as RunSettings
from advisor.settings_types import Settings as Settings
from advisor.settings_types import Thresholds as Thresholds
from advisor.suggest import close_matches

SETTINGS_FILES = (".gpu-advise.toml", "pyproject.toml")


class SettingsError(Exception):
    pass


def _line_of(text: str, key: str) -> int:
    for i, line in enumerate(text.splitlines(), 1):
        if line.strip().startswith((key, f'"{key}"')):
            return i
    return 1


def parse_settings(text: str, path: Path) -> Settings:
    import tomllib  # only here: cached settings are not parsed again

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: invalid TOML: {exc}") from None
    if path.name == "pyproject.toml":
        data = data.get("tool", {}).get("gpu-advise")
        if data is None:
            raise LookupError
    from pydantic import ValidationError

    from advisor.schema.settings import known_keys, validate_settings

    try:
        return validate_settings(data, path)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [str(p) for p in err["loc"]]
        key = loc[-1] if loc else ""
        if err["type"] == "extra_forbidden":
            section = loc[0] if len(loc) > 1 and loc[0] in ("thresholds", "runs") else ""
            close = close_matches(key, known_keys(section), n=1, cutoff=0.6)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise SettingsError(
                f"{path}:{_line_of(text, key)}: unknown setting '{'.'.join(loc)}'{hint}"
            ) from None
        raise SettingsError(
            f"{path}:{_line_of(text, key)}: setting '{'.'.join(loc)}': {err['msg']}"
        ) from None


def find_settings(start: Path) -> Settings:
    """The closest settings file at or above start (ruff's rule: the closest wins)."""
    here = start.resolve()
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        for name in SETTINGS_FILES:
            candidate = folder / name
            if candidate.is_file():
                try:
                    return _parse_cached(candidate.read_text(encoding="utf-8"), candidate)
                except LookupError:
                    continue
        if (folder / ".git").exists():
            break
    return Settings()


def _parse_cached(text: str, path: Path) -> Settings:
    """parse_settings through the on-disk cache (keyed by the text): start-up matters in hooks."""
    from advisor.cache import cached
    from advisor.datacodec import decode, encode

    return cached(
        "settings",
        str(path),
        text,
        lambda: parse_settings(text, path),
        to_data=encode,
        from_data=lambda data: decode(Settings, data),
    )


def settings_schema() -> dict[str, Any]:
    from advisor.schema.settings import json_schema

    return json_schema()

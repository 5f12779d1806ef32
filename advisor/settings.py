"""Project settings: `[tool.gpu-advise]` in pyproject.toml or `.gpu-advise.toml`, found by walking up."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

SETTINGS_FILES = (".gpu-advise.toml", "pyproject.toml")


class SettingsError(Exception):
    pass


# The settings as validated by advisor.schema.settings (which builds these, and holds the aliases,
# descriptions and checks): frozen dataclasses, so that cached settings and the defaults need no pydantic.
@dataclass(frozen=True, slots=True, kw_only=True)
class RunSettings:
    """A run declared by hand, or settings for a run found by discovery (matched by path)."""

    path: str
    name: str | None = None
    hardware: str | None = None
    effective_batch: int | None = None
    learning_rate: float | None = None
    dataset_samples: int | None = None
    dataset_tokens: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Thresholds:
    single_gpu_hours: float = 12.0
    workers_per_process: int = 2
    near_memory_fraction: float = 0.10
    prediction_tolerance: float = 0.15


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    severity: dict[str, Literal["error", "warning", "info"]] = field(default_factory=dict)
    fail_on: Literal["error", "warning", "info"] | None = None
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    key_ignores: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    hardware: str | None = None
    runs: list[RunSettings] = field(default_factory=list)
    extend_rules: list[str] = field(default_factory=list)
    allowed_roots: list[str] = field(default_factory=list)
    thresholds: Thresholds = field(default_factory=Thresholds)
    baseline: str | None = None
    dataset_samples: int | None = None
    dataset_tokens: int | None = None
    target_versions: dict[str, str] = field(default_factory=dict)  # {package: release or specifier}

    # where the settings were read from; relative paths in them are relative to its folder
    source: Path | None = None

    @property
    def root(self) -> Path:
        return self.source.parent if self.source else Path.cwd()

    def run_for(self, path: Path) -> RunSettings | None:
        target = path.resolve()
        for run in self.runs:
            if (self.root / run.path).resolve() == target:
                return run
        return None


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
            close = difflib.get_close_matches(key, known_keys(section), n=1, cutoff=0.6)
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

"""Project settings: `[tool.gpu-advise]` in pyproject.toml or `.gpu-advise.toml`, found by walking up."""

from __future__ import annotations

import difflib
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

SETTINGS_FILES = (".gpu-advise.toml", "pyproject.toml")


class SettingsError(Exception):
    pass


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


class RunSettings(_Model):
    """A run declared by hand, or settings for a run found by discovery (matched by path)."""

    path: str = Field(
        description="launch script or config file that roots the run, relative to the settings file"
    )
    name: str | None = None
    hardware: str | None = None
    effective_batch: int | None = Field(
        None,
        alias="effective-batch",
        description="the effective batch this run was tuned for (GA101 baseline)",
    )
    learning_rate: float | None = Field(None, alias="learning-rate")
    dataset_samples: int | None = Field(None, alias="dataset-samples")
    dataset_tokens: int | None = Field(None, alias="dataset-tokens")


class Thresholds(_Model):
    single_gpu_hours: float = Field(
        12.0, alias="single-gpu-hours", description="GA402: below this many hours on one GPU, stay on one GPU"
    )
    workers_per_process: int = Field(
        2,
        alias="workers-per-process",
        description="GA202: DataLoader workers per process before we suggest fewer",
    )
    near_memory_fraction: float = Field(
        0.10,
        alias="near-memory-fraction",
        description="GA404: warn when the peak is within this fraction of usable memory",
    )
    prediction_tolerance: float = Field(
        0.15,
        alias="prediction-tolerance",
        description="--verify: report predictions further than this from measurements",
    )


class Settings(_Model):
    select: list[str] | None = None
    extend_select: list[str] = Field(default_factory=list, alias="extend-select")
    ignore: list[str] = Field(default_factory=list)
    severity: dict[str, Literal["error", "warning", "info"]] = Field(default_factory=dict)
    fail_on: Literal["error", "warning", "info"] | None = Field(None, alias="fail-on")
    per_file_ignores: dict[str, list[str]] = Field(default_factory=dict, alias="per-file-ignores")
    key_ignores: dict[str, dict[str, list[str]]] = Field(default_factory=dict, alias="key-ignores")
    hardware: str | None = None
    runs: list[RunSettings] = Field(default_factory=list)
    extend_rules: list[str] = Field(default_factory=list, alias="extend-rules")
    thresholds: Thresholds = Field(default_factory=Thresholds.model_construct)
    baseline: str | None = None
    dataset_samples: int | None = Field(None, alias="dataset-samples")
    dataset_tokens: int | None = Field(None, alias="dataset-tokens")

    # where the settings were read from; relative paths in them are relative to its folder
    source: Path | None = Field(None, exclude=True)

    @property
    def root(self) -> Path:
        return self.source.parent if self.source else Path.cwd()

    def run_for(self, path: Path) -> RunSettings | None:
        target = path.resolve()
        for run in self.runs:
            if (self.root / run.path).resolve() == target:
                return run
        return None


def _known_keys(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items() if name != "source"]


def _line_of(text: str, key: str) -> int:
    for i, line in enumerate(text.splitlines(), 1):
        if line.strip().startswith((key, f'"{key}"')):
            return i
    return 1


def parse_settings(text: str, path: Path) -> Settings:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: invalid TOML: {exc}") from None
    if path.name == "pyproject.toml":
        data = data.get("tool", {}).get("gpu-advise")
        if data is None:
            raise LookupError
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [str(p) for p in err["loc"]]
        key = loc[-1] if loc else ""
        if err["type"] == "extra_forbidden":
            model: type[BaseModel] = Settings
            if len(loc) > 1 and loc[0] == "thresholds":
                model = Thresholds
            elif len(loc) > 1 and loc[0] == "runs":
                model = RunSettings
            close = difflib.get_close_matches(key, _known_keys(model), n=1, cutoff=0.6)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise SettingsError(
                f"{path}:{_line_of(text, key)}: unknown setting '{'.'.join(loc)}'{hint}"
            ) from None
        raise SettingsError(
            f"{path}:{_line_of(text, key)}: setting '{'.'.join(loc)}': {err['msg']}"
        ) from None
    settings.source = path
    return settings


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
    return Settings.model_construct()  # the defaults are valid: no need to build the validator


def _parse_cached(text: str, path: Path) -> Settings:
    """parse_settings through the on-disk cache (keyed by the text): start-up matters in hooks."""
    from advisor.cache import cached

    return cached("settings", (str(path), text), lambda: parse_settings(text, path))


def settings_schema() -> dict[str, Any]:
    return Settings.model_json_schema(by_alias=True)

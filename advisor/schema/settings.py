"""Validation of project settings (`[tool.gpu-advise]` / `.gpu-advise.toml`): the result is an
advisor.settings.Settings. The JSON schema printed by `gpu-advise schema` comes from these models."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from advisor import settings_types as views
from advisor.schema import to_view


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
        ge=1,
        le=(1 << 63) - 1,
        description="the effective batch this run was tuned for (GA101 baseline)",
    )
    learning_rate: float | None = Field(None, alias="learning-rate", ge=0.0, le=1e6)
    # bounded as the readers bound integers (2**63 - 1): the time model divides them as floats
    dataset_samples: int | None = Field(None, alias="dataset-samples", ge=1, le=(1 << 63) - 1)
    dataset_tokens: int | None = Field(None, alias="dataset-tokens", ge=1, le=(1 << 63) - 1)
    model: str | None = Field(
        None,
        min_length=1,
        description="the model the run trains (a Hub id such as Qwen/Qwen2.5-0.5B, or a local folder), for "
        "the memory estimate; it wins over what the run's files name",
    )


class Thresholds(_Model):
    # bounded: rules compute with them (round(), percentages), and 1e308 or inf broke GA404 (fuzz seed 12)
    single_gpu_hours: float = Field(
        12.0,
        alias="single-gpu-hours",
        ge=0.0,
        le=1e6,
        description="GA402: below this many hours on one GPU, stay on one GPU",
    )
    workers_per_process: int = Field(
        2,
        alias="workers-per-process",
        ge=0,
        le=1024,
        description="GA202: DataLoader workers per process before we suggest fewer",
    )
    near_memory_fraction: float = Field(
        0.10,
        alias="near-memory-fraction",
        ge=0.0,
        le=1.0,
        description="GA404: warn when the peak is within this fraction of usable memory",
    )
    prediction_tolerance: float = Field(
        0.15,
        alias="prediction-tolerance",
        ge=0.0,
        le=1e6,
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
    allowed_roots: list[str] = Field(
        default_factory=list,
        alias="allowed-roots",
        description="folders outside the project that configs may name (relative to the settings file)",
    )
    thresholds: Thresholds = Field(default_factory=Thresholds.model_construct)
    baseline: str | None = None
    # bounded as the readers bound integers (2**63 - 1): the time model divides them as floats
    dataset_samples: int | None = Field(None, alias="dataset-samples", ge=1, le=(1 << 63) - 1)
    dataset_tokens: int | None = Field(None, alias="dataset-tokens", ge=1, le=(1 << 63) - 1)
    target_versions: dict[Literal["transformers", "trl", "accelerate", "peft", "deepspeed"], str] = Field(
        default_factory=dict,
        alias="target-versions",
        description='the library releases to judge keys against, e.g. {transformers = "4.57.1"} or '
        '{trl = ">=0.19,<0.20"}; overrides the pins found in requirements files and lock files',
    )
    exclude: list[str] | None = Field(
        None,
        description="globs of files and folders a folder walk skips; replaces the built-in list "
        "(virtual environments, caches, build output, training outputs: wandb/, checkpoint-N/, ...)",
    )
    extend_exclude: list[str] = Field(
        default_factory=list, alias="extend-exclude", description="globs skipped besides `exclude`"
    )
    force_exclude: bool = Field(
        False,
        alias="force-exclude",
        description="apply the exclusions to paths named on the command line too (as the hook does)",
    )
    respect_gitignore: bool = Field(
        True,
        alias="respect-gitignore",
        description="in a git work tree, skip untracked files that .gitignore or .git/info/exclude ignore",
    )

    # where the settings were read from; relative paths in them are relative to its folder
    source: Path | None = Field(None, exclude=True)


VIEWS = {"Settings": views.Settings, "RunSettings": views.RunSettings, "Thresholds": views.Thresholds}


def validate_settings(data: Any, source: Path) -> views.Settings:
    """The settings table as Settings read from `source`; raises pydantic.ValidationError."""
    settings = Settings.model_validate(data)
    settings.source = source
    return to_view(settings, VIEWS)


def known_keys(section: str) -> list[str]:
    """The keys a settings section ("", "thresholds" or "runs") accepts, as written in the file."""
    models: dict[str, type[BaseModel]] = {"thresholds": Thresholds, "runs": RunSettings}
    model = models.get(section, Settings)
    return [f.alias or name for name, f in model.model_fields.items() if name != "source"]


def json_schema() -> dict[str, Any]:
    return Settings.model_json_schema(by_alias=True)

"""The project settings as plain data: what advisor.schema.settings validates and builds.

It holds the aliases, descriptions and checks; these are frozen dataclasses, so that cached settings
and the defaults need no pydantic. A leaf module: advisor.settings (the loader) and
advisor.schema.settings both import it, neither imports the other at module level.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from advisor.records import field, record


@record(frozen=True, slots=True, kw_only=True)
class RunSettings:
    """A run declared by hand, or settings for a run found by discovery (matched by path)."""

    path: str
    name: str | None = None
    hardware: str | None = None
    effective_batch: int | None = None
    learning_rate: float | None = None
    dataset_samples: int | None = None
    dataset_tokens: int | None = None
    model: str | None = None  # the model the run trains, over what its files name


@record(frozen=True, slots=True, kw_only=True)
class Thresholds:
    single_gpu_hours: float = 12.0
    workers_per_process: int = 2
    near_memory_fraction: float = 0.10
    prediction_tolerance: float = 0.15


@record(frozen=True, slots=True, kw_only=True)
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
    # which files a folder walk reads (ruff's names): None = the built-in list (advisor/sources/exclude.py)
    exclude: list[str] | None = None
    extend_exclude: list[str] = field(default_factory=list)
    force_exclude: bool = False
    respect_gitignore: bool = True

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

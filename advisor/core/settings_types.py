"""The project settings (`[tool.gpu-advise]` / `.gpu-advise.toml`): records declared once, with the
file keys (kebab-case), bounds and descriptions that advisor.core.datacodec.validate applies and the JSON
schema of `gpu-advise schema` shows (advisor.sources.schema.settings). A leaf module:
advisor.sources.settings (the
loader) and advisor.sources.schema.settings both import it, neither imports the other at module level.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from advisor.core.records import field, record, spec

_MAX_INT = (1 << 63) - 1  # bounded as the readers bound integers: the time model divides them as floats
Level = Literal["error", "warning", "info"]
Package = Literal["transformers", "trl", "accelerate", "peft", "deepspeed"]


@record(frozen=True, slots=True, kw_only=True)
class RunSettings:
    """A run declared by hand, or settings for a run found by discovery (matched by path)."""

    path: str = spec(
        description="launch script or config file that roots the run, relative to the settings file"
    )
    name: str | None = None
    hardware: str | None = None
    effective_batch: int | None = spec(
        default=None,
        key="effective-batch",
        ge=1,
        le=_MAX_INT,
        description="the effective batch this run was tuned for (GA101 baseline)",
    )
    learning_rate: float | None = spec(default=None, key="learning-rate", ge=0.0, le=1e6)
    dataset_samples: int | None = spec(default=None, key="dataset-samples", ge=1, le=_MAX_INT)
    dataset_tokens: int | None = spec(default=None, key="dataset-tokens", ge=1, le=_MAX_INT)
    model: str | None = spec(
        default=None,
        min_length=1,
        description="the model the run trains (a Hub id such as Qwen/Qwen2.5-0.5B, or a local folder), for "
        "the memory estimate; it wins over what the run's files name",
    )


# bounded: rules compute with them (round(), percentages), and 1e308 or inf broke GA404 (fuzz seed 12)
@record(frozen=True, slots=True, kw_only=True)
class Thresholds:
    single_gpu_hours: float = spec(
        default=12.0,
        key="single-gpu-hours",
        ge=0.0,
        le=1e6,
        description="GA402: below this many hours on one GPU, stay on one GPU",
    )
    workers_per_process: int = spec(
        default=2,
        key="workers-per-process",
        ge=0,
        le=1024,
        description="GA202: DataLoader workers per process before we suggest fewer",
    )
    near_memory_fraction: float = spec(
        default=0.10,
        key="near-memory-fraction",
        ge=0.0,
        le=1.0,
        description="GA404: warn when the peak is within this fraction of usable memory",
    )
    prediction_tolerance: float = spec(
        default=0.15,
        key="prediction-tolerance",
        ge=0.0,
        le=1e6,
        description="--verify: report predictions further than this from measurements",
    )


@record(frozen=True, slots=True, kw_only=True)
class Settings:
    select: list[str] | None = None
    extend_select: list[str] = spec(default_factory=list, key="extend-select")
    ignore: list[str] = field(default_factory=list)
    severity: dict[str, Level] = field(default_factory=dict)
    fail_on: Level | None = spec(default=None, key="fail-on")
    per_file_ignores: dict[str, list[str]] = spec(default_factory=dict, key="per-file-ignores")
    key_ignores: dict[str, dict[str, list[str]]] = spec(default_factory=dict, key="key-ignores")
    hardware: str | None = None
    runs: list[RunSettings] = field(default_factory=list)
    extend_rules: list[str] = spec(default_factory=list, key="extend-rules")
    allowed_roots: list[str] = spec(
        default_factory=list,
        key="allowed-roots",
        description="folders outside the project that configs may name (relative to the settings file)",
    )
    thresholds: Thresholds = field(default_factory=Thresholds)
    baseline: str | None = None
    dataset_samples: int | None = spec(default=None, key="dataset-samples", ge=1, le=_MAX_INT)
    dataset_tokens: int | None = spec(default=None, key="dataset-tokens", ge=1, le=_MAX_INT)
    target_versions: dict[Package, str] = spec(
        default_factory=dict,
        key="target-versions",
        description='the library releases to judge keys against, e.g. {transformers = "4.57.1"} or '
        '{trl = ">=0.19,<0.20"}; overrides the pins found in requirements files and lock files',
    )
    # which files a folder walk reads (ruff's names): None = the built-in list (advisor/sources/exclude.py)
    exclude: list[str] | None = spec(
        default=None,
        description="globs of files and folders a folder walk skips; replaces the built-in list "
        "(virtual environments, caches, build output, training outputs: wandb/, checkpoint-N/, ...)",
    )
    extend_exclude: list[str] = spec(
        default_factory=list, key="extend-exclude", description="globs skipped besides `exclude`"
    )
    force_exclude: bool = spec(
        default=False,
        key="force-exclude",
        description="apply the exclusions to paths named on the command line too (as the hook does)",
    )
    respect_gitignore: bool = spec(
        default=True,
        key="respect-gitignore",
        description="in a git work tree, skip untracked files that .gitignore or .git/info/exclude ignore",
    )

    # where the settings were read from (not a key of the file); relative paths are relative to its folder
    source: Path | None = spec(default=None, read=False)

    @property
    def root(self) -> Path:
        return self.source.parent if self.source else Path.cwd()

    def run_for(self, path: Path) -> RunSettings | None:
        target = path.resolve()
        for run in self.runs:
            if (self.root / run.path).resolve() == target:
                return run
        return None

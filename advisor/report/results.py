"""What a check produces: plain data the pipeline (advisor/pipeline/check.py) builds and reporters only read.

A leaf module: it imports nothing of the pipeline, so advisor/report/ can name these types without
depending on the layer above it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.core.records import asdict, field, record

if TYPE_CHECKING:
    from advisor.core.findings import Finding
    from advisor.plan.run_plan import RunPlan
    from advisor.sources.settings import Settings


@record(slots=True)
class BaselineRun:
    """The numbers of the same run at the base revision."""

    source: str
    values: dict[str, Any]


@record(slots=True)
class RunSummary:
    name: str
    launcher: str | None
    world_size: int | None
    effective_batch: int | None
    effective_batch_formula: str | None
    hardware: str | None
    strategy: str | None
    peak_vram_gib: float | None = None
    gpu_memory_gib: float | None = None
    est_hours_single_gpu: float | None = None
    est_hours: float | None = None
    notes: list[str] = field(default_factory=list)
    measured: dict[str, Any] | None = None  # --verify: what the probe measured for this run
    hardware_card: str | None = None  # the machine's GPUs, e.g. "4x H100-NVL 94 GB" (Machine.card)
    # the allocated / reserved / device peaks and which one the verdict uses (advisor.facts.memory_kinds)
    memory: dict[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("measured", "memory"):
            if out[key] is None:
                del out[key]
        return out


@record(slots=True)
class CheckResult:
    findings: list[Finding]
    runs: list[RunSummary]
    plans: list[RunPlan]
    errors: list[str]
    settings: Settings
    documents: list[Any] = field(default_factory=list)  # every file read
    rules: list[Any] = field(default_factory=list)  # the catalog (rule metadata for reporters)
    suppressed: list[Any] = field(default_factory=list)  # advisor.engine.suppress.Suppressed
    baseline: Any = None  # advisor.engine.baseline.BaselineReport when --baseline is used
    verification: Any = (
        None  # advisor.pipeline.probe.stage.Verification when measurements were made or recorded
    )
    context: Any = None  # advisor.plan.context.CheckContext: the check's settings, boundary and what it read

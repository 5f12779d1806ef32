"""The check pipeline: paths -> runs -> plans -> facts -> rules -> findings. No I/O but reading."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from advisor.discover import DocumentCache, discover
from advisor.engine import Context, Engine, RuleError, load_catalog, select_rules
from advisor.facts import document_fallback, document_names, run_names
from advisor.findings import Finding
from advisor.plan import RunPlan, build_plan
from advisor.settings import Settings, find_settings


class CheckError(Exception):
    """The tool cannot do its job (exit code 2): a missing path, an unknown hardware name."""


@dataclass(slots=True)
class CheckOptions:
    hardware: str | None = None
    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    extend_select: list[str] = field(default_factory=list)
    rules_dirs: list[Path] = field(default_factory=list)
    online: bool = False
    settings: Settings | None = None
    base: str | None = None  # git revision whose runs are the baseline (the CI gate)
    inline_ignores: bool = True  # honour `# gpu-advise: ignore[...]` directives (--no-inline-ignores)
    baseline: Path | None = None  # a baseline file: report only findings not in it (--baseline)
    verify: Any = None  # advisor.probe.spec.ProbeOptions: run the training probe (--verify)
    measured: Path | None = None  # recorded measurements (default: .gpu-advise-verify.json at the root)


@dataclass(slots=True)
class BaselineRun:
    """The numbers of the same run at the base revision."""

    source: str
    values: dict[str, Any]


@dataclass(slots=True)
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

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        if self.measured is None:
            del out["measured"]
        return out


@dataclass(slots=True)
class CheckResult:
    findings: list[Finding]
    runs: list[RunSummary]
    plans: list[RunPlan]
    errors: list[str]
    settings: Settings
    documents: list[Any] = field(default_factory=list)  # every file read
    rules: list[Any] = field(default_factory=list)  # the catalog (rule metadata for reporters)
    suppressed: list[Any] = field(default_factory=list)  # advisor.suppress.Suppressed
    baseline: Any = None  # advisor.baseline.BaselineReport when --baseline is used
    verification: Any = None  # advisor.probe.stage.Verification when measurements were made or recorded


def _load_hardware(name: str, base: Path | None = None) -> Any:
    from advisor.sources.hardware import HardwareError, load_hardware

    candidate = (base / name) if base is not None and not Path(name).is_absolute() else Path(name)
    try:
        return load_hardware(str(candidate) if candidate.is_file() else name)
    except HardwareError as exc:
        raise CheckError(str(exc)) from None


def resolve_settings(paths: list[Path], options: CheckOptions) -> Settings:
    if options.settings is not None:
        return options.settings
    start = paths[0] if paths else Path.cwd()
    return find_settings(start)


def build_plans(
    paths: list[Path], options: CheckOptions, settings: Settings
) -> tuple[list[RunPlan], list[Any]]:
    for p in paths:
        if not p.exists():
            raise CheckError(f"{p}: no such file or folder")
    seeds = list(paths)
    folders = [p.resolve() for p in paths if p.is_dir()]
    for declared in settings.runs:
        candidate = settings.root / declared.path
        if not candidate.exists():
            raise CheckError(f"{settings.source}: run path '{declared.path}' does not exist")
        # a declared run inside a checked folder is a run even when its name says nothing (no suffix)
        if any(candidate.resolve().is_relative_to(f) for f in folders) and candidate not in seeds:
            seeds.append(candidate)
    cache = DocumentCache()
    specs, documents = discover(seeds, cache)

    default_hw = None
    if options.hardware:
        default_hw = _load_hardware(options.hardware)
    elif settings.hardware:
        default_hw = _load_hardware(settings.hardware, settings.root)
    else:
        descriptors = [d for d in documents if d.kind == "hardware" and d.ok]
        if len(descriptors) == 1:
            default_hw = _load_hardware(str(descriptors[0].path))

    plans = []
    for spec in specs:
        run_settings = settings.run_for(spec.root.path)
        hw = default_hw
        if run_settings is not None and run_settings.hardware and not options.hardware:
            hw = _load_hardware(run_settings.hardware, settings.root)
        plan = build_plan(spec, hardware=hw, settings=run_settings)
        plan.project, plan.online = settings, options.online
        if run_settings is not None and run_settings.name:
            plan.name = run_settings.name
        plans.append(plan)
    return plans, documents


def attach_baselines(
    plans: list[RunPlan], paths: list[Path], options: CheckOptions, settings: Settings
) -> None:
    """Build the same runs at options.base and attach each one's numbers to its twin (matched by name)."""
    import contextlib

    from advisor.facts.batch import batch_facts
    from advisor.revision import RevisionError, materialise

    assert options.base is not None
    cwd = Path.cwd().resolve()
    try:
        root, base_root, tmp = materialise(options.base, cwd)
    except RevisionError as exc:
        raise CheckError(str(exc)) from None
    with tmp:
        try:
            rel_cwd = cwd.relative_to(root)
        except ValueError:
            raise CheckError(f"--base: {cwd} is not inside the git repository {root}") from None
        base_cwd = base_root / rel_cwd
        if not base_cwd.is_dir():
            return
        base_seeds = []
        for p in paths:
            rel = (cwd / p).resolve().relative_to(root) if (cwd / p).resolve().is_relative_to(root) else None
            if rel is not None and (base_root / rel).exists():
                base_seeds.append(base_root / rel)
        if not base_seeds:
            return
        with contextlib.chdir(base_cwd):
            base_plans, _ = build_plans(base_seeds, options, settings)
            by_name = {}
            for bp in base_plans:
                batch = batch_facts(bp)
                by_name[bp.name] = BaselineRun(
                    source=f"git {options.base}",
                    values={
                        "effective_batch": batch.effective_batch,
                        "formula": getattr(batch.entry("effective_batch"), "note", None),
                        "per_device": batch.per_device,
                        "accumulation": batch.accumulation,
                        "dp_size": batch.dp_size,
                        "world_size": batch.world_size,
                        "learning_rate": bp.training.learning_rate,
                    },
                )
    for plan in plans:
        plan.baseline = by_name.get(plan.name)


def run_check(paths: list[Path], options: CheckOptions) -> CheckResult:
    settings = resolve_settings(paths, options)
    plans, documents = build_plans(paths, options, settings)
    if options.base:
        attach_baselines(plans, paths, options, settings)

    try:
        extra = [settings.root / d for d in settings.extend_rules] + list(options.rules_dirs)
        catalog = load_catalog(extra)
    except RuleError as exc:
        raise CheckError(str(exc)) from None
    select = options.select if options.select is not None else settings.select
    if select is not None:
        select = select + options.extend_select + settings.extend_select
    rules = select_rules(catalog, select, options.ignore + settings.ignore)
    check_severity_overrides(settings, catalog)
    engine = Engine(rules, settings.severity)

    run_contexts = []
    for plan in plans:
        names = run_names(plan)
        docs = {
            "training": plan.spec.training,
            "accelerate": plan.spec.accelerate,
            "deepspeed": plan.spec.deepspeed,
        }
        run_contexts.append((plan, names, Context(names, plan.root_location, plan.name, docs)))
    doc_contexts = [
        Context(document_names(d), document_fallback(d), None) for d in documents if d.kind != "script"
    ]

    findings: list[Finding] = []
    seen: set[tuple[str, str, int, int, str]] = set()
    for finding in [
        *engine.evaluate("document", doc_contexts),
        *engine.evaluate("run", [c for _, _, c in run_contexts]),
    ]:
        if finding.identity in seen:
            continue
        seen.add(finding.identity)
        findings.append(finding)
    findings.sort(key=lambda f: f.sort_key)
    verification = None
    recorded = options.measured or _recorded(settings, paths)
    if options.verify is not None or recorded is not None:
        from advisor.probe.stage import verify_stage

        findings, verification = verify_stage(
            run_contexts, engine, catalog, findings, settings, options, recorded
        )
    findings, suppressed, baseline = post_engine(findings, documents, settings, options, rules, catalog)

    summaries = [summarize(plan, names) for plan, names, _ in run_contexts]
    if verification is not None:
        verification.annotate(summaries)
    return CheckResult(
        findings,
        summaries,
        plans,
        engine.errors,
        settings,
        documents,
        catalog,
        suppressed,
        baseline,
        verification,
    )


def _recorded(settings: Settings, paths: list[Path]) -> Path | None:
    """Measurements recorded by `--verify-report .gpu-advise-verify.json` at the project root."""
    from advisor.probe import recorded_measurements

    return recorded_measurements(settings, paths)


def check_severity_overrides(settings: Settings, catalog: list[Any]) -> None:
    """`severity = {GA101 = "error"}` must name rules that exist (a typo would silently do nothing)."""
    import difflib

    codes = {r.code for r in catalog}
    for code in settings.severity:
        if code not in codes:
            close = difflib.get_close_matches(code, sorted(codes), n=1, cutoff=0.6)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise CheckError(f"{settings.source or 'settings'}: severity: no rule '{code}'{hint}")


def post_engine(
    findings: list[Finding],
    documents: list[Any],
    settings: Settings,
    options: CheckOptions,
    rules: list[Any],
    catalog: list[Any],
) -> tuple[list[Finding], list[Any], Any]:
    """Key paths for position-only findings, then suppressions (settings, inline, GA900), then the
    baseline (advisor/suppress.py, advisor/baseline.py)."""
    from advisor.baseline import BaselineError, apply_baseline, fill_keys
    from advisor.suppress import apply_suppressions

    fill_keys(findings, documents)
    findings, suppressed = apply_suppressions(
        findings, documents, settings, inline=options.inline_ignores, selected=rules, catalog=catalog
    )
    baseline_path = options.baseline
    if baseline_path is None and settings.baseline:
        baseline_path = settings.root / settings.baseline
    report = None
    if baseline_path is not None:
        try:
            findings, report = apply_baseline(findings, baseline_path)
        except BaselineError as exc:
            raise CheckError(str(exc)) from None
    return findings, suppressed, report


def summarize(plan: RunPlan, names: dict[str, Any]) -> RunSummary:
    batch = names["batch"]
    eff = batch.entry("effective_batch")
    run = names["run"]
    estimates = names.get("estimates")
    summary = RunSummary(
        name=plan.name,
        launcher=plan.launch.launcher,
        world_size=batch.world_size,
        effective_batch=batch.effective_batch,
        effective_batch_formula=getattr(eff, "note", None),
        hardware=plan.hardware.name if plan.hardware is not None else None,
        strategy=run.strategy,
    )
    if run.serving:
        summary.notes.append("inference server (vLLM): not a training run; only placement rules apply")
        return summary
    if estimates:
        from advisor.facts.estimates import summary_notes

        summary.peak_vram_gib = estimates.peak_vram_gib
        summary.gpu_memory_gib = estimates.gpu_memory_gib
        summary.est_hours_single_gpu = estimates.hours_single_gpu
        summary.est_hours = estimates.hours
        summary.notes.extend(summary_notes(estimates))
    world = batch.entry("world_size")
    if world is not None and world.unknown:
        summary.notes.append(f"world size unknown: {world.unknown}")
    elif world is not None and world.note:
        summary.notes.append(world.note)
    return summary

"""The check pipeline: paths -> runs -> plans -> facts -> rules -> findings. No I/O but reading."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

from advisor.core.errors import CheckError
from advisor.core.findings import Finding
from advisor.core.paths import resolved
from advisor.core.records import field, record, replace
from advisor.core.suggest import close_matches
from advisor.engine.rule_engine import Context, Engine, RuleError, load_catalog, select_rules
from advisor.facts import document_fallback, document_names, run_names
from advisor.pipeline.documented import cap_documented
from advisor.plan.context import CheckContext
from advisor.plan.discover import DocumentCache, discover
from advisor.plan.run_plan import RunPlan, build_plan
from advisor.report.results import BaselineRun, CheckResult, RunSummary
from advisor.sources.boundary import ProjectBoundary, project_boundary, project_root
from advisor.sources.settings import Settings, SettingsScope, find_settings


@record(slots=True)
class CheckOptions:
    hardware: str | None = None
    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    extend_select: list[str] = field(default_factory=list)
    rules_dirs: list[Path] = field(default_factory=list)
    online: bool = False
    settings: Settings | None = None
    base: str | None = None  # git revision whose runs are the baseline (the CI gate)
    # the revision compared with when --base is not given (the pre-commit hook passes HEAD): skipped
    # outside git and before the first commit, and for a run whose settings declare its effective batch
    base_default: str | None = None
    inline_ignores: bool = True  # honour `# gpu-advise: ignore[...]` directives (--no-inline-ignores)
    baseline: Path | None = None  # a baseline file: report only findings not in it (--baseline)
    verify: Any = None  # advisor.pipeline.probe.spec.ProbeOptions: run the training probe (--verify)
    measured: Path | None = None  # recorded measurements (default: .gpu-advise-verify.json at the root)
    find_measured: bool = True  # look for the default file when `measured` is None (off: none is read)
    # with base: the base revision's settings, rules, baseline and inline directives govern
    # (advisor/pipeline/policy)
    policy_from_base: bool = False
    policy: Any = None  # advisor.pipeline.policy.BasePolicy under policy_from_base, set by run_check
    # with base: (repo root, the base tree's root) as advisor.pipeline.policy wrote it out, shared by the run
    # comparison rather than written out a second time
    base_tree: tuple[Path, Path] | None = None
    files: Any = None  # advisor.sources.exclude.FileSelection: --exclude, --extend-exclude, --force-exclude


def _load_hardware(name: str, base: Path | None = None, named_by: SettingsRef | None = None) -> Any:
    """A built-in machine or a descriptor file. A file named by the settings (`named_by`) must lie
    inside the project boundary; one given with -H is the user's own choice."""
    from advisor.sources.hardware import HardwareError, load_hardware

    written = Path(os.path.expanduser(name))
    candidate = (base / written) if base is not None and not written.is_absolute() else written
    if named_by is not None:
        for path in {candidate, written}:  # load_hardware also tries the name relative to the current folder
            if _names_a_file(name, path):
                named_by.check(path)
    try:
        return load_hardware(str(candidate) if _is_file(candidate) else name)
    except HardwareError as exc:
        raise CheckError(str(exc), lines=exc.lines) from None


def _names_a_file(name: str, path: Path) -> bool:
    """Whether a hardware value is meant as a file: it exists, or it is written like a path."""
    return _is_file(path) or "/" in name or "~" in name or Path(name).suffix.lower() in (".yaml", ".yml")


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


@record(frozen=True, slots=True)
class SettingsRef:
    """A file named in the settings (hardware, extend-rules, baseline): opened only inside the boundary."""

    settings: Settings
    key: str
    value: str
    boundary: ProjectBoundary

    def check(self, path: Path) -> None:
        reason = self.boundary.outside_reason(path)
        if reason is not None:
            raise CheckError(
                f"{setting_position(self.settings, self.key, self.value)}: {self.key}: {reason}"
                " (list the folder in allowed-roots to read it)"
            )


def setting_position(settings: Settings, key: str, value: str) -> str:
    """file:line:col of a value in the settings file (of its key when the value is not found)."""
    from advisor.sources.read import ReadRefused, read_text_file

    source = settings.source
    if source is None:
        return "settings"
    try:
        lines = read_text_file(source).splitlines()
    except ReadRefused:
        return str(source)
    key_line = None
    for number, line in enumerate(lines, 1):
        for quoted in (f'"{value}"', f"'{value}'"):
            col = line.find(quoted)
            if col >= 0:
                return f"{source}:{number}:{col + 1}"
        if key_line is None and line.strip().startswith(key):
            key_line = number
    return f"{source}:{key_line or 1}:1"


def resolve_settings(paths: list[Path], options: CheckOptions) -> Settings:
    """The settings of the check as a whole: those of the checked paths' common folder."""
    return resolve_scope(paths, options).top


def resolve_scope(paths: list[Path], options: CheckOptions) -> SettingsScope:
    """The settings file by file (advisor.sources.settings.SettingsScope): each file is governed by the
    closest
    settings file above it. Settings given in the options govern every file (as ruff's --config)."""
    if options.settings is not None:
        return SettingsScope.single(options.settings)
    for p in paths:
        _check_seed(p)
    folders = [resolved(p) if p.is_dir() else resolved(p).parent for p in paths] or [resolved(Path.cwd())]
    try:
        common = Path(os.path.commonpath(folders))
    except ValueError:  # no common folder (different drives): the first path's, as before
        common = folders[0]
    top = find_settings(common)
    roots = tuple(dict.fromkeys(project_root(top, [p]) for p in paths or [Path.cwd()]))
    return SettingsScope(top, roots)


def selected_rules(catalog: list[Any], options: CheckOptions, settings: Settings) -> list[Any]:
    """The rules one settings selects, the command line's --select/--ignore/--extend-select applied."""
    select = options.select if options.select is not None else settings.select
    if select is not None:
        select = select + options.extend_select + settings.extend_select
    return select_rules(catalog, select, options.ignore + settings.ignore)


def scoped_rules(
    catalog: list[Any], options: CheckOptions, scope: SettingsScope, files: list[Path]
) -> list[Any]:
    """The rules that run: those any settings governing one of `files` selects (each finding is then
    kept only where its own file's settings select its rule: advisor.engine.suppress.apply_suppressions)."""
    for file in files:
        scope.governing(file)
    codes: set[str] = set()
    for settings in scope.met():
        check_severity_overrides(settings, catalog)
        codes.update(r.code for r in selected_rules(catalog, options, settings))
    return [r for r in catalog if r.code in codes]


def _check_seed(path: Path) -> None:
    """A path on the command line must exist; a symlink loop is named as one."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise CheckError(f"{path}: symlink loop") from None
        if exc.errno == errno.ENOENT:
            raise CheckError(f"{path}: no such file or folder") from None
        raise CheckError(f"{path}: {exc.strerror or exc}") from None
    except ValueError:
        raise CheckError(f"{path}: invalid path") from None


def build_plans(
    paths: list[Path],
    options: CheckOptions,
    settings: Settings,
    boundary: ProjectBoundary | None = None,
    scope: SettingsScope | None = None,
    context: CheckContext | None = None,
) -> tuple[list[RunPlan], list[Any]]:
    """The runs of `paths` and every document read. `context` is the check's (built here when the
    caller has none: `gpu-advise plan`, `estimate`); each plan carries it (`plan.context`)."""
    from advisor.facts.script_readers import SCRIPT_READERS

    for p in paths:
        _check_seed(p)
    if context is None:
        governing = scope or SettingsScope.single(settings)
        if boundary is not None:
            context = CheckContext.with_boundary(governing, boundary)
        else:
            context = CheckContext.build(governing, paths)
    boundary = context.boundary
    seeds = list(paths)
    folders = [resolved(p) for p in paths if p.is_dir()]
    for declared in settings.runs:
        candidate = settings.root / declared.path
        if not candidate.exists():
            raise CheckError(f"{settings.source}: run path '{declared.path}' does not exist")
        # a declared run inside a checked folder is a run even when its name says nothing (no suffix)
        if any(resolved(candidate).is_relative_to(f) for f in folders) and candidate not in seeds:
            seeds.append(candidate)
    from advisor.sources.exclude import FileFilter

    cache = DocumentCache(boundary, FileFilter(settings, options.files))
    specs, documents = discover(seeds, cache)

    default_hw = None
    if options.hardware:
        default_hw = _load_hardware(options.hardware)
    elif settings.hardware:
        named_by = SettingsRef(settings, "hardware", settings.hardware, boundary)
        default_hw = _load_hardware(settings.hardware, settings.root, named_by)
    else:
        descriptors = [d for d in documents if d.kind == "hardware" and d.ok]
        if len(descriptors) == 1:
            default_hw = _load_hardware(str(descriptors[0].path))

    plans = []
    for spec in specs:
        # the run's own settings: those governing its root file (a sub-folder's settings file)
        own = scope.governing(spec.root.path) if scope is not None else settings
        run_settings = own.run_for(spec.root.path)
        if run_settings is None and own is not settings:
            run_settings = settings.run_for(spec.root.path)
        hw = default_hw
        if run_settings is not None and run_settings.hardware and not options.hardware:
            declared_in = own if own.run_for(spec.root.path) is not None else settings
            named_by = SettingsRef(declared_in, "hardware", run_settings.hardware, boundary)
            hw = _load_hardware(run_settings.hardware, declared_in.root, named_by)
        elif own is not settings and own.hardware and not options.hardware:
            named_by = SettingsRef(own, "hardware", own.hardware, boundary)
            hw = _load_hardware(own.hardware, own.root, named_by)
        plan = build_plan(spec, hardware=hw, settings=run_settings, context=context, readers=SCRIPT_READERS)
        plan.project, plan.online = own, options.online
        if run_settings is not None and run_settings.name:
            plan.name = run_settings.name
        plans.append(plan)
    return plans, documents


def default_base(
    options: CheckOptions, paths: list[Path], plans: list[RunPlan]
) -> tuple[str, Path, tuple[Path, str]] | None:
    """(options.base_default, the folder the comparison starts from, its root and commit id) when there is
    a commit to compare with, else None: the check then judges the files as they are, silently (outside
    git, before the first commit, checked paths in no work tree or in several, or nothing to compare: no
    run, or every run's settings declare its effective batch). The folder is the current one when its
    work tree holds every checked path (the pre-commit hook's case), else the checked paths' common
    folder, so `check ~/proj` from elsewhere compares as `check` inside ~/proj does. No git runs before
    these are known."""
    if options.base is not None or options.base_default is None:
        return None
    if not plans or all(p.settings is not None and p.settings.effective_batch is not None for p in plans):
        return None
    from advisor.sources.boundary import find_work_tree

    targets = [resolved(p) for p in paths] or [resolved(Path.cwd())]
    trees = {find_work_tree(t) for t in targets}
    if len(trees) != 1 or None in trees:
        return None
    here = resolved(Path.cwd())
    if find_work_tree(here) in trees:
        start = here
    else:
        folders = [t if t.is_dir() else t.parent for t in targets]
        start = Path(os.path.commonpath(folders))
    from advisor.plan.revision import find_commit  # subprocess and tempfile: only when there is a base

    found = find_commit(options.base_default, start)  # the root and the commit: materialise takes them
    return (options.base_default, start, found) if found is not None else None


def attach_baselines(
    plans: list[RunPlan],
    paths: list[Path],
    options: CheckOptions,
    settings: Settings,
    rev: str | None = None,
    start: Path | None = None,
    commit: tuple[Path, str] | None = None,
) -> None:
    """Build the same runs at `rev` (default options.base) and attach each one's numbers to its twin
    (matched by name, then by content: advisor/plan/revision/twins.py); a run without one gets
    `baseline.missing` (GA108). With the default base, a run whose settings declare its effective
    batch keeps that declared baseline: the settings override the default. `start` is the folder the
    comparison starts from (default: the current one; `paths` stay relative to the current one); `commit`,
    default_base's root and commit id for it (so materialise asks git for neither again)."""
    import contextlib

    from advisor.plan.revision import RevisionError, materialise
    from advisor.plan.revision.twins import pair_runs, run_text

    explicit = rev is None
    rev = rev or options.base
    assert rev is not None
    if not explicit and all(p.settings is not None and p.settings.effective_batch is not None for p in plans):
        return
    here = Path.cwd().resolve()
    cwd = start or here
    tmp: contextlib.AbstractContextManager[Any]
    if explicit and options.base_tree is not None:  # written out by the policy, which cleans it up
        (root, base_root), tmp = options.base_tree, contextlib.nullcontext()
    else:
        try:
            root, base_root, tmp = materialise(rev, cwd, commit)
        except RevisionError as exc:
            raise CheckError(str(exc)) from None
    by_name: dict[str, BaselineRun] = {}
    base_texts = []
    with tmp:
        try:
            rel_cwd = cwd.relative_to(root)
        except ValueError:
            raise CheckError(f"--base: {cwd} is not inside the git repository {root}") from None
        base_cwd = base_root / rel_cwd
        base_seeds = []
        for p in paths if base_cwd.is_dir() else []:
            target = (here / p).resolve()
            rel = target.relative_to(root) if target.is_relative_to(root) else None
            if rel is not None and (base_root / rel).exists():
                base_seeds.append(base_root / rel)
            elif base_cwd not in base_seeds:  # renamed or moved since: its twin is looked for everywhere
                base_seeds.append(base_cwd)
        if base_seeds:
            # truly another boundary, so computed apart from the check's context: the base revision's
            # files are bounded by its own tree (plus the allowed roots), not the checkout's
            allowed = project_boundary(settings, base_seeds).roots
            base_boundary = ProjectBoundary(
                (resolved(base_root), *(r for r in allowed if r != resolved(root)))
            )
            with contextlib.chdir(base_cwd):
                base_context = CheckContext.with_boundary(SettingsScope.single(settings), base_boundary)
                base_plans, _ = build_plans(base_seeds, options, settings, context=base_context)
                for bp in base_plans:
                    by_name[bp.name] = _baseline_run(bp, rev)
                    base_texts.append(run_text(bp, base_root))
        twins = pair_runs([run_text(p, root) for p in plans], base_texts)
    for plan in plans:
        if explicit or plan.settings is None or plan.settings.effective_batch is None:
            twin = twins.get(plan.name)
            if twin is None:  # said by GA108, never silence: a rename must not drop GA101 unnoticed
                why = "no run there has its name, its launch command or its config files"
                plan.baseline = BaselineRun(source=f"git {rev}", values={"missing": why})
            elif twin.how == "same name":
                plan.baseline = by_name[twin.base]
            else:
                found = by_name[twin.base]
                plan.baseline = BaselineRun(f"{found.source}: {twin.base}", found.values)


def _baseline_run(plan: RunPlan, rev: str) -> BaselineRun:
    from advisor.facts.batch import batch_facts

    batch = batch_facts(plan)
    return BaselineRun(
        source=f"git {rev}",
        values={
            "effective_batch": batch.effective_batch,
            "formula": getattr(batch.entry("effective_batch"), "note", None),
            "per_device": batch.per_device,
            "accumulation": batch.accumulation,
            "dp_size": batch.dp_size,
            "world_size": batch.world_size,
            "learning_rate": plan.training.learning_rate,
        },
    )


def run_check(paths: list[Path], options: CheckOptions) -> CheckResult:
    if options.base is None:
        return _run_check(paths, options)
    # --base: read the policy at the base revision too; what the change relaxes is reported (GA8xx)
    from advisor.pipeline.policy import BasePolicy

    with BasePolicy(paths, options, resolve_settings) as policy:
        governed = replace(policy.governing(options), base_tree=(policy.root, policy.base_root))
        result = _run_check(paths, governed)
        policy.report(result, options)
    return result


def _run_check(paths: list[Path], options: CheckOptions) -> CheckResult:
    scope = resolve_scope(paths, options)
    settings = scope.top
    context = CheckContext.build(scope, paths)  # the one context of this check, carried on every plan
    boundary = context.boundary
    plans, documents = build_plans(paths, options, settings, scope=scope, context=context)
    if options.base:
        attach_baselines(plans, paths, options, settings)
    elif (default := default_base(options, paths, plans)) is not None:
        attach_baselines(plans, paths, options, settings, *default)

    for folder in settings.extend_rules:
        named_by = SettingsRef(settings, "extend-rules", folder, boundary)
        rules_dir = settings.root / os.path.expanduser(folder)
        named_by.check(rules_dir)
        if rules_dir.is_dir():  # a rule file in it may be a link that points out
            for rule_file in sorted(rules_dir.glob("*.yaml")):
                named_by.check(rule_file)
    try:
        extra = [settings.root / d for d in settings.extend_rules] + list(options.rules_dirs)
        catalog = load_catalog(extra)
    except RuleError as exc:
        raise CheckError(str(exc)) from None
    rules = scoped_rules(catalog, options, scope, [d.path for d in documents])
    engine = Engine(rules)  # severity overrides are each file's settings': applied in post_engine

    verification = None
    run_contexts, findings = _evaluate(engine, plans, documents, context)
    recorded = options.measured or (_recorded(settings, paths, boundary) if options.find_measured else None)
    if options.verify is not None or recorded is not None:
        from advisor.pipeline.probe.stage import verify_stage

        findings, verification = verify_stage(
            run_contexts, engine, catalog, findings, settings, options, recorded
        )
    findings, suppressed, baseline = post_engine(
        findings, documents, settings, options, rules, catalog, scope, context
    )
    findings = cap_documented(findings, plans)

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
        context,
    )


def _evaluate(
    engine: Engine, plans: list[RunPlan], documents: list[Any], context: CheckContext
) -> tuple[list[tuple[RunPlan, dict[str, Any], Context]], list[Finding]]:
    """Facts of every run and document, the rules over them: (run contexts, findings in order)."""
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
        Context(document_names(d, context), document_fallback(d), None)
        for d in documents
        if d.kind != "script"
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
    return run_contexts, findings


def _recorded(settings: Settings, paths: list[Path], boundary: ProjectBoundary) -> Path | None:
    """Measurements recorded by `--verify-report .gpu-advise-verify.json` at the project root (a link
    there that points out of the project is refused: the file is found by name, not given by the user)."""
    from advisor.pipeline.probe import recorded_measurements

    found = recorded_measurements(settings, paths)
    reason = boundary.outside_reason(found) if found is not None else None
    if reason is not None:
        raise CheckError(f"recorded measurements: {reason}")
    return found


def check_severity_overrides(settings: Settings, catalog: list[Any]) -> None:
    """`severity = {GA101 = "error"}` must name rules that exist (a typo would silently do nothing)."""

    codes = {r.code for r in catalog}
    for code in settings.severity:
        if code not in codes:
            close = close_matches(code, sorted(codes), n=1, cutoff=0.6)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise CheckError(f"{settings.source or 'settings'}: severity: no rule '{code}'{hint}")


def post_engine(
    findings: list[Finding],
    documents: list[Any],
    settings: Settings,
    options: CheckOptions,
    rules: list[Any],
    catalog: list[Any],
    scope: SettingsScope | None = None,
    context: CheckContext | None = None,
) -> tuple[list[Finding], list[Any], Any]:
    """Key paths for position-only findings, then suppressions (settings, inline, GA900), then the
    baseline (advisor/engine/suppress.py, advisor/engine/baseline.py)."""
    from advisor.engine.baseline import BaselineError, apply_baseline, fill_keys
    from advisor.engine.suppress import apply_suppressions

    fill_keys(findings, documents)
    findings, suppressed = apply_suppressions(
        findings,
        documents,
        scope or SettingsScope.single(settings),
        inline=options.inline_ignores,
        selected=rules,
        catalog=catalog,
        selected_for=lambda governing: selected_rules(catalog, options, governing),
    )
    if options.policy is not None:  # --policy-from-base: a directive the base lacks suppresses nothing
        findings, suppressed = options.policy.restore(findings, suppressed, documents, catalog)
    baseline_path = options.baseline
    if baseline_path is None and settings.baseline:
        baseline_path = settings.root / os.path.expanduser(settings.baseline)
        if context is None:
            context = CheckContext.build(scope or SettingsScope.single(settings), [settings.root])
        boundary = context.boundary_for(settings, [settings.root])
        SettingsRef(settings, "baseline", settings.baseline, boundary).check(baseline_path)
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
        hardware_card=plan.hardware.card if plan.hardware is not None else None,
    )
    if run.serving:
        summary.notes.append("inference server (vLLM): not a training run; only placement rules apply")
        return summary
    if estimates:
        from advisor.facts.estimates import summary_notes

        summary.peak_vram_gib = estimates.peak_vram_gib
        summary.memory = estimates.memory_figures
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

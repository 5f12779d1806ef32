"""The verify stage of `gpu-advise check`: probe every run, then let the measurements judge.

Measurements come from a live probe (--verify) or from a recorded report (`.gpu-advise-verify.json`
in the project root, as written by --verify-report; an entry applies while its run's files are
unchanged). They enter the rule engine three ways, all declarative:

1. the `measured` fact namespace: rules that read `measured.*` (GA701 prediction-off) only ever
   fire here, and their findings carry evidence "measured";
2. measured facts shadow the static ones they check: rules that read the batch facts (world size,
   data-parallel size, effective batch: GA101) are evaluated again with the measured values in
   place. A finding both ways is confirmed (evidence "measured"), a finding only with the measured
   facts is added, a static finding the measurement does not reproduce is refuted (dropped, and
   said so in the run's notes);
3. rules that read both (GA401 reads `measured.oom`, GA402 `measured.scaling_efficiency`) ran
   statically over an empty `measured` namespace and are judged again with it: a finding the
   measurement changes or adds carries evidence "measured".
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor import PACKAGE_DIR
from advisor.core import datacodec
from advisor.core.findings import Finding
from advisor.core.provenance import Namespace, Value
from advisor.core.records import field, record
from advisor.pipeline.probe import RECORDED_FILE, unavailable_message
from advisor.pipeline.probe.progress import ProbeProgress, describe
from advisor.pipeline.probe.results import (
    OK,
    RunVerification,
    aggregate,
    compare,
    measured_namespace,
    status_of,
)
from advisor.pipeline.probe.spec import (
    ProbeOptions,
    ProbeSpec,
    Skip,
    build_spec,
    derived_accelerate_config,
    run_digest,
    write_spec,
)
from advisor.sources import launchers

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan

__all__ = ["RECORDED_FILE", "Verification", "apply_measurements", "verify_stage"]
BATCH_KEYS = ("world_size", "dp_size", "effective_batch", "per_device", "accumulation")
_READS_MEASURED = re.compile(r"\bmeasured\.")


def _batch_key(key: str) -> re.Pattern[str]:
    return re.compile(r"\bbatch\." + key + r"\b")


@record(slots=True)
class Verification:
    source: str  # "probe" or "recorded"
    device: dict[str, Any] = field(default_factory=dict)
    runs: list[RunVerification] = field(default_factory=list)
    unavailable: str | None = None  # why no probe ran (missing packages, no GPU)
    refused: bool = False  # no probe ran because this machine cannot measure what was asked: exit 2
    recorded_from: str | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def as_json(self, base: Path | None = None) -> dict[str, Any]:
        runs = []
        for r in self.runs:
            row = r.as_json()
            if r.root is not None:
                root = Path(r.root)
                try:
                    row["path"] = root.relative_to((base or Path.cwd()).resolve()).as_posix()
                except ValueError:
                    row["path"] = str(root)
            runs.append(row)
        return {
            "version": 1,
            "tool": "gpu-advise verify",
            "source": self.source,
            "recorded_from": self.recorded_from,
            "unavailable": self.unavailable,
            "options": self.options,
            "device": self.device,
            "runs": runs,
        }

    def write(self, path: Path) -> None:
        """--verify-report: through advisor/core/safe_write.py (a random O_EXCL temporary, links followed
        to their target, devices and FIFOs written through)."""
        from advisor.core.escape import strict_json  # a strict JSON reader must read it back
        from advisor.core.safe_write import write_file

        payload = self.as_json(base=path.resolve().parent)
        write_file(path, strict_json(payload) + "\n", parents=True)

    def annotate(self, summaries: list[Any]) -> None:
        by_name = {r.name: r for r in self.runs}
        for s in summaries:
            rv = by_name.get(s.name)
            if rv is None:
                continue
            if hasattr(s, "measured"):
                s.measured = rv.summary()
            for code in rv.refuted:
                s.notes.append(f"measured: {code}")
            if rv.status not in OK:
                s.notes.append(f"verify: {rv.status}" + (f": {rv.reason}" if rv.reason else ""))


# ---- device information -------------------------------------------------------------------------
def device_info(python: str | None = None, timeout: float = 120.0) -> dict[str, Any]:
    """Run advisor.pipeline.probe.envinfo in a child (no torch and no CUDA context in this process)."""
    cmd = [python or sys.executable, "-m", "advisor.pipeline.probe.envinfo"]
    try:
        out = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, check=False, env=_env_with_checkout()
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return {"error": f"cannot inspect this machine: {exc}", "cuda_available": False, "device_count": 0}
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = (out.stderr or "").strip().splitlines()[-1:] or ["no output"]
        return {
            "error": f"cannot inspect this machine: {tail[0]}",
            "cuda_available": False,
            "device_count": 0,
        }


def _env_with_checkout() -> dict[str, str]:
    import os

    env = dict(os.environ)
    root = PACKAGE_DIR.parent
    if (root / "pyproject.toml").is_file():
        env["PYTHONPATH"] = str(root) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


# ---- probing ------------------------------------------------------------------------------------
CPU_PROCESS_OVERHEAD_GIB = 0.75  # python, torch and transformers in one probe process, measured ~0.6


def choose_device(device: dict[str, Any], wanted: str) -> str | None:
    """Fit `device` (device_info's) to --verify-device; the reason when no probe should run.

    A probe of a multi-GPU run on a machine without CUDA measures the batch arithmetic and the bytes
    of weights, gradients and optimizer states, nothing about GPU memory or GPU speed, which is what
    --verify is asked for: without an explicit `--verify-device cpu` it is refused, not run on CPU
    for up to --verify-timeout (issue 18 item 8)."""
    has_gpu = bool(device.get("cuda_available")) and int(device.get("device_count") or 0) > 0
    if wanted == "cpu":
        if has_gpu:
            device["gpus_ignored"] = int(device.get("device_count") or 0)
        device.update(cuda_available=False, device_count=0, devices=[])
        return None
    if wanted == "cuda" and not has_gpu:
        torch = (device.get("libraries") or {}).get("torch")
        return (
            f"--verify needs a CUDA GPU and this machine has none (torch {torch}): a CPU probe measures "
            "the batch and the weight, gradient and optimizer bytes, nothing about GPU memory or speed. "
            "No probe ran; --verify-device cpu runs the CPU probe"
        )
    return None


def _probe_once(
    spec: ProbeSpec, work: Path, options: ProbeOptions, progress: ProbeProgress, label: str
) -> tuple[str, dict[str, Any], Any]:
    from advisor.pipeline.probe.launcher import launch

    work.mkdir(parents=True, exist_ok=True)
    spec.out_dir = str(work)
    derived_accelerate_config(spec, work)
    spec_path = work / "spec.json"
    write_spec(spec, spec_path)
    total = spec.warmup_steps + spec.steps
    progress.say(f"{label}: starting {describe(spec.nproc_arg or spec.nproc, spec.device, spec.launcher)}...")
    res = launch(spec, spec_path, options, on_progress=progress.task(label, total))
    world = max((int(r.get("world_size") or 1) for r in res.ranks), default=spec.nproc)
    status = status_of(res.ranks, res.returncode, res.timed_out, res.interrupted, world)
    progress.say(f"{label}: {_ending(status, res, options, total)}")
    return status, aggregate(res.ranks, spec), res


def _ending(status: str, res: Any, options: ProbeOptions, total: int) -> str:
    """The one line a probe ends with: never the launcher's traceback (a timeout's is our own SIGTERM)."""
    done = max((int(r.get("steps_done") or 0) for r in res.ranks), default=0)
    if status == "timeout":
        stopped = f"; {res.leftovers_killed} processes stopped" if res.leftovers_killed else ""
        return (
            f"timed out after {res.wall_s:.0f} s (--verify-timeout {options.timeout:g}) "
            f"at step {done}/{total}{stopped}"
        )
    return f"{status} in {res.wall_s:.0f} s ({done}/{total} steps)"


def _cpu_memory_refusal(spec: ProbeSpec, device: dict[str, Any], hardware: Any) -> str | None:
    """A CPU probe holds the whole model, its gradients and optimizer states in RAM once per process:
    a 7B model in fp32 is ~112 GB per process. Refuse what this machine cannot hold."""
    from advisor.pipeline.probe.predict import predict

    available = device.get("mem_available")
    if not isinstance(available, int) or available <= 0:
        return None
    procs = spec.nproc or 1
    per = (predict(spec, procs, device, hardware).peak_allocated_gib or 0.0) + CPU_PROCESS_OVERHEAD_GIB
    need = per * procs
    have = available / 2**30
    if need <= have * 0.8:
        return None
    return (
        f"a CPU probe of this run needs about {need:,.1f} GiB of RAM ({procs} process"
        f"{'es' if procs != 1 else ''} x {per:,.1f} GiB), more than the {have:,.1f} GiB available here"
    )


def probe_run(
    plan: RunPlan,
    names: dict[str, Any],
    device: dict[str, Any],
    options: ProbeOptions,
    work: Path,
    progress: ProbeProgress,
) -> RunVerification:
    from advisor.pipeline.probe.predict import predict

    rv = RunVerification(name=plan.name, status="skipped", root=str(Path(plan.spec.root.path).resolve()))
    try:
        spec = build_spec(plan, names, device, options)
    except Skip as skip:
        rv.status, rv.reason = skip.status, skip.reason
        rv.notes.extend(skip.notes)
        return rv
    rv.spec = spec
    if spec.device == "cpu" and (why := _cpu_memory_refusal(spec, device, plan.hardware)) is not None:
        rv.status, rv.reason = "skipped", why
        progress.say(f"{plan.name}: skipped: {why}")
        return rv
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", plan.name)[:60] or "run"
    status, measured, res = _probe_once(spec, work / safe, options, progress, plan.name)
    rv.status, rv.measured, rv.command, rv.wall_s = status, measured, res.command, res.wall_s
    rv.ranks, rv.leftovers_killed, rv.log_tail = res.ranks, res.leftovers_killed, res.log_tail
    rv.probe_ids.append(res.marker)
    rv.notes.extend(spec.notes)
    if spec.device == "cpu":
        why = (
            f"--verify-device cpu (the {device['gpus_ignored']} GPUs here were not used)"
            if device.get("gpus_ignored")
            else "this machine has no GPU"
        )
        rv.notes.insert(
            0,
            f"CPU probe: {why}; it measures the batch and the weight, gradient and optimizer bytes; "
            "seconds per step and tokens/s are CPU timings (gloo), not a forecast of GPU speed or memory",
        )
    if status == "timeout":
        rv.reason = (
            f"the probe ran past --verify-timeout {options.timeout:g}s and was stopped (all processes "
            "ended; --verify-report FILE keeps the launcher's log)"
        )
    elif status == "failed":
        rv.reason = measured.get("error") or "the probe failed: see log_tail in the report"
    elif status == "oom":
        rv.reason = f"out of memory on rank {measured.get('oom_rank')}: {measured.get('error')}"
    elif status == "stopped":
        rv.reason = measured.get("stopped")
    world = measured.get("world_size") or spec.nproc or 1
    rv.predicted = predict(spec, world, device, plan.hardware)
    if options.scaling and rv.ok and world > 1:
        single = copy.deepcopy(spec)
        single.nproc, single.nproc_arg = 1, None
        single.accelerate_flags = {k: v for k, v in single.accelerate_flags.items() if k != "multi_gpu"}
        own = launchers.spec_of(single.launcher)
        if own.reads_accelerate_config:  # its count is a flag of its own (--num_processes), not nproc
            single.accelerate_flags.update(dict.fromkeys(own.processes.flags, "1"))
        if single.cuda_visible_devices and "," in single.cuda_visible_devices:
            single.cuda_visible_devices = single.cuda_visible_devices.split(",")[0]
        s_status, s_measured, s_res = _probe_once(
            single, work / f"{safe}-1proc", options, progress, f"{plan.name} (1 process)"
        )
        rv.probe_ids.append(s_res.marker)
        rv.leftovers_killed += s_res.leftovers_killed
        rv.scaling = {
            "processes": world,
            "single_status": s_status,
            "single": s_measured,
            "single_command": s_res.command,
        }
        tps_n, tps_1 = measured.get("tokens_per_s"), s_measured.get("tokens_per_s")
        if s_status in OK and tps_n and tps_1:
            rv.scaling["efficiency"] = tps_n / (world * tps_1)
            measured["scaling_efficiency"] = rv.scaling["efficiency"]
            measured["scaling_processes"] = world
        single_pred = predict(single, 1, device, plan.hardware)
        rv.scaling["predicted_single"] = single_pred.as_json()
    return rv


# ---- recorded measurements ----------------------------------------------------------------------
def load_recorded(path: Path, plans: list[Any]) -> Verification:
    """Measurements recorded earlier (possibly on another machine), for the runs whose files are unchanged.
    A file of the wrong shape is a CheckError naming its line (advisor/pipeline/probe/recorded.py); an entry
    whose digest is missing, malformed or not the run's is stale, with the reason in the run's notes."""
    from advisor.pipeline.probe.predict import predict
    from advisor.pipeline.probe.recorded import digest_problem, read_recorded

    ver = Verification(source="recorded", recorded_from=str(path))
    ver.device, runs = read_recorded(path)
    by_path = {r["path"]: r for r in runs if r["path"] is not None}
    by_name = {r["name"]: r for r in runs if r["name"] is not None}
    base = path.resolve().parent
    for plan in plans:
        root = Path(plan.spec.root.path).resolve()
        try:
            rel = root.relative_to(base).as_posix()
        except ValueError:
            rel = None
        entry = by_path.get(rel) if rel is not None else None
        if entry is None:
            entry = by_name.get(rel) or by_name.get(plan.name)
        if entry is None:
            continue
        rv = RunVerification(
            name=plan.name,
            status=str(entry.get("status") or "ok"),
            source="recorded",
            reason=entry.get("reason"),
        )
        stale = digest_problem(entry, run_digest(plan), path.name)
        if stale is not None:
            rv.status, rv.reason = "stale", stale
            ver.runs.append(rv)
            continue
        rv.measured = dict(entry["measured"])
        rv.scaling = entry["scaling"]
        if entry["spec"] is not None:
            try:
                rv.spec = datacodec.validate(ProbeSpec, entry["spec"])
            except datacodec.Invalid:
                rv.notes.append("the recorded probe spec does not validate: no prediction to compare")
        if rv.spec is not None and rv.ok:
            rv.predicted = predict(
                rv.spec, int(rv.measured.get("world_size") or rv.spec.nproc or 1), ver.device, plan.hardware
            )
        ver.runs.append(rv)
    return ver


# ---- the stage ----------------------------------------------------------------------------------
def _reads(rule: Any, pattern: re.Pattern[str], message: bool = False) -> bool:
    spec = rule.spec
    # a `let` may be read by `when`, a severity condition or a message case's `by`: all count as the
    # rule's judgement; message templates only when asked
    parts = [spec.when or "", spec.for_each or "", *spec.requires, *spec.let.values(), spec.message_by or ""]
    parts += spec.severity_when.values()
    if message:
        parts += [spec.message, *spec.message_cases.values()]
    return bool(pattern.search(" ".join(parts)))


def _overlay_batch(batch: Namespace, measured: dict[str, Any]) -> Namespace:
    values = dict(batch.items())
    out = Namespace("batch", values)
    world = measured.get("world_size")
    mp = batch.model_parallel_size or 1
    new = {
        "world_size": world,
        "dp_size": world // mp if isinstance(world, int) and world % mp == 0 else None,
        "effective_batch": measured.get("effective_batch"),
        "per_device": measured.get("per_device"),
        "accumulation": measured.get("accumulation"),
    }
    for key, value in new.items():
        if value is None:
            continue
        old = batch.entry(key)
        origin = old.origin if isinstance(old, Value) else None
        related = list(old.related) if isinstance(old, Value) else []
        out.set(key, Value(value, origin, "measured", related=related, note="measured by --verify"))
    return out


def _key(f: Finding) -> tuple[str, str, int, int]:
    return (f.rule, str(f.location.file), f.location.line, f.location.col)


def apply_measurements(
    rv: RunVerification,
    plan: RunPlan,
    names: dict[str, Any],
    ctx: Any,
    engine: Any,
    catalog: list[Any],
    findings: list[Finding],
    settings: Any,
    options: Any,
) -> list[Finding]:
    from advisor.engine.rule_engine import Context, Engine

    fallback = plan.root_location
    rv.comparisons = compare(rv, names, fallback)
    measured = measured_namespace(rv, names, fallback)
    mnames = dict(names)
    mnames["measured"] = measured
    overrides = settings.severity if settings is not None else {}

    def run_rules(rules: list[Any], use_names: dict[str, Any]) -> list[Finding]:
        sub = Engine(rules, overrides)
        sub.errors = engine.errors
        return list(sub.evaluate("run", [Context(use_names, ctx.fallback, ctx.run, ctx.documents)]))

    out = list(findings)
    # measured batch facts shadow the static ones they check
    batch = names.get("batch")
    changed: set[str] = set()
    onames = mnames
    if (
        rv.ok
        and rv.measured.get("faithful", True)
        and rv.measured.get("effective_batch") is not None
        and isinstance(batch, Namespace)
    ):
        overlay = _overlay_batch(batch, rv.measured)
        changed = {k for k in BATCH_KEYS if getattr(overlay, k) != getattr(batch, k)}
        onames = dict(mnames)
        onames["batch"] = overlay
    # 1. the rules that read `measured` (statically they saw an empty namespace), judged again with it:
    # a finding the measurement changes is confirmed, one only with it added, one it drops refuted
    measuring = [r for r in engine.rules if _reads(r, _READS_MEASURED, message=True)]
    codes = {r.code for r in measuring}
    shadowed = {r.code for r in measuring if any(_reads(r, _batch_key(k)) for k in changed)}
    static = [f for f in out if f.run == plan.name and f.rule in codes]
    for m in run_rules(measuring, onames):
        twin = next((f for f in static if _key(f) == _key(m)), None)
        twin = twin or next((f for f in static if f.rule == m.rule), None)
        if twin is None:
            m.evidence = "measured"
            out.append(m)
            rv.added.append(f"{m.rule} {_where(m)}")
            continue
        static.remove(twin)
        if m.message.rstrip() != twin.message.rstrip() or twin.rule in shadowed:
            twin.message = m.message.rstrip()
            twin.evidence = "measured"
            rv.confirmed.append(f"{twin.rule} {_where(twin)}")
    mw, mb = rv.measured.get("world_size"), rv.measured.get("effective_batch")
    for f in static:
        out.remove(f)
        rv.refuted.append(
            f"{f.rule} at {_where(f)} not confirmed: measured world size {mw}, effective batch {mb} "
            "(static finding dropped)"
        )
    # 2. the other rules that read a batch figure the measurement changed, and the rules about the
    # effective batch itself (the measured quantity: a finding both ways is confirmed)
    if onames is not mnames:
        judged = [
            r
            for r in engine.rules
            if r.code not in codes and any(_reads(r, _batch_key(k)) for k in (changed | {"effective_batch"}))
        ]
        if judged:
            remeasured = {_key(f): f for f in run_rules(judged, onames)}
            judged_codes = {r.code for r in judged}
            about_batch = {r.code for r in judged if _reads(r, _batch_key("effective_batch"))}
            static_by_key = {_key(f): f for f in out if f.run == plan.name and f.rule in judged_codes}
            for key, f in static_by_key.items():
                if key in remeasured:
                    f.evidence = "measured"
                    f.message = remeasured[key].message.rstrip()
                    if f.rule in about_batch:
                        f.message += " (confirmed by the --verify measurement)"
                    rv.confirmed.append(f"{f.rule} {_where(f)}")
                else:
                    out.remove(f)
                    rv.refuted.append(
                        f"{f.rule} at {_where(f)} not confirmed: measured world size {mw}, "
                        f"effective batch {mb} (static finding dropped)"
                    )
            for key, m in remeasured.items():
                if key not in static_by_key:
                    m.evidence = "measured"
                    out.append(m)
                    rv.added.append(f"{m.rule} {_where(m)}")
    return out


def _where(f: Finding) -> str:
    return f"{f.location.file.name}:{f.location.line}:{f.location.col}"


def _probe_all(
    run_contexts: list[tuple[Any, dict[str, Any], Any]], options: ProbeOptions, verification: Verification
) -> Verification:
    """Probe every run. SIGINT, SIGTERM and SIGHUP end every probe process and remove the staging
    folder, then exit 128 + the signal number with one line saying so (advisor/pipeline/probe/signals.py)."""
    from advisor.pipeline.probe.signals import ProbeStopped, stop_on_signals, stopped_exit

    work: Path | None = None
    try:
        with stop_on_signals() as guard:
            try:
                quiet = ProbeProgress(options.progress)
                quiet.say("inspecting this machine (torch, CUDA)...")
                verification.device = device_info(options.python)
                if verification.device.get("error"):
                    verification.unavailable = verification.device["error"]
                    return verification
                refusal = choose_device(verification.device, options.device)
                if refusal is not None:
                    verification.unavailable, verification.refused = refusal, True
                    return verification
                work = options.work_dir or Path(tempfile.mkdtemp(prefix="gpu-advise-verify-"))
                with ProbeProgress(options.progress) as progress:
                    for plan, names, _ in run_contexts:
                        verification.runs.append(
                            probe_run(plan, names, verification.device, options, work, progress)
                        )
            finally:
                guard.hold()  # a signal from here on is recorded: the clean-up runs to its end
                if work is not None and options.work_dir is None:
                    shutil.rmtree(work, ignore_errors=True)
            guard.check()
    except ProbeStopped as stop:
        stopped_exit(stop, staging=str(work) if work is not None and options.work_dir is None else None)
    return verification


def verify_stage(
    run_contexts: list[tuple[Any, dict[str, Any], Any]],
    engine: Any,
    catalog: list[Any],
    findings: list[Finding],
    settings: Any,
    options: Any,
    recorded: Path | None = None,
) -> tuple[list[Finding], Verification | None]:
    """Probe (or read recorded measurements for) every run and fold the measurements into the findings."""
    probe_options: ProbeOptions | None = getattr(options, "verify", None)
    if probe_options is None:
        if recorded is None:
            return findings, None
        verification = load_recorded(Path(recorded), [plan for plan, _, _ in run_contexts])
    else:
        verification = Verification(
            source="probe",
            options={
                "steps": probe_options.steps,
                "warmup": probe_options.warmup,
                "timeout": probe_options.timeout,
                "scaling": probe_options.scaling,
                "online": probe_options.online,
                "real_weights": probe_options.real_weights,
            },
        )
        missing = unavailable_message()
        if missing:
            if recorded is not None:  # no probe here, but what was recorded still counts
                verification = load_recorded(Path(recorded), [plan for plan, _, _ in run_contexts])
            verification.unavailable = missing
            if not verification.runs:
                return findings, verification
        else:
            verification = _probe_all(run_contexts, probe_options, verification)
            if verification.unavailable:
                return findings, verification
    by_name = {r.name: r for r in verification.runs}
    out = list(findings)
    for plan, names, ctx in run_contexts:
        rv = by_name.get(plan.name)
        if rv is None or rv.status in {"skipped", "unsupported", "stale"}:
            continue
        out = apply_measurements(rv, plan, names, ctx, engine, catalog, out, settings, options)
    seen: set[tuple[str, str, int, int, str]] = set()
    unique = []
    for f in out:
        if f.identity not in seen:
            seen.add(f.identity)
            unique.append(f)
    unique.sort(key=lambda f: f.sort_key)
    return unique, verification

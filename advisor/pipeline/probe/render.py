"""Text for the verify stage: measured against predicted, per run, per rank."""

from __future__ import annotations

from typing import Any

from advisor.core.escape import escape_text
from advisor.pipeline.probe.results import RunVerification


def _fmt(x: Any, unit: str = "") -> str:
    if x is None:
        return "-"
    if unit == "bytes":
        return f"{int(x):,}"
    if unit == "GiB":
        return f"{x:.2f} GiB"
    if unit == "s":
        return f"{x:.4g} s"
    if unit == "fraction":
        return f"{x:.0%}"
    if isinstance(x, float):
        return f"{x:,.1f}"
    return f"{x:,}" if isinstance(x, int) else str(x)


def _run(rv: RunVerification) -> list[str]:
    m = rv.measured
    spec = rv.spec
    head = f"verify {rv.name}: {rv.status}"
    if spec is not None:
        procs = m.get("world_size") or spec.nproc_arg or spec.nproc
        head += f", {spec.launcher}, {procs} process{'es' if procs != 1 else ''} on {spec.device}"
        if spec.device == "cpu":
            head += " (gloo; CPU timings)" if (m.get("world_size") or 1) > 1 else " (CPU timings)"
        elif m.get("device_name"):
            head += f" ({m['device_name']})"
        head += f", {spec.method}, {spec.weights_dtype} weights"
        if spec.mixed_precision:
            head += f" + {spec.mixed_precision} autocast"
    elif rv.source == "recorded":
        head += " (recorded)"
    lines = [head]
    if rv.reason:
        lines.append(f"  {rv.reason}")
    rows: list[tuple[str, str, str, str]] = []
    for c in rv.comparisons:
        unit = c["unit"]
        rows.append((c["quantity"], _fmt(c["predicted"], unit), _fmt(c["measured"], unit), c["off_text"]))
    shown = {c["quantity"] for c in rv.comparisons}
    pred = rv.predicted
    extra = [
        ("world size", None, m.get("world_size"), ""),
        ("effective batch", None, m.get("effective_batch"), ""),
        ("seconds per step", pred.step_time_s if pred else None, m.get("seconds_per_step"), "s"),
        ("tokens per second", pred.tokens_per_s if pred else None, m.get("tokens_per_s"), ""),
        (
            "peak allocated memory",
            pred.peak_allocated_gib if pred else None,
            m.get("peak_allocated_gib"),
            "GiB",
        ),
        ("peak reserved memory", pred.peak_reserved_gib if pred else None, m.get("peak_reserved_gib"), "GiB"),
        (
            "scaling efficiency",
            pred.scaling_efficiency if pred else None,
            m.get("scaling_efficiency"),
            "fraction",
        ),
    ]
    for q, p, v, unit in extra:
        if q in shown or v is None:
            continue
        timed = q in {"seconds per step", "tokens per second", "scaling efficiency"}
        note = "CPU timing" if timed and m.get("cpu_timings") else ""
        rows.append((q, _fmt(p, unit), _fmt(v, unit), note))
    if rows:
        w = max(len(r[0]) for r in rows)
        lines.append(f"  {'':<{w}}  {'predicted':>16}  {'measured':>16}")
        lines.extend(f"  {q:<{w}}  {p:>16}  {v:>16}  {o}" for q, p, v, o in rows)
    for r in rv.ranks:
        parts = [f"rank {r.get('rank')}: {r.get('status')}"]
        if r.get("samples_per_optimizer_step") is not None:
            parts.append(f"{r['samples_per_optimizer_step']} samples/step")
        if r.get("seconds_per_step") is not None:
            parts.append(f"{r['seconds_per_step']:.4g} s/step")
        if r.get("tokens_per_s") is not None:
            parts.append(f"{r['tokens_per_s']:,.0f} tokens/s")
        if r.get("max_memory_allocated") is not None:
            parts.append(
                f"max allocated {r['max_memory_allocated'] / 2**30:.2f} GiB, "
                f"reserved {r['max_memory_reserved'] / 2**30:.2f} GiB"
            )
        terms = r.get("terms") or {}
        if terms:
            total = sum(terms.get(k, 0) for k in ("param_bytes", "grad_bytes", "optimizer_bytes"))
            parts.append(f"params+grads+optimizer {total:,} B")
        lines.append("  " + ", ".join(parts))
    if rv.scaling:
        s = rv.scaling
        single = s.get("single") or {}
        if s.get("efficiency") is not None:
            lines.append(
                f"  scaling: 1 process: effective batch {single.get('effective_batch')}, "
                f"{single.get('tokens_per_s', 0):,.0f} tokens/s; {s.get('processes')} processes: effective "
                f"batch {m.get('effective_batch')}, {m.get('tokens_per_s', 0):,.0f} tokens/s; "
                f"efficiency {s['efficiency']:.0%}" + (" (CPU timings)" if m.get("cpu_timings") else "")
            )
        else:
            lines.append(f"  scaling: the 1-process probe ended with status {s.get('single_status')}")
    lines.extend(f"  note: {n}" for n in rv.notes)
    # a timeout's or an interruption's log ends in the traceback our own SIGTERM caused: not shown
    if rv.log_tail and rv.status not in {"ok", "stopped", "timeout", "interrupted"}:
        lines.append("  log (last lines):")
        lines.extend(f"    {x}" for x in rv.log_tail.splitlines()[-12:])
    return lines


def render_verification(verification: Any) -> str:
    if verification is None:
        return ""
    lines: list[str] = []
    if verification.unavailable and not verification.runs:
        return ""
    if verification.source == "recorded":
        lines.append(f"measurements recorded in {verification.recorded_from}")
    dev = verification.device or {}
    if verification.source == "probe" and dev:
        libs = dev.get("libraries") or {}
        where = (
            ", ".join(d.get("name", "?") for d in dev.get("devices") or [])
            or f"CPU only ({dev.get('cpu_count')} cores)"
        )
        lines.append(
            f"verify on {where}; torch {libs.get('torch')}, transformers {libs.get('transformers')}, "
            f"accelerate {libs.get('accelerate')}, peft {libs.get('peft')}"
            + (f", driver {dev['driver']}" if dev.get("driver") else "")
        )
    for rv in verification.runs:
        lines.extend(_run(rv))
    # run names, reasons and the launcher's log tail are not ours: one escaped line each
    return ("\n".join(escape_text(line) for line in lines) + "\n") if lines else ""

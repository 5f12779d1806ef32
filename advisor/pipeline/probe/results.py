"""Probe results: rank files -> one measurement per run, compared with the prediction.

The measurement becomes the `measured` fact namespace (Values located where the static fact they
check is written), so rule files judge it declaratively like any other fact: GA701 reads
`measured.comparisons`.
"""

from __future__ import annotations

from typing import Any

from advisor.core import datacodec
from advisor.core.document import Location
from advisor.core.provenance import Namespace, Value
from advisor.core.records import field, record
from advisor.pipeline.probe.predict import Prediction
from advisor.pipeline.probe.spec import ProbeSpec

GIB = float(2**30)
OK = {"ok", "stopped"}


@record(slots=True)
class RunVerification:
    name: str
    status: str  # ok, stopped, oom, failed, timeout, interrupted, skipped, unsupported
    source: str = "probe"  # probe | recorded
    reason: str | None = None
    spec: ProbeSpec | None = None
    command: list[str] = field(default_factory=list)
    wall_s: float | None = None
    ranks: list[dict[str, Any]] = field(default_factory=list)
    measured: dict[str, Any] = field(default_factory=dict)
    predicted: Prediction | None = None
    comparisons: list[dict[str, Any]] = field(default_factory=list)
    scaling: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    confirmed: list[str] = field(default_factory=list)
    refuted: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    leftovers_killed: int = 0
    log_tail: str = ""
    probe_ids: list[str] = field(default_factory=list)  # GPU_ADVISE_PROBE markers of its launches
    root: str | None = None  # the file that roots the run (absolute); the report keeps it relative

    @property
    def ok(self) -> bool:
        return self.status in OK

    def as_json(self) -> dict[str, Any]:
        from advisor.report import location_json

        comparisons = []
        for c in self.comparisons:
            row = {k: v for k, v in c.items() if k != "location"}
            loc = c.get("location")
            row["location"] = location_json(loc) if isinstance(loc, Location) else None
            comparisons.append(row)
        return {
            "name": self.name,
            "status": self.status,
            "source": self.source,
            "reason": self.reason,
            "digest": self.spec.digest if self.spec else self.measured.get("digest"),
            "command": self.command,
            "wall_s": self.wall_s,
            "measured": self.measured,
            "predicted": self.predicted.as_json() if self.predicted else None,
            "comparisons": comparisons,
            "scaling": self.scaling,
            "notes": self.notes,
            "findings": {"confirmed": self.confirmed, "refuted": self.refuted, "added": self.added},
            "ranks": self.ranks,
            "spec": datacodec.encode(self.spec) if self.spec else None,
            "leftovers_killed": self.leftovers_killed,
            "probe_ids": self.probe_ids,
            "log_tail": self.log_tail or None,
        }

    def summary(self) -> dict[str, Any]:
        """What `--format json` shows per run under "measured"."""
        m = self.measured
        out = {
            "status": self.status,
            "source": self.source,
            "device": m.get("device"),
            "cpu_timings": m.get("cpu_timings"),
            "world_size": m.get("world_size"),
            "effective_batch": m.get("effective_batch"),
            "seconds_per_step": m.get("seconds_per_step"),
            "tokens_per_s": m.get("tokens_per_s"),
            "peak_allocated_gib": m.get("peak_allocated_gib"),
            "peak_reserved_gib": m.get("peak_reserved_gib"),
            "scaling_efficiency": m.get("scaling_efficiency"),
        }
        if self.reason:
            out["reason"] = self.reason
        return out


def _mode(values: list[int]) -> int | None:
    return max(set(values), key=values.count) if values else None


def aggregate(ranks: list[dict[str, Any]], spec: ProbeSpec) -> dict[str, Any]:
    """One run's measurement from its rank files: sums over ranks for the batch, max for time/memory."""
    m: dict[str, Any] = {
        "device": spec.device,
        "cpu_timings": spec.device == "cpu",
        "faithful": spec.faithful,
        "seq_len": spec.seq_len,
        "digest": spec.digest,
    }
    if not ranks:
        return m
    good = [r for r in ranks if r.get("status") in OK]
    m["world_size"] = max(int(r.get("world_size") or 1) for r in ranks)
    m["ranks_reporting"] = len(ranks)
    per_rank = [r.get("samples_per_optimizer_step") for r in good]
    if good and all(isinstance(x, int) for x in per_rank) and len(good) == m["world_size"]:
        m["samples_per_rank"] = per_rank
        m["effective_batch"] = sum(per_rank)
    resolved = (good or ranks)[0].get("resolved") or {}
    m["per_device"] = resolved.get("per_device_train_batch_size")
    m["accumulation"] = resolved.get("gradient_accumulation_steps")
    m["optim"] = resolved.get("optim")
    m["backend"] = resolved.get("backend") or None
    sps = [r["seconds_per_step"] for r in good if isinstance(r.get("seconds_per_step"), int | float)]
    if sps and len(sps) == len(good):
        m["seconds_per_step"] = max(sps)
        m["steps_timed"] = min(len(r.get("step_seconds") or []) for r in good)
        if m.get("effective_batch"):
            m["tokens_per_step"] = m["effective_batch"] * spec.seq_len
            m["tokens_per_s"] = m["tokens_per_step"] / m["seconds_per_step"]
    terms: list[dict[str, Any]] = [r["terms"] for r in good if isinstance(r.get("terms"), dict)]
    if terms:
        for key in (
            "param_bytes",
            "grad_bytes",
            "optimizer_bytes",
            "optimizer_scalar_bytes",
            "trainable_params",
            "total_params",
        ):
            m[key] = max(int(t.get(key) or 0) for t in terms)
        m["terms_equal_across_ranks"] = all(t == terms[0] for t in terms)
    alloc = [r["max_memory_allocated"] for r in ranks if isinstance(r.get("max_memory_allocated"), int)]
    reserved = [r["max_memory_reserved"] for r in ranks if isinstance(r.get("max_memory_reserved"), int)]
    if alloc:
        m["peak_allocated_gib"] = max(alloc) / GIB
    if reserved:
        m["peak_reserved_gib"] = max(reserved) / GIB
    rss = [r["peak_rss_bytes"] for r in ranks if isinstance(r.get("peak_rss_bytes"), int)]
    if rss:
        m["peak_rss_gib"] = max(rss) / GIB
    ooms = [r for r in ranks if r.get("status") == "oom"]
    m["oom"] = bool(ooms)
    if ooms:
        m["oom_rank"] = ooms[0].get("rank")
        m["oom_at_step"] = ooms[0].get("oom_at_step")
        m["error"] = ooms[0].get("error")
        m["device_total_gib"] = (ooms[0].get("device_total_memory") or 0) / GIB or None
    failed = [r for r in ranks if r.get("status") == "failed"]
    if failed and "error" not in m:
        m["error"] = failed[0].get("error")
    stopped = [r.get("stopped") for r in ranks if r.get("stopped")]
    if stopped:
        m["stopped"] = stopped[0]
    names: set[str] = {str(r["device_name"]) for r in ranks if r.get("device_name")}
    if names:
        m["device_name"] = sorted(names)[0]
    return m


def status_of(
    ranks: list[dict[str, Any]], returncode: int | None, timed_out: bool, interrupted: bool, world: int | None
) -> str:
    statuses = [r.get("status") for r in ranks]
    if "oom" in statuses:
        return "oom"
    if interrupted:
        return "interrupted"
    if timed_out:
        return "timeout"
    if "failed" in statuses or returncode not in (0, None) or not ranks:
        return "failed"
    if world is not None and len(ranks) < world:
        return "failed"
    if "stopped" in statuses:
        return "stopped"
    return "ok"


# ---- comparisons ----------------------------------------------------------------------------------
def _bytes(n: float | None) -> str:
    if n is None:
        return "?"
    return f"{int(n):,} B ({n / 2**20:.2f} MiB)" if n < GIB else f"{int(n):,} B ({n / GIB:.2f} GiB)"


def _num(x: float | None, unit: str) -> str:
    if x is None:
        return "?"
    if unit == "GiB":
        return f"{x:.2f} GiB"
    if unit == "s":
        return f"{x:.3g} s"
    if unit == "fraction":
        return f"{x:.0%}"
    if unit == "bytes":
        return _bytes(x)
    return f"{x:g}"


def comparison(
    quantity: str,
    unit: str,
    predicted: float | None,
    measured: float | None,
    *,
    exact: bool,
    location: Location | None,
    severity: str = "info",
    why: str = "",
) -> dict[str, Any] | None:
    if predicted is None or measured is None:
        return None
    off = (predicted - measured) / measured if measured else (0.0 if predicted == measured else 1.0)
    if exact:
        diff = predicted - measured
        word = "B" if unit == "bytes" else unit
        off_text = (
            "equal" if diff == 0 else f"{abs(diff):,g} {word} {'more' if diff > 0 else 'fewer'} than measured"
        )
        if predicted == measured:
            off = 0.0
    else:
        off_text = f"{off:+.0%} off"
    return {
        "quantity": quantity,
        "unit": unit,
        "predicted": predicted,
        "measured": measured,
        "off": off,
        "exact": exact,
        "severity": severity,
        "location": location,
        "predicted_text": _num(predicted, unit),
        "measured_text": _num(measured, unit),
        "off_text": off_text,
        "why": why,
    }


def _origin(ns: Any, key: str) -> Location | None:
    e = ns.entry(key) if isinstance(ns, Namespace) else None
    return e.origin if isinstance(e, Value) else None


def compare(rv: RunVerification, names: dict[str, Any], fallback: Location) -> list[dict[str, Any]]:
    """Static facts and predictions against the measurement, each located where the prediction comes from."""
    m, pred, spec = rv.measured, rv.predicted, rv.spec
    batch = names.get("batch")
    training = names.get("training")
    out: list[dict[str, Any] | None] = []
    model_loc = _origin(training, "model_name_or_path") or _origin(names.get("model"), "name") or fallback
    if m.get("faithful", True) and batch is not None:
        world = m.get("world_size")
        eff = m.get("effective_batch")
        out.append(
            comparison(
                "world size",
                "processes",
                batch.world_size,
                world,
                exact=True,
                severity="warning",
                location=_origin(batch, "world_size") or fallback,
                why=". The launcher started a different number of processes than the static facts say",
            )
        )
        formula = getattr(batch.entry("effective_batch"), "note", None)
        out.append(
            comparison(
                "effective batch",
                "samples",
                batch.effective_batch,
                eff,
                exact=True,
                severity="warning",
                location=_origin(batch, "effective_batch") or fallback,
                why=(
                    f". Statically {formula}; measured as samples per optimizer step summed over "
                    f"{world} ranks"
                    if formula
                    else ". Measured as samples per optimizer step summed over ranks"
                ),
            )
        )
    if pred is not None and pred.error is None and spec is not None:
        exact = (
            spec.strategy in {"single", "ddp"}
            and spec.method in {"full", "lora"}
            and (m.get("terms_equal_across_ranks", True))
        )
        for q, p_val, m_key in (
            ("parameter bytes", pred.weights_bytes, "param_bytes"),
            ("gradient bytes", pred.grad_bytes, "grad_bytes"),
            ("optimizer-state bytes", pred.optimizer_bytes, "optimizer_bytes"),
        ):
            out.append(
                comparison(
                    q,
                    "bytes",
                    p_val,
                    m.get(m_key),
                    exact=exact,
                    location=model_loc,
                    why=". Measured right after the first optimizer step",
                )
            )
        if m.get("device") == "cuda" and not m.get("oom"):
            out.append(
                comparison(
                    "peak allocated memory",
                    "GiB",
                    pred.peak_allocated_gib,
                    m.get("peak_allocated_gib"),
                    exact=False,
                    location=model_loc,
                    why=". Measured as torch.cuda.max_memory_allocated",
                )
            )
            out.append(
                comparison(
                    "peak reserved memory",
                    "GiB",
                    pred.peak_reserved_gib,
                    m.get("peak_reserved_gib"),
                    exact=False,
                    location=model_loc,
                    why=". Measured as torch.cuda.max_memory_reserved",
                )
            )
            out.append(
                comparison(
                    "seconds per step",
                    "s",
                    pred.step_time_s,
                    m.get("seconds_per_step"),
                    exact=False,
                    location=fallback,
                    why=". Measured per optimizer step after warm-up",
                )
            )
            if rv.scaling and rv.scaling.get("efficiency") is not None:
                out.append(
                    comparison(
                        "scaling efficiency",
                        "fraction",
                        pred.scaling_efficiency,
                        rv.scaling.get("efficiency"),
                        exact=False,
                        location=fallback,
                        why=f". Measured: tokens/s at {rv.scaling.get('processes')} processes "
                        "over that many times tokens/s on one",
                    )
                )
    return [c for c in out if c is not None]


def measured_namespace(rv: RunVerification, names: dict[str, Any], fallback: Location) -> Namespace:
    """The `measured` facts rules read (evidence "measured")."""
    from advisor.facts.stage_namespaces import MeasuredFacts

    ns = MeasuredFacts()  # its sets are checked against the declared facts
    m = rv.measured
    batch = names.get("batch")
    root = fallback

    def put(key: str, value: Any, origin: Location | None = None) -> None:
        if value is not None:
            ns.set(key, Value(value, origin or root, "measured", note=f"--verify ({rv.source})"))

    put("status", rv.status)
    put("source", rv.source)
    for key in (
        "device",
        "device_name",
        "cpu_timings",
        "faithful",
        "per_device",
        "accumulation",
        "seq_len",
        "samples_per_rank",
        "seconds_per_step",
        "tokens_per_s",
        "tokens_per_step",
        "peak_allocated_gib",
        "peak_reserved_gib",
        "param_bytes",
        "grad_bytes",
        "optimizer_bytes",
        "oom_rank",
        "oom_at_step",
        "error",
        "stopped",
    ):
        put(key, m.get(key))
    put("world_size", m.get("world_size"), _origin(batch, "world_size"))
    put("effective_batch", m.get("effective_batch"), _origin(batch, "effective_batch"))
    if rv.status == "oom":  # where it ran out, located at the per-device batch it ran out with
        pred = rv.predicted
        total = m.get("device_total_gib")
        oom = {
            "rank": m.get("oom_rank"),
            "step": m.get("oom_at_step"),
            "device": m.get("device_name") or "the GPU",
            "total_gib": total or None,
            "predicted_gib": pred.peak_allocated_gib if pred is not None else None,
        }
        put("oom", oom, _origin(names.get("training"), "per_device_train_batch_size"))
    scaling = rv.scaling or {}
    put("scaling_efficiency", m.get("scaling_efficiency", scaling.get("efficiency")))
    put("scaling_processes", m.get("scaling_processes", scaling.get("processes")))
    ns.set("comparisons", Value(rv.comparisons, root, "measured"))
    return ns

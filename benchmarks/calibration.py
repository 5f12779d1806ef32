"""Calibration of the memory and time estimates through the user's path.

Every row is a folder under benchmarks/data/ (memory/GTxx, time/Txx): the config files a user would write
(launch.sh, the TRL/HF recipe train.yaml, accelerate.yaml for multi-GPU runs, hw.yaml) and meta.json with
the published measurement, its grade and source. This script runs `gpu-advise estimate . -H hw.yaml
--format json` in each folder exactly as a user would, reads the estimate from the JSON, and prints per row
the estimate, the measurement and the error (per memory component where the source gives components), then
median and p90 |error| for peak memory and for throughput, the fit/OOM agreement and every row that got no
answer with the tool's reason. Rows marked `"expressible": false` in meta.json (settings no config file can
write) are reported separately and never enter the headline.

meta.json (see benchmarks/data/README.md):
    memory: {metric: nvidia-smi | reserved | allocated | active, value_gib, cuda_context_gib?, components?}
    time:   {metric: tokens_per_s | samples_per_s | step_s, value, scope: global | per_gpu,
             tokens_per_sample? (samples_per_s), tokens_per_step? (step_s), grade? (its own, else the row's)}
    outcome: fits | oom | unknown (the measured run is not the HF recipe);  grade A/B/C
    source: repository:path@commit or URL;  translation, notes

The memory metric is read off the estimate's breakdown: nvidia-smi rows take the whole peak (with the CUDA
context the row's own source measured, when it gives one), reserved rows drop the CUDA context, allocated and
active rows also drop the allocator overhead; paged optimizer state lives outside the torch allocator.

Both sets print a per-source table (rows, median |error| for memory and throughput, unanswered rows). The
held-out set (`--set heldout`: benchmarks/data/heldout/<ID>/, sources the estimator was never calibrated on,
listed in benchmarks/data/README.md) is run the same way and reported on its own, never mixed into the
default calibration headline. The fresh set (`--set fresh`: benchmarks/data/fresh/<ID>/) is a second referee
from sources neither set used, collected after the held-out set had been looked at; nothing is tuned on it.

Run: python benchmarks/calibration.py [--set calibration|heldout|fresh] [--kind memory|time] [--rows GT01,T24]
     [--json OUT] [--in-process]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"
KINDS = ("memory", "time")
# the folders under DATA each set reads
SETS = {"calibration": KINDS, "heldout": ("heldout",), "fresh": ("fresh",)}
CONTEXT_ITEM = "CUDA context"  # the breakdown item of the assumed context (advisor/estimate/memory/peak.py)


@dataclass(slots=True)
class Row:
    id: str
    folder: Path
    meta: dict[str, Any]

    @property
    def expressible(self) -> bool:
        return bool(self.meta.get("expressible", True))

    @property
    def hardware(self) -> str:
        hw = self.meta.get("hardware")
        return str(hw) if hw else "hw.yaml"


@dataclass(slots=True)
class Result:
    id: str
    grade: str
    expressible: bool
    translated: bool  # some setting of the source was written as its nearest HF/TRL equivalent
    memory_measured: float | None = None
    memory_estimate: float | None = None
    memory_metric: str | None = None
    tps_measured: float | None = None
    tps_estimate: float | None = None
    outcome: str | None = None
    verdict: str | None = None
    components: list[tuple[str, float, float | None]] = field(default_factory=list)
    reason: str | None = None  # why the tool gave no answer
    time_reason: str | None = None
    notes: list[str] = field(default_factory=list)
    implied_mfu: float | None = None  # the estimate's MFU scaled by measured / estimated throughput
    source: str = "?"  # the publication the row comes from (source_set, else source without its commit)
    time_grade: str | None = None  # the throughput's own grade (meta time.grade), else the row's

    @property
    def tps_grade(self) -> str:
        return self.time_grade or self.grade

    @property
    def plausible_time(self) -> bool:
        """False when the measurement implies more than the GPU's dense peak under the tool's FLOP count."""
        return self.implied_mfu is None or self.implied_mfu <= 1.0

    @property
    def memory_error(self) -> float | None:
        return _rel(self.memory_estimate, self.memory_measured)

    @property
    def tps_error(self) -> float | None:
        return _rel(self.tps_estimate, self.tps_measured)


def _rel(estimate: float | None, measured: float | None) -> float | None:
    if estimate is None or not measured:
        return None
    return (estimate - measured) / measured


def load_rows(root: Path = DATA, only: set[str] | None = None, folders: tuple[str, ...] = KINDS) -> list[Row]:
    """Every row folder (one holding meta.json) under root/<folder> for each folder, sorted by id."""
    rows = []
    for kind in folders:
        for meta_path in sorted((root / kind).glob("*/meta.json")):
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            rid = str(meta.get("id", meta_path.parent.name))
            if only and rid not in only:
                continue
            rows.append(Row(id=rid, folder=meta_path.parent, meta=meta))
    return rows


def _command() -> list[str]:
    exe = shutil.which("gpu-advise")
    if exe:
        return [exe]
    return [sys.executable, "-c", "from advisor.cli import main; main()"]


def run_estimate(row: Row, in_process: bool = False) -> tuple[dict[str, Any] | None, str | None]:
    """`gpu-advise estimate . -H <hw> --format json` in a copy of the row's folder outside this repository,
    as tests/core/test_corpus3.py checks its entries: in place, the project root would be this checkout
    (advisor/sources/boundary.py), and this repository's pyproject.toml pins (transformers>=...) would
    stand for the row's stack where the row gives none. (the run's report, error)"""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / row.folder.name
        shutil.copytree(row.folder, folder)
        return _estimate_in(folder, row, in_process)


def _estimate_in(folder: Path, row: Row, in_process: bool) -> tuple[dict[str, Any] | None, str | None]:
    args = ["estimate", ".", "-H", row.hardware, "--format", "json"]
    if in_process:
        from typer.testing import CliRunner

        from advisor.cli import app

        cwd = os.getcwd()
        try:
            os.chdir(folder)
            res = CliRunner().invoke(app, args)
        finally:
            os.chdir(cwd)
        code, out, err = res.exit_code, res.stdout, getattr(res, "stderr", "") or ""
    else:
        env = dict(os.environ, HF_HUB_OFFLINE="1")
        proc = subprocess.run(
            _command() + args, cwd=folder, capture_output=True, text=True, env=env, timeout=120
        )
        code, out, err = proc.returncode, proc.stdout, proc.stderr
    if code != 0:
        lines = (err or out).strip().splitlines()
        return None, f"exit {code}: {lines[-1] if lines else 'no output'}"
    try:
        doc = json.loads(out)
    except json.JSONDecodeError as exc:
        return None, f"output is not JSON: {exc}"
    runs = doc.get("runs") or []
    if not runs:
        return None, "no run found in the folder"
    if len(runs) > 1:
        return None, f"{len(runs)} runs found in the folder"
    return runs[0], None


def memory_in_metric(report: dict[str, Any], metric: str, cuda_context_gib: float | None) -> float:
    """The estimate's peak in the row's own metric: the JSON's own allocated / reserved / device figure
    (advisor/estimate/memory/peak.py: reserved = allocated + allocator overhead + freed blocks still held;
    device = reserved + CUDA context + NCCL + paged optimizer state), as a user reads it."""
    mem = report.get("memory") or {}
    kind = {"allocated": "allocated", "active": "allocated", "reserved": "reserved", "nvidia-smi": "device"}
    if metric not in kind:
        raise ValueError(f"unknown memory metric {metric!r}")
    figure = float(mem[kind[metric]]["gib"])
    if metric == "nvidia-smi" and cuda_context_gib is not None:
        # the context the row's own source measured replaces the tool's assumed one (how the row measured)
        items = report.get("breakdown") or []
        assumed = sum(float(it["gib"]) for it in items if it["name"] == CONTEXT_ITEM)
        return figure - assumed + cuda_context_gib if assumed else figure
    return figure


def measured_tokens_per_s(time: dict[str, Any], gpus: int) -> float:
    """The row's throughput as global tokens/s."""
    metric, value = time["metric"], float(time["value"])
    if metric == "tokens_per_s":
        tps = value
    elif metric == "samples_per_s":
        tps = value * float(time["tokens_per_sample"])
    elif metric == "step_s":
        tps = float(time["tokens_per_step"]) / value
    else:
        raise ValueError(f"unknown time metric {metric!r}")
    return tps * gpus if time.get("scope") == "per_gpu" else tps


def _descriptor_gpus(row: Row) -> int:
    """GPUs of the row's hardware descriptor (1 when it names a built-in machine or cannot be read)."""
    import yaml

    try:
        data = yaml.safe_load((row.folder / row.hardware).read_text(encoding="utf-8"))
        return int(data["gpus"]["count"]) * int(data.get("nodes", 1))
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError):
        return 1


def evaluate(row: Row, in_process: bool = False) -> Result:
    meta = row.meta
    res = Result(
        id=row.id,
        grade=str(meta.get("grade", "?")),
        expressible=row.expressible,
        translated=bool(meta.get("translated_settings")),
        outcome=meta.get("outcome"),
        source=source_of(meta),
        time_grade=(meta.get("time") or {}).get("grade"),
    )
    report, error = run_estimate(row, in_process)
    mem, time = meta.get("memory"), meta.get("time")
    if mem:
        res.memory_measured = float(mem["value_gib"])
        res.memory_metric = str(mem["metric"])
    if report is None or "unknown" in report:
        reason = error or str(report.get("unknown") if report else "no answer")
        res.reason = reason if len(reason) <= 240 else reason[:237] + "..."  # transformers lists every type
        if time:
            res.tps_measured = measured_tokens_per_s(time, _descriptor_gpus(row))
        return res
    gpus = int((report.get("hardware") or {}).get("gpus") or (report.get("setup") or {}).get("gpus") or 1)
    res.verdict = report.get("verdict")
    if mem:
        res.memory_estimate = memory_in_metric(
            report, res.memory_metric or "nvidia-smi", mem.get("cuda_context_gib")
        )
        by_name = {str(it["name"]): float(it["gib"]) for it in report.get("breakdown") or []}
        for name, value in (mem.get("components") or {}).items():
            res.components.append((name, float(value), by_name.get(name)))
    if time:
        res.tps_measured = measured_tokens_per_s(time, int((report.get("setup") or {}).get("gpus") or gpus))
        t = report.get("time") or {}
        if t.get("tokens_per_s"):
            res.tps_estimate = float(t["tokens_per_s"])
            setup = report.get("setup") or {}
            offloaded = "none" not in (
                setup.get("offload_optimizer", "none"),
                setup.get("offload_params", "none"),
            )
            if t.get("mfu") and res.tps_measured and not offloaded:  # offload time is not compute
                res.implied_mfu = float(t["mfu"]) * res.tps_measured / res.tps_estimate
        else:
            said = [a for a in report.get("assumptions") or [] if "peak" in a or "time" in a.lower()]
            res.time_reason = str(
                report.get("time_reason") or "; ".join(said) or "the JSON report has no time and no reason"
            )
    res.notes = [a for a in report.get("assumptions") or [] if a.startswith("tokens per sample")]
    return res


def unanswered_by_cause(results: list[Result]) -> dict[str, list[str]]:
    """Row ids per reason, with the quoted names (models, optimizers) folded so one cause is one line."""
    causes: dict[str, list[str]] = {}
    for r in results:
        cause = re.sub(r"'[^']*'", "'...'", r.reason or "no answer")
        causes.setdefault(cause, []).append(r.id)
    return dict(sorted(causes.items(), key=lambda kv: -len(kv[1])))


def source_of(meta: dict[str, Any]) -> str:
    """The row's publication: its source_set, else its source with the commit and query dropped (a
    result file, .json/.csv, stands for its folder: one benchmark publishes one file per run)."""
    if meta.get("source_set"):
        return str(meta["source_set"])
    src = str(meta.get("source") or "?").split("@", 1)[0].split("#", 1)[0]
    if src.endswith((".json", ".csv")) and "/" in src.split(":", 1)[-1]:
        src = src.rsplit("/", 1)[0]
    return src


def _pct(values: list[float], q: float) -> float:
    xs = sorted(values)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def summary(errors: list[float]) -> dict[str, float | int]:
    """n, median, p90 and max of |error| in percent."""
    abs_pct = [abs(e) * 100 for e in errors]
    if not abs_pct:
        return {"n": 0}
    return {
        "n": len(abs_pct),
        "median": statistics.median(abs_pct),
        "p90": _pct(abs_pct, 0.9),
        "max": max(abs_pct),
    }


def _fmt_summary(label: str, s: dict[str, float | int]) -> str:
    if not s.get("n"):
        return f"  {label:34} n= 0"
    return (
        f"  {label:34} n={s['n']:2d}  median |error| {s['median']:5.1f}%  p90 {s['p90']:5.1f}%  "
        f"max {s['max']:6.1f}%"
    )


def _num(v: float | None, fmt: str) -> str:
    return format(v, fmt) if v is not None else "-"


def _err(e: float | None) -> str:
    return f"{e * 100:+6.1f}%" if e is not None else "      -"


def report(results: list[Result]) -> dict[str, Any]:
    """Print the per-row table and the headline; return the headline figures."""
    print(
        f"{'row':5} {'gr':3} {'metric':10} {'mem meas':>8} {'mem est':>8} {'error':>7} | "
        f"{'tok/s meas':>10} {'tok/s est':>10} {'error':>7} | fit"
    )
    for r in results:
        fit = f"{r.outcome or '-'}/{r.verdict or '-'}"
        flag = "" if r.expressible else "  [not expressible: separate]"
        flag += "  [translated]" if r.translated else ""
        print(
            f"{r.id:5} {r.grade:3} {(r.memory_metric or '-'):10} {_num(r.memory_measured, '8.2f')} "
            f"{_num(r.memory_estimate, '8.2f')} {_err(r.memory_error)} | {_num(r.tps_measured, '10.0f')} "
            f"{_num(r.tps_estimate, '10.0f')} {_err(r.tps_error)} | {fit}{flag}"
        )
        for name, measured, est in r.components:
            error = _err(_rel(est, measured))
            print(f"      {name:28} measured {measured:7.2f}  estimate {_num(est, '7.2f')}  {error}")
        for note in r.notes:
            print(f"      {note[:104]}")
    head = [r for r in results if r.expressible]
    implausible = [r for r in head if not r.plausible_time]
    out: dict[str, Any] = {}
    print("\nheadline (rows written as configs):")
    for label, key, pick in (
        ("peak memory, all rows", "memory", lambda r: r.memory_error),
        (
            "peak memory, exact rows",
            "memory_exact",
            lambda r: None if r.translated else r.memory_error,
        ),
        ("throughput, all rows", "throughput", lambda r: r.tps_error if r.plausible_time else None),
        (
            "throughput, exact rows",
            "throughput_exact",
            lambda r: None if r.translated or not r.plausible_time else r.tps_error,
        ),
    ):
        errs = [e for e in (pick(r) for r in head) if e is not None]
        out[key] = summary(errs)
        print(_fmt_summary(label, out[key]))
    for grade in ("A", "B", "C"):
        m = [r.memory_error for r in head if r.grade.startswith(grade) and r.memory_error is not None]
        t = [
            r.tps_error
            for r in head
            if r.tps_grade.startswith(grade) and r.tps_error is not None and r.plausible_time
        ]
        print(_fmt_summary(f"grade {grade}: memory", summary(m)))
        print(_fmt_summary(f"grade {grade}: throughput", summary(t)))
    judged = [r for r in head if r.outcome in ("fits", "oom") and r.verdict]
    agree = sum((r.outcome == "oom") == (r.verdict == "does not fit") for r in judged)
    out["fit_agreement"] = {"agree": agree, "judged": len(judged)}
    print(f"  fit/OOM verdict agrees with the outcome: {agree} of {len(judged)}")
    for r in judged:
        if (r.outcome == "oom") != (r.verdict == "does not fit"):
            print(f"    {r.id}: measured {r.outcome}, estimate says {r.verdict}")
    unanswered = [r for r in head if r.reason]
    no_time = [r for r in head if not r.reason and r.tps_measured is not None and r.tps_estimate is None]
    out["unanswered"] = len(unanswered) + len(no_time)
    print(f"  rows with no answer: {len(unanswered)} (no estimate), {len(no_time)} (no time estimate)")
    for r in unanswered:
        print(f"    {r.id}: {r.reason}")
    for r in no_time:
        print(f"    {r.id}: time: {r.time_reason}")
    causes = unanswered_by_cause(unanswered)
    out["unanswered_by_cause"] = causes
    if causes:
        print("  rows with no estimate, by cause (quoted names folded):")
        for cause, ids in causes.items():
            more = ", ..." if len(ids) > 6 else ""
            print(f"    {len(ids):3d}  {cause[:100]}  ({', '.join(ids[:6])}{more})")
    if implausible:
        print("  throughput rows left out (the measurement implies more than the GPU's dense peak):")
        for r in implausible:
            print(f"    {r.id}: implied MFU {r.implied_mfu:.2f}, error {_err(r.tps_error)}")
    out["per_source"] = per_source(head)
    apart = [r for r in results if not r.expressible]
    if apart:
        print("\nrows that cannot be written as configs (not in the headline):")
        for r in apart:
            print(f"  {r.id}: memory {_err(r.memory_error)} throughput {_err(r.tps_error)}")
    return out


def per_source(results: list[Result]) -> dict[str, dict[str, Any]]:
    """Print and return, per source: rows, memory and throughput median |error| and unanswered rows."""
    by: dict[str, list[Result]] = {}
    for r in results:
        by.setdefault(r.source, []).append(r)
    print("\nper source (rows written as configs):")
    print(
        f"  {'source':44} {'rows':>4} | {'mem n':>5} {'median':>7} | {'tok/s n':>7} {'median':>7} | "
        "unanswered"
    )
    table: dict[str, dict[str, Any]] = {}
    for name in sorted(by):
        rows = by[name]
        mem = summary([r.memory_error for r in rows if r.memory_error is not None])
        tps = summary([r.tps_error for r in rows if r.tps_error is not None and r.plausible_time])
        asked_mem = sum(r.memory_measured is not None for r in rows)
        asked_tps = sum(r.tps_measured is not None for r in rows)
        no_mem = sum(r.memory_measured is not None and r.memory_estimate is None for r in rows)
        no_tps = sum(r.tps_measured is not None and r.tps_estimate is None for r in rows)
        table[name] = {
            "rows": len(rows),
            "memory": mem,
            "throughput": tps,
            "memory_unanswered": f"{no_mem}/{asked_mem}",
            "throughput_unanswered": f"{no_tps}/{asked_tps}",
        }

        def med(s: dict[str, float | int]) -> str:
            return f"{s['median']:6.1f}%" if s.get("n") else "      -"

        print(
            f"  {name[:44]:44} {len(rows):4d} | {mem.get('n', 0):5d} {med(mem)} | {tps.get('n', 0):7d} "
            f"{med(tps)} | memory {no_mem}/{asked_mem}, time {no_tps}/{asked_tps}"
        )
    return table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", help="comma-separated row ids")
    ap.add_argument("--kind", choices=KINDS, help="only rows with this measurement")
    ap.add_argument("--json", type=Path, help="write the per-row results and the headline here")
    ap.add_argument("--in-process", action="store_true", help="the CLI runner instead of a subprocess")
    ap.add_argument("--data", type=Path, default=DATA, help="the folder of row folders")
    ap.add_argument(
        "--set",
        choices=sorted(SETS),
        default="calibration",
        help="calibration (memory/, time/: the default headline), heldout or fresh (sources never fitted on)",
    )
    args = ap.parse_args(argv)
    only = {s.strip() for s in args.rows.split(",")} if args.rows else None
    rows = [
        r for r in load_rows(args.data, only, SETS[args.set]) if args.kind is None or r.meta.get(args.kind)
    ]
    print(f"set: {args.set} ({len(rows)} rows)")
    results = [evaluate(r, args.in_process) for r in rows]
    head = report(results)
    if args.json:
        data = {
            "set": args.set,
            "headline": head,
            "rows": [asdict(r) | {"memory_error": r.memory_error, "tps_error": r.tps_error} for r in results],
        }
        args.json.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    raise SystemExit(main())

"""Grid benchmark: the analytic memory estimate against the simulated training step, per term.

Single-GPU configurations: model families of the catalog x methods (full, LoRA on PEFT's default targets,
LoRA all-linear, QLoRA stand-in all-linear) x micro-batch/sequence x gradient checkpointing x optimizer
(fused vs foreach AdamW). Each configuration is simulated at 2 and 3 decoder layers and extrapolated to the
real depth (benchmarks/simulate.py); --check-scaling simulates a few at full depth to measure that
extrapolation. Writes benchmarks/data/simulate_grid.json: every row (simulated and analytic bytes per term)
and median / p90 |diff| per term, with provenance (torch / transformers / peft versions, date).

Run in the background, niced (2 shared cores; ~1-3 s per configuration):
    nice -n 10 python3 benchmarks/simulate_grid.py [--limit N] [--out PATH] [--check-scaling]
    nice -n 10 python3 benchmarks/simulate_grid.py --only EleutherAI/pythia-1.4b   # one family, merged
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import platform
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import simulate as S

OUT = Path(__file__).resolve().parent / "data" / "simulate_grid.json"
MODELS = (
    "meta-llama/Llama-3.2-1B",  # tied embeddings
    "meta-llama/Meta-Llama-3-8B",
    "Qwen/Qwen2.5-0.5B",  # qkv biases, tied
    "Qwen/Qwen3-0.6B",  # q/k norms
    "mistralai/Mistral-7B-v0.1",
    "EleutherAI/pythia-1.4b",  # gpt_neox: parallel block, LayerNorm, fused qkv
    "microsoft/Phi-3-mini-4k-instruct",  # fused qkv / gate_up
    "google/gemma-2-2b",  # softcapping, sandwich norms, sliding window
)
METHODS = (("full", None), ("lora", None), ("lora", ["all-linear"]), ("qlora", ["all-linear"]))
SHAPES = ((1, 1024), (4, 512))
OPTIMIZERS = ("adamw_torch_fused", "adamw_torch", "adamw_hf", "sgd")
DEPTHS = (2, 3)


def configurations() -> list[dict[str, Any]]:
    rows = []
    for model, (method, targets), gc_on, (b, s), opt in itertools.product(
        MODELS, METHODS, (False, True), SHAPES, OPTIMIZERS
    ):
        rows.append(
            dict(model=model, method=method, targets=targets, gc=gc_on, batch=b, seq=s, optimizer=opt)
        )
    return rows


def _run(row: dict[str, Any]) -> S.SimRun:
    cfg = S._catalog_config(row["model"])
    attn = "eager" if cfg["model_type"] == "gemma2" else "sdpa"  # transformers recommends eager for gemma2
    return S.SimRun(
        config=cfg,
        method=row["method"],
        lora_targets=row["targets"],
        micro_batch=row["batch"],
        seq=row["seq"],
        gradient_checkpointing=row["gc"],
        optimizer=row["optimizer"],
        attn=attn,
    )


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """median and p90 |analytic - simulated| / simulated per term (terms of at least 1 MiB simulated)."""
    per: dict[str, list[float]] = {}
    gib: dict[str, list[float]] = {}
    for r in rows:
        for term, (sim, ana) in r.get("compare", {}).items():
            gib.setdefault(term, []).append(abs(ana - sim) / S.GIB)
            if sim >= 2**20:
                per.setdefault(term, []).append(abs(ana - sim) / sim)
    out = {}
    for term in gib:
        rel = per.get(term, [])
        out[term] = {
            "n": len(gib[term]),
            "median_rel": statistics.median(rel) if rel else None,
            "p90_rel": _pct(rel, 0.9) if rel else None,
            "over_5pct": sum(1 for x in rel if x > 0.05),
            "median_gib": statistics.median(gib[term]),
            "p90_gib": _pct(gib[term], 0.9),
        }
    return out


def provenance() -> dict[str, Any]:
    import peft
    import torch
    import transformers

    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "peft": peft.__version__,
        "python": platform.python_version(),
        "depths": list(DEPTHS),
        "method": "fake CPU tensors, 512-byte rounding, extrapolated from the depths to each model's own",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--check-scaling", action="store_true", help="also simulate a few at full depth")
    ap.add_argument(
        "--reanalyse", action="store_true", help="recompute the analytic side of --out's simulated rows"
    )
    ap.add_argument(
        "--only",
        action="append",
        metavar="MODEL",
        help="re-simulate only this model's rows (repeatable) and merge them into --out's other rows",
    )
    a = ap.parse_args(argv)
    rows: list[dict[str, Any]] = []
    todo = configurations()[: a.limit]
    if a.only:
        unknown = set(a.only) - set(MODELS)
        if unknown:
            raise SystemExit(
                f"--only: not a grid model: {', '.join(sorted(unknown))} (MODELS: {', '.join(MODELS)})"
            )
        todo = [r for r in todo if r["model"] in a.only]
    t0 = time.perf_counter()
    if a.reanalyse:
        data = json.loads(a.out.read_text(encoding="utf-8"))
        rows = [reanalyse(r) for r in data["configurations"]]
        _write(a.out, rows, data.get("scaling_check", []), data.get("provenance"))
        print(json.dumps(summarise([r for r in rows if "compare" in r]), indent=1))
        return 0
    # the optimizers share one forward and backward (simulate_each): rows come in groups of them
    groups = [todo[i : i + len(OPTIMIZERS)] for i in range(0, len(todo), len(OPTIMIZERS))]
    for group in groups:
        try:
            run = _run(group[0])
            sims = S.simulate_each(run, [r["optimizer"] for r in group], DEPTHS, both_gc=False)
        except Exception as exc:  # a family the simulation cannot run is a row with its reason
            for row in group:
                row["error"] = f"{type(exc).__name__}: {exc}"
            traceback.print_exc(limit=2)
            sims = {}
        for row in group:
            if row["optimizer"] in sims:
                sim = sims[row["optimizer"]]
                row["simulated"] = {"terms": sim.terms, "phases": sim.phases, "seconds": sim.seconds}
                reanalyse(row)
            rows.append(row)
        print(
            f"[{len(rows)}/{len(todo)} {time.perf_counter() - t0:.0f}s] {row['model']} {row['method']} "
            f"{row['targets']} gc={row['gc']} {row['batch']}x{row['seq']}",
            flush=True,
        )
        if a.only:
            _merge(a.out, rows, a.only)
        elif len(rows) % 8 == 0 or len(rows) == len(todo):
            _write(a.out, rows, [])
    scaling: list[dict[str, Any]] = []
    if a.check_scaling:
        for row in (todo[0], todo[2 * len(SHAPES) * len(OPTIMIZERS) + 1]):
            run = _run(row)
            ext = S.simulate(run, DEPTHS, both_gc=False)
            full = S.simulate(run, None, both_gc=False)
            scaling.append(
                {
                    "row": {k: row[k] for k in ("model", "method", "targets", "gc", "batch", "seq")},
                    "extrapolated": ext.terms | ext.phases,
                    "full_depth": full.terms | full.phases,
                }
            )
        _write(a.out, rows, scaling)
    print(json.dumps(summarise([r for r in rows if "compare" in r]), indent=1))
    return 0


_KEY = ("model", "method", "targets", "gc", "batch", "seq", "optimizer")


def _merge(path: Path, new: list[dict[str, Any]], models: list[str]) -> None:
    """Replace --out's rows of the same configuration by the new ones; the provenance records which models
    were re-simulated when (the rest keep their own simulation)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    fresh = {tuple(json.dumps(r[k]) for k in _KEY): r for r in new}
    rows = [fresh.pop(tuple(json.dumps(r[k]) for k in _KEY), r) for r in data["configurations"]]
    rows += list(fresh.values())
    prov = dict(data.get("provenance") or provenance())
    now = provenance()
    stamp = {"models": sorted(models), "date": now["date"], "torch": now["torch"]}
    prov["resimulated"] = [p for p in prov.get("resimulated", []) if p.get("models") != stamp["models"]] + [
        stamp
    ]
    _write(path, rows, data.get("scaling_check", []), prov)


def reanalyse(row: dict[str, Any]) -> dict[str, Any]:
    """The row's analytic side (and comparison) from the current memory model; the simulation is kept."""
    if "simulated" not in row:
        return row
    run = _run(row)
    t, p = row["simulated"]["terms"], row["simulated"]["phases"]
    steady = t["weights"] + t["buffers"] + t["optimizer states"] + max(p.values())
    sim = S.SimResult(terms=t, phases=p, peak_first_step=0.0, peak_steady=steady)
    row["compare"] = S.compare(sim, S.analytic(run))
    return row


def _write(
    path: Path, rows: list[dict[str, Any]], scaling: list[dict[str, Any]], prov: dict[str, Any] | None = None
) -> None:
    ok = [r for r in rows if "compare" in r]
    data = {
        "provenance": prov or provenance(),
        "rows": len(rows),
        "failed": [
            {"model": r["model"], "method": r["method"], "error": r["error"]} for r in rows if "error" in r
        ],
        "summary": summarise(ok),
        "scaling_check": scaling,
        "configurations": rows,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str), encoding="utf-8")
    tmp.replace(path)


if __name__ == "__main__":
    raise SystemExit(main())

"""GPU check of the --verify probe against the estimator: measured vs predicted peak memory and step time.

Runs the probe (advisor.pipeline.probe.worker, the same code `gpu-advise verify` launches) on random-weight
models
shaped like Qwen2.5-0.5B and Qwen2.5-1.5B (configs from the built-in catalog), full fine-tuning in bf16
and LoRA (r=16, all linear layers), sequence 1024 and 2048, micro-batch 1 and 4, with and without
gradient checkpointing: 32 setups on one GPU, one process. Prints a table of measured against predicted
peak allocated / reserved memory and seconds per optimizer step, with the GPU, driver and library
versions, and writes it (Markdown + JSON) under benchmarks/results/.

    python benchmarks/verify_gpu.py                  # everything, within --budget-s (default 540 s)
    python benchmarks/verify_gpu.py --quick          # 0.5B only, batch 1 and 4 at seq 1024
    python benchmarks/verify_gpu.py --launch         # each setup through the real launcher (slower)

By default the setups run in this one process (import and CUDA start-up once: ~5 s per setup instead of
~20 s); --launch starts each one like `gpu-advise verify` does (python -m advisor.pipeline.probe.worker in
its own
process). Needs a CUDA GPU; on a machine without one it stops with a clear message (exit 2).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import gc
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

MODELS = {"Qwen2.5-0.5B": "Qwen/Qwen2.5-0.5B", "Qwen2.5-1.5B": "Qwen/Qwen2.5-1.5B"}
RESULTS = REPO / "benchmarks" / "results"


def _fail(message: str) -> None:
    print(f"verify_gpu.py: {message}", file=sys.stderr)
    raise SystemExit(2)


def _require_cuda() -> Any:
    try:
        import torch
    except ImportError:
        _fail("needs torch with CUDA: pip install torch==2.13.0 && pip install 'gpu-advise[verify]'")
    if not torch.cuda.is_available():
        _fail(
            "needs a CUDA GPU, and torch.cuda.is_available() is False on this machine "
            f"(torch {torch.__version__}, CUDA build {torch.version.cuda}). Run it where a GPU is lent; "
            "the CPU checks of the probe are in tests/probe."
        )
    return torch


def setups(quick: bool) -> list[dict[str, Any]]:
    rows = []
    models = ["Qwen2.5-0.5B"] if quick else list(MODELS)
    seqs = [1024] if quick else [1024, 2048]
    for model, method, seq, batch, gc_on in itertools.product(
        models, ["full", "lora"], seqs, [1, 4], [False, True]
    ):
        rows.append({"model": model, "method": method, "seq": seq, "batch": batch, "gc": gc_on})
    return rows


def make_spec(row: dict[str, Any], out: Path, steps: int, warmup: int) -> Any:
    from advisor.estimate import resolve_model
    from advisor.pipeline.probe.spec import LoraSpec, ProbeSpec

    info = resolve_model(MODELS[row["model"]])
    if info is None:
        _fail(f"{MODELS[row['model']]} is not in the built-in model catalog")
    return ProbeSpec(
        run=f"{row['model']}-{row['method']}-s{row['seq']}-b{row['batch']}-{'gc' if row['gc'] else 'nogc'}",
        launcher="python",
        nproc=1,
        device="cuda",
        model_name=MODELS[row["model"]],
        model_source=info.source,
        hf_config=dict(info.config),
        weights_dtype="bf16",
        mixed_precision="bf16",
        method=row["method"],
        lora=LoraSpec(r=16, alpha=32, dropout=0.05, targets="all-linear")
        if row["method"] == "lora"
        else None,
        seq_len=row["seq"],
        strategy="single",
        training_args={
            "per_device_train_batch_size": row["batch"],
            "gradient_accumulation_steps": 1,
            "gradient_checkpointing": row["gc"],
            "bf16": True,
            "learning_rate": 1e-5,
        },
        warmup_steps=warmup,
        steps=steps,
        deadline_s=120.0,
        out_dir=str(out),
    )


def run_in_process(spec: Any) -> dict[str, Any]:
    import torch

    from advisor.pipeline.probe import worker

    Path(spec.out_dir).mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"rank": 0, "world_size": 1, "device": "cuda", "status": "started"}
    started = time.monotonic()
    try:
        worker.run(spec.model_dump(), result, started)
        result["status"] = "stopped" if result.get("stopped") else "ok"
    except torch.OutOfMemoryError as exc:
        result["status"], result["error"] = "oom", str(exc).splitlines()[0]
    except Exception as exc:
        result["status"], result["error"] = "failed", f"{type(exc).__name__}: {exc}"
    finally:
        gc.collect()
        torch.cuda.empty_cache()
    result["elapsed_s"] = time.monotonic() - started
    return result


def run_launched(spec: Any, timeout: float) -> dict[str, Any]:
    from advisor.pipeline.probe.launcher import launch
    from advisor.pipeline.probe.spec import ProbeOptions, write_spec

    out = Path(spec.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_spec(spec, out / "spec.json")
    res = launch(spec, out / "spec.json", ProbeOptions(timeout=timeout, progress=False))
    if not res.ranks:
        return {"status": "timeout" if res.timed_out else "failed", "error": res.log_tail[-500:]}
    return res.ranks[0]


def _off(pred: float | None, meas: float | None) -> str:
    if pred is None or meas is None or not meas:
        return "-"
    return f"{(pred - meas) / meas:+.0%}"


def _g(x: float | None, fmt: str = ".2f") -> str:
    return "-" if x is None else format(x, fmt)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="Qwen2.5-0.5B at seq 1024 only (8 setups)")
    ap.add_argument("--launch", action="store_true", help="start every setup in its own process")
    ap.add_argument("--steps", type=int, default=5, help="timed optimizer steps after warm-up")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument(
        "--budget-s", type=float, default=540.0, help="start no new setup after this many seconds"
    )
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()

    torch = _require_cuda()
    from advisor.pipeline.probe.envinfo import collect
    from advisor.pipeline.probe.predict import predict

    device = collect()
    gpu = device["devices"][0]
    t0 = time.monotonic()
    rows = []
    with tempfile.TemporaryDirectory(prefix="verify-gpu-") as tmp:
        for i, row in enumerate(setups(args.quick)):
            spec = make_spec(row, Path(tmp) / str(i), args.steps, args.warmup)
            pred = predict(spec, 1, device)
            if time.monotonic() - t0 > args.budget_s:
                rows.append({**row, "status": "not run (time budget)", "pred": pred.as_json()})
                continue
            meas = run_launched(spec, 240) if args.launch else run_in_process(spec)
            alloc = meas.get("max_memory_allocated")
            reserved = meas.get("max_memory_reserved")
            terms = meas.get("terms") or {}
            rec = {
                **row,
                "status": meas.get("status"),
                "error": meas.get("error"),
                "measured": {
                    "peak_allocated_gib": alloc / 2**30 if alloc else None,
                    "peak_reserved_gib": reserved / 2**30 if reserved else None,
                    "seconds_per_step": meas.get("seconds_per_step"),
                    "tokens_per_s": meas.get("tokens_per_s"),
                    "param_bytes": terms.get("param_bytes"),
                    "grad_bytes": terms.get("grad_bytes"),
                    "optimizer_bytes": terms.get("optimizer_bytes"),
                },
                "pred": pred.as_json(),
            }
            rows.append(rec)
            m, p = rec["measured"], rec["pred"]
            print(
                f"[{time.monotonic() - t0:5.0f}s] {spec.run:<36} {rec['status']:<7} "
                f"alloc {_g(p['peak_allocated_gib'])}/{_g(m['peak_allocated_gib'])} GiB "
                f"({_off(p['peak_allocated_gib'], m['peak_allocated_gib'])}), "
                f"step {_g(p['step_time_s'], '.3f')}/{_g(m['seconds_per_step'], '.3f')} s "
                f"({_off(p['step_time_s'], m['seconds_per_step'])})",
                flush=True,
            )

    libs = device.get("libraries", {})
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    header = [
        f"# --verify probe vs estimator on {gpu['name']}",
        "",
        f"- GPU: {gpu['name']}, {gpu['total_memory'] / 2**30:.1f} GiB, "
        f"compute capability {gpu['capability']}",
        f"- driver {device.get('driver')}, CUDA (torch build) {device.get('torch_cuda')}",
        f"- torch {libs.get('torch')}, transformers {libs.get('transformers')}, "
        f"accelerate {libs.get('accelerate')}, peft {libs.get('peft')}, python {device.get('python')}",
        f"- {'launched per setup' if args.launch else 'in one process'}; {args.warmup} warm-up + "
        f"{args.steps} timed optimizer steps; random weights (bf16), bf16 autocast, HF default optimizer; "
        "LoRA r=16 all-linear",
        f"- run {stamp}, {time.monotonic() - t0:.0f} s",
        "",
        "| model | method | seq | batch | ckpt | status | alloc pred | alloc meas | off | reserved pred | "
        "reserved meas | off | s/step pred | s/step meas | off | param/grad/opt bytes |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines = []
    for r in rows:
        m, p = r.get("measured") or {}, r["pred"]
        exact = "-"
        if m.get("param_bytes") is not None:
            same = [
                m.get("param_bytes") == p["weights_bytes"],
                m.get("grad_bytes") == p["grad_bytes"],
                m.get("optimizer_bytes") == p["optimizer_bytes"],
            ]
            exact = "equal" if all(same) else "/".join("=" if s else "≠" for s in same)
        lines.append(
            f"| {r['model']} | {r['method']} | {r['seq']} | {r['batch']} | {'on' if r['gc'] else 'off'} | "
            f"{r['status']} | {_g(p['peak_allocated_gib'])} | {_g(m.get('peak_allocated_gib'))} | "
            f"{_off(p['peak_allocated_gib'], m.get('peak_allocated_gib'))} | {_g(p['peak_reserved_gib'])} | "
            f"{_g(m.get('peak_reserved_gib'))} | "
            f"{_off(p['peak_reserved_gib'], m.get('peak_reserved_gib'))} | "
            f"{_g(p['step_time_s'], '.3f')} | {_g(m.get('seconds_per_step'), '.3f')} | "
            f"{_off(p['step_time_s'], m.get('seconds_per_step'))} | {exact} |"
        )
    table = "\n".join(header + lines) + "\n"
    print()
    print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    name = "verify_gpu-" + "".join(c if c.isalnum() else "-" for c in gpu["name"]).strip("-") + f"-{stamp}"
    (args.out / f"{name}.md").write_text(table, encoding="utf-8")
    (args.out / f"{name}.json").write_text(
        json.dumps(
            {"device": device, "args": {k: str(v) for k, v in vars(args).items()}, "rows": rows},
            indent=2,
            default=str,
        ),
        encoding="utf-8",
    )
    print(f"written: {args.out / (name + '.md')} and .json")
    with contextlib.suppress(Exception):
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

"""Cold-start cost of the estimator's default path (a pre-commit hook pays it on every commit).

Times a fresh `python -c` that resolves meta-llama/Meta-Llama-3-8B from the built-in catalog, counts its
parameters and estimates memory and run time; median of 7 runs. The child asserts that torch, transformers
and huggingface_hub were never imported on that path (they are only needed for unknown model types, the HF
cache and --online).

Run: python benchmarks/estimate_speed.py
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = 7

CHILD = """
import sys
from advisor.estimate import TrainingSetup, estimate_memory, estimate_time, resolve_model
info = resolve_model("meta-llama/Meta-Llama-3-8B")
pc = info.count()
assert pc.total == 8_030_261_248, pc.total
s = TrainingSetup(model=pc, method="lora", lora_r=16, lora_targets=["all-linear"], micro_batch=4,
                  seq_len=2048, gradient_checkpointing=True, precision="bf16", amp=False,
                  optimizer="adamw_torch_fused")
m = estimate_memory(s)
t = estimate_time(s, 989.0, 365.0, "h100_sxm5_80gb", 8, total_tokens=1e8)
heavy = [name for name in ("torch", "transformers", "huggingface_hub") if name in sys.modules]
assert not heavy, f"heavy imports on the default path: {heavy}"
print(f"{m.peak_gib:.2f} {t.hours_n_gpus:.3f}")
"""


def main() -> int:
    env = dict(
        os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    )
    times = []
    out = ""
    for _ in range(RUNS):
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", CHILD], cwd=ROOT, env=env, capture_output=True, text=True
        )
        times.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            print(proc.stdout, proc.stderr, file=sys.stderr)
            return 1
        out = proc.stdout.strip()
    base = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
        base.append(time.perf_counter() - t0)
    print(f"resolve + count + memory + time for Meta-Llama-3-8B: result {out}")
    print(
        f"cold subprocess median of {RUNS}: {statistics.median(times) * 1000:.0f} ms "
        f"(bare interpreter {statistics.median(base) * 1000:.0f} ms); min {min(times) * 1000:.0f} ms, "
        f"max {max(times) * 1000:.0f} ms"
    )
    print("torch / transformers / huggingface_hub not imported: OK")
    return cli(env, base)


def cli(env: dict[str, str], base: list[float]) -> int:
    """`gpu-advise estimate meta-llama/Meta-Llama-3-8B` as a user types it (target: under 300 ms cold)."""
    cmd = [sys.executable, "-m", "advisor", "estimate", "meta-llama/Meta-Llama-3-8B"]
    # pip compiles an installed package's .pyc files; an editable checkout may have none
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "advisor")], check=True)
    probe = subprocess.run(
        [sys.executable, "-X", "importtime", *cmd[1:]], env=env, capture_output=True, text=True
    )
    if probe.returncode != 0:
        print(probe.stderr[-2000:], file=sys.stderr)
        return 1
    heavy = {
        line.rsplit("|", 1)[-1].strip()
        for line in probe.stderr.splitlines()
        if line.rsplit("|", 1)[-1].strip() in ("torch", "transformers", "huggingface_hub")
    }
    if heavy:
        print(f"heavy imports in `gpu-advise estimate`: {sorted(heavy)}", file=sys.stderr)
        return 1
    for label, extra in (("text", []), ("--format json", ["--format", "json"])):
        times = []
        for _ in range(RUNS):
            t0 = time.perf_counter()
            subprocess.run([*cmd, *extra], cwd=ROOT, env=env, capture_output=True, check=True)
            times.append(time.perf_counter() - t0)
        print(
            f"gpu-advise estimate meta-llama/Meta-Llama-3-8B, {label}: cold median "
            f"{statistics.median(times) * 1000:.0f} ms (min {min(times) * 1000:.0f}, bare interpreter "
            f"{statistics.median(base) * 1000:.0f} ms); target 300 ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

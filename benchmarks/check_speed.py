"""Start-up and throughput of `gpu-advise check` (the pre-commit path), with yamllint as a reference.

Issue 12 asks for a cold start of at most 1.5x yamllint's on the same files, measured side by side:
`--cold-only` runs `check fixtures/example` and `yamllint` on the example's YAML files alternately
(a, b, a, b: load from other processes falls on both alike) and prints both medians and the ratio.

Where the time goes (2-core sandbox shared with other jobs, `-X importtime`, cache warm): the
interpreter with this environment's site .pth files ~35 ms (yamllint pays it too); advisor.check and
what it imports (engine, discover, plan, facts, readers) ~32 ms; the estimator's parameter tables
(advisor.estimate.params) ~21 ms when a run names a model; the launch-script reader ~13 ms; PyYAML
~12 ms; the check's own work ~70 ms. typer (~25 ms, with click and platform) is no longer imported by
`check`: advisor/cli.py's main() parses check's usual options itself and builds the typer app only for
anything else. Measured paired on this machine: before that change check/yamllint 348/123 ms (2.82x),
after 275/123 ms (2.23x); `--cold-only` then gave 222/97 ms (2.29x). Not yet at 1.5x.
Measure with `python -X importtime -m advisor.cli check fixtures/example`. The environment sets
PYTHONDONTWRITEBYTECODE=1: run `python -m compileall -q advisor` first (`--cold-only` does), or every
module edited since its .pyc was written is compiled again on each run (milliseconds a module) and the
figures mean nothing.

Later (same machine, -X importtime medians of 3; in-process timers with every module preloaded, the
two quietest of six runs): the example's first run after its imports is ~45 ms against ~10 ms for the
same check repeated in one process, so the "work" is mostly first-use cost: the rule catalog from the
on-disk cache ~8 ms (6 of them decoding and re-validating it, advisor/datacodec.py; kept: an entry is
never trusted), parsing and checking the rule expressions on first use ~5 ms, the run's facts ~10 ms
(script AST ~2, estimate ~4), the document facts ~5 ms (pinned-version resolution ~3), discovery ~4 ms,
plans ~7 ms.
Imports: advisor.estimate ~21 ms (the example names a model, so it is needed; a run that names none
no longer loads it: advisor/estimate/__init__.py is lazy, -33 ms paired on fixtures/rules/GA203,
267 -> 234 ms), the launch-script reader ~15 ms, advisor.sources.hardware ~6.5 ms and the other
modules of frozen slotted dataclasses (93 classes at ~0.1-0.3 ms each). Skipping fact builders that
no selected rule reads buys little: the run summary needs `estimates`, which requires every builder
but `data` and `baseline`.

Prints, as medians of several runs on this machine:
  - cold start: one `gpu-advise check` process on the bundled example project (target <= 250 ms);
  - 200 config files checked in one call (target <= 2 s);
  - yamllint on the same files, and the ratio (yamllint only parses YAML; we parse, merge and judge).
The console script is run through the interpreter directly, not through a pyenv shim, which alone
adds ~80 ms of bash before Python starts.

    python benchmarks/check_speed.py [--runs 7]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"


def _time(cmd: list[str], cwd: Path, runs: int) -> list[float]:
    out = []
    subprocess.run(cmd, cwd=cwd, capture_output=True, check=False)  # warm the page cache and .pyc files
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, capture_output=True, check=False)
        out.append(time.perf_counter() - start)
    return out


def _two_hundred_configs(dest: Path) -> int:
    """200 config files: the corpus configs, repeated in numbered folders until there are 200."""
    sources = sorted(
        p
        for folder in ("training_args", "accelerate", "deepspeed", "axolotl")
        for p in (CORPUS / folder).glob("*")
    ) or sorted((REPO / "fixtures").rglob("*.yaml"))
    n = 0
    while n < 200:
        for p in sources:
            if n >= 200:
                break
            target = dest / f"set{n // len(sources)}" / p.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, target)
            n += 1
    return n


def _paired(a: list[str], b: list[str], cwd: Path, runs: int) -> tuple[list[float], list[float]]:
    """Run a and b alternately (a, b, a, b, ...), so that load from other processes on a shared
    machine falls on both alike; one warm-up run of each first."""
    for cmd in (a, b):
        subprocess.run(cmd, cwd=cwd, capture_output=True, check=False)
    ta: list[float] = []
    tb: list[float] = []
    for _ in range(runs):
        for cmd, out in ((a, ta), (b, tb)):
            start = time.perf_counter()
            subprocess.run(cmd, cwd=cwd, capture_output=True, check=False)
            out.append(time.perf_counter() - start)
    return ta, tb


def cold_start_against_yamllint(runs: int) -> None:
    """The issue's measure: `gpu-advise check` on the bundled example against yamllint on the same
    files (its YAML files; yamllint reads nothing else), side by side, alternating."""
    example = REPO / "fixtures" / "example"
    yamllint = [sys.executable, "-m", "yamllint"]
    if subprocess.run([*yamllint, "--version"], capture_output=True, check=False).returncode != 0:
        print("yamllint not installed (pip install yamllint): no cold-start ratio")
        return
    files = sorted(str(p) for p in example.rglob("*") if p.suffix in {".yaml", ".yml"})
    ours, ref = _paired(
        [sys.executable, "-m", "advisor.cli", "check", "--exit-zero", str(example)],
        [*yamllint, "-d", "relaxed", *files],
        REPO,
        runs,
    )
    ratio = statistics.median(ours) / statistics.median(ref)
    print(
        f"cold start, paired with yamllint on the same {len(files)} YAML files (n={runs}): "
        f"check median {statistics.median(ours) * 1000:.0f} ms, "
        f"yamllint {statistics.median(ref) * 1000:.0f} ms, "
        f"ratio {ratio:.2f} (target <= 1.5); per-pair ratio median "
        f"{statistics.median(o / r for o, r in zip(ours, ref, strict=True)):.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--cold-only", action="store_true", help="only the paired cold-start ratio")
    args = parser.parse_args()
    if args.cold_only:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "advisor")], check=True)
        cold_start_against_yamllint(max(args.runs, 11))
        return
    check = [sys.executable, "-m", "advisor.cli", "check", "--exit-zero"]
    # pip compiles an installed package's .pyc files; an editable checkout (or PYTHONDONTWRITEBYTECODE)
    # has none, so compile them here as an installation would.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "advisor")], check=True)

    cold = _time([*check, "fixtures/example"], REPO, args.runs)
    print(
        f"cold start, check fixtures/example: median {statistics.median(cold) * 1000:.0f} ms "
        f"(min {min(cold) * 1000:.0f}, max {max(cold) * 1000:.0f}, n={len(cold)}); target 250 ms"
    )
    bare = _time([sys.executable, "-c", "pass"], REPO, args.runs)
    print(f"  of which the interpreter alone: median {statistics.median(bare) * 1000:.0f} ms")
    cold_start_against_yamllint(max(args.runs, 11))

    with tempfile.TemporaryDirectory() as tmp:
        n = _two_hundred_configs(Path(tmp))
        many = _time([*check, "-H", "8xH100-SXM", tmp], REPO, max(3, args.runs // 2))
        print(
            f"{n} config files in one call: median {statistics.median(many):.2f} s "
            f"(n={len(many)}); target 2 s"
        )
        yamllint = shutil.which("yamllint")
        if yamllint:
            files = [str(p) for p in Path(tmp).rglob("*") if p.suffix in {".yaml", ".yml"}]
            ref = _time([yamllint, "-d", "relaxed", *files], REPO, max(3, args.runs // 2))
            print(
                f"yamllint on the {len(files)} YAML files among them: median {statistics.median(ref):.2f} s; "
                f"ratio gpu-advise/yamllint {statistics.median(many) / statistics.median(ref):.2f}"
            )
        else:
            print("yamllint not installed (pip install yamllint) : no reference ratio")


if __name__ == "__main__":
    main()

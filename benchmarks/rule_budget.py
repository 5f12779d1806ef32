"""Rule expressions against their budget (issue 17, item 4): each attack is a rule file in `--rules DIR`,
run through the CLI in a fresh process; its seconds, CPU seconds, peak RSS, exit code and the error line
are printed. The target: every attack stopped as that rule's error (exit 2) within about 2 s of
evaluation and a few hundred MB.

    python benchmarks/rule_budget.py [--case NAME ...] [--tree DIR] [--timeout 60] [--memory-gb 6]

``--tree DIR`` runs another checkout of the package (e.g. `git archive REV | tar -x -C DIR`) to measure
before and after. ``--memory-gb`` caps the child's address space (RLIMIT_AS) so that an attack that
builds gigabytes fails with MemoryError instead of taking the machine down: a case that hits it shows
its peak at the cap. Peak RSS and CPU seconds are the child's own (os.wait4).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
ARGS = "output_dir: out\nper_device_train_batch_size: 8\n"

# name -> the rule's fields besides code, name, severity, summary, at and docs; tests/security/
# test_rule_budget.py runs the same cases as regression tests
CASES: dict[str, dict[str, Any]] = {
    # the 100-byte message template: 29,000 references to one 99,999-character string shown
    "message-repetition": {"message": "{['a' * 99999] * 29000}"},
    "message-str": {"message": "{str(['a' * 99999] * 29000)}"},
    "message-join": {"message": "{join([['a' * 99999] * 29000], '')}"},
    "message-lower": {"message": "{lower(['a' * 99999] * 29000)}"},
    "message-plural": {"message": "{plural(['a' * 99999] * 29000, 'x')}"},
    # one `==` of two lists that repeat one 99,999-element list: 10**10 element comparisons
    "list-equality": {"when": "[[0] * 99999] * 99999 == [[0] * 99999] * 99999"},
    # each step a 2*10**8-element comparison, 999 of them: the clock read every 1,024 steps missed them
    "comprehension-of-equalities": {
        "let": {"a": "[[0] * 99999] * 2000", "b": "[[0] * 99999] * 2000"},
        "when": "len([a == b for c in 'a' * 999]) > 0",
    },
    "membership": {"when": "[0] * 99998 + [1] in [[0] * 99999] * 99999"},
    "sorted": {"when": "len(sorted([[0] * 99999] * 99999)) > 0"},
    "max": {"when": "max([[0] * 99999] * 99999) != []"},
    "less-than": {"when": "[[0] * 99999] * 99999 < [[0] * 99999] * 99999"},
    # every key of the comprehension hashes a 99,999-element tuple again (tuples do not cache their hash)
    "hash-tuple-keys": {"when": "len({t: 1 for t in [(0,) * 99999] * 99999}) > 0"},
    "tuple-key-lookup": {"let": {"t": "(0,) * 99999"}, "when": "len([t in {} for c in 'a' * 99999]) > 0"},
    # 99,999 distinct integers of 63,000 bits: 800 MB
    "big-integers": {"when": "len([10 ** 19000 + len(c) for c in 'a' * 99999]) > 0"},
    # each step searches 99,999 characters for 50,001 that are not there
    "string-search": {
        "let": {"n": "'a' * 50000 + 'b'", "h": "'a' * 99999"},
        "when": "len([n in h for c in 'a' * 99999]) > 0",
    },
    # a fix value is written into the JSON report: 29,000 references to one long string
    "fix-value": {
        "fix": {"set": {"training.output_dir": "{['a' * 99999] * 29000}"}},
        "_args": ["--format", "json"],
    },
}


def rule_text(fields: dict[str, Any]) -> str:
    fields = {k: v for k, v in fields.items() if not k.startswith("_")}
    base: dict[str, Any] = {
        "code": "XB001",
        "name": "budget-probe",
        "severity": "warning",
        "summary": "x",
        "when": "True",
        "at": "training.per_device_train_batch_size",
        "message": "probe",
        "docs": "x",
    }
    base.update(fields)
    return "".join(f"{k}: {json.dumps(v)}\n" for k, v in base.items())


def write_case(root: Path, name: str) -> list[str]:
    (root / "rules").mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'probe'\n", encoding="utf-8")
    (root / "args.yaml").write_text(ARGS, encoding="utf-8")
    (root / "rules" / "XB001.yaml").write_text(rule_text(CASES[name]), encoding="utf-8")
    return ["check", "args.yaml", "--rules", "rules", *CASES[name].get("_args", [])]


def _limit(memory_gb: float) -> Any:
    def apply() -> None:
        cap = int(memory_gb * 1024**3)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    return apply


def _high_water_kb(pid: int) -> int:
    """The child's own peak resident set (VmHWM of the program it exec'd), 0 where /proc cannot tell.
    Not ru_maxrss: a forked child's maxrss starts at its parent's resident size and survives the exec,
    so under a large parent (a pytest worker that imported torch: 367 MB) every case read as that."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def run_case(name: str, tree: Path, timeout: float, memory_gb: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="gpu-advise-budget-") as tmp:
        root = Path(tmp)
        args = write_case(root, name)
        env = dict(os.environ, PYTHONPATH=str(tree), HF_HUB_OFFLINE="1")
        env.pop("GITHUB_ACTIONS", None)
        start = time.perf_counter()
        with open(root / "out.txt", "wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "advisor", *args],
                cwd=root,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=_limit(memory_gb),
            )
            killed = False
            peak_kb = 0
            while True:
                peak_kb = max(peak_kb, _high_water_kb(proc.pid))
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                if time.perf_counter() - start > timeout and not killed:
                    proc.kill()
                    killed = True
                time.sleep(0.02)
        seconds = time.perf_counter() - start
        text = (root / "out.txt").read_text(errors="replace")
        line = next((ln for ln in text.splitlines() if "XB001 (" in ln or "Error" in ln), "")
        line = line or next((ln for ln in text.splitlines() if "XB001" in ln), "(no message)")
        return {
            "case": name,
            "seconds": round(seconds, 2),
            "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
            "peak_rss_mb": round((peak_kb or usage.ru_maxrss) / 1024),
            "exit": "timeout" if killed else os.waitstatus_to_exitcode(status),
            "says": line[:160],
        }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--case", action="append", choices=sorted(CASES))
    parser.add_argument("--tree", type=Path, default=REPO)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--memory-gb", type=float, default=6.0)
    parser.add_argument("--json", action="store_true", help="one JSON object per case")
    opts = parser.parse_args()
    print(f"{'case':30} {'s':>7} {'cpu s':>7} {'peak MB':>8} {'exit':>8}  says")
    for name in opts.case or list(CASES):
        row = run_case(name, opts.tree.resolve(), opts.timeout, opts.memory_gb)
        if opts.json:
            print(json.dumps(row))
            continue
        print(
            f"{row['case']:30} {row['seconds']:7} {row['cpu_seconds']:7} {row['peak_rss_mb']:8} "
            f"{row['exit']!s:>8}  {row['says']}",
            flush=True,
        )


if __name__ == "__main__":
    main()

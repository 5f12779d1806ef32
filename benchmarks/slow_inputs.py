"""Slow inputs (issue 9, defect 10): each case is built in a temporary folder, the CLI is run on it in a
fresh process, and its seconds, peak RSS, output size and exit code are printed. The target: every input
of at most 10 MB answered within 2 s and 300 MB, its limits reported as findings.

    python benchmarks/slow_inputs.py [--case NAME ...] [--tree DIR] [--timeout 120]

``--tree DIR`` runs another checkout of the package (e.g. `git archive REV | tar -x -C DIR`) to measure
before and after. Peak RSS and CPU seconds are the child's own (os.wait4), RSS in MB; on a shared
machine CPU seconds are the steadier figure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

ACCELERATE_HEAD = "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 2\n"


def json_array(root: Path) -> list[str]:
    """A 9.8 MB DeepSpeed JSON whose bulk is one array of numbers."""
    numbers = ",".join(str(i % 1000) for i in range(2_450_000))
    (root / "ds_config.json").write_text('{"train_batch_size": 8, "data": [' + numbers + "]}\n")
    return ["check", "ds_config.json"]


def json_objects(root: Path) -> list[str]:
    """A 9.5 MB JSON of 200,000 small objects."""
    rows = [{"id": i, "name": f"row{i}", "w": 0.5} for i in range(200_000)]
    (root / "ds_config.json").write_text(json.dumps({"train_batch_size": 8, "rows": rows}))
    return ["check", "ds_config.json"]


def torchrun_lines(root: Path) -> list[str]:
    """A 1 MB launch script of 14,000 torchrun lines."""
    line = "torchrun --nproc_per_node 2 --master_port 29500 train.py --output_dir out --seed 1\n"
    lines = ["#!/bin/bash\n"] + [line] * 14_000
    (root / "run.sh").write_text("".join(lines)[: 1024 * 1024 - 1])
    return ["check", "run.sh"]


def readme_blocks(root: Path) -> list[str]:
    """A 1 MB README.md: 19,000 lines of prose, then 120 ```bash blocks of one 12 KB torchrun command each
    (advisor/sources/readme_launch.py reads 128 KB of shell blocks per file)."""
    block = "```bash\ntorchrun --nproc_per_node=2 train.py " + "--a b " * 2000 + "\n```\n"
    (root / "README.md").write_text(("x\n" * 19_000 + block * 120)[: 1024 * 1024])
    (root / "train.py").write_text("from transformers import Trainer\n")
    return ["check", "."]


def unknown_keys(root: Path) -> list[str]:
    """An accelerate config with 99,000 unknown keys."""
    keys = "".join(f"unknown_setting_{i}: {i}\n" for i in range(99_000))
    (root / "accelerate_config.yaml").write_text(ACCELERATE_HEAD + keys)
    return ["check", "accelerate_config.yaml"]


def unknown_keys_under_limit(root: Path) -> list[str]:
    """An accelerate config with 24,000 unknown keys (under the 50,000-node limit of a YAML file)."""
    keys = "".join(f"unknown_setting_{i}: {i}\n" for i in range(24_000))
    (root / "accelerate_config.yaml").write_text(ACCELERATE_HEAD + keys)
    return ["check", "accelerate_config.yaml"]


def nested_default(root: Path) -> list[str]:
    """`${A:-${A:-...}}` 100,000 deep in a launch script."""
    depth = 100_000
    word = "${A:-" * depth + "2" + "}" * depth
    (root / "run.sh").write_text(f"#!/bin/bash\nN={word}\ntorchrun --nproc_per_node $N train.py\n")
    return ["check", "run.sh"]


def alias_plan(root: Path) -> list[str]:
    """`plan --format json` on a 130 KB YAML whose aliases repeat a 100 KB string 3,000 times."""
    long = "x" * 100_000
    items = ", ".join(["*s"] * 3_000)
    text = f"output_dir: out\nper_device_train_batch_size: 2\nrun_name: &s {long}\nreport_to: [{items}]\n"
    (root / "args.yaml").write_text(text)
    return ["plan", "--format", "json", "args.yaml"]


def alias_check(root: Path) -> list[str]:
    alias_plan(root)
    return ["check", "--format", "json", "args.yaml"]


def yaml_nodes(root: Path) -> list[str]:
    """A 2.7 MB YAML of 190,000 list items."""
    items = "".join(f"  - item{i}\n" for i in range(190_000))
    (root / "args.yaml").write_text(f"output_dir: out\ndataset: x\nlabels:\n{items}")
    return ["check", "args.yaml"]


def yaml_nodes_under_limit(root: Path) -> list[str]:
    """A YAML of 45,000 list items (under the 50,000-node limit)."""
    items = "".join(f"  - item{i}\n" for i in range(45_000))
    (root / "args.yaml").write_text(f"output_dir: out\ndataset: x\nlabels:\n{items}")
    return ["check", "args.yaml"]


def makedirs_script(root: Path) -> list[str]:
    """A training script with 10,001 unguarded os.makedirs calls, launched on two processes."""
    body = "".join(f"os.makedirs('d{i}')\n" for i in range(10_001))
    (root / "train.py").write_text("import os\n" + body)
    (root / "run.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --output_dir out\n")
    return ["check", "run.sh"]


def guarded_writes_script(root: Path) -> list[str]:
    """2,500 writes each under an `if` on a flag the script declares (each decided from its default)."""
    flags = "".join(f"parser.add_argument('--x{i}', action='store_true')\n" for i in range(2_500))
    body = "".join(f"if args.x{i}:\n    open('f{i}', 'w')\n" for i in range(2_500))
    head = "import argparse\nparser = argparse.ArgumentParser()\n"
    (root / "train.py").write_text(head + flags + "args = parser.parse_args()\n" + body)
    (root / "run.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --output_dir out\n")
    return ["check", "run.sh"]


def key_alias_bomb(root: Path) -> list[str]:
    """A 531-byte YAML whose key is a sequence of aliases nine levels deep (issue 17 item 5)."""
    rows = ["output_dir: out", "? - &a0 [x, x, x, x, x, x, x, x, x, x]"]
    rows += [f"  - &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    (root / "args.yaml").write_text("\n".join([*rows, ": 1"]) + "\n")
    return ["check", "args.yaml"]


def hardware_nodes(root: Path) -> list[str]:
    """An auto-detected hardware file with nodes: 10**12."""
    (root / "hardware.yaml").write_text(
        "name: big\ngpus: {model: H100-NVL, count: 8}\nnvlink: all\nnodes: 1000000000000\nnetwork: ib-400g\n"
    )
    (root / "run.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node 8 --nnodes 2 train.py\n")
    (root / "train.py").write_text("print(1)\n")
    (root / ".git").mkdir()
    return ["check", "."]


def environment_aliases(root: Path) -> list[str]:
    """environment.yml whose 1,000 pip lists are aliases of one 1,000-entry list, beside the config."""
    big = "  - &p [" + ", ".join(f"pkg{i}==1.0" for i in range(1000)) + "]"
    rows = ["name: x", "deps:", big, "dependencies:", "  - transformers=4.57.1"] + ["  - pip: *p"] * 1000
    (root / "environment.yml").write_text("\n".join(rows) + "\n")
    (root / "args.yaml").write_text("output_dir: out\nper_device_train_batch_size: 2\n")
    (root / ".git").mkdir()
    return ["check", "args.yaml"]


def hostfile_slots(root: Path) -> list[str]:
    """A DeepSpeed hostfile with slots=4000000000."""
    (root / "hostfile").write_text("worker-0 slots=4000000000\n")
    (root / "run.sh").write_text("#!/bin/bash\ndeepspeed --hostfile hostfile train.py\n")
    (root / "train.py").write_text("print(1)\n")
    return ["check", "run.sh"]


SCRIPT_HEAD = (
    "import os\nfrom transformers import HfArgumentParser, TrainingArguments\n\n"
    "def main():\n    parser = HfArgumentParser((TrainingArguments,))\n"
    "    (args,) = parser.parse_args_into_dataclasses()\n    os.makedirs(args.output_dir, exist_ok=True)\n"
)
SCRIPT_BODY = (
    "\ndef helper_{i}(x, y=3, *args, **kw):\n    total = 0\n    for j in range(x):\n"
    "        if j % 2 == 0:\n            total += j * y\n"
    "        else:\n            total -= kw.get('k{i}', 1)\n"
    "    data = {{'a': [1, 2, 3], 'b': (4, 5), 'c': {{'d': x}}}}\n    return total + len(data) + sum(args)\n"
)


def training_script(helpers: int) -> Callable[[Path], list[str]]:
    def build(root: Path) -> list[str]:
        body = "".join(SCRIPT_BODY.format(i=i) for i in range(helpers))
        (root / "train.py").write_text(SCRIPT_HEAD + body + "\nif __name__ == '__main__':\n    main()\n")
        (root / "run.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --output_dir out\n")
        return ["check", "run.sh"]

    build.__doc__ = f"A training script of {helpers:,} helper functions, launched on two processes."
    return build


CASES: dict[str, Callable[[Path], list[str]]] = {
    "json-array-9.8MB": json_array,
    "json-objects-9.5MB": json_objects,
    "torchrun-14k-lines": torchrun_lines,
    "readme-120-blocks-1MB": readme_blocks,
    "accelerate-99k-unknown-keys": unknown_keys,
    "accelerate-24k-unknown-keys": unknown_keys_under_limit,
    "nested-default-100k": nested_default,
    "plan-json-alias-130KB": alias_plan,
    "check-json-alias-130KB": alias_check,
    "yaml-190k-nodes": yaml_nodes,
    "yaml-45k-nodes": yaml_nodes_under_limit,
    "makedirs-10001": makedirs_script,
    "guarded-writes-2500": guarded_writes_script,
    "yaml-key-alias-bomb-531B": key_alias_bomb,
    "hardware-nodes-1e12": hardware_nodes,
    "environment-1000-aliases": environment_aliases,
    "hostfile-slots-4e9": hostfile_slots,
    "script-0.25MB": training_script(900),
    "script-4.7MB": training_script(17_000),
    "script-7.8MB": training_script(28_000),
}


def _drain(stream: object, counter: list[int]) -> None:
    while chunk := stream.read(1 << 16):  # type: ignore[attr-defined]
        counter[0] += len(chunk)


def run_case(name: str, tree: Path, timeout: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="gpu-advise-slow-") as tmp:
        root = Path(tmp)
        # built in a process of its own: a forked child starts with its parent's peak RSS
        built = subprocess.run(
            [sys.executable, __file__, "--build", name, str(root)], capture_output=True, text=True, check=True
        )
        args = json.loads(built.stdout)
        size = sum(p.stat().st_size for p in root.iterdir())
        env = dict(os.environ, PYTHONPATH=str(tree), HF_HUB_OFFLINE="1")
        env.pop("GITHUB_ACTIONS", None)
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "advisor", *args],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out, err = [0], [0]
        readers = [
            threading.Thread(target=_drain, args=(proc.stdout, out), daemon=True),
            threading.Thread(target=_drain, args=(proc.stderr, err), daemon=True),
        ]
        for r in readers:
            r.start()
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        timer.cancel()
        seconds = time.perf_counter() - start
        for r in readers:
            r.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        return {
            "case": name,
            "input_mb": size / 1e6,
            "seconds": seconds,
            "cpu_seconds": usage.ru_utime + usage.ru_stime,
            "peak_rss_mb": usage.ru_maxrss / 1024,
            "stdout_mb": out[0] / 1e6,
            "exit": proc.returncode if seconds < timeout else "timeout",
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", choices=sorted(CASES), help="run only these cases")
    parser.add_argument("--tree", type=Path, default=REPO, help="checkout whose `advisor` package is run")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds before a case is killed")
    parser.add_argument("--build", nargs=2, metavar=("CASE", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build:
        print(json.dumps(CASES[args.build[0]](Path(args.build[1]))))
        return
    print(
        f"{'case':<30} {'input MB':>8} {'seconds':>8} {'cpu s':>6} {'peak MB':>8} {'out MB':>8} {'exit':>7}"
    )
    for name in args.case or list(CASES):
        row = run_case(name, args.tree.resolve(), args.timeout)
        print(
            f"{row['case']:<30} {row['input_mb']:>8.2f} {row['seconds']:>8.2f} {row['cpu_seconds']:>6.2f} "
            f"{row['peak_rss_mb']:>8.0f} "
            f"{row['stdout_mb']:>8.2f} {row['exit']!s:>7}",
            flush=True,
        )


if __name__ == "__main__":
    main()

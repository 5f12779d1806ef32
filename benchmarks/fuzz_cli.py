"""A seeded mutation fuzzer over the whole CLI, in one process (issue 9: zero tracebacks).

Each example is a small project in a temporary folder: a real corpus file (../shared/corpus) mutated
by byte and token edits (delete or duplicate lines, swap values, change a value's type, insert YAML
tags, tabs, random bytes, huge and non-finite numbers), or a file of random bytes. One of `check`,
`plan`, `estimate`, `check --fix` and `check --diff` runs on it through typer's CliRunner with
GPU_ADVISE_DEBUG=1, so an internal error surfaces as the exception itself. A failure is an exception
that escapes the CLI, exit code 3 (internal error) or the words "internal error" in the output.

    python benchmarks/fuzz_cli.py [--examples 10000] [--seed 0] [--save DIR]

Prints examples run, failures (with the first traceback of each kind), the exit-code histogram per
command and the slowest cases. ``--save DIR`` keeps each failing project for reproduction.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"  # the way tests/conftest.py finds it
FOLDERS = ("accelerate", "deepspeed", "training_args", "axolotl", "launch")

COMMANDS: list[list[str]] = [
    ["check", "--format", "json"],
    ["check", "-H", "4xH100-NVL"],
    ["plan", "--format", "json"],
    ["estimate", "-H", "1xH100"],
    ["check", "--fix", "--unsafe-fixes"],
    ["check", "--diff"],
]

# Values that change a scalar's type or push it past what the readers and facts expect.
ODD_VALUES = [
    "0",
    "-1",
    "-0",
    "1.5",
    "1e400",
    "1.0e+400",
    "-1e400",
    ".inf",
    "-.inf",
    ".nan",
    "NaN",
    "Infinity",
    "9" * 30,
    "9" * 401,
    "9" * 5000,
    "0x1F",
    "0o17",
    "0b101",
    "010",
    "1:30",
    "1_000",
    "true",
    "no",
    "on",
    "null",
    "~",
    '""',
    "''",
    '"auto"',
    "auto",
    "[]",
    "{}",
    "[1, 2]",
    "{a: 1}",
    "!!float abc",
    "!!int 0b2",
    "!!timestamp 2001-99-99",
    "!!timestamp 2001-12-14x",
    "!!bool maybe",
    "!!binary x",
    "!!python/object x",
    "&a 1",
    "*a",
    "*missing",
    "'0,1,2,3'",
    "all",
    "-1,0",
    "99",
    "é",
    "\\u0000",
    '"\\ud800"',
    "${X:-4}",
    "$(nvidia-smi -L | wc -l)",
    "`id`",
    "$((1/0))",
    "$((2**64))",
    "../outside.json",
    "/etc/passwd",
    "d" * 300 + ".json",
    "~/x.json",
    "\t2",
]
JUNK = [
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    '"',
    "'",
    "\t",
    "\n",
    "- ",
    "&a ",
    "*a",
    "#",
    "\\",
    "\x00",
    "$(",
    "${X:-",
    "`",
    "é",
    "\ufeff",
    "!!python/object",
    "---\n",
    "...",
    "\r",
    "<<: *a\n",
    "? ",
    "|",
    ">",
    "%YAML 1.1\n",
]


@dataclass(slots=True)
class Example:
    name: str  # the file's name in the project: the seed the command is run on
    text: bytes
    command: list[str]
    origin: str  # what it was made from, for the report
    companions: dict[str, bytes] = field(default_factory=dict)  # other files of the run


@dataclass(slots=True)
class Report:
    examples: int = 0
    failures: list[tuple[Example, str]] = field(default_factory=list)
    exits: Counter[tuple[str, int]] = field(default_factory=Counter)
    slowest: list[tuple[float, str]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def tracebacks(self) -> int:
        return len(self.failures)


def corpus_files(root: Path = CORPUS) -> list[Path]:
    if not root.is_dir():
        return []
    return sorted(p for folder in FOLDERS for p in (root / folder).glob("*") if p.is_file())


def _swap_values(rng: random.Random, lines: list[str]) -> None:
    keyed = [i for i, line in enumerate(lines) if ":" in line]
    if len(keyed) >= 2:
        a, b = rng.sample(keyed, 2)
        ka, _, va = lines[a].partition(":")
        kb, _, vb = lines[b].partition(":")
        lines[a], lines[b] = f"{ka}:{vb}", f"{kb}:{va}"


def _retype(rng: random.Random, lines: list[str]) -> None:
    keyed = [i for i, line in enumerate(lines) if ":" in line or "--" in line]
    if not keyed:
        return
    i = rng.choice(keyed)
    line = lines[i]
    value = rng.choice(ODD_VALUES)
    if "--" in line and rng.random() < 0.5:  # a launch-script flag
        head, _, _ = line.rpartition(" ")
        lines[i] = f"{head} {value}" if head else line
    else:
        key, _, rest = line.partition(":")
        tail = "," if rest.rstrip().endswith(",") else ""
        lines[i] = f"{key}: {value}{tail}"


def mutate(rng: random.Random, text: str) -> bytes:
    """One to six token or byte edits of ``text``."""
    data = text
    for _ in range(rng.randint(1, 6)):
        op = rng.choice(
            [
                "delete_line",
                "duplicate_line",
                "swap",
                "retype",
                "retype",
                "junk",
                "tag",
                "delete",
                "truncate",
                "bytes",
                "huge",
                "tab",
                "repeat",
            ]
        )
        lines = data.split("\n")
        pos = rng.randint(0, max(len(data) - 1, 0))
        if op == "delete_line" and lines:
            del lines[rng.randrange(len(lines))]
            data = "\n".join(lines)
        elif op == "duplicate_line" and lines:
            i = rng.randrange(len(lines))
            lines.insert(i, lines[i])
            data = "\n".join(lines)
        elif op == "swap":
            _swap_values(rng, lines)
            data = "\n".join(lines)
        elif op == "retype":
            _retype(rng, lines)
            data = "\n".join(lines)
        elif op == "junk":
            data = data[:pos] + rng.choice(JUNK) + data[pos:]
        elif op == "tag":
            data = (
                data[:pos]
                + rng.choice(["!!str ", "!!int ", "!!float ", "!!bool ", "!!null ", "!!seq "])
                + data[pos:]
            )
        elif op == "delete":
            data = data[:pos] + data[pos + rng.randint(1, 40) :]
        elif op == "truncate":
            data = data[:pos]
        elif op == "huge":
            data = data[:pos] + rng.choice(["9" * 5000, "1e400", "9" * 25, "-" + "9" * 400]) + data[pos:]
        elif op == "tab":
            data = data[:pos] + "\t" + data[pos:]
        elif op == "repeat":
            lines = data.split("\n")
            if lines:
                i = rng.randrange(len(lines))
                lines[i : i + 1] = [lines[i]] * rng.randint(2, 300)
                data = "\n".join(lines)
        elif op == "bytes":
            raw = data.encode("utf-8", "surrogatepass")
            at = rng.randint(0, len(raw))
            junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
            return raw[:at] + junk + raw[at:]
    return data.encode("utf-8", "surrogatepass")


def random_file(rng: random.Random) -> tuple[str, bytes]:
    name = rng.choice(
        ["args.yaml", "accelerate_config.yaml", "ds_config.json", "launch.sh", "train.py", "config"]
    )
    size = rng.choice([0, 1, 16, 256, 4096])
    if rng.random() < 0.5:
        return name, bytes(rng.randrange(256) for _ in range(size))
    alphabet = "".join(JUNK) + "abc019 :\n-{}[],\"'"
    return name, "".join(rng.choice(alphabet) for _ in range(size)).encode("utf-8", "surrogatepass")


def examples(n: int, seed: int, files: list[Path]) -> Iterator[Example]:
    rng = random.Random(seed)
    texts = {p: p.read_text(encoding="utf-8", errors="replace") for p in files}
    by_folder: dict[str, list[Path]] = {}
    for p in files:
        by_folder.setdefault(p.parent.name, []).append(p)
    for i in range(n):
        command = COMMANDS[i % len(COMMANDS)]
        draw = rng.random()
        if by_folder and draw < 0.3 and {"training_args", "deepspeed", "accelerate"} <= set(by_folder):
            yield _bundle(rng, by_folder, texts, command)
        elif files and draw < 0.85:
            path = rng.choice(files)
            yield Example(path.name, mutate(rng, texts[path]), command, f"{path.parent.name}/{path.name}")
        else:
            name, data = random_file(rng)
            yield Example(name, data, command, "random bytes")


def _bundle(
    rng: random.Random, by_folder: dict[str, list[Path]], texts: dict[Path, str], command: list[str]
) -> Example:
    """A whole run: a launch script naming an accelerate config, TrainingArguments and a DeepSpeed
    JSON, each a corpus file, some of them mutated, so merged values reach the facts together."""
    parts = {
        "accelerate.yaml": rng.choice(by_folder["accelerate"]),
        "args.yaml": rng.choice(by_folder["training_args"]),
        "ds_config.json": rng.choice(by_folder["deepspeed"]),
    }
    companions = {}
    for name, path in parts.items():
        text = texts[path]
        if name == "args.yaml":
            text += "\ndeepspeed: ds_config.json\n"
        companions[name] = mutate(rng, text) if rng.random() < 0.7 else text.encode()
    companions["train.py"] = b"from transformers import TrainingArguments\n"
    launcher = rng.choice(
        [
            "accelerate launch --config_file accelerate.yaml train.py args.yaml",
            "torchrun --nproc_per_node 4 train.py args.yaml --deepspeed ds_config.json",
            "deepspeed --num_gpus 2 train.py --deepspeed ds_config.json --per_device_train_batch_size 0",
        ]
    )
    launch = f"#!/bin/bash\n{launcher}\n"
    origin = "run of " + ", ".join(f"{p.parent.name}/{p.name}" for p in parts.values())
    return Example(
        "launch.sh",
        mutate(rng, launch) if rng.random() < 0.3 else launch.encode(),
        command,
        origin,
        companions,
    )


@contextlib.contextmanager
def _project(example: Example) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="gpu-advise-fuzz-") as tmp:
        root = Path(tmp)
        (root / ".git").mkdir()
        (root / example.name).write_bytes(example.text)
        for name, data in example.companions.items():
            (root / name).write_bytes(data)
        if example.name.endswith((".sh", ".slurm", ".bash")) or example.name == "config":
            (root / "train.py").write_text("import os\nos.makedirs('out', exist_ok=True)\n")
        old = Path.cwd()
        os.chdir(root)
        try:
            yield root
        finally:
            os.chdir(old)


def run_one(example: Example, runner: object, app: object) -> tuple[int, str | None, float]:
    """(exit code, failure text or None, seconds)."""
    with _project(example):
        start = time.perf_counter()
        try:
            result = runner.invoke(app, [*example.command, example.name])  # type: ignore[attr-defined]
        except KeyboardInterrupt:
            raise
        except BaseException:  # the test suite's strict fact check (UndeclaredFact) is a BaseException
            return 3, traceback.format_exc(), time.perf_counter() - start
        seconds = time.perf_counter() - start
    exc = result.exception
    if exc is not None and not isinstance(exc, SystemExit):
        return 3, "".join(traceback.format_exception(*result.exc_info)), seconds
    output = result.output
    if result.exit_code == 3 or "internal error" in output or "Traceback" in output:
        return result.exit_code, output[-2000:], seconds
    return result.exit_code, None, seconds


def run_fuzz(
    n: int, seed: int = 0, files: list[Path] | None = None, save: Path | None = None, progress: int = 0
) -> Report:
    """Run ``n`` examples; ``progress`` > 0 prints a line to stderr every that many."""
    from typer.testing import CliRunner

    from advisor.cli import app

    os.environ["GPU_ADVISE_DEBUG"] = "1"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.pop("GITHUB_ACTIONS", None)
    runner = CliRunner()
    report = Report()
    started = time.perf_counter()
    for example in examples(n, seed, corpus_files() if files is None else files):
        code, failure, seconds = run_one(example, runner, app)
        report.examples += 1
        if progress and report.examples % progress == 0:
            print(f"{report.examples} examples, {report.tracebacks} failures", file=sys.stderr, flush=True)
        report.exits[(" ".join(example.command[:2]), code)] += 1
        report.slowest.append((seconds, f"{' '.join(example.command)} on {example.origin}"))
        report.slowest = sorted(report.slowest, reverse=True)[:10]
        if failure is not None:
            report.failures.append((example, failure))
            if save is not None:
                target = save / f"failure-{len(report.failures):04d}"
                target.mkdir(parents=True, exist_ok=True)
                (target / example.name).write_bytes(example.text)
                for name, data in example.companions.items():
                    (target / name).write_bytes(data)
                (target / "command.txt").write_text(
                    " ".join(["gpu-advise", *example.command, example.name]) + "\n"
                )
                (target / "failure.txt").write_text(failure)
    report.seconds = time.perf_counter() - started
    return report


def _kind(failure: str) -> str:
    lines = [line for line in failure.strip().splitlines() if line.strip()]
    return lines[-1][:160] if lines else "?"


def print_report(report: Report) -> None:
    print(f"examples run: {report.examples} in {report.seconds:.0f} s")
    print(f"tracebacks / internal errors: {report.tracebacks}")
    kinds = Counter(_kind(f) for _, f in report.failures)
    for kind, count in kinds.most_common():
        example, failure = next((e, f) for e, f in report.failures if _kind(f) == kind)
        shown = f"gpu-advise {' '.join(example.command)} {example.name}"
        print(f"  {count} x {kind}\n    e.g. {shown} ({example.origin})")
        print("    " + "\n    ".join(failure.strip().splitlines()[-8:]))
    print("exit codes:")
    for (command, code), count in sorted(report.exits.items()):
        print(f"  {command:<16} exit {code}: {count}")
    print("slowest:")
    for seconds, what in report.slowest:
        print(f"  {seconds:6.2f} s  {what}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save", type=Path, help="folder for the failing projects")
    args = parser.parse_args()
    if args.save is not None:
        shutil.rmtree(args.save, ignore_errors=True)
    report = run_fuzz(args.examples, args.seed, save=args.save, progress=500)
    print_report(report)
    raise SystemExit(1 if report.tracebacks else 0)


if __name__ == "__main__":
    main()

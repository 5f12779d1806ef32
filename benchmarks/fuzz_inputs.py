"""A seeded property-based campaign over the inputs issue 17 found weakest (its Done-when).

Each example is a small project drawn by benchmarks/fuzz_strategies.py from structured values: the
settings (pyproject.toml ``[tool.gpu-advise]`` and ``.gpu-advise.toml``, every key of
advisor/sources/schema/settings.py), a hardware descriptor, ``--rules`` files, a baseline, the recorded
``.gpu-advise-verify.json``, a DeepSpeed hostfile, pin files (requirements, pyproject, environment.yml
with aliases, uv/poetry/Pipfile locks, setup.cfg/setup.py) or the launch and training scripts, each
added to a small valid run. One of ``check``, ``plan``, ``baseline``, ``estimate`` (or ``rules``) runs
on it through typer's CliRunner with GPU_ADVISE_DEBUG=1, so an internal error surfaces as the
exception itself.

The properties every example must keep (a broken one is a failure, by category):

- crash: no exception escapes the CLI, no exit code 3, no "internal error" or traceback in the output;
- exit: the exit code is 0, 1 or 2, and an exit 2 says why;
- hang: the command ends within ``--hard-limit`` seconds (over 5 s it is reported as slow);
- unescaped: a control, bidi, zero-width or tag character of the input, or a ``::`` workflow command
  it starts a line with, never reaches the output raw;
- read-outside: the text of a file in the folder beside the project (``outside/``, named by relative
  paths and links the inputs plant) never reaches the output, unless the settings allow that root;
- write-outside: nothing beside the project is created or changed.

Examples run in a worker process (forked, warm) that the campaign kills and replaces when one hangs in
C code; each failure is shrunk (files, then lines, while it fails the same way) and saved.

    python benchmarks/fuzz_inputs.py [--examples 10000] [--seed 11] [--save DIR] [--start 0]

Prints examples run, failures with the first traceback of each kind, the exit-code histogram per
input kind and command, and the slowest cases.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import multiprocessing
import os
import re
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fuzz_strategies import KINDS, MARKERS, SECRET, Example, make_example

SLOW_S = 5.0
OUTSIDE = {
    "secret.yaml": (
        f"name: {SECRET}\ngpus: {{model: {SECRET}, count: 1}}\n{SECRET}_KEY: 1\nmodel_type: {SECRET}\n"
    ),
    "secret.json": json.dumps({"model_type": SECRET, f"{SECRET}_KEY": 1, "runs": [{"path": SECRET}]}),
    "secret.toml": f'{SECRET}_KEY = 1\n[tool.gpu-advise]\n{SECRET} = 1\nhardware = "{SECRET}"\n',
    "victim.txt": "untouched\n",
}


@dataclass(slots=True)
class Result:
    index: int
    kind: str
    command: list[str]
    code: int
    seconds: float
    category: str | None = None  # crash, exit, hang, unescaped, read-outside, write-outside, died
    failure: str | None = None  # the traceback or output that shows it
    signature: str = ""  # what makes two failures the same one


@dataclass(slots=True)
class Report:
    seed: int = 0
    examples: int = 0
    seconds: float = 0.0
    failures: list[tuple[Example, Result]] = field(default_factory=list)
    exits: Counter[tuple[str, str, int]] = field(default_factory=Counter)  # (kind, command, code)
    slow: list[tuple[Example, Result]] = field(default_factory=list)
    slowest: list[tuple[float, int, str]] = field(default_factory=list)
    saved: list[Path] = field(default_factory=list)

    @property
    def tracebacks(self) -> int:
        return len(self.failures)


class ExampleTimeout(BaseException):
    """Raised by the alarm in the worker: a BaseException, so the CLI's own handlers let it through."""


# ---- one example -----------------------------------------------------------------------------------
def _tree(folder: Path) -> dict[str, str]:
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            out[rel] = "link:" + os.readlink(path)
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            out[rel] = "dir"
    return out


def _write_project(root: Path, example: Example) -> Path:
    project, outside = root / "proj", root / "outside"
    outside.mkdir(parents=True)
    for name, text in OUTSIDE.items():
        (outside / name).write_text(text, encoding="utf-8")
    (project / ".git").mkdir(parents=True)
    for name, data in example.files.items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    for name, target in example.links.items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            path.symlink_to(target)
    return project


@contextlib.contextmanager
def _project(example: Example) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="gpu-advise-fuzz-inputs-") as tmp:
        root = Path(tmp)
        project = _write_project(root, example)
        old = Path.cwd()
        os.chdir(project)
        try:
            yield root
        finally:
            os.chdir(old)


def _input_text(example: Example) -> str:
    return "\n".join(d.decode("utf-8", "replace") for d in example.files.values()) + " ".join(example.command)


def _signature(text: str) -> str:
    """The exception type and the deepest frame in advisor/ (or the last line of the output)."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    frames = re.findall(r'File "([^"]*)", line (\d+), in (\S+)', text)
    ours = [(f, n, fn) for f, n, fn in frames if "/advisor/" in f]
    last = lines[-1] if lines else "?"
    m = re.match(r"^([\w.]+(?:Error|Exception|Timeout|Exit|Interrupt|Fact|Warning)?)\b:?", last)
    kind = m.group(1) if m else last[:80]
    if ours:
        f, n, fn = ours[-1]
        return f"{kind} at {f[f.rindex('/advisor/') + 1 :]}:{n} {fn}"
    return last[:160]


def check_properties(
    example: Example, code: int, output: str, before: dict[str, str], after: dict[str, str]
) -> tuple[str, str, str] | None:
    """(category, evidence, signature) of the first property the run broke, or None."""
    if code == 3 or "internal error" in output or "Traceback (most recent call last)" in output:
        return "crash", output[-3000:], _signature(output)
    if code not in (0, 1, 2):
        return "exit", output[-2000:], f"exit code {code}"
    if code == 2 and not output.strip():
        return "exit", "(no output)", "exit 2 without a message"
    if before != after:
        changed = sorted(set(before.items()) ^ set(after.items()))
        return (
            "write-outside",
            repr(changed[:10]),
            "wrote beside the project: " + ", ".join(sorted({c[0] for c in changed}))[:120],
        )
    if SECRET in output and not example.allows_outside:
        at = output.index(SECRET)
        return "read-outside", output[max(0, at - 600) : at + 200], "the outside file's text is in the output"
    text = _input_text(example)
    for marker in MARKERS:
        if marker in text and marker in output:
            at = output.index(marker)
            return (
                "unescaped",
                ascii(output[max(0, at - 300) : at + 100]),
                f"raw {marker!a} in the output",
            )
    if "::" in text and example.command[-3:-1] != ["--format", "github"]:
        for line in output.splitlines():
            if line.lstrip().startswith("::") or ("##[" in line and "##[" in text):
                return "unescaped", ascii(line[:300]), "a line of the output is a workflow command"
    return None


def run_one(example: Example, runner: Any, app: Any, index: int = -1, hard_limit: float = 30.0) -> Result:
    result_base = Result(index, example.kind, example.command, 0, 0.0)
    with _project(example) as root:
        before = {"outside/" + k: v for k, v in _tree(root / "outside").items()}
        before["."] = ",".join(sorted(p.name for p in root.iterdir()))
        start = time.perf_counter()
        previous = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, hard_limit)
        try:
            outcome = runner.invoke(app, example.command)
        except ExampleTimeout:
            seconds = time.perf_counter() - start
            tb = traceback.format_exc()
            return replace(
                result_base,
                code=-1,
                seconds=seconds,
                category="hang",
                failure=tb,
                signature="hang in " + _signature(tb),
            )
        except KeyboardInterrupt:
            raise
        except BaseException:  # the suite's strict fact check (UndeclaredFact) is a BaseException
            tb = traceback.format_exc()
            return replace(
                result_base,
                code=3,
                seconds=time.perf_counter() - start,
                category="crash",
                failure=tb,
                signature=_signature(tb),
            )
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        seconds = time.perf_counter() - start
        after = {"outside/" + k: v for k, v in _tree(root / "outside").items()}
        after["."] = ",".join(sorted(p.name for p in root.iterdir()))
    exc = outcome.exception
    if isinstance(exc, ExampleTimeout):
        tb = "".join(traceback.format_exception(*outcome.exc_info))
        return replace(
            result_base,
            code=-1,
            seconds=seconds,
            category="hang",
            failure=tb,
            signature="hang in " + _signature(tb),
        )
    if exc is not None and not isinstance(exc, SystemExit):
        tb = "".join(traceback.format_exception(*outcome.exc_info))
        return replace(
            result_base, code=3, seconds=seconds, category="crash", failure=tb, signature=_signature(tb)
        )
    broken = check_properties(example, outcome.exit_code, outcome.output, before, after)
    if broken is None:
        return replace(result_base, code=outcome.exit_code, seconds=seconds)
    category, evidence, signature = broken
    return replace(
        result_base,
        code=outcome.exit_code,
        seconds=seconds,
        category=category,
        failure=evidence,
        signature=signature,
    )


def _alarm(signum: int, frame: Any) -> None:
    raise ExampleTimeout(f"over the hard limit (signal {signum})")


# ---- the worker ------------------------------------------------------------------------------------
def _prepare_environment(cache: str) -> None:
    os.environ["GPU_ADVISE_DEBUG"] = "1"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ["GPU_ADVISE_CACHE_DIR"] = cache
    for name in ("GITHUB_ACTIONS", "FORCE_COLOR", "GITHUB_STEP_SUMMARY"):
        os.environ.pop(name, None)
    os.environ["NO_COLOR"] = "1"


def _worker(conn: Any, memory_gib: float, hard_limit: float) -> None:
    if memory_gib > 0:
        import resource

        limit = int(memory_gib * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from typer.testing import CliRunner

    from advisor.cli import app

    runner = CliRunner()
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        index, example = job
        conn.send(run_one(example, runner, app, index, hard_limit))


class Pool:
    """One warm worker; replaced when it dies or stops answering."""

    def __init__(self, memory_gib: float, hard_limit: float, in_process: bool = False) -> None:
        self.memory_gib, self.hard_limit, self.in_process = memory_gib, hard_limit, in_process
        self.process: Any = None
        self.conn: Any = None
        self._local: tuple[Any, Any] | None = None

    def _start(self) -> None:
        ctx = multiprocessing.get_context("fork")
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(
            target=_worker, args=(child, self.memory_gib, self.hard_limit), daemon=True
        )
        self.process.start()
        child.close()

    def run(self, index: int, example: Example) -> Result:
        if self.in_process:  # the test's planted crashes patch this process
            if self._local is None:
                from typer.testing import CliRunner

                from advisor.cli import app

                self._local = (CliRunner(), app)
            return run_one(example, *self._local, index, self.hard_limit)
        if self.process is None or not self.process.is_alive():
            self._start()
        started = time.perf_counter()
        try:
            self.conn.send((index, example))
            if self.conn.poll(self.hard_limit + 20):
                return self.conn.recv()
            why, category = f"no answer within {self.hard_limit + 20:.0f} s: killed", "hang"
        except (EOFError, BrokenPipeError, ConnectionResetError, OSError) as exc:
            why, category = f"the worker died ({type(exc).__name__}; exit {self.process.exitcode})", "died"
        self.close(kill=True)
        return Result(
            index,
            example.kind,
            example.command,
            -1,
            time.perf_counter() - started,
            category,
            why,
            why.split(";")[0].split(":")[0],
        )

    def close(self, kill: bool = False) -> None:
        if self.process is None:
            return
        if kill and self.process.is_alive():
            os.kill(self.process.pid, signal.SIGKILL)
        else:
            with contextlib.suppress(OSError, BrokenPipeError):
                self.conn.send(None)
        self.process.join(5)
        self.process, self.conn = None, None


# ---- shrinking and saving --------------------------------------------------------------------------
def shrink(
    example: Example, target: Result, attempt: Callable[[Example], Result], budget: int = 60
) -> Example:
    """A smaller example that fails the same way: files dropped, then chunks of lines (ddmin)."""
    tries = 0

    def same(candidate: Example) -> bool:
        nonlocal tries
        tries += 1
        r = attempt(candidate)
        return r.category == target.category and r.signature == target.signature

    best = example
    for name in list(best.files) + list(best.links):
        if tries >= budget:
            return best
        files = {k: v for k, v in best.files.items() if k != name}
        links = {k: v for k, v in best.links.items() if k != name}
        candidate = replace(best, files=files, links=links)
        if same(candidate):
            best = candidate
    for name in list(best.files):
        lines = best.files[name].splitlines(keepends=True)
        n = 2
        while len(lines) >= 2 and tries < budget:
            size = max(1, -(-len(lines) // n))
            removed = False
            for start in range(0, len(lines), size):
                if tries >= budget:
                    break
                kept = lines[:start] + lines[start + size :]
                candidate = replace(best, files={**best.files, name: b"".join(kept)})
                if same(candidate):
                    best, lines, removed = candidate, kept, True
                    n = max(n - 1, 2)
                    break
            if not removed:
                if n >= len(lines):
                    break
                n = min(n * 2, len(lines))
    return best


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[:80] or "x"


def save_example(folder: Path, example: Example, result: Result, original: Example | None = None) -> None:
    """The project as ``proj/`` beside ``outside/`` (so planted links resolve), the command, the failure."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    _write_project(folder, example)
    shutil.rmtree(folder / "proj" / ".git", ignore_errors=True)
    (folder / "proj" / ".git").mkdir()
    quoted = " ".join(ascii(a) if not re.fullmatch(r"[\w./=:@,+-]+", a) else a for a in example.command)
    (folder / "command.txt").write_text(
        f"cd proj && GPU_ADVISE_DEBUG=1 gpu-advise {quoted}\n"
        f"# kind {example.kind}, example {result.index}, exit {result.code}, {result.seconds:.2f} s\n"
        f"# {result.category}: {result.signature}\n# drawn: {ascii(example.note)[:300]}\n",
        encoding="utf-8",
    )
    (folder / "failure.txt").write_text(result.failure or "", encoding="utf-8", errors="backslashreplace")
    if original is not None and original is not example:
        _write_project(folder / "original", original)


# ---- the campaign ----------------------------------------------------------------------------------
def run_campaign(
    n: int,
    seed: int = 11,
    start: int = 0,
    kinds: tuple[str, ...] = KINDS,
    save: Path | None = None,
    progress: int = 0,
    hard_limit: float = 30.0,
    memory_gib: float = 4.0,
    shrink_budget: int = 60,
    in_process: bool = False,
    examples: Callable[[int, int, tuple[str, ...]], Example] = make_example,
) -> Report:
    """Examples ``start`` .. ``start + n - 1`` of campaign ``seed``."""
    import advisor.cli  # noqa: F401  imported once here, so the forked worker starts warm

    cache = tempfile.mkdtemp(prefix="gpu-advise-fuzz-inputs-cache-")
    environment = dict(os.environ)
    _prepare_environment(cache)
    pool = Pool(memory_gib, hard_limit, in_process)
    report = Report(seed=seed)
    started = time.perf_counter()
    seen: dict[tuple[str, str, str], int] = {}
    try:
        for index in range(start, start + n):
            example = examples(seed, index, kinds)
            result = pool.run(index, example)
            report.examples += 1
            report.exits[(example.kind, " ".join(example.command[:1]), result.code)] += 1
            report.slowest = sorted(
                [*report.slowest, (result.seconds, index, _describe(example))], reverse=True
            )[:10]
            if result.seconds > SLOW_S and result.category is None:
                report.slow.append((example, result))
                if save is not None and len(report.slow) <= 20:
                    folder = save / example.kind / f"slow-{index:06d}"
                    save_example(
                        folder, example, replace(result, category="slow", signature=f"{result.seconds:.1f} s")
                    )
                    report.saved.append(folder)
            if result.category is not None:
                report.failures.append((example, result))
                key = (example.kind, result.category, result.signature)
                seen[key] = seen.get(key, 0) + 1
                if save is not None and seen[key] == 1:
                    small = example
                    if result.category not in ("hang", "died") and shrink_budget:
                        small = shrink(example, result, lambda c, i=index: pool.run(i, c), shrink_budget)
                    folder = save / example.kind / f"{result.category}-{_slug(result.signature)}"
                    save_example(folder, small, result, example)
                    report.saved.append(folder)
            if progress and report.examples % progress == 0:
                print(
                    f"{report.examples} examples, {report.tracebacks} failures, {len(report.slow)} slow "
                    f"({time.perf_counter() - started:.0f} s)",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        pool.close()
        shutil.rmtree(cache, ignore_errors=True)
        os.environ.clear()
        os.environ.update(environment)
    report.seconds = time.perf_counter() - started
    return report


def _describe(example: Example) -> str:
    words = " ".join(ascii(a)[1:-1][:60] for a in example.command)
    return f"{example.kind}: gpu-advise {words} ({ascii(example.note)[:80]})"


def print_report(report: Report) -> None:
    print(f"seed {report.seed}: examples run: {report.examples} in {report.seconds:.0f} s")
    by_kind = Counter(k for k, _, _ in report.exits.elements())
    print("examples per input kind: " + ", ".join(f"{k} {n}" for k, n in sorted(by_kind.items())))
    print(f"failures: {report.tracebacks}")
    groups: dict[tuple[str, str, str], list[tuple[Example, Result]]] = {}
    for example, result in report.failures:
        groups.setdefault((example.kind, result.category or "?", result.signature), []).append(
            (example, result)
        )
    for (kind, category, signature), members in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        example, result = members[0]
        print(f"  {len(members)} x [{kind}] {category}: {signature}")
        print(f"    e.g. example {result.index}: {_describe(example)}")
        tail = (result.failure or "").strip().splitlines()[-8:]
        print("    " + "\n    ".join(ascii(line)[1:-1][:200] for line in tail))
    print(f"slow (> {SLOW_S:.0f} s): {len(report.slow)}")
    for example, result in report.slow[:20]:
        print(f"  {result.seconds:6.2f} s  example {result.index}: {_describe(example)}")
    print("exit codes (input kind, command):")
    for (kind, command, code), count in sorted(report.exits.items()):
        print(f"  {kind:<9} {command:<9} exit {code:>2}: {count}")
    print("slowest:")
    for seconds, index, what in report.slowest:
        print(f"  {seconds:6.2f} s  example {index}: {what}")
    if report.saved:
        print(
            f"saved {len(report.saved)} reproducers under "
            f"{os.path.commonpath([str(p) for p in report.saved])}"
        )


def summary(report: Report) -> dict[str, Any]:
    """The figures as JSON (to add up campaigns run in parts)."""
    return {
        "seed": report.seed,
        "examples": report.examples,
        "seconds": round(report.seconds, 1),
        "failures": [
            {
                "index": r.index,
                "kind": e.kind,
                "category": r.category,
                "signature": r.signature,
                "command": e.command,
            }
            for e, r in report.failures
        ],
        "slow": [
            {"index": r.index, "kind": e.kind, "seconds": round(r.seconds, 2), "command": e.command}
            for e, r in report.slow
        ],
        "exits": [[k, c, code, n] for (k, c, code), n in sorted(report.exits.items())],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--start", type=int, default=0, help="first example index (to split a campaign)")
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated input kinds")
    parser.add_argument("--save", type=Path, help="folder for the failing and slow examples (reproducers)")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--hard-limit", type=float, default=30.0, help="seconds before an example is a hang")
    parser.add_argument("--memory-gib", type=float, default=4.0, help="address-space limit of the worker")
    parser.add_argument("--shrink-budget", type=int, default=60, help="runs spent shrinking each new failure")
    args = parser.parse_args()
    kinds = tuple(k for k in args.kinds.split(",") if k)
    unknown = set(kinds) - set(KINDS)
    if unknown:
        parser.error(f"unknown kinds {sorted(unknown)}; known: {', '.join(KINDS)}")
    report = run_campaign(
        args.examples,
        args.seed,
        args.start,
        kinds,
        args.save,
        progress=250,
        hard_limit=args.hard_limit,
        memory_gib=args.memory_gib,
        shrink_budget=args.shrink_budget,
    )
    print_report(report)
    if args.json is not None:
        args.json.write_text(json.dumps(summary(report), indent=1) + "\n", encoding="utf-8")
    raise SystemExit(1 if report.tracebacks else 0)


if __name__ == "__main__":
    main()

"""Start the probe under the run's launcher, bounded in time, and leave no process behind.

The launcher starts in a new session (its own process group). On timeout, Ctrl-C or any error
the whole group gets SIGTERM, then SIGKILL after a grace period. torchrun starts its workers in
sessions of their own (torch.distributed.elastic uses start_new_session), so killing the
launcher's group is not enough when the launcher itself dies first: every child carries a
per-launch marker in its environment (GPU_ADVISE_PROBE=<id>) and the processes that carry it are
found under /proc and signalled by pid. Only processes started by this launch carry the marker.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from advisor import PACKAGE_DIR
from advisor.core.records import field, record
from advisor.pipeline.probe.spec import ProbeOptions, ProbeSpec
from advisor.sources import launchers

MARKER_VAR = "GPU_ADVISE_PROBE"
GRACE_S = 5.0


@record(slots=True)
class LaunchResult:
    command: list[str]
    returncode: int | None
    wall_s: float
    ranks: list[dict[str, Any]] = field(default_factory=list)
    timed_out: bool = False
    interrupted: bool = False
    leftovers_killed: int = 0
    log_tail: str = ""
    marker: str = ""  # the GPU_ADVISE_PROBE value every process of this launch carries


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def command_for(spec: ProbeSpec, spec_path: Path, python: str | None = None) -> list[str]:
    """The worker's command line under the spec's launcher, as its local_start says it starts a Python
    module on this machine (python itself, `-m torch.distributed.run --standalone`, `-m
    accelerate.commands.launch` with the accelerate config and flags)."""
    worker = ["-m", "advisor.pipeline.probe.worker", str(spec_path)]
    own = launchers.spec_of(spec.launcher)
    start = own.local_start
    if start is None:
        raise ValueError(f"the probe cannot start its worker under {spec.launcher!r}")
    cmd = [python or sys.executable]
    if own.modules:
        cmd += ["-m", own.modules[0]]
    cmd += start.before
    if start.count_flag:
        cmd += [f"--{start.count_flag}", spec.nproc_arg or str(spec.nproc or 1)]
    if own.reads_accelerate_config:
        if spec.accelerate_config:
            cmd += [f"--{own.accelerate_config_flags[0]}", spec.accelerate_config]
        for flag, value in spec.accelerate_flags.items():
            if flag in own.flags.bools:  # a switch: given bare when true
                if str(value).lower() in {"true", "1", "yes"}:
                    cmd.append(f"--{flag}")
                continue
            cmd += [f"--{flag}", str(value)]
    cmd += start.after
    if start.port_flag:
        cmd += [f"--{start.port_flag}", str(free_port())]
    return [*cmd, *worker]


def child_env(spec: ProbeSpec, options: ProbeOptions, marker: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(options.env)
    env[MARKER_VAR] = marker
    if not options.online:
        env["HF_HUB_OFFLINE"] = "1"
        env["TRANSFORMERS_OFFLINE"] = "1"
        env["HF_DATASETS_OFFLINE"] = "1"
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env["PYTHONUNBUFFERED"] = "1"
    if spec.cuda_visible_devices is not None:
        env["CUDA_VISIBLE_DEVICES"] = spec.cuda_visible_devices
    if spec.device == "cpu":
        env["ACCELERATE_USE_CPU"] = "true"
        env["CUDA_VISIBLE_DEVICES"] = ""  # --verify-device cpu on a GPU machine: no rank may pick a GPU
    if spec.out_dir:  # torchrun's torchelastic_* logs and the workers' temp files go with the staging
        env["TMPDIR"] = str(Path(spec.out_dir) / "tmp")
    # the children must import this very package, also from a source checkout
    root = PACKAGE_DIR.parent
    if (root / "pyproject.toml").is_file():
        env["PYTHONPATH"] = str(root) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def marked_pids(marker: str) -> list[int]:
    """Live processes whose environment carries this launch's marker (Linux /proc; else none)."""
    needle = f"{MARKER_VAR}={marker}".encode()
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    me = os.getpid()
    out = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            env = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in env.split(b"\0"):
            out.append(int(entry.name))
    return out


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def terminate(proc: subprocess.Popen[bytes], marker: str, grace: float = GRACE_S) -> int:
    """SIGTERM the launcher's group and every marked process, SIGKILL what is left; reap the launcher."""
    victims = set(marked_pids(marker))
    _signal_group(proc.pid, signal.SIGTERM)
    _signal(sorted(victims), signal.SIGTERM)
    end = time.monotonic() + grace
    while time.monotonic() < end:
        alive = marked_pids(marker)
        if proc.poll() is not None and not alive:
            break
        time.sleep(0.1)
    left = marked_pids(marker)
    victims.update(left)
    _signal_group(proc.pid, signal.SIGKILL)
    _signal(left, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace)
    end = time.monotonic() + grace
    # a worker the launcher detached just before it died can appear after the scans above: kill what is
    # still marked until nothing is (under load this race left workers running past the timeout)
    while (left := marked_pids(marker)) and time.monotonic() < end:
        victims.update(left)
        _signal(left, signal.SIGKILL)
        time.sleep(0.1)
    return len(victims)


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def read_ranks(out_dir: Path) -> list[dict[str, Any]]:
    ranks = []
    for p in sorted(out_dir.glob("rank-*.json")):
        try:
            ranks.append(json.loads(p.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return sorted(ranks, key=lambda r: int(r.get("rank", 0)))


def launch(
    spec: ProbeSpec,
    spec_path: Path,
    options: ProbeOptions,
    on_progress: Callable[[int, int], None] | None = None,
) -> LaunchResult:
    """Run one probe launch to completion, timeout or interruption; always reap everything."""
    out = Path(spec.out_dir)
    marker = uuid.uuid4().hex
    cmd = command_for(spec, spec_path, options.python)
    env = child_env(spec, options, marker)
    (out / "tmp").mkdir(parents=True, exist_ok=True)
    log_path = out / "launcher.log"
    start = time.monotonic()
    result = LaunchResult(command=cmd, returncode=None, wall_s=0.0, marker=marker)
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            cmd,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=str(out),
        )
        try:
            deadline = start + options.timeout
            while True:
                try:
                    proc.wait(timeout=0.2)
                    break
                except subprocess.TimeoutExpired:
                    pass
                if on_progress is not None:  # every poll: the callback says when nothing moved for long
                    on_progress(*_progress(out))
                if time.monotonic() > deadline:
                    result.timed_out = True
                    result.leftovers_killed = terminate(proc, marker)
                    break
        except BaseException:  # Ctrl-C or anything else: nothing may outlive us
            result.interrupted = True
            result.leftovers_killed = terminate(proc, marker)
            raise
        finally:
            if proc.poll() is None:
                result.leftovers_killed += terminate(proc, marker)
            left = marked_pids(marker)
            if left:  # e.g. DataLoader workers of a rank that exited abnormally
                result.leftovers_killed += len(left)
                _signal(left, signal.SIGKILL)
            result.returncode = proc.returncode
            result.wall_s = time.monotonic() - start
    result.ranks = read_ranks(out)
    if on_progress is not None:
        step, total = _progress(out)
        on_progress(step, total)
    if (
        result.returncode != 0
        or result.timed_out
        or any(r.get("status") not in {"ok", "stopped"} for r in result.ranks)
    ):
        result.log_tail = _tail(log_path)
    return result


def _progress(out: Path) -> tuple[int, int]:
    try:
        data = json.loads((out / "progress.json").read_text(encoding="utf-8"))
        return int(data.get("step", 0)), int(data.get("total", 0))
    except (OSError, ValueError):
        return 0, 0
